/* marginal_ingest.c — the ingest half of `marginal` (synth.h): the exact
 * current multiset of rows (multiset.h: DELETE matches (entity, row),
 * user-level event limits), and at each step close the workload marginals
 * of the step's differential histogram ∇f_t (seed 001 §3: f_t - f_{t-1}).
 *
 * Statistics at close: for every workload W and cell c,
 *   key = W.offset + c,  count = W(∇f_t)_c = Σ_{rows x in cell c} delta(x)
 * (marginal_config.h lays the workloads' cells end to end).  Disjoint
 * shards' statistics add up, because ∇f_t does.  No scalars: every exact
 * count here is private and leaves only through the release half's noise. */
#include "synth/marginal/marginal.h"

#include "core/dp_error.h"
#include "synth/common/multiset.h"

#include <stdlib.h>
#include <string.h>

#define MARGINAL_INGEST_MAGIC 0x4e49414du   /* "MAIN" */

typedef struct marginal_ingest {
    dp_marginal_config cfg;
    uint64_t           open_step;
    dp_multiset        rows;
    uint8_t           *value;   /* scratch: the row's bytes */
} marginal_ingest;

static size_t row_bytes(const dp_marginal_config *c) { return (size_t)c->n_attrs * 4; }

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
    if (dp_multiset_init(&m->rows, row_bytes(&m->cfg), m->cfg.max_rows_per_user, 0) != DP_OK ||
        !(m->value = malloc(row_bytes(&m->cfg)))) {
        dp_marginal_ingest_destroy((dp_ingest_half *)m);
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
    dp_multiset_free(&m->rows);
    dp_marginal_config_free(&m->cfg);
    free(m->value);
    free(m);
}

/* The reason u cannot be used (before the multiset's own checks), or NONE. */
static dp_reject_reason check(const marginal_ingest *m, const dp_update *u)
{
    if (u->step < m->open_step)
        return DP_REJECT_LATE;
    if (u->step > m->open_step)
        return DP_REJECT_FUTURE_STEP;
    if ((u->kind != DP_UPDATE_INSERT && u->kind != DP_UPDATE_DELETE) || u->payload.kind != DP_PAYLOAD_ROW)
        return DP_REJECT_WRONG_KIND;
    /* mwem with fit pgm keeps g as a sum of models, which cannot subtract
     * (marginal_mixture.c): its streams are insert-only. */
    if (u->kind == DP_UPDATE_DELETE && m->cfg.method == DP_MARGINAL_MWEM && m->cfg.fit == DP_MARGINAL_FIT_PGM)
        return DP_REJECT_WRONG_KIND;
    if (u->payload.row_len != m->cfg.n_attrs || !u->payload.row)
        return DP_REJECT_OUT_OF_DOMAIN;
    for (uint32_t i = 0; i < m->cfg.n_attrs; i++)
        if (u->payload.row[i] < 0 || (uint32_t)u->payload.row[i] >= m->cfg.sizes[i])
            return DP_REJECT_OUT_OF_DOMAIN;
    return DP_REJECT_NONE;
}

int dp_marginal_ingest_update(dp_ingest_half *in, const dp_update *u, dp_reject_reason *reason)
{
    marginal_ingest *m = (marginal_ingest *)in;
    if ((*reason = check(m, u)) != DP_REJECT_NONE)
        return DP_OK;
    put_row(m->value, u->payload.row, m->cfg.n_attrs);
    return dp_multiset_apply(&m->rows, u, m->value, reason);
}

typedef struct close_ctx {
    const dp_marginal_config *c;
    dp_stats *out;
} close_ctx;

static int add_row_change(void *ctx, const uint8_t *value, int64_t count)
{
    const close_ctx *x = ctx;
    int32_t row[DP_MARGINAL_MAX_ATTRS];
    get_row(value, row, x->c->n_attrs);
    int rc = DP_OK;
    for (size_t w = 0; w < x->c->n_workloads && rc == DP_OK; w++)
        rc = dp_stats_add(x->out, x->c->workloads[w].offset + dp_marginal_cell(x->c, &x->c->workloads[w], row), count);
    return rc;
}

int dp_marginal_ingest_close(dp_ingest_half *in, uint64_t step, dp_stats *out)
{
    marginal_ingest *m = (marginal_ingest *)in;
    if (step != m->open_step)
        return DP_ESTATE;
    close_ctx x = {&m->cfg, out};
    int rc = dp_multiset_each(&m->rows, DP_MULTISET_NET, add_row_change, &x);
    if (rc == DP_OK)
        rc = dp_stats_finish(out);
    if (rc != DP_OK)
        return rc;
    dp_multiset_next_step(&m->rows);
    m->open_step++;
    return DP_OK;
}

/* --- snapshots -------------------------------------------------------------- */

static int row_in_domain(const uint8_t *p, const void *ctx)
{
    const dp_marginal_config *c = ctx;
    int32_t row[DP_MARGINAL_MAX_ATTRS];
    get_row(p, row, c->n_attrs);
    for (uint32_t i = 0; i < c->n_attrs; i++)
        if (row[i] < 0 || (uint32_t)row[i] >= c->sizes[i])
            return 0;
    return 1;
}

int dp_marginal_ingest_save(const dp_ingest_half *in, dp_buf *b)
{
    const marginal_ingest *m = (const marginal_ingest *)in;
    dp_buf_put_u32(b, MARGINAL_INGEST_MAGIC);
    dp_buf_put_u32(b, m->cfg.n_attrs);
    dp_buf_put_u64(b, m->cfg.total_cells);
    dp_buf_put_u32(b, m->cfg.max_rows_per_user);
    dp_buf_put_u64(b, m->open_step);
    return dp_multiset_save(&m->rows, b);
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
    return dp_multiset_load(&m->rows, r, row_in_domain, &m->cfg);
}

int dp_marginal_ingest_roster_complete(const dp_ingest_half *in) { return 0; }

uint64_t dp_marginal_ingest_open_step(const dp_ingest_half *in)
{
    return ((const marginal_ingest *)in)->open_step;
}
