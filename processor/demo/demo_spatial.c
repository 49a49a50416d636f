/* demo_spatial.c — see demo_spatial.h. */
#include "demo/demo_spatial.h"

#include "core/dp_error.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Public query rectangles [x0, x1) × [y0, y1) in km. */
static const double QUERIES[DP_DEMO_MAP_QUERIES][4] = {
    {2.0, 4.0, 5.0, 7.0},    /* the old centre */
    {6.5, 9.0, 1.0, 3.5},    /* the new district */
    {0.0, 5.0, 0.0, 10.0},   /* the west half */
    {8.5, 9.5, 4.5, 5.5},    /* one square km of the ring road */
};
static const char *const QUERY_NAMES[DP_DEMO_MAP_QUERIES] = {"centre", "district", "west", "ring km2"};

int dp_demo_map_init(dp_demo_map *d, const dp_demo_params *p)
{
    memset(d, 0, sizeof *d);
    d->seed = p->panel_seed;
    d->steps = p->steps;
    dp_buf_init(&d->lines);
    return DP_OK;
}

void dp_demo_map_free(dp_demo_map *d)
{
    free(d->live);
    free(d->live_id);
    dp_buf_free(&d->lines);
    memset(d, 0, sizeof *d);
}

json_t *dp_demo_map_config(const dp_demo_params *p)
{
    return json_pack("{s:[[f,f],[f,f]], s:f, s:I, s:i, s:s}", "box", 0.0, 10.0, 0.0, 10.0, "epsilon", 1.0, "horizon",
                     (json_int_t)p->steps, "max_depth", 16, "counter", "simple");
}

static int in_query(int q, const double *x)
{
    return x[0] >= QUERIES[q][0] && x[0] < QUERIES[q][1] && x[1] >= QUERIES[q][2] && x[1] < QUERIES[q][3];
}

/* A uniform in [0, 1) from 53 bits. */
static double unit(dp_drbg *g) { return (double)(dp_drbg_u64(g) >> 11) * 0x1.0p-53; }

/* A check-in: 45 % around the old centre, 35 % in the new district (which
 * grows month by month), 20 % anywhere along a ring road. */
static void draw_point(dp_drbg *g, uint64_t t, double *x)
{
    uint32_t u = dp_drbg_uniform32(g, 100);
    if (u < 45) {   /* a triangular bump around (3, 6) */
        x[0] = 3 + (unit(g) + unit(g) - 1) * 1.5;
        x[1] = 6 + (unit(g) + unit(g) - 1) * 1.5;
    } else if (u < 80) {   /* a square that widens with t */
        double w = 0.8 + 0.1 * (double)t;
        x[0] = 7.75 + (unit(g) - 0.5) * w;
        x[1] = 2.25 + (unit(g) - 0.5) * w;
    } else {   /* the ring: radius 4 around the middle, angle from 16 bits */
        double a = 2 * 3.14159265358979 * unit(g), r = 4 + 0.2 * (unit(g) - 0.5);
        x[0] = 5 + r * cos(a);
        x[1] = 5 + r * sin(a);
    }
    for (int i = 0; i < 2; i++)
        x[i] = x[i] < 0 ? 0 : x[i] > 10 ? 10 : round(x[i] * 1000) / 1000;   /* metres */
}

static int reserve(dp_demo_map *d, uint64_t n)
{
    if (n <= d->cap_live)
        return DP_OK;
    uint64_t cap = n * 2;
    double *l = realloc(d->live, cap * 2 * sizeof *l);
    if (l)
        d->live = l;
    uint64_t *id = realloc(d->live_id, cap * sizeof *id);
    if (id)
        d->live_id = id;
    if (!l || !id)
        return DP_ENOMEM;
    d->cap_live = cap;
    return DP_OK;
}

int dp_demo_map_month(dp_demo_map *d, uint64_t t, dp_demo_map_update_fn fn, void *ctx)
{
    if (reserve(d, d->n_live + DP_DEMO_MAP_INSERTS) != DP_OK)
        return DP_ENOMEM;
    dp_drbg g;
    dp_drbg_init(&g, &d->seed, DP_DEMO_MAP_STREAM, sizeof DP_DEMO_MAP_STREAM - 1, t, "demo/points");
    char entity[32];
    double x[2];
    dp_update u = {.stream_id = DP_DEMO_MAP_STREAM, .stream_id_len = sizeof DP_DEMO_MAP_STREAM - 1, .step = t,
                   .entity_id = entity, .payload = {.kind = DP_PAYLOAD_POINT, .point = x, .point_len = 2}};
    int rc = DP_OK;
    for (int i = 0; i < DP_DEMO_MAP_INSERTS && rc == DP_OK; i++) {
        draw_point(&g, t, x);
        uint64_t id = ++d->next_entity;
        d->live[2 * d->n_live] = x[0];
        d->live[2 * d->n_live + 1] = x[1];
        d->live_id[d->n_live++] = id;
        u.kind = DP_UPDATE_INSERT;
        u.entity_id_len = (size_t)snprintf(entity, sizeof entity, "c%" PRIu64, id);
        rc = fn(ctx, &u);
    }
    uint64_t earlier = d->n_live - DP_DEMO_MAP_INSERTS;
    for (int i = 0; i < DP_DEMO_MAP_DELETES && t > 1 && earlier > 0 && rc == DP_OK; i++) {
        uint64_t k = dp_drbg_uniform(&g, earlier);
        x[0] = d->live[2 * k];
        x[1] = d->live[2 * k + 1];
        u.kind = DP_UPDATE_DELETE;
        u.entity_id_len = (size_t)snprintf(entity, sizeof entity, "c%" PRIu64, d->live_id[k]);
        memmove(d->live + 2 * k, d->live + 2 * k + 2, (d->n_live - k - 1) * 2 * sizeof *d->live);
        memmove(d->live_id + k, d->live_id + k + 1, (d->n_live - k - 1) * sizeof *d->live_id);
        d->n_live--;
        earlier--;
        rc = fn(ctx, &u);
    }
    dp_drbg_wipe(&g);
    memset(d->truth, 0, sizeof d->truth);
    for (uint64_t i = 0; i < d->n_live; i++)
        for (int q = 0; q < DP_DEMO_MAP_QUERIES; q++)
            d->truth[q] += (uint64_t)in_query(q, d->live + 2 * i);
    return rc;
}

static int on_record(void *ctx, const dp_synth_record *r)
{
    dp_demo_map *d = ctx;
    if (r->value.kind != DP_PAYLOAD_POINT || r->value.point_len != 2 || !(r->value.point[0] >= 0) ||
        !(r->value.point[0] <= 10) || !(r->value.point[1] >= 0) || !(r->value.point[1] <= 10)) {
        d->bad = 1;
        return DP_OK;
    }
    for (int q = 0; q < DP_DEMO_MAP_QUERIES; q++)
        d->syn[q] += (uint64_t)in_query(q, r->value.point);
    d->syn_points++;
    return DP_OK;
}

static int on_manifest(void *ctx, const dp_release_manifest *m)
{
    dp_demo_map *d = ctx;
    if (m->record_count != d->syn_points)
        d->bad = 1;
    for (size_t i = 0; i < m->n_debias; i++) {
        if (strcmp(m->debias[i].key, "leaves") == 0)
            d->leaves = m->debias[i].value;
        else if (strcmp(m->debias[i].key, "depth") == 0)
            d->depth = m->debias[i].value;
    }
    return DP_OK;
}

static int on_budget(void *ctx, const dp_budget_event *e)
{
    dp_demo_map *d = ctx;
    dp_demo_ledger_take(&d->ledger, e);
    return DP_OK;
}

dp_release_sink dp_demo_map_sink(dp_demo_map *d)
{
    return (dp_release_sink){.ctx = d, .record = on_record, .manifest = on_manifest, .budget = on_budget};
}

int dp_demo_map_note(dp_demo_map *d, uint64_t t)
{
    char line[320];
    int len = snprintf(line, sizeof line, "  map %2" PRIu64 ": %5" PRIu64 " points, synthetic %5" PRIu64
                       " in %4.0f cells (depth %2.0f);", t, d->n_live, d->syn_points, d->leaves, d->depth);
    for (int q = 0; q < DP_DEMO_MAP_QUERIES && len > 0 && (size_t)len < sizeof line; q++)
        len += snprintf(line + len, sizeof line - (size_t)len, " %s %" PRIu64 "/%" PRIu64, QUERY_NAMES[q],
                        d->truth[q], d->syn[q]);
    if (len > 0 && (size_t)len < sizeof line - 1) {
        line[len++] = '\n';
        dp_buf_put_bytes(&d->lines, line, (size_t)len);
    }
    memset(d->syn, 0, sizeof d->syn);
    d->syn_points = 0;
    return d->bad ? DP_ESTATE : dp_buf_status(&d->lines);
}

void dp_demo_map_print(FILE *f, const dp_demo_map *d)
{
    fprintf(f, "\nCheck-ins on a map (spatial, PHDStream: Kumar et al. 2024): each month %d check-ins in a\n"
               "made-up 10 x 10 km town and %d earlier ones withdrawn. dpstream publishes a whole set of\n"
               "synthetic points every month from a private hierarchical partition (PrivTree) of the\n"
               "town; shown are true/synthetic counts in four public rectangles:\n",
            DP_DEMO_MAP_INSERTS, DP_DEMO_MAP_DELETES);
    fwrite(d->lines.data, 1, d->lines.len, f);
    dp_demo_ledger_print(f, &d->ledger, "per check-in event (parallel over months)");
}
