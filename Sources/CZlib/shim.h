// zlib: CRC-32 for the STUN FINGERPRINT attribute (RFC 8489 section 14.7).
#ifndef TESSERA_CZLIB_SHIM_H
#define TESSERA_CZLIB_SHIM_H
#include <zlib.h>
#endif
