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

#include <stdlib.h>
#include <string.h>

#define ADAPTIVE_INGEST_MAGIC 0x32494441u   /* "ADI2": the snapshot mode is in the header */
#define MAX_ENTITY_BYTES 1024
#define VALUE_BITS 20                        /* categories <= 2^16 < 2^19 */
#define GONE ((uint64_t)1 << 19)              /* the entity's tuple was deleted */
#define VALUE_MASK (GONE - 1)

typedef struct adaptive_ingest {
    dp_adaptive_config cfg;
    uint64_t           open_step;
    dp_bytes_map       entities;   /* entity -> step reported << VALUE_BITS | value */
    int64_t           *hist;       /* H: how many entities hold each value now */
} adaptive_ingest;

static uint64_t packed(const dp_bytes_map_slot *s) { return (uint64_t)(uintptr_t)s->value; }

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
    dp_bytes_map_free(&m->entities);
    free(m->hist);
    free(m);
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
    dp_bytes_map_slot *s = dp_bytes_map_find(&m->entities, u->entity_id, u->entity_id_len);
    uint64_t p = s ? packed(s) : 0;
    int live = s && !(p & GONE);
    if (s && p >> VALUE_BITS == m->open_step)
        *reason = DP_REJECT_DUPLICATE_REPORT;
    else if (u->kind == DP_UPDATE_INSERT && live)
        *reason = DP_REJECT_USER_LIMIT;
    else if (u->kind == DP_UPDATE_DELETE && (!live || (int64_t)(p & VALUE_MASK) != bin))
        *reason = DP_REJECT_NOT_PRESENT;
    if (*reason != DP_REJECT_NONE)
        return DP_OK;
    if (!s && !(s = dp_bytes_map_upsert(&m->entities, u->entity_id, u->entity_id_len)))
        return DP_ENOMEM;
    if (live)
        m->hist[p & VALUE_MASK]--;
    if (u->kind == DP_UPDATE_DELETE) {
        s->value = (void *)(uintptr_t)(m->open_step << VALUE_BITS | GONE | (uint64_t)bin);
    } else {
        m->hist[bin]++;
        s->value = (void *)(uintptr_t)(m->open_step << VALUE_BITS | (uint64_t)bin);
    }
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
        dp_bytes_map_free(&m->entities);
        dp_bytes_map_init(&m->entities);
        memset(m->hist, 0, m->cfg.categories * sizeof *m->hist);
    }
    m->open_step++;
    return DP_OK;
}

/* --- snapshots: entities in key order; H is recomputed from them ---------------- */

int dp_adaptive_ingest_save(const dp_ingest_half *in, dp_buf *b)
{
    const adaptive_ingest *m = (const adaptive_ingest *)in;
    size_t n;
    const dp_bytes_map_slot **v = dp_bytes_map_sorted(&m->entities, NULL, &n);
    if (!v)
        return DP_ENOMEM;
    dp_buf_put_u32(b, ADAPTIVE_INGEST_MAGIC);
    dp_buf_put_u32(b, m->cfg.categories);
    dp_buf_put_u8(b, (uint8_t)m->cfg.standing);
    dp_buf_put_u64(b, m->open_step);
    dp_buf_put_u64(b, n);
    for (size_t i = 0; i < n; i++) {
        dp_buf_put_blob(b, v[i]->key, v[i]->key_len);
        dp_buf_put_u64(b, packed(v[i]));
    }
    free(v);
    return dp_buf_status(b);
}

int dp_adaptive_ingest_load(dp_ingest_half *in, dp_reader *r)
{
    adaptive_ingest *m = (adaptive_ingest *)in;
    if (dp_reader_u32(r) != ADAPTIVE_INGEST_MAGIC || dp_reader_u32(r) != m->cfg.categories ||
        dp_reader_u8(r) != (uint8_t)m->cfg.standing)
        return DP_ECORRUPT;
    m->open_step = dp_reader_u64(r);
    uint64_t n = dp_reader_u64(r);
    if (dp_reader_status(r) != DP_OK || m->open_step < 1 || m->open_step > m->cfg.horizon + 1 || n > (1ull << 40))
        return DP_ECORRUPT;
    const uint8_t *prev = NULL;
    size_t prev_len = 0;
    for (uint64_t i = 0; i < n; i++) {
        size_t len;
        const uint8_t *k = dp_reader_blob(r, &len);
        uint64_t p = dp_reader_u64(r);
        uint64_t value = p & VALUE_MASK, step = p >> VALUE_BITS;
        if (!k || dp_reader_status(r) != DP_OK || len == 0 || len > MAX_ENTITY_BYTES || value >= m->cfg.categories ||
            step < 1 || step > m->open_step || (!m->cfg.standing && (step != m->open_step || (p & GONE))))
            return DP_ECORRUPT;   /* step_reports hold this step's reports only */
        if (prev && dp_bytes_key_cmp(prev, prev_len, k, len) >= 0)
            return DP_ECORRUPT;   /* strictly increasing keys: one canonical form */
        dp_bytes_map_slot *s = dp_bytes_map_upsert(&m->entities, k, len);
        if (!s)
            return DP_ENOMEM;
        s->value = (void *)(uintptr_t)p;
        if (!(p & GONE))
            m->hist[value]++;
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
