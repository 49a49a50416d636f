/* demo_adaptive.c — see demo_adaptive.h. */
#include "demo/demo_adaptive.h"

#include "core/dp_error.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const MODES[DP_DEMO_MODES] = {"car", "bus", "train", "bike", "walk", "tram"};

int dp_demo_modes_init(dp_demo_modes *d, const dp_demo_params *p)
{
    memset(d, 0, sizeof *d);
    d->seed = p->panel_seed;
    d->steps = p->steps;
    dp_buf_init(&d->lines);
    return DP_OK;
}

void dp_demo_modes_free(dp_demo_modes *d)
{
    dp_buf_free(&d->lines);
    memset(d, 0, sizeof *d);
}

json_t *dp_demo_modes_config(const dp_demo_params *p)
{
    return json_pack("{s:i, s:s, s:f, s:I, s:i, s:i, s:f, s:f}", "categories", DP_DEMO_MODES, "method", "dsat",
                     "epsilon", 1.0, "horizon", (json_int_t)p->steps, "max_releases", 4, "n_min", 1500,
                     "decision_fraction", 0.2, "threshold", 0.05);
}

int dp_demo_modes_month(dp_demo_modes *d, uint64_t t, dp_demo_modes_update_fn fn, void *ctx)
{
    static const uint32_t START[DP_DEMO_MODES] = {45, 20, 15, 10, 7, 3};   /* percent */
    dp_drbg g;
    dp_drbg_init(&g, &d->seed, DP_DEMO_MODES_STREAM, sizeof DP_DEMO_MODES_STREAM - 1, t, "demo/modes");
    for (int u = 0; u < DP_DEMO_COMMUTERS; u++) {
        uint32_t r = dp_drbg_uniform32(&g, 100);
        if (t == 1) {   /* the starting mix */
            uint8_t m = 0;
            while (r >= START[m]) {
                r -= START[m];
                m++;
            }
            d->mode[u] = m;
        } else if (t == 7 && d->mode[u] == 0 && r < 35) {   /* the new bus line */
            d->mode[u] = 1;
        } else if (r < 2) {   /* a few switch at random */
            d->mode[u] = (uint8_t)dp_drbg_uniform32(&g, DP_DEMO_MODES);
        }
    }
    dp_drbg_wipe(&g);
    memset(d->truth, 0, sizeof d->truth);
    char id[16];
    dp_update up = {.stream_id = DP_DEMO_MODES_STREAM, .stream_id_len = sizeof DP_DEMO_MODES_STREAM - 1, .step = t,
                    .kind = DP_UPDATE_REPORT, .entity_id = id, .payload = {.kind = DP_PAYLOAD_CATEGORY}};
    int rc = DP_OK;
    for (int u = 0; u < DP_DEMO_COMMUTERS && rc == DP_OK; u++) {
        d->truth[d->mode[u]]++;
        up.entity_id_len = (size_t)snprintf(id, sizeof id, "c%d", u);
        up.payload.category = d->mode[u];
        rc = fn(ctx, &up);
    }
    return rc;
}

static int on_record(void *ctx, const dp_synth_record *r)
{
    dp_demo_modes *d = ctx;
    if (r->value.kind != DP_PAYLOAD_CATEGORY || r->value.category < 0 || r->value.category >= DP_DEMO_MODES)
        d->bad = 1;
    return DP_OK;
}

static int on_manifest(void *ctx, const dp_release_manifest *m)
{
    dp_demo_modes *d = ctx;
    d->new_release = 0;
    for (size_t i = 0; i < m->n_debias; i++) {
        unsigned b;
        if (strcmp(m->debias[i].key, "released") == 0)
            d->new_release = m->debias[i].value == 1;
        else if (strcmp(m->debias[i].key, "repeat_of") == 0)
            d->repeat_of = (uint64_t)m->debias[i].value;
        else if (sscanf(m->debias[i].key, "count.%u", &b) == 1 && b < DP_DEMO_MODES)
            d->released[b] = m->debias[i].value;
    }
    return DP_OK;
}

static int on_budget(void *ctx, const dp_budget_event *e)
{
    dp_demo_modes *d = ctx;
    dp_demo_ledger_take(&d->ledger, e);
    return DP_OK;
}

dp_release_sink dp_demo_modes_sink(dp_demo_modes *d)
{
    return (dp_release_sink){.ctx = d, .record = on_record, .manifest = on_manifest, .budget = on_budget};
}

int dp_demo_modes_note(dp_demo_modes *d, uint64_t t)
{
    char line[256];
    int len = snprintf(line, sizeof line, "  modes %2" PRIu64 ": %-16s", t,
                       d->new_release ? "new release" : "repeat");
    double err = 0;
    for (int b = 0; b < DP_DEMO_MODES; b++) {
        err += fabs((double)d->truth[b] - d->released[b]);
        if (len > 0 && (size_t)len < sizeof line)
            len += snprintf(line + len, sizeof line - (size_t)len, " %s %" PRId64 "/%.0f", MODES[b], d->truth[b],
                            d->released[b]);
    }
    if (len > 0 && (size_t)len < sizeof line)
        len += snprintf(line + len, sizeof line - (size_t)len, "; L1 %.0f\n", err);
    if (len > 0 && (size_t)len < sizeof line)
        dp_buf_put_bytes(&d->lines, line, (size_t)len);
    return d->bad ? DP_ESTATE : dp_buf_status(&d->lines);
}

void dp_demo_modes_print(FILE *f, const dp_demo_modes *d)
{
    fprintf(f, "\nTransport modes (adaptive, DSAT: Li et al. 2015, corrected to be DP): %d commuters report\n"
               "their mode every month; a new bus line opens in month 7. A new histogram is released only\n"
               "when the private decision says the data moved (at most 4 releases); true/released per mode:\n",
            DP_DEMO_COMMUTERS);
    fwrite(d->lines.data, 1, d->lines.len, f);
    dp_demo_ledger_print(f, &d->ledger, "per commuter over all months");
}
