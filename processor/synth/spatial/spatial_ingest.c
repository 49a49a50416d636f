/* spatial_ingest.c — the ingest half of `spatial` (synth.h): the exact
 * current multiset of points (multiset.h: a DELETE must match a present
 * (entity, point), else NOT_PRESENT; user-level event limits) and, at each
 * step close, the changed points' finest cells (spatial.h). */
#include "synth/spatial/spatial.h"

#include "core/dp_error.h"
#include "synth/common/multiset.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SPATIAL_INGEST_MAGIC 0x4e495053u   /* "SPIN" */

typedef struct spatial_ingest {
    dp_spatial_config cfg;
    uint64_t          open_step;
    dp_multiset       points;
    uint8_t           value[8 * DP_PARTITION_MAX_DIM];
} spatial_ingest;

static size_t point_bytes(const dp_spatial_config *c) { return (size_t)c->box.d * 8; }

/* Little-endian IEEE bits; -0.0 is stored as 0.0 so that a DELETE of -0.0
 * matches an INSERT of 0.0 (they are the same point). */
static void put_point(uint8_t *p, const double *x, uint32_t d)
{
    for (uint32_t i = 0; i < d; i++) {
        double v = x[i] == 0 ? 0.0 : x[i];
        uint64_t u;
        memcpy(&u, &v, 8);
        for (int b = 0; b < 8; b++)
            p[8 * i + b] = (uint8_t)(u >> (8 * b));
    }
}

static void get_point(const uint8_t *p, double *x, uint32_t d)
{
    for (uint32_t i = 0; i < d; i++) {
        uint64_t u = 0;
        for (int b = 0; b < 8; b++)
            u |= (uint64_t)p[8 * i + b] << (8 * b);
        memcpy(&x[i], &u, 8);
    }
}

int dp_spatial_ingest_create(dp_ingest_half **out, const json_t *config, char *errstr, size_t errstr_size)
{
    *out = NULL;
    spatial_ingest *m = calloc(1, sizeof *m);
    if (!m)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    int rc = dp_spatial_config_parse(&m->cfg, config, errstr, errstr_size);
    if (rc != DP_OK) {
        free(m);
        return rc;
    }
    m->open_step = 1;
    if (dp_multiset_init(&m->points, point_bytes(&m->cfg), m->cfg.event_level ? 0 : m->cfg.sensitivity,
                         m->cfg.variant == DP_SPATIAL_SAFE) != DP_OK) {
        dp_spatial_ingest_destroy((dp_ingest_half *)m);
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    }
    *out = (dp_ingest_half *)m;
    return DP_OK;
}

void dp_spatial_ingest_destroy(dp_ingest_half *in)
{
    spatial_ingest *m = (spatial_ingest *)in;
    if (!m)
        return;
    dp_multiset_free(&m->points);
    free(m);
}

static dp_reject_reason check(const spatial_ingest *m, const dp_update *u)
{
    if (u->step < m->open_step)
        return DP_REJECT_LATE;
    if (u->step > m->open_step)
        return DP_REJECT_FUTURE_STEP;
    if ((u->kind != DP_UPDATE_INSERT && u->kind != DP_UPDATE_DELETE))
        return DP_REJECT_WRONG_KIND;
    return (dp_reject_reason)dp_box_check_point(&m->cfg.box, &u->payload);
}

int dp_spatial_ingest_update(dp_ingest_half *in, const dp_update *u, dp_reject_reason *reason)
{
    spatial_ingest *m = (spatial_ingest *)in;
    if ((*reason = check(m, u)) != DP_REJECT_NONE)
        return DP_OK;
    put_point(m->value, u->payload.point, m->cfg.box.d);
    return dp_multiset_apply(&m->points, u, m->value, reason);
}

typedef struct close_ctx {
    const dp_spatial_config *c;
    dp_stats *out;
    uint64_t tag;
} close_ctx;

static int add_point_change(void *ctx, const uint8_t *value, int64_t count)
{
    const close_ctx *x = ctx;
    double p[DP_PARTITION_MAX_DIM];
    get_point(value, p, x->c->box.d);
    return dp_stats_add(x->out, dp_partition_path(&x->c->box, p, x->c->max_depth) << 1 | x->tag, count);
}

int dp_spatial_ingest_close(dp_ingest_half *in, uint64_t step, dp_stats *out)
{
    spatial_ingest *m = (spatial_ingest *)in;
    if (step != m->open_step)
        return DP_ESTATE;
    close_ctx x = {&m->cfg, out, DP_SPATIAL_TAG_NET};
    int rc = dp_multiset_each(&m->points, DP_MULTISET_NET, add_point_change, &x);
    x.tag = DP_SPATIAL_TAG_ADDED;
    if (rc == DP_OK && m->points.track_added)
        rc = dp_multiset_each(&m->points, DP_MULTISET_ADDED, add_point_change, &x);
    if (rc == DP_OK)
        rc = dp_stats_finish(out);
    if (rc != DP_OK)
        return rc;
    dp_multiset_next_step(&m->points);
    m->open_step++;
    return DP_OK;
}

static int point_in_box(const uint8_t *p, const void *ctx)
{
    const dp_spatial_config *c = ctx;
    double x[DP_PARTITION_MAX_DIM];
    get_point(p, x, c->box.d);
    for (uint32_t i = 0; i < c->box.d; i++)
        if (!isfinite(x[i]) || (x[i] == 0 && signbit(x[i])))
            return 0;
    return dp_box_contains(&c->box, x);
}

int dp_spatial_ingest_save(const dp_ingest_half *in, dp_buf *b)
{
    const spatial_ingest *m = (const spatial_ingest *)in;
    dp_buf_put_u32(b, SPATIAL_INGEST_MAGIC);
    dp_buf_put_u32(b, m->cfg.box.d);
    dp_buf_put_u32(b, m->cfg.max_depth);
    dp_buf_put_u32(b, m->points.max_events_per_user);
    dp_buf_put_u8(b, (uint8_t)m->points.track_added);
    dp_buf_put_u64(b, m->open_step);
    return dp_multiset_save(&m->points, b);
}

int dp_spatial_ingest_load(dp_ingest_half *in, dp_reader *r)
{
    spatial_ingest *m = (spatial_ingest *)in;
    if (dp_reader_u32(r) != SPATIAL_INGEST_MAGIC || dp_reader_u32(r) != m->cfg.box.d ||
        dp_reader_u32(r) != m->cfg.max_depth || dp_reader_u32(r) != m->points.max_events_per_user ||
        dp_reader_u8(r) != (uint8_t)m->points.track_added)
        return DP_ECORRUPT;
    m->open_step = dp_reader_u64(r);
    if (dp_reader_status(r) != DP_OK || m->open_step < 1 || (m->cfg.horizon && m->open_step > m->cfg.horizon + 1))
        return DP_ECORRUPT;
    return dp_multiset_load(&m->points, r, point_in_box, &m->cfg);
}

int dp_spatial_ingest_roster_complete(const dp_ingest_half *in) { return 0; }

uint64_t dp_spatial_ingest_open_step(const dp_ingest_half *in)
{
    return ((const spatial_ingest *)in)->open_step;
}
