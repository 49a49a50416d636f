/* adaptive_ingest.c — the ingest half of `adaptive` (adaptive.h): the
 * histogram H_i of step i's snapshot.  Every update needs an entity, and an
 * entity changes its tuple at most once per step (a second update in one
 * step is DUPLICATE_REPORT; the first stands).  What H_i holds is the
 * config's `snapshot` (adaptive_config.h, docs/privacy.md §7):
 *
 *   step_reports     (the w-event default) the REPORTs made at step i; the
 *                    map holds only this step's reporters and is emptied at
 *                    close, so one report is in exactly one snapshot.
 *                    INSERT and DELETE are WRONG_KIND: nothing stands to
 *                    delete.
 *   standing_values  (the user default) every entity's current value, one
 *                    tuple per user per snapshot (seed 003 §3):
 *                      REPORT  sets its value for this and later steps
 *                      INSERT  adds its tuple (USER_LIMIT if it already holds one)
 *                      DELETE  removes it (NOT_PRESENT unless the entity holds
 *                              exactly that value)
 *
 * Each decision depends on that entity's own history alone (docs/privacy.md
 * §1).  A value is a bin: a CATEGORY, or with `attributes` a ROW of indices
 * (mixed radix, the first attribute most significant). */
#include "synth/adaptive/adaptive.h"

#include "core/bytes_map.h"
#include "core/dp_error.h"
#include "core/vec.h"

#include <stdlib.h>
#include <string.h>

/* Snapshot formats of the entity table (docs/design.md §10):
 *   "ADI3" (written) — each entry a varint key length, the key and a u32
 *          value | GONE | OPEN, where OPEN says "reported in the open step"
 *          (a snapshot follows a close, and the held updates of the step it
 *          opened may already be in); the step of an earlier report is not
 *          stored — only the duplicate check reads it, and only against the
 *          open step — so an entity whose value did not change writes the
 *          same bytes at every step.
 *   "ADI2" (read only) — a u64 blob length, the key and a u64
 *          step << VALUE_BITS | GONE | value, the step of the last report. */
#define ADAPTIVE_INGEST_MAGIC    0x33494441u   /* "ADI3" */
#define ADAPTIVE_INGEST_MAGIC_V2 0x32494441u   /* "ADI2" */
#define MAX_ENTITY_BYTES 1024
#define VALUE_BITS 20                        /* categories <= 2^16 < 2^19 */
#define GONE ((uint64_t)1 << 19)              /* the entity's tuple was deleted */
#define VALUE_MASK (GONE - 1)
#define OPEN ((uint32_t)1 << 20)              /* ADI3: reported in the snapshot's open step */
/* In memory: step reported << STEP_SHIFT | DIRTY | GONE | value (step 0:
 * not in the open step); DIRTY: listed on m->dirty. */
#define DIRTY ((uint64_t)1 << 20)
#define STEP_SHIFT 21

/* One entity, in order of arrival; the map holds its index + 1, and
 * m->packed[index] its value (apart: the one word an update reads, 8 bytes
 * an entity).  key is the map's own copy (it stays put when the map grows). */
typedef struct adaptive_entity {
    const char *key;
    size_t      key_len;
    size_t      at;       /* its u32 in m->enc */
} adaptive_entity;

typedef struct adaptive_ingest {
    dp_adaptive_config cfg;
    uint64_t           open_step;
    dp_bytes_map       entities;   /* entity -> index into ent, + 1 */
    adaptive_entity   *ent;        /* ent_v.p, packed_v.p */
    uint64_t          *packed;
    dp_vec             ent_v, packed_v;
    size_t             n_ent;
    int64_t           *hist;       /* H: how many entities hold each value now */
    /* The last snapshot's entries, kept so that the next one rewrites only
     * what changed (a snapshot follows every close: docs/design.md §10):
     * enc holds ent[order[0..n_sorted)] encoded in key order; entities past
     * n_sorted arrived since, and those on dirty changed since. */
    dp_buf             enc;
    uint32_t          *order;
    size_t             n_sorted;
    uint32_t          *dirty;      /* dirty_v.p */
    dp_vec             dirty_v;
    size_t             n_dirty;
} adaptive_ingest;

static void reset_entities(adaptive_ingest *m)
{
    dp_bytes_map_free(&m->entities);
    dp_bytes_map_init(&m->entities);
    free(m->ent);
    free(m->packed);
    free(m->order);
    free(m->dirty);
    dp_buf_free(&m->enc);
    m->ent = NULL;
    m->packed = NULL;
    m->order = m->dirty = NULL;
    m->ent_v = m->packed_v = m->dirty_v = (dp_vec){NULL, 0};
    m->n_ent = m->n_sorted = m->n_dirty = 0;
}

int dp_adaptive_ingest_create(dp_ingest_half **out, const json_t *config, char *errstr, size_t errstr_size)
{
    *out = NULL;
    adaptive_ingest *m = calloc(1, sizeof *m);
    if (!m)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    int rc = dp_adaptive_config_parse(&m->cfg, config, errstr, errstr_size);
    if (rc != DP_OK) {
        free(m);
        return rc;
    }
    m->open_step = 1;
    dp_bytes_map_init(&m->entities);
    dp_buf_init(&m->enc);
    if (!(m->hist = calloc(m->cfg.categories, sizeof *m->hist))) {
        free(m);
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    }
    *out = (dp_ingest_half *)m;
    return DP_OK;
}

void dp_adaptive_ingest_destroy(dp_ingest_half *in)
{
    adaptive_ingest *m = (adaptive_ingest *)in;
    if (!m)
        return;
    reset_entities(m);
    free(m->hist);
    free(m);
}

static int mark_dirty(adaptive_ingest *m, size_t i)
{
    if ((m->packed[i] & DIRTY) || i >= m->n_sorted)
        return DP_OK;   /* already listed, or written in full by the next save */
    if (dp_vec_reserve(&m->dirty_v, m->n_dirty + 1, sizeof *m->dirty) != DP_OK)
        return DP_ENOMEM;
    m->dirty = m->dirty_v.p;
    m->dirty[m->n_dirty++] = (uint32_t)i;
    m->packed[i] |= DIRTY;
    return DP_OK;
}

/* The entity of key (a new one at step 0 if absent; *fresh says so); NULL
 * on out of memory. */
static adaptive_entity *entity_upsert(adaptive_ingest *m, const void *key, size_t len, int *fresh)
{
    *fresh = 0;
    int ok = m->n_ent < UINT32_MAX && dp_vec_reserve(&m->ent_v, m->n_ent + 1, sizeof *m->ent) == DP_OK &&
             dp_vec_reserve(&m->packed_v, m->n_ent + 1, sizeof *m->packed) == DP_OK;
    m->ent = m->ent_v.p;
    m->packed = m->packed_v.p;
    if (!ok)
        return NULL;
    dp_bytes_map_slot *s = dp_bytes_map_upsert(&m->entities, key, len);
    if (!s)
        return NULL;
    if (s->value)
        return &m->ent[(uintptr_t)s->value - 1];
    *fresh = 1;
    s->value = (void *)(uintptr_t)(m->n_ent + 1);
    m->ent[m->n_ent] = (adaptive_entity){.key = s->key, .key_len = len};
    m->packed[m->n_ent] = 0;
    return &m->ent[m->n_ent++];
}

/* The bin of u's payload, or -1 if it is not one of this stream's values. */
static int64_t bin_of(const dp_adaptive_config *c, const dp_payload *p)
{
    if (p->kind == DP_PAYLOAD_CATEGORY)
        return p->category >= 0 && p->category < (int64_t)c->categories ? p->category : -1;
    if (p->kind != DP_PAYLOAD_ROW || !c->n_attrs || p->row_len != c->n_attrs || !p->row)
        return -1;
    int64_t b = 0;
    for (uint32_t i = 0; i < c->n_attrs; i++) {
        if (p->row[i] < 0 || (uint32_t)p->row[i] >= c->sizes[i])
            return -1;
        b = b * c->sizes[i] + p->row[i];
    }
    return b;
}

int dp_adaptive_ingest_update(dp_ingest_half *in, const dp_update *u, dp_reject_reason *reason)
{
    adaptive_ingest *m = (adaptive_ingest *)in;
    *reason = DP_REJECT_NONE;
    int64_t bin = -1;
    if (u->step < m->open_step)
        *reason = DP_REJECT_LATE;
    else if (u->step > m->open_step)
        *reason = DP_REJECT_FUTURE_STEP;
    else if ((u->kind != DP_UPDATE_REPORT && (!m->cfg.standing || (u->kind != DP_UPDATE_INSERT &&
                                                                   u->kind != DP_UPDATE_DELETE))) ||
             (u->payload.kind != DP_PAYLOAD_CATEGORY && u->payload.kind != DP_PAYLOAD_ROW))
        *reason = DP_REJECT_WRONG_KIND;
    else if ((bin = bin_of(&m->cfg, &u->payload)) < 0)
        *reason = DP_REJECT_OUT_OF_DOMAIN;
    else if (!u->entity_id || u->entity_id_len == 0 || u->entity_id_len > MAX_ENTITY_BYTES)
        *reason = DP_REJECT_MALFORMED;
    if (*reason != DP_REJECT_NONE)
        return DP_OK;
    const dp_bytes_map_slot *s = dp_bytes_map_find(&m->entities, u->entity_id, u->entity_id_len);
    uint64_t p = s ? m->packed[(uintptr_t)s->value - 1] : 0;
    int live = s && !(p & GONE);
    if (s && p >> STEP_SHIFT == m->open_step)
        *reason = DP_REJECT_DUPLICATE_REPORT;
    else if (u->kind == DP_UPDATE_INSERT && live)
        *reason = DP_REJECT_USER_LIMIT;
    else if (u->kind == DP_UPDATE_DELETE && (!live || (int64_t)(p & VALUE_MASK) != bin))
        *reason = DP_REJECT_NOT_PRESENT;
    if (*reason != DP_REJECT_NONE)
        return DP_OK;
    int fresh;
    adaptive_entity *e = entity_upsert(m, u->entity_id, u->entity_id_len, &fresh);
    size_t i = e ? (size_t)(e - m->ent) : 0;
    if (!e || mark_dirty(m, i) != DP_OK)
        return DP_ENOMEM;   /* nothing changed yet (a fresh entity is at step 0, GONE unset: reported never) */
    if (live)
        m->hist[p & VALUE_MASK]--;
    if (u->kind != DP_UPDATE_DELETE)
        m->hist[bin]++;
    m->packed[i] = m->open_step << STEP_SHIFT | (m->packed[i] & DIRTY) | (u->kind == DP_UPDATE_DELETE ? GONE : 0) |
                   (uint64_t)bin;
    return DP_OK;
}

int dp_adaptive_ingest_close(dp_ingest_half *in, uint64_t step, dp_stats *out)
{
    adaptive_ingest *m = (adaptive_ingest *)in;
    if (step != m->open_step)
        return DP_ESTATE;
    int rc = DP_OK;
    for (uint32_t b = 0; b < m->cfg.categories && rc == DP_OK; b++)
        if (m->hist[b])
            rc = dp_stats_add(out, b, m->hist[b]);
    if (rc == DP_OK)
        rc = dp_stats_finish(out);
    if (rc != DP_OK)
        return rc;
    if (!m->cfg.standing) {   /* step_reports: nothing carries into the next snapshot */
        reset_entities(m);
        memset(m->hist, 0, m->cfg.categories * sizeof *m->hist);
    }
    m->open_step++;
    return DP_OK;
}

/* --- snapshots: entities in key order; H is recomputed from them ---------------- */

static uint32_t canonical(const adaptive_ingest *m, size_t i)
{
    uint64_t p = m->packed[i];
    return (uint32_t)(p & (GONE | VALUE_MASK)) | (p >> STEP_SHIFT == m->open_step ? OPEN : 0);
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

typedef struct key_ref {
    const char *key;
    uint32_t    len, idx;
} key_ref;

static int key_ref_cmp(const void *a, const void *b)
{
    const key_ref *x = a, *y = b;
    return dp_bytes_key_cmp(x->key, x->len, y->key, y->len);
}

/* Entities arrived since the last save: sort them into the order and
 * encode every entry again (their offsets move); those written with OPEN
 * are listed, to lose it at the next save. */
static int rebuild(adaptive_ingest *m)
{
    for (size_t i = 0; i < m->n_dirty; i++)
        m->packed[m->dirty[i]] &= ~DIRTY;
    m->n_dirty = 0;
    size_t k = m->n_ent - m->n_sorted, old = m->n_sorted, n = 0;
    key_ref *add = malloc((k ? k : 1) * sizeof *add);
    uint32_t *order = malloc((m->n_ent ? m->n_ent : 1) * sizeof *order);
    if (!add || !order) {
        free(add);
        free(order);
        return DP_ENOMEM;
    }
    for (size_t i = 0; i < k; i++)
        add[i] = (key_ref){m->ent[old + i].key, (uint32_t)m->ent[old + i].key_len, (uint32_t)(old + i)};
    qsort(add, k, sizeof *add, key_ref_cmp);
    for (size_t a = 0, b = 0; a < old || b < k;) {
        const adaptive_entity *x = a < old ? &m->ent[m->order[a]] : NULL;
        if (x && (b == k || dp_bytes_key_cmp(x->key, x->key_len, add[b].key, add[b].len) < 0))
            order[n++] = m->order[a++];
        else
            order[n++] = add[b++].idx;
    }
    free(add);
    free(m->order);
    m->order = order;
    m->n_sorted = m->n_ent;
    dp_buf_clear(&m->enc);
    int rc = DP_OK;
    for (size_t i = 0; i < n && rc == DP_OK; i++) {
        adaptive_entity *e = &m->ent[order[i]];
        uint32_t c = canonical(m, order[i]);
        dp_buf_put_varint(&m->enc, e->key_len);
        dp_buf_put_bytes(&m->enc, e->key, e->key_len);
        e->at = m->enc.len;
        dp_buf_put_u32(&m->enc, c);
        if (c & OPEN)
            rc = mark_dirty(m, order[i]);
    }
    return rc != DP_OK ? rc : dp_buf_status(&m->enc);
}

/* No new entity: rewrite the value of each one listed; keep listed those
 * that still say OPEN. */
static void patch(adaptive_ingest *m)
{
    size_t keep = 0;
    for (size_t i = 0; i < m->n_dirty; i++) {
        uint32_t d = m->dirty[i], c = canonical(m, d);
        put_le32(m->enc.data + m->ent[d].at, c);
        if (c & OPEN)
            m->dirty[keep++] = d;
        else
            m->packed[d] &= ~DIRTY;
    }
    m->n_dirty = keep;
}

/* The kept encoding is a cache (the half is const to its callers): what is
 * written is exactly what encoding every entry afresh writes. */
int dp_adaptive_ingest_save(const dp_ingest_half *in, dp_buf *b)
{
    adaptive_ingest *m = (adaptive_ingest *)(uintptr_t)in;
    int rc = DP_OK;
    if (m->n_sorted != m->n_ent)
        rc = rebuild(m);
    else
        patch(m);
    if (rc != DP_OK) {
        m->n_sorted = 0;   /* the next save encodes everything again */
        return rc;
    }
    dp_buf_put_u32(b, ADAPTIVE_INGEST_MAGIC);
    dp_buf_put_u32(b, m->cfg.categories);
    dp_buf_put_u8(b, (uint8_t)m->cfg.standing);
    dp_buf_put_u64(b, m->open_step);
    dp_buf_put_u64(b, m->n_ent);
    dp_buf_put_bytes(b, m->enc.data, m->enc.len);
    return dp_buf_status(b);
}

/* One entry of either format: its key and its packed value (an ADI3
 * entry's OPEN becomes the open step), or DP_ECORRUPT. */
static int read_entry(const adaptive_ingest *m, dp_reader *r, int v2, const uint8_t **k, size_t *len, uint64_t *p)
{
    uint64_t step;
    if (v2) {
        *k = dp_reader_blob(r, len);
        *p = dp_reader_u64(r);
        step = *p >> VALUE_BITS;
        if (step < 1 || step > m->open_step)
            return DP_ECORRUPT;
    } else {
        uint64_t kl = dp_reader_varint(r);
        if (dp_reader_status(r) != DP_OK || kl == 0 || kl > MAX_ENTITY_BYTES || kl > r->len - r->off)
            return DP_ECORRUPT;
        *k = r->p + r->off;
        *len = (size_t)kl;
        r->off += *len;
        uint32_t c = dp_reader_u32(r);
        if (c & ~(OPEN | (uint32_t)GONE | (uint32_t)VALUE_MASK))
            return DP_ECORRUPT;
        step = c & OPEN ? m->open_step : 0;
        *p = c & (GONE | VALUE_MASK);
    }
    *p = step << STEP_SHIFT | (*p & (GONE | VALUE_MASK));
    if (!*k || dp_reader_status(r) != DP_OK || *len == 0 || *len > MAX_ENTITY_BYTES ||
        (*p & VALUE_MASK) >= m->cfg.categories || (!m->cfg.standing && (step != m->open_step || (*p & GONE))))
        return DP_ECORRUPT;   /* step_reports hold this step's reports only */
    return DP_OK;
}

int dp_adaptive_ingest_load(dp_ingest_half *in, dp_reader *r)
{
    adaptive_ingest *m = (adaptive_ingest *)in;
    uint32_t magic = dp_reader_u32(r);
    int v2 = magic == ADAPTIVE_INGEST_MAGIC_V2;
    if ((magic != ADAPTIVE_INGEST_MAGIC && !v2) || dp_reader_u32(r) != m->cfg.categories ||
        dp_reader_u8(r) != (uint8_t)m->cfg.standing)
        return DP_ECORRUPT;
    m->open_step = dp_reader_u64(r);
    uint64_t n = dp_reader_u64(r);
    if (dp_reader_status(r) != DP_OK || m->open_step < 1 || m->open_step > m->cfg.horizon + 1 || n > (1ull << 31))
        return DP_ECORRUPT;
    const uint8_t *prev = NULL;
    size_t prev_len = 0;
    for (uint64_t i = 0; i < n; i++) {
        size_t len;
        const uint8_t *k;
        uint64_t p;
        int fresh;
        if (read_entry(m, r, v2, &k, &len, &p) != DP_OK)
            return DP_ECORRUPT;
        if (prev && dp_bytes_key_cmp(prev, prev_len, k, len) >= 0)
            return DP_ECORRUPT;   /* strictly increasing keys: one canonical form */
        adaptive_entity *e = entity_upsert(m, k, len, &fresh);
        if (!e)
            return DP_ENOMEM;
        m->packed[e - m->ent] = p;
        if (!(p & GONE))
            m->hist[p & VALUE_MASK]++;
        prev = k;
        prev_len = len;
    }
    return DP_OK;
}

int dp_adaptive_ingest_roster_complete(const dp_ingest_half *in) { return 0; }

uint64_t dp_adaptive_ingest_open_step(const dp_ingest_half *in)
{
    return ((const adaptive_ingest *)in)->open_step;
}
