/* seal.c — see seal.h for the construction and why its nonce is safe.
 *
 * Owns: nothing (keys are the caller's; subkeys are wiped after use).
 * Calls: libsodium. */
#include "stream/seal.h"

#include <sodium.h>
#include <string.h>

#include "core/dp_error.h"

static void derive_subkey(const dp_key *k, const char *label, uint8_t out[32])
{
    crypto_generichash(out, 32, (const uint8_t *)label, strlen(label), k->bytes, sizeof k->bytes);
}

static void put_le64(uint8_t b[8], uint64_t v)
{
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
}

static void derive_nonce(const dp_key *k, const char *stream_id, size_t stream_id_len, uint64_t step,
                         const uint8_t *ad, size_t ad_len, const uint8_t *plain, size_t plain_len,
                         uint8_t nonce[DP_SEAL_NONCE_BYTES])
{
    static const char LABEL[] = "dpstream.state.nonce.v1";
    uint8_t nkey[32], h_ad[32], h_plain[32], le[8];
    derive_subkey(k, "dpstream.state.nonce-key.v1", nkey);
    crypto_generichash(h_ad, sizeof h_ad, ad, ad_len, NULL, 0);
    crypto_generichash(h_plain, sizeof h_plain, plain, plain_len, NULL, 0);
    crypto_generichash_state st;
    crypto_generichash_init(&st, nkey, sizeof nkey, DP_SEAL_NONCE_BYTES);
    crypto_generichash_update(&st, (const uint8_t *)LABEL, sizeof LABEL - 1);
    put_le64(le, stream_id_len);
    crypto_generichash_update(&st, le, 8);
    crypto_generichash_update(&st, (const uint8_t *)stream_id, stream_id_len);
    put_le64(le, step);
    crypto_generichash_update(&st, le, 8);
    crypto_generichash_update(&st, h_ad, sizeof h_ad);
    crypto_generichash_update(&st, h_plain, sizeof h_plain);
    crypto_generichash_final(&st, nonce, DP_SEAL_NONCE_BYTES);
    sodium_memzero(nkey, sizeof nkey);
    sodium_memzero(h_plain, sizeof h_plain);
}

int dp_seal(const dp_key *state_key, const char *stream_id, size_t stream_id_len, uint64_t step,
            const uint8_t *ad, size_t ad_len, const uint8_t *plain, size_t plain_len, dp_buf *out)
{
    uint8_t nonce[DP_SEAL_NONCE_BYTES], ekey[32];
    derive_nonce(state_key, stream_id, stream_id_len, step, ad, ad_len, plain, plain_len, nonce);
    dp_buf_put_bytes(out, nonce, sizeof nonce);
    /* reserve room for ciphertext + tag, then encrypt in place */
    size_t ct_off = out->len;
    for (size_t i = 0; i < plain_len + DP_SEAL_TAG_BYTES; i++)
        dp_buf_put_u8(out, 0);
    if (dp_buf_status(out) != DP_OK)
        return DP_ENOMEM;
    derive_subkey(state_key, "dpstream.state.aead-key.v1", ekey);
    unsigned long long clen = 0;
    crypto_aead_xchacha20poly1305_ietf_encrypt(out->data + ct_off, &clen, plain, plain_len, ad, ad_len,
                                               NULL, nonce, ekey);
    sodium_memzero(ekey, sizeof ekey);
    return DP_OK;
}

int dp_unseal(const dp_key *state_key, const uint8_t *ad, size_t ad_len,
              const uint8_t *sealed, size_t sealed_len, dp_buf *out,
              char *errstr, size_t errstr_size)
{
    if (sealed_len < DP_SEAL_OVERHEAD)
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "sealed snapshot shorter than its nonce and tag");
    size_t plain_len = sealed_len - DP_SEAL_OVERHEAD;
    size_t off = out->len;
    for (size_t i = 0; i < plain_len; i++)
        dp_buf_put_u8(out, 0);
    if (dp_buf_status(out) != DP_OK)
        return DP_ENOMEM;
    uint8_t ekey[32], none;
    /* an empty plaintext (an empty chunk) may leave out->data NULL */
    uint8_t *dst = plain_len ? out->data + off : &none;
    derive_subkey(state_key, "dpstream.state.aead-key.v1", ekey);
    unsigned long long mlen = 0;
    int rc = crypto_aead_xchacha20poly1305_ietf_decrypt(dst, &mlen, NULL,
                                                        sealed + DP_SEAL_NONCE_BYTES,
                                                        sealed_len - DP_SEAL_NONCE_BYTES, ad, ad_len,
                                                        sealed, ekey);
    sodium_memzero(ekey, sizeof ekey);
    if (rc != 0) {
        sodium_memzero(dst, plain_len);
        out->len = off;
        return dp_err(errstr, errstr_size, DP_ECORRUPT,
                      "snapshot does not authenticate under the configured state key");
    }
    return DP_OK;
}

void dp_mac(const dp_key *mac_key, const char *label, const uint8_t *ad, size_t ad_len, const uint8_t *data,
            size_t len, uint8_t out[DP_MAC_BYTES])
{
    uint8_t sub[32], n[8];
    crypto_generichash(sub, sizeof sub, (const uint8_t *)label, strlen(label), mac_key->bytes, sizeof mac_key->bytes);
    crypto_generichash_state h;
    crypto_generichash_init(&h, sub, sizeof sub, DP_MAC_BYTES);
    put_le64(n, (uint64_t)ad_len);
    crypto_generichash_update(&h, n, sizeof n);
    crypto_generichash_update(&h, ad, ad_len);
    crypto_generichash_update(&h, data, len);
    crypto_generichash_final(&h, out, DP_MAC_BYTES);
    sodium_memzero(sub, sizeof sub);
}
