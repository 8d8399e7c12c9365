// libsrtp2: SRTP/SRTCP protect and unprotect per RFC 3711 and RFC 7714 (AEAD GCM).
#ifndef TESSERA_CSRTP_SHIM_H
#define TESSERA_CSRTP_SHIM_H
#include <srtp2/srtp.h>
#endif
