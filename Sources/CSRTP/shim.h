// libsrtp2: SRTP/SRTCP protect and unprotect per RFC 3711 and RFC 7714 (AEAD GCM); cipher.h and
// auth.h are its public cipher and auth type interfaces (CSRTPCrypto's types, driven by tests).
#ifndef TESSERA_CSRTP_SHIM_H
#define TESSERA_CSRTP_SHIM_H
#include <srtp2/srtp.h>
#include <srtp2/cipher.h>
#include <srtp2/auth.h>
#endif
