/* marginal_ingest.c — the ingest half of `marginal` (synth.h): the exact
 * current multiset of rows, and at each step close the workload marginals
 * of the step's differential histogram ∇f_t (seed 001 §3: f_t - f_{t-1}).
 *
 * State:
 *   rows    (entity, row) -> how many copies are present now.  A DELETE is
 *           used only if its (entity, row) is present: with entity ids the
 *           decision depends on that entity's own history alone
 *           (ALGORITHMS.md §1); without them, deletes are matched by value
 *           (the README says so and recommends entities).
 *   delta   row -> its net change in the open step (+1 per INSERT, -1 per
 *           DELETE): ∇f_t restricted to the rows that changed.
 *   users   entity -> row events used (user-level streams only,
 *           max_rows_per_user = s: the s+1-th event is USER_LIMIT).
 *
 * Statistics at close: for every workload W and cell c,
 *   key = W.offset + c,  count = W(∇f_t)_c = Σ_{rows x in cell c} delta(x)
 * (marginal_config.h lays the workloads' cells end to end).  Disjoint
 * shards' statistics add up, because ∇f_t does.  No scalars: every exact
 * count here is private and leaves only through the release half's noise.
 *
 * Hash maps are iterated only to build sorted statistics and sorted
 * snapshots, never in an order that reaches an output. */
#include "synth/marginal.h"

#include "core/bytes_map.h"
#include "core/dp_error.h"

#include <stdlib.h>
#include <string.h>

#define MARGINAL_INGEST_MAGIC 0x4e49414du   /* "MAIN" */
#define MAX_ENTITY_BYTES 1024

typedef struct marginal_ingest {
    dp_marginal_config cfg;
    uint64_t           open_step;
    dp_bytes_map       rows;
    dp_bytes_map       delta;
    dp_bytes_map       users;
    uint8_t           *key;     /* scratch: entity length, entity, row */
} marginal_ingest;

static int64_t val_of(const dp_bytes_map_slot *s) { return (int64_t)(intptr_t)s->value; }
static void set_val(dp_bytes_map_slot *s, int64_t v) { s->value = (void *)(intptr_t)v; }

static size_t row_bytes(const marginal_ingest *m) { return (size_t)m->cfg.n_attrs * 4; }

static void put_row(uint8_t *p, const int32_t *row, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t v = (uint32_t)row[i];
        p[4 * i] = (uint8_t)v;
        p[4 * i + 1] = (uint8_t)(v >> 8);
        p[4 * i + 2] = (uint8_t)(v >> 16);
        p[4 * i + 3] = (uint8_t)(v >> 24);
    }
}

static void get_row(const uint8_t *p, int32_t *row, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        row[i] = (int32_t)((uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 |
                           (uint32_t)p[4 * i + 3] << 24);
}

int dp_marginal_ingest_create(dp_ingest_half **out, const json_t *config, char *errstr, size_t errstr_size)
{
    *out = NULL;
    marginal_ingest *m = calloc(1, sizeof *m);
    if (!m)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    int rc = dp_marginal_config_parse(&m->cfg, config, errstr, errstr_size);
    if (rc != DP_OK) {
        free(m);
        return rc;
    }
    m->open_step = 1;
    dp_bytes_map_init(&m->rows);
    dp_bytes_map_init(&m->delta);
    dp_bytes_map_init(&m->users);
    if (!(m->key = malloc(4 + MAX_ENTITY_BYTES + row_bytes(m)))) {
        dp_marginal_config_free(&m->cfg);
        free(m);
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    }
    *out = (dp_ingest_half *)m;
    return DP_OK;
}

void dp_marginal_ingest_destroy(dp_ingest_half *in)
{
    marginal_ingest *m = (marginal_ingest *)in;
    if (!m)
        return;
    dp_bytes_map_free(&m->rows);
    dp_bytes_map_free(&m->delta);
    dp_bytes_map_free(&m->users);
    dp_marginal_config_free(&m->cfg);
    free(m->key);
    free(m);
}

/* The reason u cannot be used, or DP_REJECT_NONE; changes nothing. */
static dp_reject_reason check(const marginal_ingest *m, const dp_update *u)
{
    if (u->step < m->open_step)
        return DP_REJECT_LATE;
    if (u->step > m->open_step)
        return DP_REJECT_FUTURE_STEP;
    if ((u->kind != DP_UPDATE_INSERT && u->kind != DP_UPDATE_DELETE) || u->payload.kind != DP_PAYLOAD_ROW)
        return DP_REJECT_WRONG_KIND;
    if (u->payload.row_len != m->cfg.n_attrs || !u->payload.row)
        return DP_REJECT_OUT_OF_DOMAIN;
    for (uint32_t i = 0; i < m->cfg.n_attrs; i++)
        if (u->payload.row[i] < 0 || (uint32_t)u->payload.row[i] >= m->cfg.sizes[i])
            return DP_REJECT_OUT_OF_DOMAIN;
    if (u->entity_id_len > MAX_ENTITY_BYTES)
        return DP_REJECT_MALFORMED;
    if (m->cfg.max_rows_per_user) {
        if (!u->entity_id || u->entity_id_len == 0)
            return DP_REJECT_USER_LIMIT;
        const dp_bytes_map_slot *s = dp_bytes_map_find(&m->users, u->entity_id, u->entity_id_len);
        if (s && val_of(s) >= (int64_t)m->cfg.max_rows_per_user)
            return DP_REJECT_USER_LIMIT;
    }
    return DP_REJECT_NONE;
}

/* (entity, row) key into m->key; its length. */
static size_t entity_row_key(marginal_ingest *m, const dp_update *u)
{
    uint32_t el = u->entity_id ? (uint32_t)u->entity_id_len : 0;
    m->key[0] = (uint8_t)el;
    m->key[1] = (uint8_t)(el >> 8);
    m->key[2] = (uint8_t)(el >> 16);
    m->key[3] = (uint8_t)(el >> 24);
    if (el)
        memcpy(m->key + 4, u->entity_id, el);
    put_row(m->key + 4 + el, u->payload.row, m->cfg.n_attrs);
    return 4 + el + row_bytes(m);
}

int dp_marginal_ingest_update(dp_ingest_half *in, const dp_update *u, dp_reject_reason *reason)
{
    marginal_ingest *m = (marginal_ingest *)in;
    *reason = check(m, u);
    if (*reason != DP_REJECT_NONE)
        return DP_OK;
    size_t klen = entity_row_key(m, u);
    int del = u->kind == DP_UPDATE_DELETE;
    dp_bytes_map_slot *s = del ? dp_bytes_map_find(&m->rows, m->key, klen) : dp_bytes_map_upsert(&m->rows, m->key, klen);
    if (!s && !del)
        return DP_ENOMEM;
    if (del && (!s || val_of(s) <= 0)) {
        *reason = DP_REJECT_NOT_PRESENT;
        return DP_OK;
    }
    /* Reserve every slot before changing anything: a failed update changes nothing. */
    size_t rl = row_bytes(m);
    const uint8_t *rowkey = m->key + klen - rl;
    dp_bytes_map_slot *d = dp_bytes_map_upsert(&m->delta, rowkey, rl);
    dp_bytes_map_slot *us = NULL;
    if (d && m->cfg.max_rows_per_user)
        us = dp_bytes_map_upsert(&m->users, u->entity_id, u->entity_id_len);
    if (!d || (m->cfg.max_rows_per_user && !us))
        return DP_ENOMEM;
    set_val(s, val_of(s) + (del ? -1 : 1));
    set_val(d, val_of(d) + (del ? -1 : 1));
    if (us)
        set_val(us, val_of(us) + 1);
    return DP_OK;
}

int dp_marginal_ingest_close(dp_ingest_half *in, uint64_t step, dp_stats *out)
{
    marginal_ingest *m = (marginal_ingest *)in;
    if (step != m->open_step)
        return DP_ESTATE;
    const dp_marginal_config *c = &m->cfg;
    int32_t row[DP_MARGINAL_MAX_ATTRS];
    int rc = DP_OK;
    for (size_t i = 0; i < m->delta.cap && rc == DP_OK; i++) {
        const dp_bytes_map_slot *s = &m->delta.slots[i];
        if (!s->key || val_of(s) == 0)
            continue;
        get_row((const uint8_t *)s->key, row, c->n_attrs);
        for (size_t w = 0; w < c->n_workloads && rc == DP_OK; w++)
            rc = dp_stats_add(out, c->workloads[w].offset + dp_marginal_cell(c, &c->workloads[w], row), val_of(s));
    }
    if (rc == DP_OK)
        rc = dp_stats_finish(out);
    if (rc != DP_OK)
        return rc;
    dp_bytes_map_free(&m->delta);
    dp_bytes_map_init(&m->delta);
    m->open_step++;
    return DP_OK;
}

/* --- snapshots: every map written in key order ---------------------------- */

static int slot_cmp(const void *a, const void *b)
{
    const dp_bytes_map_slot *x = *(const dp_bytes_map_slot *const *)a, *y = *(const dp_bytes_map_slot *const *)b;
    size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
    int r = memcmp(x->key, y->key, n);
    return r ? r : (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

static int save_map(const dp_bytes_map *map, dp_buf *b)
{
    const dp_bytes_map_slot **v = malloc((map->count ? map->count : 1) * sizeof *v);
    if (!v)
        return DP_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < map->cap; i++)
        if (map->slots[i].key && val_of(&map->slots[i]) != 0)
            v[n++] = &map->slots[i];
    qsort(v, n, sizeof *v, slot_cmp);
    dp_buf_put_u64(b, n);
    for (size_t i = 0; i < n; i++) {
        dp_buf_put_blob(b, v[i]->key, v[i]->key_len);
        dp_buf_put_i64(b, val_of(v[i]));
    }
    free(v);
    return dp_buf_status(b);
}

/* check(key, len, value, ctx): is the entry well formed? */
static int load_map(dp_bytes_map *map, dp_reader *r, int (*valid)(const uint8_t *, size_t, int64_t, const void *),
                    const void *ctx)
{
    uint64_t n = dp_reader_u64(r);
    if (dp_reader_status(r) != DP_OK || n > (uint64_t)1 << 40)
        return DP_ECORRUPT;
    const uint8_t *prev = NULL;
    size_t prev_len = 0;
    for (uint64_t i = 0; i < n; i++) {
        size_t len;
        const uint8_t *k = dp_reader_blob(r, &len);
        int64_t v = dp_reader_i64(r);
        if (!k || dp_reader_status(r) != DP_OK || v == 0 || !valid(k, len, v, ctx))
            return DP_ECORRUPT;
        if (prev) {   /* strictly increasing: no duplicates, one canonical form */
            dp_bytes_map_slot a = {.key = (char *)prev, .key_len = prev_len}, bb = {.key = (char *)k, .key_len = len};
            const dp_bytes_map_slot *pa = &a, *pb = &bb;
            if (slot_cmp(&pa, &pb) >= 0)
                return DP_ECORRUPT;
        }
        dp_bytes_map_slot *s = dp_bytes_map_upsert(map, k, len);
        if (!s)
            return DP_ENOMEM;
        set_val(s, v);
        prev = k;
        prev_len = len;
    }
    return DP_OK;
}

static int row_in_domain(const dp_marginal_config *c, const uint8_t *p)
{
    int32_t row[DP_MARGINAL_MAX_ATTRS];
    get_row(p, row, c->n_attrs);
    for (uint32_t i = 0; i < c->n_attrs; i++)
        if (row[i] < 0 || (uint32_t)row[i] >= c->sizes[i])
            return 0;
    return 1;
}

static int valid_row_entry(const uint8_t *k, size_t len, int64_t v, const void *ctx)
{
    const dp_marginal_config *c = ctx;
    if (len < 4 || v < 0)
        return 0;
    size_t el = (size_t)k[0] | (size_t)k[1] << 8 | (size_t)k[2] << 16 | (size_t)k[3] << 24;
    return el <= MAX_ENTITY_BYTES && len == 4 + el + (size_t)c->n_attrs * 4 && row_in_domain(c, k + 4 + el);
}

static int valid_delta_entry(const uint8_t *k, size_t len, int64_t v, const void *ctx)
{
    const dp_marginal_config *c = ctx;
    return len == (size_t)c->n_attrs * 4 && row_in_domain(c, k) && v >= -((int64_t)1 << 40) && v <= (int64_t)1 << 40;
}

static int valid_user_entry(const uint8_t *k, size_t len, int64_t v, const void *ctx)
{
    const dp_marginal_config *c = ctx;
    return len >= 1 && len <= MAX_ENTITY_BYTES && v > 0 && v <= (int64_t)c->max_rows_per_user;
}

int dp_marginal_ingest_save(const dp_ingest_half *in, dp_buf *b)
{
    const marginal_ingest *m = (const marginal_ingest *)in;
    dp_buf_put_u32(b, MARGINAL_INGEST_MAGIC);
    dp_buf_put_u32(b, m->cfg.n_attrs);
    dp_buf_put_u64(b, m->cfg.total_cells);
    dp_buf_put_u32(b, m->cfg.max_rows_per_user);
    dp_buf_put_u64(b, m->open_step);
    int rc = save_map(&m->rows, b);
    if (rc == DP_OK)
        rc = save_map(&m->delta, b);
    if (rc == DP_OK)
        rc = save_map(&m->users, b);
    return rc;
}

int dp_marginal_ingest_load(dp_ingest_half *in, dp_reader *r)
{
    marginal_ingest *m = (marginal_ingest *)in;
    if (dp_reader_u32(r) != MARGINAL_INGEST_MAGIC || dp_reader_u32(r) != m->cfg.n_attrs ||
        dp_reader_u64(r) != m->cfg.total_cells || dp_reader_u32(r) != m->cfg.max_rows_per_user)
        return DP_ECORRUPT;
    m->open_step = dp_reader_u64(r);
    if (dp_reader_status(r) != DP_OK || m->open_step < 1 || m->open_step > m->cfg.horizon + 1)
        return DP_ECORRUPT;
    int rc = load_map(&m->rows, r, valid_row_entry, &m->cfg);
    if (rc == DP_OK)
        rc = load_map(&m->delta, r, valid_delta_entry, &m->cfg);
    if (rc == DP_OK)
        rc = load_map(&m->users, r, valid_user_entry, &m->cfg);
    return rc;
}

int dp_marginal_ingest_roster_complete(const dp_ingest_half *in) { return 0; }

uint64_t dp_marginal_ingest_open_step(const dp_ingest_half *in)
{
    return ((const marginal_ingest *)in)->open_step;
}

