// OpenSSL 3 for Tessera: HMAC for STUN MESSAGE-INTEGRITY, DTLS 1.2 over memory BIOs, certificates.
// Swift cannot call function-like macros, so each one the transport uses is wrapped here.
#ifndef TESSERA_COPENSSL_SHIM_H
#define TESSERA_COPENSSL_SHIM_H
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/rsa.h>
#include <openssl/srtp.h>

/// DTLSv1_get_timeout: how long until the handshake retransmit timer fires; 1 if armed.
static inline long tessera_DTLSv1_get_timeout(SSL *ssl, struct timeval *tv) {
    return DTLSv1_get_timeout(ssl, tv);
}
static inline long tessera_DTLSv1_handle_timeout(SSL *ssl) { return DTLSv1_handle_timeout(ssl); }
static inline long tessera_DTLS_set_link_mtu(SSL *ssl, long mtu) { return DTLS_set_link_mtu(ssl, mtu); }
static inline long tessera_SSL_set_options(SSL *ssl, uint64_t op) { return (long)SSL_set_options(ssl, op); }
static inline long tessera_BIO_get_mem_data(BIO *b, char **pp) { return BIO_get_mem_data(b, pp); }
static inline long tessera_BIO_set_mem_eof_return(BIO *b, long v) { return BIO_set_mem_eof_return(b, v); }
static inline long tessera_SSL_CTX_set1_groups_list(SSL_CTX *ctx, const char *list) {
    return SSL_CTX_set1_groups_list(ctx, list);
}
static inline void tessera_OPENSSL_free(void *p) { OPENSSL_free(p); }
/// EVP_EC_gen expands to the variadic EVP_PKEY_Q_keygen.
static inline EVP_PKEY *tessera_EVP_EC_gen(const char *curve) { return EVP_EC_gen(curve); }
static inline long tessera_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}
static inline void tessera_SSL_CTX_set_read_ahead(SSL_CTX *ctx, int yes) { SSL_CTX_set_read_ahead(ctx, yes); }
static inline int tessera_BIO_reset(BIO *b) { return (int)BIO_reset(b); }
static inline uint64_t tessera_SSL_OP_NO_QUERY_MTU(void) { return SSL_OP_NO_QUERY_MTU; }
/// EVP_RSA_gen expands to the variadic EVP_PKEY_Q_keygen.
static inline EVP_PKEY *tessera_EVP_RSA_gen(unsigned int bits) { return EVP_RSA_gen(bits); }
/// Adds an X.509 v3 extension written in OpenSSL's config syntax (`DNS:host`, `serverAuth`) to a
/// self-signed certificate; X509V3_set_ctx_nodb is a macro. 1 on success.
static inline int tessera_X509_add_ext_text(X509 *cert, int nid, const char *value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert, cert, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!ext) return 0;
    int ok = X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
    return ok;
}
#endif
