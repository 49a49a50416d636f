/* longitudinal_ingest.c — roster, id map and packed per-individual state
 * shared by `window` and `cumulative` (see longitudinal.h). */
#include "synth/longitudinal/longitudinal.h"

#include "core/dp_error.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define LINGEST_MAGIC_V1 0x474e494cu   /* "LING": id offsets as u64 (read only) */
#define LINGEST_MAGIC    0x324e494cu   /* "LIN2": id lengths as varints — the
                                        * roster is most of a snapshot, and
                                        * 8-byte offsets were half of it */

unsigned dp_bits_for(uint64_t m)
{
    unsigned b = 0;
    while (b < 64 && (m - 1) >> b)
        b++;
    return b ? b : 1;
}

/* --- id hashing -----------------------------------------------------------------
 *
 * The id → index table is an ingest-speed device only: it is never
 * iterated for output, is rebuilt from the roster on restore, and every hit
 * is confirmed by comparing the id bytes.  So its hash needs spread, not
 * secrecy, and it runs once per update (the hot path: one lookup per
 * report).  A multiply/xor-shift hash over 8-byte words with a splitmix64
 * finaliser costs a few ns for typical ids, against ~25 ns for SipHash.
 *
 * The seed is fixed and public.  A keyed PRF would not help here either:
 * the former SipHash key was public too, so a producer who crafts colliding
 * ids could already lengthen probe sequences.  That exposure is bounded
 * because the roster is fixed at step 1 by the stream's own producers
 * (later unknown ids are rejected after one failed probe sequence), and it
 * costs time only — never a wrong answer or a different output. */
#define LINGEST_HASH_SEED 0x6470737472656d31u   /* "dpstrem1", public */
#define LINGEST_HASH_K1   0x9e3779b97f4a7c15u
#define LINGEST_HASH_K2   0xc2b2ae3d27d4eb4fu

static inline uint64_t load_u64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline uint64_t load_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* splitmix64's finaliser: a bijection in which every input bit reaches
 * every output bit, so both the low (slot) and high (tag) bits spread. */
static inline uint64_t hash_fmix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9u;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

static inline uint64_t id_hash(const void *id, size_t len)
{
    const uint8_t *p = id;
    uint64_t h = LINGEST_HASH_SEED ^ ((uint64_t)len * LINGEST_HASH_K1);
    if (len > 8) {
        const uint8_t *last = p + len - 8;
        for (; p < last; p += 8) {
            h = (h ^ load_u64(p)) * LINGEST_HASH_K2;
            h ^= h >> 29;
        }
        h = (h ^ load_u64(last)) * LINGEST_HASH_K2;   /* may overlap the previous word */
    } else if (len >= 4) {
        h ^= load_u32(p) << 32 | load_u32(p + len - 4);
    } else if (len > 0) {
        h ^= (uint64_t)p[0] << 16 | (uint64_t)p[len >> 1] << 8 | p[len - 1];
    }
    return hash_fmix(h);
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
    li->hist_top = (uint32_t)(mod / categories);
    li->hist_bits = hb;
    li->hist_mask = dp_packed_mask_(hb);
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

/* --- id → index table ------------------------------------------------------------
 *
 * Linear probing over 16-byte slots.  An id of at most 11 bytes is stored
 * in its slot (key = bytes 0-7, tag = bytes 8-10 | length << 24), so a
 * lookup is one random access and an exact comparison; that is the common
 * case (e.g. "u1234567") and the one random arrival order used to pay three
 * misses for (the table, the id's offset, its bytes: bench/RESULTS.md).  A
 * longer id's slot holds its 64-bit hash and 24 more hash bits (tag =
 * 0xff << 24 | …), which dismiss a colliding probe without touching that
 * id's offset and bytes; a match is confirmed against the bytes.  The slot
 * comes from the hash's low bits; the table's layout never reaches an
 * output (lookups answer the same whatever it is). */

#define SLOT_INLINE_MAX 11
#define SLOT_LONG 0xffu

/* Bytes p[0..len), len <= 8, as a little-endian word padded with zeros —
 * what a memcpy into a zeroed buffer and a load would give, without the
 * store-forwarding stall that costs (perf: a fifth of table_find).  The
 * overlapping loads put each byte at its own position; overlaps OR the
 * same byte with itself. */
static inline uint64_t load_short(const uint8_t *p, size_t len)
{
    if (len == 8)
        return load_u64(p);
    if (len >= 4)
        return load_u32(p) | load_u32(p + len - 4) << (8 * (len - 4));
    if (len > 0)
        return (uint64_t)p[0] | (uint64_t)p[len >> 1] << (8 * (len >> 1)) | (uint64_t)p[len - 1] << (8 * (len - 1));
    return 0;
}

/* The key and tag an id has in its slot: bytes 0-7 little-endian, bytes
 * 8-10 and the length (both zero-padded). */
static inline void slot_key(const uint8_t *id, size_t len, uint64_t h, uint64_t *key, uint32_t *tag)
{
    if (len <= SLOT_INLINE_MAX) {
        size_t head = len < 8 ? len : 8;
        *key = load_short(id, head);
        *tag = (uint32_t)load_short(id + head, len - head) | (uint32_t)len << 24;
    } else {
        *key = h;
        *tag = SLOT_LONG << 24 | (uint32_t)(h >> 40);
    }
}

static inline size_t entry_index(const dp_lingest_slot *e) { return (size_t)e->idx1 - 1; }

/* a[0..len) == b[0..len), inline: ids are short, and a library memcmp
 * call costs more than the comparison.  Same overlapping-word trick as
 * id_hash. */
static inline int id_equal(const uint8_t *a, const uint8_t *b, size_t len)
{
    if (len >= 8) {
        for (size_t o = 0; o + 8 < len; o += 8)
            if (load_u64(a + o) != load_u64(b + o))
                return 0;
        return load_u64(a + len - 8) == load_u64(b + len - 8);
    }
    if (len >= 4)
        return load_u32(a) == load_u32(b) && load_u32(a + len - 4) == load_u32(b + len - 4);
    for (size_t o = 0; o < len; o++)
        if (a[o] != b[o])
            return 0;
    return 1;
}

/* Slot of the id with hash h in the table, or of the empty slot where it
 * would go.  table_cap must be > 0. */
static inline size_t table_find(const dp_lingest *li, const void *id, size_t len, uint64_t h,
                                int *found)
{
    size_t mask = li->table_cap - 1;
    size_t s = (size_t)h & mask;
    uint64_t key;
    uint32_t tag;
    slot_key(id, len, h, &key, &tag);
    for (;;) {
        const dp_lingest_slot *e = &li->table[s];
        if (e->idx1 == 0) {
            *found = 0;
            return s;
        }
        if (e->key == key && e->tag == tag) {
            if (len <= SLOT_INLINE_MAX) {   /* the id itself matched */
                *found = 1;
                return s;
            }
            size_t i = entry_index(e);
            size_t l = (size_t)(li->id_off[i + 1] - li->id_off[i]);
            if (l == len && id_equal(li->id_bytes + li->id_off[i], id, len)) {
                *found = 1;
                return s;
            }
        }
        s = (s + 1) & mask;
    }
}

static inline void table_set(dp_lingest *li, size_t s, const void *id, size_t len, uint64_t h, size_t index)
{
    dp_lingest_slot *e = &li->table[s];
    slot_key(id, len, h, &e->key, &e->tag);
    e->idx1 = (uint32_t)(index + 1);
}

/* A zeroed table of cap entries.  Lookups hit it at random, so on Linux ask
 * for transparent huge pages where the table spans several: a TLB miss per
 * lookup otherwise adds a page walk to the cache miss.  Only a hint; the
 * table's contents and every output are the same either way. */
static dp_lingest_slot *table_alloc(size_t cap)
{
    size_t bytes = cap * sizeof(dp_lingest_slot);
#if defined(MADV_HUGEPAGE)
    const size_t huge = (size_t)2 << 20;
    if (bytes >= 2 * huge) {
        void *p = NULL;
        if (posix_memalign(&p, huge, bytes) != 0)
            return NULL;
        (void)madvise(p, bytes, MADV_HUGEPAGE);   /* advisory: failure only costs speed */
        memset(p, 0, bytes);
        return p;
    }
#endif
    return calloc(cap, sizeof(dp_lingest_slot));
}

/* A cache prefetch hint (rw: 0 read, 1 write); never changes a result. */
#if defined(__GNUC__) || defined(__clang__)
#define lingest_prefetch(p, rw) __builtin_prefetch((p), (rw), 3)
#else
#define lingest_prefetch(p, rw) ((void)(p))
#endif

static int table_rebuild(dp_lingest *li, size_t cap)
{
    dp_lingest_slot *t = table_alloc(cap);
    if (!t)
        return DP_ENOMEM;
    free(li->table);
    li->table = t;
    li->table_cap = cap;
    /* Re-insert in index order (so the table is the same whatever the
     * history of rebuilds), hashing REBUILD_DIST ids ahead and prefetching
     * their slots: a rebuild writes n random slots of the new table, which
     * at step 1 (doublings up to 2^21 entries) would otherwise cost one
     * miss per id, as much again as the roster's own lookups. */
    enum { REBUILD_DIST = 16, REBUILD_RING = 32 };
    uint64_t hs[REBUILD_RING];
    size_t mask = cap - 1;
    for (size_t i = 0; i < li->n + REBUILD_DIST; i++) {
        if (i < li->n) {
            uint64_t h = id_hash(li->id_bytes + li->id_off[i], (size_t)(li->id_off[i + 1] - li->id_off[i]));
            hs[i % REBUILD_RING] = h;
            lingest_prefetch(t + ((size_t)h & mask), 1);
        }
        if (i < REBUILD_DIST)
            continue;
        size_t k = i - REBUILD_DIST;
        const uint8_t *id = li->id_bytes + li->id_off[k];
        size_t len = (size_t)(li->id_off[k + 1] - li->id_off[k]);
        uint64_t h = hs[k % REBUILD_RING];
        int found;
        size_t s = table_find(li, id, len, h, &found);
        table_set(li, s, id, len, h, k);
    }
    return DP_OK;
}

/* Append an id (hash h; `slot` from a failed table_find, unused while the
 * table is empty) to the roster as index li->n.  Keeps the load factor
 * <= 1/2. */
static int roster_append(dp_lingest *li, const void *id, size_t len, uint64_t h, size_t slot)
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
        /* The table is unchanged since the lookup that chose `slot`. */
        table_set(li, slot, id, len, h, li->n - 1);
    }
    return DP_OK;
}

/* Shift v into individual i's history: hist·c + v mod c^hist_len.  The
 * top digit is hist / c^(hist_len−1) and hist < c^hist_len <= 2^32, so a
 * 32-bit division suffices (several times cheaper than the 64-bit modulo
 * it replaces; the result is the same number). */
static inline void record_value(dp_lingest *li, size_t i, uint64_t v)
{
    uint64_t word = dp_packed_get(&li->state, i);
    uint64_t hist = word & li->hist_mask;
    uint64_t top = (uint32_t)hist / li->hist_top;
    hist = (hist - top * li->hist_top) * li->categories + v;
    dp_packed_set(&li->state, i, (word & ~li->hist_mask) | hist);   /* aux bits kept */
}

/* The checks that need no roster lookup, in the order dp_lingest_offer
 * applies them.  They read only the open step and the configuration, which
 * no update changes (only close/advance does), so a batch may run them
 * ahead of applying the updates before. */
static inline dp_reject_reason offer_precheck(const dp_lingest *li, const dp_update *u)
{
    if (li->open_step > li->horizon)
        return DP_REJECT_EXHAUSTED;
    if (u->kind != DP_UPDATE_REPORT || u->payload.kind != DP_PAYLOAD_CATEGORY)
        return DP_REJECT_WRONG_KIND;
    if (!u->entity_id)
        return DP_REJECT_MALFORMED;
    if (u->step < li->open_step)
        return DP_REJECT_LATE;
    if (u->step > li->open_step)
        return DP_REJECT_FUTURE_STEP;
    if (u->payload.category < 0 || (uint64_t)u->payload.category >= li->categories)
        return DP_REJECT_OUT_OF_DOMAIN;
    return DP_REJECT_NONE;
}

/* Apply an update that passed offer_precheck; h = id_hash of its id. */
static inline int offer_apply(dp_lingest *li, const dp_update *u, uint64_t h, dp_reject_reason *reason)
{
    *reason = DP_REJECT_NONE;
    int found = 0;
    size_t slot = 0, idx;
    if (li->table_cap)
        slot = table_find(li, u->entity_id, u->entity_id_len, h, &found);
    if (found) {
        idx = entry_index(&li->table[slot]);
        if (dp_packed_get_bit(&li->reported, idx)) {
            *reason = DP_REJECT_DUPLICATE_REPORT;
            return DP_OK;
        }
    } else if (li->open_step == 1) {
        int rc = roster_append(li, u->entity_id, u->entity_id_len, h, slot);
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
    dp_packed_set_bit(&li->reported, idx, 1);
    li->n_reported++;
    return DP_OK;
}

int dp_lingest_offer(dp_lingest *li, const dp_update *u, dp_reject_reason *reason)
{
    *reason = offer_precheck(li, u);
    if (*reason != DP_REJECT_NONE)
        return DP_OK;
    return offer_apply(li, u, id_hash(u->entity_id, u->entity_id_len), reason);
}

/* --- batched ingest -----------------------------------------------------------------
 *
 * At n = 10^6 most of an update's time is the one random access into the
 * 32 MB id table (for an id of at most 11 bytes, the only one: the id is in
 * its slot).  One update at a time, each miss is waited for in turn.
 * With a batch the next updates are known, so PF_DIST updates ahead the
 * batch runs the pre-checks, hashes the id and prefetches its table slot;
 * by the time the update is applied the slot is (usually) in cache, and
 * the misses of consecutive updates overlap instead of adding up.
 *
 * The prefetch is a hint only: it never changes what is read or written.
 * Every update is applied strictly in order by the same code as
 * dp_lingest_offer (offer_apply, with the hash computed ahead), so an id
 * inserted by an earlier update of the batch (step 1), a duplicate within
 * the batch and a table rebuilt mid-batch all behave exactly as
 * sequentially; a prefetch into a table since rebuilt only wastes a
 * cache line.  The pre-checks may run ahead because they read only the
 * open step and the configuration (offer_precheck).
 *
 * Measured on the 2-vCPU EPYC VM (bench/RESULTS.md): 16 ahead hides the
 * table miss in panel order (steady steps 6-9 -> 15-25 M/s).  In random
 * arrival order the id's offset and bytes were two more misses per update
 * (3.5-4.5 M/s) that prefetch stages did not hide; short ids stored in the
 * slot remove them (2-4x faster on a loaded machine, bench/RESULTS.md).
 * Behind the Kafka consumer (whose fetch thread streams the input through
 * the same caches and memory) 16 ahead was too short: 48 took the
 * processor thread's steady CPU 8 % lower in bench_throughput, 96 no
 * further (bench/RESULTS.md, throughput, 2026-11-28 22:00 UTC). */
#define PF_DIST 48
#define PF_RING 64   /* power of two > PF_DIST: hashes of the updates in flight */

/* Pre-check update u and, if it passes, hash its id and prefetch its slot. */
static inline void batch_look_ahead(const dp_lingest *li, const dp_update *u, dp_reject_reason *reason,
                                    uint64_t *h)
{
    *reason = offer_precheck(li, u);
    if (*reason != DP_REJECT_NONE)
        return;
    *h = id_hash(u->entity_id, u->entity_id_len);
    if (li->table_cap)
        lingest_prefetch(li->table + ((size_t)*h & (li->table_cap - 1)), 0);
}

int dp_lingest_offer_batch(dp_lingest *li, const dp_update *u, size_t n, dp_reject_reason *reasons)
{
    uint64_t h[PF_RING];
    for (size_t j = 0; j < n && j < PF_DIST; j++)
        batch_look_ahead(li, &u[j], &reasons[j], &h[j % PF_RING]);
    for (size_t i = 0; i < n; i++) {
        if (i + PF_DIST < n)
            batch_look_ahead(li, &u[i + PF_DIST], &reasons[i + PF_DIST], &h[(i + PF_DIST) % PF_RING]);
        if (reasons[i] != DP_REJECT_NONE)
            continue;   /* refused by the pre-check: the reason stands */
        int rc = offer_apply(li, &u[i], h[i % PF_RING], &reasons[i]);
        if (rc != DP_OK)
            return rc;
    }
    return DP_OK;
}

uint64_t dp_lingest_impute_missing(dp_lingest *li)
{
    uint64_t imputed = 0;
    for (size_t i = 0; i < li->n; i++) {
        if (dp_packed_get_bit(&li->reported, i)) {
            dp_packed_set_bit(&li->reported, i, 0);
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
        dp_buf_put_varint(b, li->id_off[i] - li->id_off[i - 1]);
    dp_packed_save(&li->state, b);
    dp_packed_save(&li->reported, b);
    return dp_buf_status(b);
}

int dp_lingest_load(dp_lingest *li, dp_reader *r)
{
    uint32_t magic = dp_reader_u32(r);
    if ((magic != LINGEST_MAGIC && magic != LINGEST_MAGIC_V1) || dp_reader_u64(r) != li->horizon ||
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
    size_t min_per_id = magic == LINGEST_MAGIC ? 1 : 8;   /* bytes of one length / offset */
    if (dp_reader_status(r) != DP_OK || !ids || n >= UINT32_MAX - 1 || n_reported > n ||
        open_step < 1 || open_step > li->horizon + 1 || n > (r->len - r->off) / min_per_id)
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
        if (magic == LINGEST_MAGIC) {
            uint64_t len = dp_reader_varint(r);
            if (len > id_len - li->id_off[i - 1])
                return DP_ECORRUPT;
            li->id_off[i] = li->id_off[i - 1] + len;
        } else {
            li->id_off[i] = dp_reader_u64(r);
        }
        if (dp_reader_status(r) != DP_OK || li->id_off[i] < li->id_off[i - 1] || li->id_off[i] > id_len)
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
        count += li->table[s].idx1 != 0;
    return count == li->n ? DP_OK : DP_ECORRUPT;
}

int dp_lingest_close_begin(dp_lingest *li, uint64_t step, dp_stats *out)
{
    if (step != li->open_step || step > li->horizon)
        return DP_ESTATE;
    dp_stats_clear(out, step);
    out->scalars[1] = (int64_t)dp_lingest_impute_missing(li);
    out->scalars[0] = (int64_t)li->n;
    return DP_OK;
}

int dp_lingest_half_update(dp_ingest_half *in, const dp_update *u, dp_reject_reason *reason)
{
    return dp_lingest_offer((dp_lingest *)in, u, reason);
}

int dp_lingest_half_update_batch(dp_ingest_half *in, const dp_update *u, size_t n, dp_reject_reason *reasons)
{
    return dp_lingest_offer_batch((dp_lingest *)in, u, n, reasons);
}

int dp_lingest_half_roster_complete(const dp_ingest_half *in)
{
    return dp_lingest_roster_complete((const dp_lingest *)in);
}

int dp_lingest_half_save(const dp_ingest_half *in, dp_buf *b)
{
    return dp_lingest_save((const dp_lingest *)in, b);
}

int dp_lingest_half_load(dp_ingest_half *in, dp_reader *r)
{
    return dp_lingest_load((dp_lingest *)in, r);
}

uint64_t dp_lingest_half_open_step(const dp_ingest_half *in)
{
    return ((const dp_lingest *)in)->open_step;
}
