/* longitudinal_ingest.c — roster, id map and packed per-individual state
 * shared by `window` and `cumulative` (see longitudinal.h). */
#include "synth/longitudinal.h"

#include "core/dp_error.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define LINGEST_MAGIC 0x474e494cu   /* "LING" */

/* SipHash-2-4 under a fixed public key.  The key only spreads ids over the
 * table; no output depends on it (the table is never iterated and is
 * rebuilt on restore).  Being public, it does not stop a producer who
 * crafts colliding ids from slowing lookups down — the roster is fixed
 * at step 1 by the stream's own producers, which bounds that exposure. */
static const unsigned char LINGEST_HASH_KEY[crypto_shorthash_KEYBYTES] = {
    'd', 'p', 's', 't', 'r', 'e', 'a', 'm', '.', 'r', 'o', 's', 't', 'e', 'r', '1'};

unsigned dp_bits_for(uint64_t m)
{
    unsigned b = 0;
    while (b < 64 && (m - 1) >> b)
        b++;
    return b ? b : 1;
}

static uint64_t id_hash(const void *id, size_t len)
{
    unsigned char h[crypto_shorthash_BYTES];
    crypto_shorthash(h, id, len, LINGEST_HASH_KEY);
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | h[i];
    return v;
}

int dp_lingest_init(dp_lingest *li, uint64_t horizon, uint32_t categories, uint32_t hist_len,
                    unsigned aux_bits, dp_impute_policy impute, uint32_t impute_value,
                    char *errstr, size_t errstr_size)
{
    memset(li, 0, sizeof *li);
    if (horizon < 1)
        return dp_err(errstr, errstr_size, DP_EINVAL, "horizon must be >= 1");
    if (categories < 2)
        return dp_err(errstr, errstr_size, DP_EINVAL, "categories must be >= 2");
    if (hist_len < 1)
        return dp_err(errstr, errstr_size, DP_EINVAL, "history length must be >= 1");
    uint64_t mod = 1;
    for (uint32_t i = 0; i < hist_len; i++) {
        if (mod > ((uint64_t)1 << 32) / categories)
            return dp_err(errstr, errstr_size, DP_ERANGE,
                          "categories^k = %u^%u exceeds 2^32", categories, hist_len);
        mod *= categories;
    }
    unsigned hb = dp_bits_for(mod);
    if (hb + aux_bits > 64)
        return dp_err(errstr, errstr_size, DP_ERANGE, "per-individual state exceeds 64 bits");
    if (impute == DP_IMPUTE_FIXED && impute_value >= categories)
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      "impute value %u outside 0..%u", impute_value, categories - 1);
    li->horizon = horizon;
    li->categories = categories;
    li->hist_len = hist_len;
    li->hist_mod = mod;
    li->hist_bits = hb;
    li->aux_bits = aux_bits;
    li->impute = impute;
    li->impute_value = impute_value;
    li->open_step = 1;
    dp_packed_init(&li->state, hb + aux_bits);
    dp_packed_init(&li->reported, 1);
    li->id_off = calloc(1, sizeof *li->id_off);
    li->off_cap = 1;
    if (!li->id_off)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    return DP_OK;
}

void dp_lingest_free(dp_lingest *li)
{
    dp_packed_free(&li->state);
    dp_packed_free(&li->reported);
    free(li->id_bytes);
    free(li->id_off);
    free(li->table);
    memset(li, 0, sizeof *li);
}

/* Slot of `id` in the table, or of the empty slot where it would go. */
static size_t table_find(const dp_lingest *li, const void *id, size_t len, int *found)
{
    size_t mask = li->table_cap - 1;
    size_t s = (size_t)id_hash(id, len) & mask;
    for (;;) {
        uint32_t e = li->table[s];
        if (e == 0) {
            *found = 0;
            return s;
        }
        size_t i = e - 1;
        size_t l = (size_t)(li->id_off[i + 1] - li->id_off[i]);
        if (l == len && (len == 0 || memcmp(li->id_bytes + li->id_off[i], id, len) == 0)) {
            *found = 1;
            return s;
        }
        s = (s + 1) & mask;
    }
}

static int table_rebuild(dp_lingest *li, size_t cap)
{
    uint32_t *t = calloc(cap, sizeof *t);
    if (!t)
        return DP_ENOMEM;
    free(li->table);
    li->table = t;
    li->table_cap = cap;
    for (size_t i = 0; i < li->n; i++) {
        int found;
        size_t s = table_find(li, li->id_bytes + li->id_off[i],
                              (size_t)(li->id_off[i + 1] - li->id_off[i]), &found);
        li->table[s] = (uint32_t)(i + 1);
    }
    return DP_OK;
}

/* Append an id to the roster (index li->n).  Keeps the load factor <= 1/2. */
static int roster_append(dp_lingest *li, const void *id, size_t len)
{
    if (li->n >= UINT32_MAX - 1)
        return DP_ERANGE;
    if (li->id_len + len > li->id_cap) {
        size_t cap = li->id_cap ? li->id_cap : 256;
        while (cap < li->id_len + len)
            cap *= 2;
        uint8_t *p = realloc(li->id_bytes, cap);
        if (!p)
            return DP_ENOMEM;
        li->id_bytes = p;
        li->id_cap = cap;
    }
    if (li->n + 2 > li->off_cap) {
        size_t cap = li->off_cap * 2 + 16;
        uint64_t *p = realloc(li->id_off, cap * sizeof *p);
        if (!p)
            return DP_ENOMEM;
        li->id_off = p;
        li->off_cap = cap;
    }
    int rc = dp_packed_resize(&li->state, li->n + 1);
    if (rc == DP_OK)
        rc = dp_packed_resize(&li->reported, li->n + 1);
    if (rc != DP_OK)
        return rc;
    if (len)
        memcpy(li->id_bytes + li->id_len, id, len);
    li->id_len += len;
    li->id_off[li->n + 1] = li->id_len;
    li->n++;
    if (2 * li->n > li->table_cap) {
        /* The state arrays stay at n; a failed rebuild leaves the table
         * for the old n, so undo the append to stay consistent. */
        rc = table_rebuild(li, li->table_cap ? li->table_cap * 2 : 64);
        if (rc != DP_OK) {
            li->n--;
            li->id_len -= len;
            return rc;
        }
    } else {
        int found;
        size_t s = table_find(li, id, len, &found);
        li->table[s] = (uint32_t)li->n;
    }
    return DP_OK;
}

static void record_value(dp_lingest *li, size_t i, uint64_t v)
{
    uint64_t word = dp_packed_get(&li->state, i);
    uint64_t hist = word & dp_packed_mask_(li->hist_bits);
    uint64_t aux = word >> li->hist_bits;
    hist = (hist * li->categories + v) % li->hist_mod;
    dp_packed_set(&li->state, i, hist | (li->aux_bits ? aux << li->hist_bits : 0));
}

int dp_lingest_offer(dp_lingest *li, const dp_update *u, dp_reject_reason *reason)
{
    *reason = DP_REJECT_NONE;
    if (li->open_step > li->horizon) {
        *reason = DP_REJECT_EXHAUSTED;
        return DP_OK;
    }
    if (u->kind != DP_UPDATE_REPORT || u->payload.kind != DP_PAYLOAD_CATEGORY) {
        *reason = DP_REJECT_WRONG_KIND;
        return DP_OK;
    }
    if (!u->entity_id) {
        *reason = DP_REJECT_MALFORMED;
        return DP_OK;
    }
    if (u->step < li->open_step) {
        *reason = DP_REJECT_LATE;
        return DP_OK;
    }
    if (u->step > li->open_step) {
        *reason = DP_REJECT_FUTURE_STEP;
        return DP_OK;
    }
    if (u->payload.category < 0 || (uint64_t)u->payload.category >= li->categories) {
        *reason = DP_REJECT_OUT_OF_DOMAIN;
        return DP_OK;
    }
    int found = 0;
    size_t slot = 0, idx;
    if (li->table_cap)
        slot = table_find(li, u->entity_id, u->entity_id_len, &found);
    if (found) {
        idx = li->table[slot] - 1;
        if (dp_packed_get(&li->reported, idx)) {
            *reason = DP_REJECT_DUPLICATE_REPORT;
            return DP_OK;
        }
    } else if (li->open_step == 1) {
        int rc = roster_append(li, u->entity_id, u->entity_id_len);
        if (rc == DP_ERANGE) {
            /* Roster index space full: the individual cannot be tracked. */
            *reason = DP_REJECT_UNKNOWN_ENTITY;
            return DP_OK;
        }
        if (rc != DP_OK)
            return rc;
        idx = li->n - 1;
    } else {
        *reason = DP_REJECT_UNKNOWN_ENTITY;
        return DP_OK;
    }
    record_value(li, idx, (uint64_t)u->payload.category);
    dp_packed_set(&li->reported, idx, 1);
    li->n_reported++;
    return DP_OK;
}

uint64_t dp_lingest_impute_missing(dp_lingest *li)
{
    uint64_t imputed = 0;
    for (size_t i = 0; i < li->n; i++) {
        if (dp_packed_get(&li->reported, i)) {
            dp_packed_set(&li->reported, i, 0);
            continue;
        }
        uint64_t v = li->impute == DP_IMPUTE_FIXED ? li->impute_value
                                                   : dp_lingest_hist(li, i) % li->categories;
        record_value(li, i, v);
        imputed++;
    }
    li->n_reported = 0;
    return imputed;
}

void dp_lingest_advance(dp_lingest *li) { li->open_step++; }

int dp_lingest_roster_complete(const dp_lingest *li)
{
    /* At step 1 the roster is still being formed: it is never "complete". */
    return li->open_step > 1 && li->open_step <= li->horizon && li->n_reported == li->n;
}

size_t dp_lingest_bytes(const dp_lingest *li)
{
    return dp_packed_bytes(&li->state) + dp_packed_bytes(&li->reported) + li->id_cap +
           li->off_cap * sizeof(uint64_t) + li->table_cap * sizeof(uint32_t);
}

int dp_lingest_save(const dp_lingest *li, dp_buf *b)
{
    dp_buf_put_u32(b, LINGEST_MAGIC);
    dp_buf_put_u64(b, li->horizon);
    dp_buf_put_u32(b, li->categories);
    dp_buf_put_u32(b, li->hist_len);
    dp_buf_put_u32(b, li->aux_bits);
    dp_buf_put_u32(b, (uint32_t)li->impute);
    dp_buf_put_u32(b, li->impute_value);
    dp_buf_put_u64(b, li->open_step);
    dp_buf_put_u64(b, li->n);
    dp_buf_put_u64(b, li->n_reported);
    dp_buf_put_blob(b, li->id_bytes, li->id_len);
    for (size_t i = 1; i <= li->n; i++)
        dp_buf_put_u64(b, li->id_off[i]);
    dp_packed_save(&li->state, b);
    dp_packed_save(&li->reported, b);
    return dp_buf_status(b);
}

int dp_lingest_load(dp_lingest *li, dp_reader *r)
{
    if (dp_reader_u32(r) != LINGEST_MAGIC || dp_reader_u64(r) != li->horizon ||
        dp_reader_u32(r) != li->categories || dp_reader_u32(r) != li->hist_len ||
        dp_reader_u32(r) != li->aux_bits || dp_reader_u32(r) != (uint32_t)li->impute ||
        dp_reader_u32(r) != li->impute_value)
        return DP_ECORRUPT;   /* snapshot of a differently configured synthesizer */
    if (li->n != 0)
        return DP_ESTATE;
    uint64_t open_step = dp_reader_u64(r);
    uint64_t n = dp_reader_u64(r);
    uint64_t n_reported = dp_reader_u64(r);
    size_t id_len;
    const uint8_t *ids = dp_reader_blob(r, &id_len);
    if (dp_reader_status(r) != DP_OK || !ids || n >= UINT32_MAX - 1 || n_reported > n ||
        open_step < 1 || open_step > li->horizon + 1 || n > (r->len - r->off) / 8)
        return DP_ECORRUPT;
    li->id_bytes = malloc(id_len ? id_len : 1);
    uint64_t *off = realloc(li->id_off, ((size_t)n + 1) * sizeof *off);
    if (!li->id_bytes || !off) {
        if (off)
            li->id_off = off;
        return DP_ENOMEM;
    }
    li->id_off = off;
    li->off_cap = (size_t)n + 1;
    memcpy(li->id_bytes, ids, id_len);
    li->id_len = li->id_cap = id_len;
    li->id_off[0] = 0;
    for (size_t i = 1; i <= n; i++) {
        li->id_off[i] = dp_reader_u64(r);
        if (li->id_off[i] < li->id_off[i - 1] || li->id_off[i] > id_len)
            return DP_ECORRUPT;
    }
    if (n > 0 && li->id_off[n] != id_len)
        return DP_ECORRUPT;
    int rc = dp_packed_load(&li->state, r);
    if (rc == DP_OK)
        rc = dp_packed_load(&li->reported, r);
    if (rc != DP_OK)
        return rc;
    if (li->state.n != n || li->reported.n != n)
        return DP_ECORRUPT;
    /* Histories index dense per-pattern arrays: every one must be in range. */
    size_t nrep = 0;
    for (size_t i = 0; i < n; i++) {
        if (dp_packed_get(&li->state, i) % ((uint64_t)1 << li->hist_bits) >= li->hist_mod)
            return DP_ECORRUPT;
        nrep += (size_t)dp_packed_get(&li->reported, i);
    }
    if (nrep != n_reported)
        return DP_ECORRUPT;
    li->n = (size_t)n;
    li->n_reported = (size_t)n_reported;
    li->open_step = open_step;
    size_t cap = 64;
    while (cap < 2 * li->n)
        cap *= 2;
    rc = table_rebuild(li, cap);
    if (rc != DP_OK)
        return rc;
    /* Duplicate ids would make lookups ambiguous: refuse them. */
    size_t count = 0;
    for (size_t s = 0; s < li->table_cap; s++)
        count += li->table[s] != 0;
    return count == li->n ? DP_OK : DP_ECORRUPT;
}
