/* hypercube_ingest.c — the ingest half of `hypercube` (synth.h): the open
 * step's points, as their cells at depth max_depth.
 *
 * Accepts REPORT or INSERT with a Point of d finite coordinates inside the
 * box (OUT_OF_DOMAIN outside or with another dimension, MALFORMED if not
 * finite).  A step takes at most points_per_step points: later ones are
 * rejected as DUPLICATE_REPORT ("the step already holds its points").
 * Under replacement neighbours every step's count is public, so this
 * decision depends on public structure only; the entity id, if any, is not
 * used (event-level: each point is protected on its own). */
#include "synth/hypercube/hypercube.h"

#include "core/dp_error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HYPERCUBE_INGEST_MAGIC 0x4e494348u   /* "HCIN" */

typedef struct hypercube_ingest {
    dp_hypercube_config cfg;
    uint64_t            open_step;
    uint64_t            n, cap;
    uint64_t           *paths;   /* the open step's points' cells */
} hypercube_ingest;

int dp_hypercube_ingest_create(dp_ingest_half **out, const json_t *config, char *errstr, size_t errstr_size)
{
    *out = NULL;
    hypercube_ingest *m = calloc(1, sizeof *m);
    if (!m)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    int rc = dp_hypercube_config_parse(&m->cfg, config, errstr, errstr_size);
    if (rc != DP_OK) {
        free(m);
        return rc;
    }
    m->open_step = 1;
    *out = (dp_ingest_half *)m;
    return DP_OK;
}

void dp_hypercube_ingest_destroy(dp_ingest_half *in)
{
    hypercube_ingest *m = (hypercube_ingest *)in;
    if (m)
        free(m->paths);
    free(m);
}

static dp_reject_reason check(const hypercube_ingest *m, const dp_update *u)
{
    if (u->step < m->open_step)
        return DP_REJECT_LATE;
    if (u->step > m->open_step)
        return DP_REJECT_FUTURE_STEP;
    if ((u->kind != DP_UPDATE_REPORT && u->kind != DP_UPDATE_INSERT))
        return DP_REJECT_WRONG_KIND;
    dp_reject_reason r = (dp_reject_reason)dp_box_check_point(&m->cfg.box, &u->payload);
    if (r != DP_REJECT_NONE)
        return r;
    return m->n >= m->cfg.points_per_step ? DP_REJECT_DUPLICATE_REPORT : DP_REJECT_NONE;
}

static int reserve(hypercube_ingest *m, uint64_t n)
{
    if (n <= m->cap)
        return DP_OK;
    uint64_t cap = m->cap ? m->cap * 2 : 64;
    while (cap < n)
        cap *= 2;
    uint64_t *p = realloc(m->paths, cap * sizeof *p);
    if (!p)
        return DP_ENOMEM;
    m->paths = p;
    m->cap = cap;
    return DP_OK;
}

int dp_hypercube_ingest_update(dp_ingest_half *in, const dp_update *u, dp_reject_reason *reason)
{
    hypercube_ingest *m = (hypercube_ingest *)in;
    if ((*reason = check(m, u)) != DP_REJECT_NONE)
        return DP_OK;
    int rc = reserve(m, m->n + 1);
    if (rc != DP_OK)
        return rc;
    m->paths[m->n++] = dp_partition_path(&m->cfg.box, u->payload.point, m->cfg.max_depth);
    return DP_OK;
}

int dp_hypercube_ingest_close(dp_ingest_half *in, uint64_t step, dp_stats *out)
{
    hypercube_ingest *m = (hypercube_ingest *)in;
    if (step != m->open_step)
        return DP_ESTATE;
    int rc = DP_OK;
    for (uint64_t i = 0; i < m->n && rc == DP_OK; i++)
        rc = dp_stats_add(out, m->paths[i], 1);
    if (rc == DP_OK)
        rc = dp_stats_finish(out);
    if (rc != DP_OK)
        return rc;
    out->scalars[DP_HYPERCUBE_SCALAR_POINTS] += (int64_t)m->n;
    m->n = 0;
    m->open_step++;
    return DP_OK;
}

int dp_hypercube_ingest_save(const dp_ingest_half *in, dp_buf *b)
{
    const hypercube_ingest *m = (const hypercube_ingest *)in;
    dp_buf_put_u32(b, HYPERCUBE_INGEST_MAGIC);
    dp_buf_put_u32(b, m->cfg.box.d);
    dp_buf_put_u32(b, m->cfg.max_depth);
    dp_buf_put_u64(b, m->open_step);
    dp_buf_put_u64(b, m->n);
    for (uint64_t i = 0; i < m->n; i++)
        dp_buf_put_u64(b, m->paths[i]);
    return dp_buf_status(b);
}

int dp_hypercube_ingest_load(dp_ingest_half *in, dp_reader *r)
{
    hypercube_ingest *m = (hypercube_ingest *)in;
    if (dp_reader_u32(r) != HYPERCUBE_INGEST_MAGIC || dp_reader_u32(r) != m->cfg.box.d ||
        dp_reader_u32(r) != m->cfg.max_depth)
        return DP_ECORRUPT;
    m->open_step = dp_reader_u64(r);
    uint64_t n = dp_reader_u64(r);
    if (dp_reader_status(r) != DP_OK || m->open_step < 1 || n > m->cfg.points_per_step ||
        n > (r->len - r->off) / 8)
        return DP_ECORRUPT;
    if (reserve(m, n) != DP_OK)
        return DP_ENOMEM;
    for (uint64_t i = 0; i < n; i++) {
        m->paths[i] = dp_reader_u64(r);
        if (m->paths[i] >> m->cfg.max_depth)
            return DP_ECORRUPT;
    }
    m->n = n;
    return dp_reader_status(r);
}

int dp_hypercube_ingest_roster_complete(const dp_ingest_half *in)
{
    (void)in;
    return 0;
}

uint64_t dp_hypercube_ingest_open_step(const dp_ingest_half *in)
{
    return ((const hypercube_ingest *)in)->open_step;
}
