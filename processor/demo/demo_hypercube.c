/* demo_hypercube.c — see demo_hypercube.h. */
#include "demo/demo_hypercube.h"

#include "core/dp_error.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const DISTRICTS[4] = {"SW", "SE", "NW", "NE"};

int dp_demo_drops_init(dp_demo_drops *d, const dp_demo_params *p)
{
    memset(d, 0, sizeof *d);
    d->seed = p->panel_seed;
    d->steps = p->steps;
    dp_buf_init(&d->lines);
    return DP_OK;
}

void dp_demo_drops_free(dp_demo_drops *d)
{
    dp_buf_free(&d->lines);
    memset(d, 0, sizeof *d);
}

json_t *dp_demo_drops_config(const dp_demo_params *p)
{
    (void)p;
    return json_pack("{s:f, s:[[i,i],[i,i]], s:i, s:i}", "epsilon", 1.0, "box", 0, 10, 0, 10, "points_per_step",
                     DP_DEMO_DROPS_PER_MONTH, "max_depth", 16);
}

static int district(const double *x) { return (x[0] >= 5) + 2 * (x[1] >= 5); }

/* A coordinate near c (a sum of three uniforms: a bell of width ~w). */
static double near(dp_drbg *g, double c, double w)
{
    double s = 0;
    for (int i = 0; i < 3; i++)
        s += (double)(dp_drbg_u64(g) >> 11) * 0x1.0p-53;
    return fmin(10, fmax(0, c + (s - 1.5) * w));
}

int dp_demo_drops_month(dp_demo_drops *d, uint64_t t, dp_demo_drops_update_fn fn, void *ctx)
{
    dp_drbg g;
    dp_drbg_init(&g, &d->seed, DP_DEMO_DROPS_STREAM, sizeof DP_DEMO_DROPS_STREAM - 1, t, "demo/drops");
    double x[2];
    dp_update up = {.stream_id = DP_DEMO_DROPS_STREAM, .stream_id_len = sizeof DP_DEMO_DROPS_STREAM - 1, .step = t,
                    .kind = DP_UPDATE_REPORT, .payload = {.kind = DP_PAYLOAD_POINT, .point = x, .point_len = 2}};
    uint32_t new_district = (uint32_t)(10 + 4 * t);   /* percent of drops in the new district, growing */
    int rc = DP_OK;
    for (int i = 0; i < DP_DEMO_DROPS_PER_MONTH && rc == DP_OK; i++) {
        uint32_t r = dp_drbg_uniform32(&g, 100);
        if (r < new_district) {
            x[0] = near(&g, 7.5, 2.5);
            x[1] = near(&g, 7.0, 2.5);
        } else if (r < new_district + 15) {
            x[0] = near(&g, 5, 10);
            x[1] = near(&g, 5, 10);
        } else {
            x[0] = near(&g, 3.0, 3.0);
            x[1] = near(&g, 3.5, 3.0);
        }
        d->truth[district(x)]++;
        d->t++;
        rc = fn(ctx, &up);
    }
    dp_drbg_wipe(&g);
    return rc;
}

static int on_record(void *ctx, const dp_synth_record *r)
{
    dp_demo_drops *d = ctx;
    if (r->value.kind != DP_PAYLOAD_POINT || r->value.point_len != 2) {
        d->bad = 1;
        return DP_OK;
    }
    d->syn[district(r->value.point)]++;
    d->syn_points++;
    return DP_OK;
}

static int on_manifest(void *ctx, const dp_release_manifest *m)
{
    dp_demo_drops *d = ctx;
    for (size_t i = 0; i < m->n_debias; i++)
        if (strcmp(m->debias[i].key, "depth") == 0)
            d->depth = m->debias[i].value;
    return DP_OK;
}

static int on_budget(void *ctx, const dp_budget_event *e)
{
    dp_demo_ledger_take(&((dp_demo_drops *)ctx)->ledger, e);
    return DP_OK;
}

dp_release_sink dp_demo_drops_sink(dp_demo_drops *d)
{
    return (dp_release_sink){.ctx = d, .record = on_record, .manifest = on_manifest, .budget = on_budget};
}

int dp_demo_drops_note(dp_demo_drops *d, uint64_t t)
{
    char line[256];
    int len = snprintf(line, sizeof line, "  drops %2" PRIu64 ": %6" PRIu64 " true %6" PRIu64 " synthetic, depth %2.0f;",
                       t, d->t, d->syn_points, d->depth);
    double worst = 0;
    for (int q = 0; q < 4; q++) {
        double a = 100.0 * (double)d->truth[q] / (double)d->t, b = 100.0 * (double)d->syn[q] / (double)d->syn_points;
        worst = fmax(worst, fabs(a - b));
        if (len > 0 && (size_t)len < sizeof line)
            len += snprintf(line + len, sizeof line - (size_t)len, " %s %.0f/%.0f%%", DISTRICTS[q], a, b);
    }
    if (len > 0 && (size_t)len < sizeof line)
        len += snprintf(line + len, sizeof line - (size_t)len, "; largest gap %.1f points\n", worst);
    if (len > 0 && (size_t)len < sizeof line)
        dp_buf_put_bytes(&d->lines, line, (size_t)len);
    int bad = d->bad || d->syn_points != d->t;   /* exactly t points, always */
    memset(d->syn, 0, sizeof d->syn);
    d->syn_points = 0;
    return bad ? DP_ESTATE : dp_buf_status(&d->lines);
}

void dp_demo_drops_print(FILE *f, const dp_demo_drops *d)
{
    fprintf(f, "\nParcel drop-offs (hypercube: He, Vershynin, Zhu 2024): %d drop-off locations a month in the\n"
               "town; every release holds exactly as many synthetic drop-offs as there have been, refined as\n"
               "they accumulate (depth = the partition's). District shares, true/synthetic:\n",
            DP_DEMO_DROPS_PER_MONTH);
    fwrite(d->lines.data, 1, d->lines.len, f);
    dp_demo_ledger_print(f, &d->ledger, "per drop-off (event-level, replacement)");
}
