// libsrtp2's AES-CM (ICM), AES-GCM and HMAC-SHA1 on OpenSSL 3's EVP, for libsrtp2 builds whose own
// crypto is slow (Debian's 2.5.0 is built on NSS, which sets up a PKCS #11 context per packet).
// libsrtp2 stays the SRTP implementation (RFC 3711, RFC 7714); these replace only its cipher and
// auth types, through its public srtp_replace_cipher_type / srtp_replace_auth_type.
#ifndef TESSERA_CSRTPCRYPTO_H
#define TESSERA_CSRTPCRYPTO_H

struct srtp_cipher_type_t;
struct srtp_auth_type_t;

/// Replaces libsrtp's cipher types SRTP_AES_ICM_128, _192, _256, SRTP_AES_GCM_128, _256 and the
/// auth type SRTP_HMAC_SHA1 with the OpenSSL ones; libsrtp self-tests each (with these types'
/// RFC vectors and with those of the type replaced) before taking it. Call once per process, after
/// srtp_init and before any srtp_create. Returns the first failing srtp_err_status_t, 0 when all
/// six are in place (after a failure the types not yet replaced stay libsrtp's own).
int tessera_srtp_use_openssl(void);

/// The OpenSSL cipher type for a libsrtp cipher id (1, 4, 5, 6, 7), NULL for any other.
const struct srtp_cipher_type_t *tessera_srtp_openssl_cipher_type(int id);

/// The OpenSSL HMAC-SHA1 auth type.
const struct srtp_auth_type_t *tessera_srtp_openssl_auth_type(void);

/// How many ciphers and authenticators libsrtp has allocated from these types so far in the
/// process (self-tests included): a session allocates several, so this shows the types in use.
unsigned long tessera_srtp_openssl_allocations(void);

#endif
