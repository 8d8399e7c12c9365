// libsrtp2 cipher and auth types on OpenSSL 3's EVP (see include/CSRTPCrypto.h).
//
// Each libsrtp cipher or authenticator owns its EVP contexts, keyed once in `init` (at session
// creation and rekeying); per packet only the IV is set (ciphers) or a keyed state copied (HMAC).
// The semantics follow libsrtp's own OpenSSL back ends (aes_icm_ossl.c, aes_gcm_ossl.c,
// hmac_ossl.c): the ICM key is the AES key followed by the 14-byte salt and set_iv takes the
// 16-byte block that is XORed with salt || 0x0000 to make the counter; GCM's set_iv takes the
// 12-byte IV, encrypt leaves the tag for get_tag, and decrypt takes the ciphertext followed by
// the tag and answers srtp_err_status_auth_fail when the tag does not verify.
#include "CSRTPCrypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <srtp2/auth.h>
#include <srtp2/cipher.h>
#include <srtp2/srtp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { SHA1_DIGEST_LEN = 20, SHA1_BLOCK_LEN = 64, GCM_IV_LEN = 12, GCM_TAG_LEN = 16, GCM_TAG_LEN_8 = 8 };

// MARK: Algorithms, fetched once per process

static EVP_CIPHER *aes_ctr[3];  // 128, 192, 256
static EVP_CIPHER *aes_gcm[2];  // 128, 256
static EVP_MD *sha1;
static pthread_once_t fetched = PTHREAD_ONCE_INIT;
static atomic_ulong allocations;

static void fetch_algorithms(void) {
    aes_ctr[0] = EVP_CIPHER_fetch(NULL, "AES-128-CTR", NULL);
    aes_ctr[1] = EVP_CIPHER_fetch(NULL, "AES-192-CTR", NULL);
    aes_ctr[2] = EVP_CIPHER_fetch(NULL, "AES-256-CTR", NULL);
    aes_gcm[0] = EVP_CIPHER_fetch(NULL, "AES-128-GCM", NULL);
    aes_gcm[1] = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
    sha1 = EVP_MD_fetch(NULL, "SHA1", NULL);
}

/// Fetches the algorithms on first use; 0 when OpenSSL has none of them (a provider missing).
static int algorithms_ready(void) {
    if (pthread_once(&fetched, fetch_algorithms) != 0) return 0;
    return aes_ctr[0] && aes_ctr[1] && aes_ctr[2] && aes_gcm[0] && aes_gcm[1] && sha1;
}

unsigned long tessera_srtp_openssl_allocations(void) { return atomic_load(&allocations); }

// The types, defined at the end with their test data.
static const srtp_cipher_type_t aes_icm_128, aes_icm_192, aes_icm_256, aes_gcm_128, aes_gcm_256;
static const srtp_auth_type_t hmac_sha1;

/// The start of every cipher state here: its EVP context, keyed at init, and the cipher it runs.
typedef struct {
    EVP_CIPHER_CTX *context;
    const EVP_CIPHER *evp;
} cipher_head;

/// Allocates a libsrtp cipher of `type` with a zeroed state of `state_size` bytes, which begins
/// with a `cipher_head`: a new EVP context for the cipher in `slot` (one of `aes_ctr`, `aes_gcm`:
/// read only once the algorithms are fetched, which the first allocation of a process does).
static srtp_err_status_t cipher_alloc(srtp_cipher_t **cipher, size_t state_size, const srtp_cipher_type_t *type,
                                      int key_len, EVP_CIPHER *const *slot) {
    *cipher = NULL;
    if (!algorithms_ready()) return srtp_err_status_init_fail;
    const EVP_CIPHER *evp = *slot;
    srtp_cipher_t *made = calloc(1, sizeof *made);
    cipher_head *state = calloc(1, state_size);
    EVP_CIPHER_CTX *context = EVP_CIPHER_CTX_new();
    if (!made || !state || !context) {
        free(made);
        free(state);
        EVP_CIPHER_CTX_free(context);
        return srtp_err_status_alloc_fail;
    }
    state->context = context;
    state->evp = evp;
    made->state = state;
    made->type = type;
    made->algorithm = type->id;
    made->key_len = key_len;
    *cipher = made;
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return srtp_err_status_ok;
}

/// Frees what `cipher_alloc` made, the state wiped first (it held the session's key schedule).
static srtp_err_status_t cipher_dealloc(srtp_cipher_t *cipher, size_t state_size) {
    if (!cipher) return srtp_err_status_bad_param;
    cipher_head *state = cipher->state;
    if (state) {
        EVP_CIPHER_CTX_free(state->context);
        OPENSSL_cleanse(state, state_size);
        free(state);
    }
    free(cipher);
    return srtp_err_status_ok;
}

// MARK: AES-CM (ICM), RFC 3711 §4.1.1 and RFC 6188

typedef struct {
    cipher_head head;
    /// The session salt followed by two zero octets; set_iv's block is XORed with it.
    uint8_t offset[16];
} icm_state;

static srtp_err_status_t icm_alloc(srtp_cipher_t **cipher, int key_len, int tag_len) {
    (void)tag_len;
    const srtp_cipher_type_t *type;
    int index;
    switch (key_len) {
    case SRTP_AES_ICM_128_KEY_LEN_WSALT: type = &aes_icm_128; index = 0; break;
    case SRTP_AES_ICM_192_KEY_LEN_WSALT: type = &aes_icm_192; index = 1; break;
    case SRTP_AES_ICM_256_KEY_LEN_WSALT: type = &aes_icm_256; index = 2; break;
    default: *cipher = NULL; return srtp_err_status_bad_param;
    }
    return cipher_alloc(cipher, sizeof(icm_state), type, key_len, &aes_ctr[index]);
}

static srtp_err_status_t icm_dealloc(srtp_cipher_t *cipher) { return cipher_dealloc(cipher, sizeof(icm_state)); }

/// `key` is the AES key (16, 24 or 32 octets) followed by the 14-octet salt.
static srtp_err_status_t icm_init(void *opaque, const uint8_t *key) {
    icm_state *state = opaque;
    int key_size = EVP_CIPHER_get_key_length(state->head.evp);
    memset(state->offset, 0, sizeof state->offset);
    memcpy(state->offset, key + key_size, SRTP_SALT_LEN);
    if (EVP_EncryptInit_ex2(state->head.context, state->head.evp, key, NULL, NULL) != 1) return srtp_err_status_init_fail;
    return srtp_err_status_ok;
}

static srtp_err_status_t icm_set_iv(void *opaque, uint8_t *iv, srtp_cipher_direction_t direction) {
    (void)direction;  // counter mode encrypts and decrypts alike
    icm_state *state = opaque;
    uint8_t counter[16];
    for (int i = 0; i < 16; i++) counter[i] = iv[i] ^ state->offset[i];
    if (EVP_EncryptInit_ex2(state->head.context, NULL, NULL, counter, NULL) != 1) return srtp_err_status_cipher_fail;
    return srtp_err_status_ok;
}

/// XORs the keystream into `buffer`, continuing where the last call since set_iv stopped.
static srtp_err_status_t icm_encrypt(void *opaque, uint8_t *buffer, unsigned int *length) {
    icm_state *state = opaque;
    if (*length == 0) return srtp_err_status_ok;
    if (!buffer || *length > INT32_MAX) return srtp_err_status_bad_param;
    int written = 0;
    if (EVP_EncryptUpdate(state->head.context, buffer, &written, buffer, (int)*length) != 1 || written != (int)*length)
        return srtp_err_status_cipher_fail;
    return srtp_err_status_ok;
}

// MARK: AES-GCM, RFC 7714

typedef struct {
    cipher_head head;
    int tag_len;
    /// 1 encrypting, 0 decrypting (set by set_iv), -1 before the first set_iv after init.
    int encrypting;
} gcm_state;

static srtp_err_status_t gcm_alloc(srtp_cipher_t **cipher, int key_len, int tag_len) {
    const srtp_cipher_type_t *type;
    int index;
    switch (key_len) {
    case SRTP_AES_GCM_128_KEY_LEN_WSALT: type = &aes_gcm_128; index = 0; break;
    case SRTP_AES_GCM_256_KEY_LEN_WSALT: type = &aes_gcm_256; index = 1; break;
    default: *cipher = NULL; return srtp_err_status_bad_param;
    }
    if (tag_len != GCM_TAG_LEN && tag_len != GCM_TAG_LEN_8) {
        *cipher = NULL;
        return srtp_err_status_bad_param;
    }
    srtp_err_status_t status = cipher_alloc(cipher, sizeof(gcm_state), type, key_len, &aes_gcm[index]);
    if (status != srtp_err_status_ok) return status;
    gcm_state *state = (*cipher)->state;
    state->tag_len = tag_len;
    state->encrypting = -1;
    return srtp_err_status_ok;
}

static srtp_err_status_t gcm_dealloc(srtp_cipher_t *cipher) { return cipher_dealloc(cipher, sizeof(gcm_state)); }

/// `key` is the AES key followed by the 12-octet salt, which the SRTP layer uses, not the cipher.
static srtp_err_status_t gcm_init(void *opaque, const uint8_t *key) {
    gcm_state *state = opaque;
    state->encrypting = -1;
    if (EVP_CipherInit_ex2(state->head.context, state->head.evp, key, NULL, 1, NULL) != 1) return srtp_err_status_init_fail;
    return srtp_err_status_ok;
}

static srtp_err_status_t gcm_set_iv(void *opaque, uint8_t *iv, srtp_cipher_direction_t direction) {
    gcm_state *state = opaque;
    if (direction != srtp_direction_encrypt && direction != srtp_direction_decrypt) return srtp_err_status_bad_param;
    int encrypting = direction == srtp_direction_encrypt;
    // The key stays; this resets the GHASH state and the counter for the new IV (12 octets, the default).
    if (EVP_CipherInit_ex2(state->head.context, NULL, NULL, iv, encrypting, NULL) != 1) return srtp_err_status_cipher_fail;
    state->encrypting = encrypting;
    return srtp_err_status_ok;
}

/// Authenticated but not encrypted data; called before encrypt or decrypt, possibly more than once.
static srtp_err_status_t gcm_set_aad(void *opaque, const uint8_t *aad, uint32_t aad_len) {
    gcm_state *state = opaque;
    if (state->encrypting < 0) return srtp_err_status_bad_param;
    if (aad_len == 0) return srtp_err_status_ok;
    if (!aad || aad_len > INT32_MAX) return srtp_err_status_bad_param;
    int written = 0;
    if (EVP_CipherUpdate(state->head.context, NULL, &written, aad, (int)aad_len) != 1) return srtp_err_status_cipher_fail;
    return srtp_err_status_ok;
}

/// Encrypts `*length` octets in place; the tag comes from get_tag.
static srtp_err_status_t gcm_encrypt(void *opaque, uint8_t *buffer, unsigned int *length) {
    gcm_state *state = opaque;
    if (state->encrypting != 1) return srtp_err_status_bad_param;
    if (*length == 0) return srtp_err_status_ok;  // SRTCP without encryption: the tag covers the AAD only
    if (!buffer || *length > INT32_MAX) return srtp_err_status_bad_param;
    int written = 0;
    if (EVP_EncryptUpdate(state->head.context, buffer, &written, buffer, (int)*length) != 1 || written != (int)*length)
        return srtp_err_status_cipher_fail;
    return srtp_err_status_ok;
}

/// Finishes the packet begun by set_iv and writes its tag (8 or 16 octets) to `tag`.
static srtp_err_status_t gcm_get_tag(void *opaque, uint8_t *tag, uint32_t *length) {
    gcm_state *state = opaque;
    if (state->encrypting != 1) return srtp_err_status_bad_param;
    uint8_t unused[16];
    int written = 0;
    if (EVP_EncryptFinal_ex(state->head.context, unused, &written) != 1) return srtp_err_status_cipher_fail;
    if (EVP_CIPHER_CTX_ctrl(state->head.context, EVP_CTRL_AEAD_GET_TAG, state->tag_len, tag) != 1)
        return srtp_err_status_algo_fail;
    *length = (uint32_t)state->tag_len;
    return srtp_err_status_ok;
}

/// Decrypts the ciphertext that `*length` octets of `buffer` hold followed by the tag, in place;
/// on success `*length` is the plaintext's length.
static srtp_err_status_t gcm_decrypt(void *opaque, uint8_t *buffer, unsigned int *length) {
    gcm_state *state = opaque;
    if (state->encrypting != 0) return srtp_err_status_bad_param;
    if (!buffer || *length < (unsigned int)state->tag_len || *length > INT32_MAX) return srtp_err_status_bad_param;
    int ciphertext_len = (int)*length - state->tag_len;
    int written = 0;
    if (ciphertext_len > 0 &&
        (EVP_DecryptUpdate(state->head.context, buffer, &written, buffer, ciphertext_len) != 1 || written != ciphertext_len))
        return srtp_err_status_cipher_fail;
    if (EVP_CIPHER_CTX_ctrl(state->head.context, EVP_CTRL_AEAD_SET_TAG, state->tag_len, buffer + ciphertext_len) != 1)
        return srtp_err_status_cipher_fail;
    uint8_t unused[16];
    if (EVP_DecryptFinal_ex(state->head.context, unused, &written) != 1) return srtp_err_status_auth_fail;
    *length = (unsigned int)ciphertext_len;
    return srtp_err_status_ok;
}

// MARK: HMAC-SHA1, RFC 2104

/// The SHA-1 states after the key's inner and outer pads are kept; each packet copies them, so
/// the key is hashed once per session rather than twice per packet. (This is what HMAC_CTX does
/// inside, without its deprecated API; EVP_MAC's reinitialisation measured 1.6 times slower.)
typedef struct {
    EVP_MD_CTX *inner;
    EVP_MD_CTX *outer;
    EVP_MD_CTX *packet;
} hmac_state;

static srtp_err_status_t hmac_dealloc(srtp_auth_t *auth) {
    if (!auth) return srtp_err_status_bad_param;
    hmac_state *state = auth->state;
    if (state) {
        EVP_MD_CTX_free(state->inner);
        EVP_MD_CTX_free(state->outer);
        EVP_MD_CTX_free(state->packet);
        free(state);
    }
    OPENSSL_cleanse(auth, sizeof *auth);
    free(auth);
    return srtp_err_status_ok;
}

static srtp_err_status_t hmac_alloc(srtp_auth_t **auth, int key_len, int out_len) {
    *auth = NULL;
    if (key_len < 0 || out_len < 0 || out_len > SHA1_DIGEST_LEN) return srtp_err_status_bad_param;
    if (!algorithms_ready()) return srtp_err_status_init_fail;
    srtp_auth_t *made = calloc(1, sizeof *made);
    hmac_state *state = calloc(1, sizeof *state);
    if (!made || !state) {
        free(made);
        free(state);
        return srtp_err_status_alloc_fail;
    }
    made->state = state;
    state->inner = EVP_MD_CTX_new();
    state->outer = EVP_MD_CTX_new();
    state->packet = EVP_MD_CTX_new();
    if (!state->inner || !state->outer || !state->packet) {
        hmac_dealloc(made);
        return srtp_err_status_alloc_fail;
    }
    made->type = &hmac_sha1;
    made->out_len = out_len;
    made->key_len = key_len;
    made->prefix_len = 0;
    *auth = made;
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return srtp_err_status_ok;
}

static srtp_err_status_t hmac_init(void *opaque, const uint8_t *key, int key_len) {
    hmac_state *state = opaque;
    uint8_t block[SHA1_BLOCK_LEN] = {0}, pad[SHA1_BLOCK_LEN];
    srtp_err_status_t status = srtp_err_status_auth_fail;
    if (key_len < 0) return srtp_err_status_bad_param;
    if (key_len > SHA1_BLOCK_LEN) {  // a key longer than a block is hashed first (RFC 2104 §2)
        unsigned int hashed = 0;
        if (EVP_Digest(key, (size_t)key_len, block, &hashed, sha1, NULL) != 1) goto done;
    } else if (key_len > 0) {
        memcpy(block, key, (size_t)key_len);
    }
    for (int i = 0; i < SHA1_BLOCK_LEN; i++) pad[i] = block[i] ^ 0x36;
    if (EVP_DigestInit_ex2(state->inner, sha1, NULL) != 1 || EVP_DigestUpdate(state->inner, pad, sizeof pad) != 1) goto done;
    for (int i = 0; i < SHA1_BLOCK_LEN; i++) pad[i] = block[i] ^ 0x5c;
    if (EVP_DigestInit_ex2(state->outer, sha1, NULL) != 1 || EVP_DigestUpdate(state->outer, pad, sizeof pad) != 1) goto done;
    status = srtp_err_status_ok;
done:
    OPENSSL_cleanse(block, sizeof block);
    OPENSSL_cleanse(pad, sizeof pad);
    return status;
}

static srtp_err_status_t hmac_start(void *opaque) {
    hmac_state *state = opaque;
    if (EVP_MD_CTX_copy_ex(state->packet, state->inner) != 1) return srtp_err_status_auth_fail;
    return srtp_err_status_ok;
}

static srtp_err_status_t hmac_update(void *opaque, const uint8_t *message, int length) {
    hmac_state *state = opaque;
    if (length < 0 || (length > 0 && !message)) return srtp_err_status_bad_param;
    if (length > 0 && EVP_DigestUpdate(state->packet, message, (size_t)length) != 1) return srtp_err_status_auth_fail;
    return srtp_err_status_ok;
}

/// Hashes the last `length` octets of the message and writes the first `tag_len` octets of the MAC.
static srtp_err_status_t hmac_compute(void *opaque, const uint8_t *message, int length, int tag_len, uint8_t *tag) {
    hmac_state *state = opaque;
    if (tag_len < 0 || tag_len > SHA1_DIGEST_LEN) return srtp_err_status_bad_param;
    srtp_err_status_t status = hmac_update(opaque, message, length);
    if (status != srtp_err_status_ok) return status;
    uint8_t digest[SHA1_DIGEST_LEN];
    unsigned int digest_len = 0;
    if (EVP_DigestFinal_ex(state->packet, digest, &digest_len) != 1 || digest_len != SHA1_DIGEST_LEN ||
        EVP_MD_CTX_copy_ex(state->packet, state->outer) != 1 ||
        EVP_DigestUpdate(state->packet, digest, sizeof digest) != 1 ||
        EVP_DigestFinal_ex(state->packet, digest, &digest_len) != 1 || digest_len != SHA1_DIGEST_LEN)
        return srtp_err_status_auth_fail;
    memcpy(tag, digest, (size_t)tag_len);
    return srtp_err_status_ok;
}

// MARK: Known answers, which libsrtp checks when each type is installed

// RFC 3711 Appendix B.2: session key and salt, packet index 0, SSRC 0; 48 zero octets encrypt
// to the first three keystream blocks.
static const uint8_t b2_key[30] = {
    0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6, 0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf, 0x4f, 0x3c,
    0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd};
static uint8_t zero_iv[16];
static const uint8_t zeros[96];
static const uint8_t b2_keystream[48] = {
    0xe0, 0x3e, 0xad, 0x09, 0x35, 0xc9, 0x5e, 0x80, 0xe1, 0x66, 0xb1, 0x6d, 0xd9, 0x2b, 0x4e, 0xb4,
    0xd2, 0x35, 0x13, 0x16, 0x2b, 0x02, 0xd0, 0xf7, 0x2a, 0x43, 0xa2, 0xfe, 0x4a, 0x5f, 0x97, 0xab,
    0x41, 0xe9, 0x5b, 0x3b, 0xb0, 0xa2, 0xe8, 0xdd, 0x47, 0x79, 0x01, 0xe4, 0xfc, 0xa8, 0x94, 0xc0};
// RFC 3711 Appendix B.3: the key derivation is this cipher keyed with the master key and salt, its
// IV the label in octet 7; label 0x01 gives the 94 octets of the authentication key listed there.
static const uint8_t b3_master[30] = {
    0xe1, 0xf9, 0x7a, 0x0d, 0x3e, 0x01, 0x8b, 0xe0, 0xd6, 0x4f, 0xa3, 0x2c, 0x06, 0xde, 0x41, 0x39,
    0x0e, 0xc6, 0x75, 0xad, 0x49, 0x8a, 0xfe, 0xeb, 0xb6, 0x96, 0x0b, 0x3a, 0xab, 0xe6};
static uint8_t label_1_iv[16] = {0, 0, 0, 0, 0, 0, 0, 0x01};
static const uint8_t b3_auth_key[94] = {
    0xce, 0xbe, 0x32, 0x1f, 0x6f, 0xf7, 0x71, 0x6b, 0x6f, 0xd4, 0xab, 0x49, 0xaf, 0x25, 0x6a, 0x15,
    0x6d, 0x38, 0xba, 0xa4, 0x8f, 0x0a, 0x0a, 0xcf, 0x3c, 0x34, 0xe2, 0x35, 0x9e, 0x6c, 0xdb, 0xce,
    0xe0, 0x49, 0x64, 0x6c, 0x43, 0xd9, 0x32, 0x7a, 0xd1, 0x75, 0x57, 0x8e, 0xf7, 0x22, 0x70, 0x98,
    0x63, 0x71, 0xc1, 0x0c, 0x9a, 0x36, 0x9a, 0xc2, 0xf9, 0x4a, 0x8c, 0x5f, 0xbc, 0xdd, 0xdc, 0x25,
    0x6d, 0x6e, 0x91, 0x9a, 0x48, 0xb6, 0x10, 0xef, 0x17, 0xc2, 0x04, 0x1e, 0x47, 0x40, 0x35, 0x76,
    0x6b, 0x68, 0x64, 0x2c, 0x59, 0xbb, 0xfc, 0x2f, 0x34, 0xdb, 0x60, 0xdb, 0xdf, 0xb2};
static const srtp_cipher_test_case_t icm_128_b3 = {
    30, b3_master, label_1_iv, 94, zeros, 94, b3_auth_key, 0, NULL, 0, NULL};
static const srtp_cipher_test_case_t icm_128_b2 = {
    30, b2_key, zero_iv, 48, zeros, 48, b2_keystream, 0, NULL, 0, &icm_128_b3};

// RFC 6188 §7.4: the AES-192 key derivation's cipher key (label 0x00).
static const uint8_t rfc6188_192_master[38] = {
    0x73, 0xed, 0xc6, 0x6c, 0x4f, 0xa1, 0x57, 0x76, 0xfb, 0x57, 0xf9, 0x50, 0x5c, 0x17, 0x13, 0x65,
    0x50, 0xff, 0xda, 0x71, 0xf3, 0xe8, 0xe5, 0xf1,
    0xc8, 0x52, 0x2f, 0x3a, 0xcd, 0x4c, 0xe8, 0x6d, 0x5a, 0xdd, 0x78, 0xed, 0xbb, 0x11};
static const uint8_t rfc6188_192_cipher_key[24] = {
    0x31, 0x87, 0x47, 0x36, 0xa8, 0xf1, 0x14, 0x38, 0x70, 0xc2, 0x6e, 0x48, 0x57, 0xd8, 0xa5, 0xb2,
    0xc4, 0xa3, 0x54, 0x40, 0x7f, 0xaa, 0xda, 0xbb};
static const srtp_cipher_test_case_t icm_192_kdf = {
    38, rfc6188_192_master, zero_iv, 24, zeros, 24, rfc6188_192_cipher_key, 0, NULL, 0, NULL};

// RFC 6188 §7.1: the AES-256 keystream's first three blocks; §7.2: the key derivation's cipher key.
static const uint8_t rfc6188_256_key[46] = {
    0x57, 0xf8, 0x2f, 0xe3, 0x61, 0x3f, 0xd1, 0x70, 0xa8, 0x5e, 0xc9, 0x3c, 0x40, 0xb1, 0xf0, 0x92,
    0x2e, 0xc4, 0xcb, 0x0d, 0xc0, 0x25, 0xb5, 0x82, 0x72, 0x14, 0x7c, 0xc4, 0x38, 0x94, 0x4a, 0x98,
    0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd};
static const uint8_t rfc6188_256_keystream[48] = {
    0x92, 0xbd, 0xd2, 0x8a, 0x93, 0xc3, 0xf5, 0x25, 0x11, 0xc6, 0x77, 0xd0, 0x8b, 0x55, 0x15, 0xa4,
    0x9d, 0xa7, 0x1b, 0x23, 0x78, 0xa8, 0x54, 0xf6, 0x70, 0x50, 0x75, 0x6d, 0xed, 0x16, 0x5b, 0xac,
    0x63, 0xc4, 0x86, 0x8b, 0x70, 0x96, 0xd8, 0x84, 0x21, 0xb5, 0x63, 0xb8, 0xc9, 0x4c, 0x9a, 0x31};
static const uint8_t rfc6188_256_master[46] = {
    0xf0, 0xf0, 0x49, 0x14, 0xb5, 0x13, 0xf2, 0x76, 0x3a, 0x1b, 0x1f, 0xa1, 0x30, 0xf1, 0x0e, 0x29,
    0x98, 0xf6, 0xf6, 0xe4, 0x3e, 0x43, 0x09, 0xd1, 0xe6, 0x22, 0xa0, 0xe3, 0x32, 0xb9, 0xf1, 0xb6,
    0x3b, 0x04, 0x80, 0x3d, 0xe5, 0x1e, 0xe7, 0xc9, 0x64, 0x23, 0xab, 0x5b, 0x78, 0xd2};
static const uint8_t rfc6188_256_cipher_key[32] = {
    0x5b, 0xa1, 0x06, 0x4e, 0x30, 0xec, 0x51, 0x61, 0x3c, 0xad, 0x92, 0x6c, 0x5a, 0x28, 0xef, 0x73,
    0x1e, 0xc7, 0xfb, 0x39, 0x7f, 0x70, 0xa9, 0x60, 0x65, 0x3c, 0xaf, 0x06, 0x55, 0x4c, 0xd8, 0xc4};
static const srtp_cipher_test_case_t icm_256_kdf = {
    46, rfc6188_256_master, zero_iv, 32, zeros, 32, rfc6188_256_cipher_key, 0, NULL, 0, NULL};
static const srtp_cipher_test_case_t icm_256_keystream = {
    46, rfc6188_256_key, zero_iv, 48, zeros, 48, rfc6188_256_keystream, 0, NULL, 0, &icm_256_kdf};

// (The text strings below keep their terminating NUL, which the test cases' lengths leave out.)
// RFC 7714 §16.1 and §16.2: the RTP packet (SSRC 0x5501a0b2, ROC 0, sequence number 0xf17b), its
// header the AAD, encrypted with the session key (salt "Quid pro quo"); §17.1 and §17.2: the SRTCP
// packet (SSRC "Mars", index 0x5d4, E set), AAD its first 8 octets then E || index.
static const uint8_t rfc7714_128_key[28] = {
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
    0x51, 0x75, 0x69, 0x64, 0x20, 0x70, 0x72, 0x6f, 0x20, 0x71, 0x75, 0x6f};
static const uint8_t rfc7714_256_key[44] = {
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
    0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,
    0x51, 0x75, 0x69, 0x64, 0x20, 0x70, 0x72, 0x6f, 0x20, 0x71, 0x75, 0x6f};
static uint8_t rfc7714_rtp_iv[12] = {0x51, 0x75, 0x3c, 0x65, 0x80, 0xc2, 0x72, 0x6f, 0x20, 0x71, 0x84, 0x14};
static const uint8_t rfc7714_rtp_header[12] = {0x80, 0x40, 0xf1, 0x7b, 0x80, 0x41, 0xf8, 0xd3, 0x55, 0x01, 0xa0, 0xb2};
static const uint8_t rfc7714_rtp_payload[39] = "Gallia est omnis divisa in partes tres";
static const uint8_t rfc7714_rtp_128_sealed[54] = {
    0xf2, 0x4d, 0xe3, 0xa3, 0xfb, 0x34, 0xde, 0x6c, 0xac, 0xba, 0x86, 0x1c, 0x9d, 0x7e, 0x4b, 0xca,
    0xbe, 0x63, 0x3b, 0xd5, 0x0d, 0x29, 0x4e, 0x6f, 0x42, 0xa5, 0xf4, 0x7a, 0x51, 0xc7, 0xd1, 0x9b,
    0x36, 0xde, 0x3a, 0xdf, 0x88, 0x33,
    0x89, 0x9d, 0x7f, 0x27, 0xbe, 0xb1, 0x6a, 0x91, 0x52, 0xcf, 0x76, 0x5e, 0xe4, 0x39, 0x0c, 0xce};
static const uint8_t rfc7714_rtp_256_sealed[54] = {
    0x32, 0xb1, 0xde, 0x78, 0xa8, 0x22, 0xfe, 0x12, 0xef, 0x9f, 0x78, 0xfa, 0x33, 0x2e, 0x33, 0xaa,
    0xb1, 0x80, 0x12, 0x38, 0x9a, 0x58, 0xe2, 0xf3, 0xb5, 0x0b, 0x2a, 0x02, 0x76, 0xff, 0xae, 0x0f,
    0x1b, 0xa6, 0x37, 0x99, 0xb8, 0x7b,
    0x7a, 0xa3, 0xdb, 0x36, 0xdf, 0xff, 0xd6, 0xb0, 0xf9, 0xbb, 0x78, 0x78, 0xd7, 0xa7, 0x6c, 0x13};
static uint8_t rfc7714_rtcp_iv[12] = {0x51, 0x75, 0x24, 0x05, 0x52, 0x03, 0x72, 0x6f, 0x20, 0x71, 0x70, 0xbb};
static const uint8_t rfc7714_rtcp_aad[12] = {0x81, 0xc8, 0x00, 0x0d, 0x4d, 0x61, 0x72, 0x73, 0x80, 0x00, 0x05, 0xd4};
static const uint8_t rfc7714_rtcp_payload[44] = {
    0x4e, 0x54, 0x50, 0x31, 0x4e, 0x54, 0x50, 0x32, 0x52, 0x54, 0x50, 0x20, 0x00, 0x00, 0x04, 0x2a,
    0x00, 0x00, 0xe9, 0x30, 0x4c, 0x75, 0x6e, 0x61, 0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef,
    0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef};
static const uint8_t rfc7714_rtcp_128_sealed[60] = {
    0x63, 0xe9, 0x48, 0x85, 0xdc, 0xda, 0xb6, 0x7c, 0xa7, 0x27, 0xd7, 0x66, 0x2f, 0x6b, 0x7e, 0x99,
    0x7f, 0xf5, 0xc0, 0xf7, 0x6c, 0x06, 0xf3, 0x2d, 0xc6, 0x76, 0xa5, 0xf1, 0x73, 0x0d, 0x6f, 0xda,
    0x4c, 0xe0, 0x9b, 0x46, 0x86, 0x30, 0x3d, 0xed, 0x0b, 0xb9, 0x27, 0x5b,
    0xc8, 0x4a, 0xa4, 0x58, 0x96, 0xcf, 0x4d, 0x2f, 0xc5, 0xab, 0xf8, 0x72, 0x45, 0xd9, 0xea, 0xde};
static const uint8_t rfc7714_rtcp_256_sealed[60] = {
    0xd5, 0x0a, 0xe4, 0xd1, 0xf5, 0xce, 0x5d, 0x30, 0x4b, 0xa2, 0x97, 0xe4, 0x7d, 0x47, 0x0c, 0x28,
    0x2c, 0x3e, 0xce, 0x5d, 0xbf, 0xfe, 0x0a, 0x50, 0xa2, 0xea, 0xa5, 0xc1, 0x11, 0x05, 0x55, 0xbe,
    0x84, 0x15, 0xf6, 0x58, 0xc6, 0x1d, 0xe0, 0x47,
    0x6f, 0x1b, 0x6f, 0xad, 0x1d, 0x1e, 0xb3, 0x0c, 0x44, 0x46, 0x83, 0x9f, 0x57, 0xff, 0x6f, 0x6c,
    0xb2, 0x6a, 0xc3, 0xbe};
// The same RTP packet with an 8-octet tag: the 16-octet tag's first half (NIST SP 800-38D §5.2.1.2).
static const srtp_cipher_test_case_t gcm_128_rtp_tag_8 = {
    28, rfc7714_128_key, rfc7714_rtp_iv, 38, rfc7714_rtp_payload, 46, rfc7714_rtp_128_sealed, 12, rfc7714_rtp_header, 8, NULL};
static const srtp_cipher_test_case_t gcm_128_rtcp = {
    28, rfc7714_128_key, rfc7714_rtcp_iv, 44, rfc7714_rtcp_payload, 60, rfc7714_rtcp_128_sealed, 12, rfc7714_rtcp_aad, 16, &gcm_128_rtp_tag_8};
static const srtp_cipher_test_case_t gcm_128_rtp = {
    28, rfc7714_128_key, rfc7714_rtp_iv, 38, rfc7714_rtp_payload, 54, rfc7714_rtp_128_sealed, 12, rfc7714_rtp_header, 16, &gcm_128_rtcp};
static const srtp_cipher_test_case_t gcm_256_rtcp = {
    44, rfc7714_256_key, rfc7714_rtcp_iv, 44, rfc7714_rtcp_payload, 60, rfc7714_rtcp_256_sealed, 12, rfc7714_rtcp_aad, 16, NULL};
static const srtp_cipher_test_case_t gcm_256_rtp = {
    44, rfc7714_256_key, rfc7714_rtp_iv, 38, rfc7714_rtp_payload, 54, rfc7714_rtp_256_sealed, 12, rfc7714_rtp_header, 16, &gcm_256_rtcp};

// RFC 2202 §3: HMAC-SHA1 test cases 1 (also cut to SRTP's 80 and 32 bits), 2, 3 and 6 (a key
// longer than a block).
static const uint8_t rfc2202_key_1[20] = {
    0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b};
static const uint8_t rfc2202_data_1[9] = "Hi There";
static const uint8_t rfc2202_mac_1[20] = {
    0xb6, 0x17, 0x31, 0x86, 0x55, 0x05, 0x72, 0x64, 0xe2, 0x8b, 0xc0, 0xb6, 0xfb, 0x37, 0x8c, 0x8e, 0xf1, 0x46, 0xbe, 0x00};
static const uint8_t rfc2202_key_2[5] = "Jefe";
static const uint8_t rfc2202_data_2[29] = "what do ya want for nothing?";
static const uint8_t rfc2202_mac_2[20] = {
    0xef, 0xfc, 0xdf, 0x6a, 0xe5, 0xeb, 0x2f, 0xa2, 0xd2, 0x74, 0x16, 0xd5, 0xf1, 0x84, 0xdf, 0x9c, 0x25, 0x9a, 0x7c, 0x79};
static const uint8_t rfc2202_key_3[20] = {
    0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa};
static const uint8_t rfc2202_data_3[50] = {
    0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd,
    0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd,
    0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd, 0xdd};
static const uint8_t rfc2202_mac_3[20] = {
    0x12, 0x5d, 0x73, 0x42, 0xb9, 0xac, 0x11, 0xcd, 0x91, 0xa3, 0x9a, 0xf4, 0x8a, 0xa1, 0x7b, 0x4f, 0x63, 0xf1, 0x75, 0xd3};
static const uint8_t rfc2202_key_6[80] = {
    0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa,
    0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa,
    0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa,
    0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa,
    0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa};
static const uint8_t rfc2202_data_6[55] = "Test Using Larger Than Block-Size Key - Hash Key First";
static const uint8_t rfc2202_mac_6[20] = {
    0xaa, 0x4a, 0xe5, 0xe1, 0x52, 0x72, 0xd0, 0x0e, 0x95, 0x70, 0x56, 0x37, 0xce, 0x8a, 0x3b, 0x55, 0xed, 0x40, 0x21, 0x12};
static const srtp_auth_test_case_t hmac_case_6 = {80, rfc2202_key_6, 54, rfc2202_data_6, 20, rfc2202_mac_6, NULL};
static const srtp_auth_test_case_t hmac_case_3 = {20, rfc2202_key_3, 50, rfc2202_data_3, 20, rfc2202_mac_3, &hmac_case_6};
static const srtp_auth_test_case_t hmac_case_2 = {4, rfc2202_key_2, 28, rfc2202_data_2, 20, rfc2202_mac_2, &hmac_case_3};
static const srtp_auth_test_case_t hmac_case_1_32 = {20, rfc2202_key_1, 8, rfc2202_data_1, 4, rfc2202_mac_1, &hmac_case_2};
static const srtp_auth_test_case_t hmac_case_1_80 = {20, rfc2202_key_1, 8, rfc2202_data_1, 10, rfc2202_mac_1, &hmac_case_1_32};
static const srtp_auth_test_case_t hmac_case_1 = {20, rfc2202_key_1, 8, rfc2202_data_1, 20, rfc2202_mac_1, &hmac_case_1_80};

// MARK: The types

static const srtp_cipher_type_t aes_icm_128 = {
    icm_alloc, icm_dealloc, icm_init, NULL, icm_encrypt, icm_encrypt, icm_set_iv, NULL,
    "AES-128 counter mode on OpenSSL EVP (Tessera)", &icm_128_b2, SRTP_AES_ICM_128};
static const srtp_cipher_type_t aes_icm_192 = {
    icm_alloc, icm_dealloc, icm_init, NULL, icm_encrypt, icm_encrypt, icm_set_iv, NULL,
    "AES-192 counter mode on OpenSSL EVP (Tessera)", &icm_192_kdf, SRTP_AES_ICM_192};
static const srtp_cipher_type_t aes_icm_256 = {
    icm_alloc, icm_dealloc, icm_init, NULL, icm_encrypt, icm_encrypt, icm_set_iv, NULL,
    "AES-256 counter mode on OpenSSL EVP (Tessera)", &icm_256_keystream, SRTP_AES_ICM_256};
static const srtp_cipher_type_t aes_gcm_128 = {
    gcm_alloc, gcm_dealloc, gcm_init, gcm_set_aad, gcm_encrypt, gcm_decrypt, gcm_set_iv, gcm_get_tag,
    "AES-128 GCM on OpenSSL EVP (Tessera)", &gcm_128_rtp, SRTP_AES_GCM_128};
static const srtp_cipher_type_t aes_gcm_256 = {
    gcm_alloc, gcm_dealloc, gcm_init, gcm_set_aad, gcm_encrypt, gcm_decrypt, gcm_set_iv, gcm_get_tag,
    "AES-256 GCM on OpenSSL EVP (Tessera)", &gcm_256_rtp, SRTP_AES_GCM_256};
static const srtp_auth_type_t hmac_sha1 = {
    hmac_alloc, hmac_dealloc, hmac_init, hmac_compute, hmac_update, hmac_start,
    "HMAC-SHA1 on OpenSSL EVP (Tessera)", &hmac_case_1, SRTP_HMAC_SHA1};

const struct srtp_cipher_type_t *tessera_srtp_openssl_cipher_type(int id) {
    switch (id) {
    case SRTP_AES_ICM_128: return &aes_icm_128;
    case SRTP_AES_ICM_192: return &aes_icm_192;
    case SRTP_AES_ICM_256: return &aes_icm_256;
    case SRTP_AES_GCM_128: return &aes_gcm_128;
    case SRTP_AES_GCM_256: return &aes_gcm_256;
    default: return NULL;
    }
}

const struct srtp_auth_type_t *tessera_srtp_openssl_auth_type(void) { return &hmac_sha1; }

int tessera_srtp_use_openssl(void) {
    if (!algorithms_ready()) return srtp_err_status_init_fail;
    const srtp_cipher_type_t *ciphers[] = {&aes_icm_128, &aes_icm_192, &aes_icm_256, &aes_gcm_128, &aes_gcm_256};
    for (size_t i = 0; i < sizeof ciphers / sizeof ciphers[0]; i++) {
        srtp_err_status_t status = srtp_replace_cipher_type(ciphers[i], ciphers[i]->id);
        if (status != srtp_err_status_ok) return (int)status;
    }
    return (int)srtp_replace_auth_type(&hmac_sha1, SRTP_HMAC_SHA1);
}
