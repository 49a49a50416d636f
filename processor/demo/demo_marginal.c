/* demo_marginal.c — see demo_marginal.h. */
#include "demo/demo_marginal.h"

#include "core/dp_error.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const uint32_t SIZES[DP_DEMO_TABLE_ATTRS] = {4, 2, 3, 2};
static const char *const NAMES[DP_DEMO_TABLE_ATTRS] = {"age", "sex", "education", "employed"};

int dp_demo_table_init(dp_demo_table *d, const dp_demo_params *p)
{
    memset(d, 0, sizeof *d);
    d->seed = p->panel_seed;
    d->steps = p->steps;
    dp_buf_init(&d->lines);
    return DP_OK;
}

void dp_demo_table_free(dp_demo_table *d)
{
    free(d->live);
    dp_buf_free(&d->lines);
    memset(d, 0, sizeof *d);
}

json_t *dp_demo_table_config(const dp_demo_params *p)
{
    return json_pack("{s:[{s:s, s:[s,s,s,s]}, {s:s, s:[s,s]}, {s:s, s:[s,s,s]}, {s:s, s:[s,s]}],"
                     " s:s, s:I, s:f, s:s}",
                     "attributes", "name", "age", "categories", "18-29", "30-44", "45-64", "65+", "name", "sex",
                     "categories", "F", "M", "name", "education", "categories", "school", "college", "degree",
                     "name", "employed", "categories", "no", "yes", "workloads", "all_2way", "horizon",
                     (json_int_t)p->steps, "epsilon", 1.0, "counter", "simple");   /* method: the default, forest */
}

static uint64_t cell_of(const int32_t *r)
{
    return ((uint64_t)r[0] * 2 + (uint64_t)r[1]) * 6 + (uint64_t)r[2] * 2 + (uint64_t)r[3];
}

static void row_of(uint64_t cell, int32_t *r)
{
    r[3] = (int32_t)(cell % 2);
    r[2] = (int32_t)(cell / 2 % 3);
    r[1] = (int32_t)(cell / 6 % 2);
    r[0] = (int32_t)(cell / 12);
}

/* A made-up population: education rises and employment falls with age band,
 * employment rises with education. */
static void draw_row(dp_drbg *g, int32_t *r)
{
    static const uint32_t AGE[4] = {30, 35, 25, 10};   /* percent */
    uint32_t u = dp_drbg_uniform32(g, 100), a = 0;
    while (u >= AGE[a]) {
        u -= AGE[a];
        a++;
    }
    r[0] = (int32_t)a;
    r[1] = (int32_t)dp_drbg_uniform32(g, 2);
    uint32_t e = dp_drbg_uniform32(g, 100);
    r[2] = e < 50 - 10 * a ? 0 : e < 80 - 5 * a ? 1 : 2;
    uint32_t w = dp_drbg_uniform32(g, 100);
    r[3] = w < (a == 3 ? 25u : 70u + 10u * (uint32_t)r[2]) ? 1 : 0;
}

int dp_demo_table_month(dp_demo_table *d, uint64_t t, dp_demo_update_fn fn, void *ctx)
{
    dp_drbg g;
    dp_drbg_init(&g, &d->seed, DP_DEMO_TABLE_STREAM, sizeof DP_DEMO_TABLE_STREAM - 1, t, "demo/rows");
    char entity[32];
    int32_t row[DP_DEMO_TABLE_ATTRS];
    dp_update u = {.stream_id = DP_DEMO_TABLE_STREAM, .stream_id_len = sizeof DP_DEMO_TABLE_STREAM - 1,
                   .step = t, .entity_id = entity,
                   .payload = {.kind = DP_PAYLOAD_ROW, .row = row, .row_len = DP_DEMO_TABLE_ATTRS}};
    int rc = DP_OK;
    if (d->n_live + DP_DEMO_TABLE_INSERTS > d->cap_live) {
        uint64_t cap = (d->cap_live + DP_DEMO_TABLE_INSERTS) * 2;
        uint64_t *nl = realloc(d->live, cap * sizeof *nl);
        if (!nl)
            return DP_ENOMEM;
        d->live = nl;
        d->cap_live = cap;
    }
    for (int i = 0; i < DP_DEMO_TABLE_INSERTS && rc == DP_OK; i++) {
        draw_row(&g, row);
        uint64_t id = ++d->next_entity, cell = cell_of(row);
        u.kind = DP_UPDATE_INSERT;
        u.entity_id_len = (size_t)snprintf(entity, sizeof entity, "r%" PRIu64, id);
        d->live[d->n_live++] = id << 8 | cell;
        d->truth[cell]++;
        rc = fn(ctx, &u);
    }
    /* deletes of rows from earlier months, chosen uniformly among them */
    uint64_t earlier = d->n_live - DP_DEMO_TABLE_INSERTS;
    for (int i = 0; i < DP_DEMO_TABLE_DELETES && t > 1 && earlier > 0 && rc == DP_OK; i++) {
        uint64_t k = dp_drbg_uniform(&g, earlier);
        uint64_t v = d->live[k];
        memmove(d->live + k, d->live + k + 1, (d->n_live - k - 1) * sizeof *d->live);
        d->n_live--;
        earlier--;
        row_of(v & 0xff, row);
        d->truth[v & 0xff]--;
        u.kind = DP_UPDATE_DELETE;
        u.entity_id_len = (size_t)snprintf(entity, sizeof entity, "r%" PRIu64, v >> 8);
        rc = fn(ctx, &u);
    }
    dp_drbg_wipe(&g);
    return rc;
}

static int on_record(void *ctx, const dp_synth_record *r)
{
    dp_demo_table *d = ctx;
    if (r->value.kind != DP_PAYLOAD_ROW || r->value.row_len != DP_DEMO_TABLE_ATTRS) {
        d->bad = 1;
        return DP_OK;
    }
    for (int a = 0; a < DP_DEMO_TABLE_ATTRS; a++)
        if (r->value.row[a] < 0 || (uint32_t)r->value.row[a] >= SIZES[a]) {
            d->bad = 1;
            return DP_OK;
        }
    d->syn[cell_of(r->value.row)]++;
    d->syn_rows++;
    return DP_OK;
}

static int on_manifest(void *ctx, const dp_release_manifest *m)
{
    dp_demo_table *d = ctx;
    if (m->record_count != d->syn_rows)
        d->bad = 1;
    for (int l = 0; l < 4; l++)
        d->selected[l] = -1;
    for (size_t i = 0; i < m->n_debias; i++) {
        unsigned l;
        if (sscanf(m->debias[i].key, "selected.%u", &l) == 1 && l < 4)
            d->selected[l] = (int)m->debias[i].value;
    }
    return DP_OK;
}

static int on_budget(void *ctx, const dp_budget_event *e)
{
    dp_demo_table *d = ctx;
    dp_demo_ledger_take(&d->ledger, e);
    return DP_OK;
}

dp_release_sink dp_demo_table_sink(dp_demo_table *d)
{
    return (dp_release_sink){.ctx = d, .record = on_record, .manifest = on_manifest, .budget = on_budget};
}

/* The attribute pair of 2-way workload w in all_2way order. */
static void pair_of(int w, int *a, int *b)
{
    int k = 0;
    for (int i = 0; i < DP_DEMO_TABLE_ATTRS; i++)
        for (int j = i + 1; j < DP_DEMO_TABLE_ATTRS; j++, k++)
            if (k == w) {
                *a = i;
                *b = j;
            }
}

int dp_demo_table_note(dp_demo_table *d, uint64_t t)
{
    uint64_t n = 0;
    for (int c = 0; c < DP_DEMO_TABLE_CELLS; c++)
        n += (uint64_t)d->truth[c];
    double sum = 0, worst = 0;
    int npairs = 0;
    for (int a = 0; a < DP_DEMO_TABLE_ATTRS; a++)
        for (int b = a + 1; b < DP_DEMO_TABLE_ATTRS; b++, npairs++) {
            double tm[12] = {0}, sm[12] = {0}, err = 0;
            int32_t r[DP_DEMO_TABLE_ATTRS];
            for (int c = 0; c < DP_DEMO_TABLE_CELLS; c++) {
                row_of((uint64_t)c, r);
                tm[r[a] * (int)SIZES[b] + r[b]] += (double)d->truth[c];
                sm[r[a] * (int)SIZES[b] + r[b]] += d->syn[c];
            }
            uint32_t cells = SIZES[a] * SIZES[b];
            for (uint32_t c = 0; c < cells; c++)
                err += fabs(tm[c] - sm[c]);
            err /= cells * (n ? (double)n : 1);   /* seed 001 §7.3's WE, as a share of the rows */
            sum += err;
            worst = err > worst ? err : worst;
        }
    char picked[96] = "";
    for (int l = 0; l < 4 && d->selected[l] >= 0; l++) {
        int a = 0, b = 0;
        pair_of(d->selected[l], &a, &b);
        size_t len = strlen(picked);
        snprintf(picked + len, sizeof picked - len, "%s%s x %s", l ? ", " : "", NAMES[a], NAMES[b]);
    }
    char line[256];
    int len = snprintf(line, sizeof line, "  month %2" PRIu64 ": %5" PRIu64 " rows, synthetic %5" PRIu64
                       "; per-cell 2-way error avg %.2f%%, worst %.2f%%%s%s\n", t, n, d->syn_rows, 100 * sum / npairs,
                       100 * worst, *picked ? "; measured " : "", picked);   /* selections: Alg. 3 and mwem only */
    dp_buf_put_bytes(&d->lines, line, (size_t)len);
    memset(d->syn, 0, sizeof d->syn);
    d->syn_rows = 0;
    return d->bad ? DP_ESTATE : dp_buf_status(&d->lines);
}

void dp_demo_table_print(FILE *f, const dp_demo_table *d)
{
    fprintf(f, "\nA streaming table (marginal, its default method forest): each month %d people join a\n"
               "made-up register (age band, sex, education, employed) and %d earlier ones leave.\n"
               "dpstream publishes the whole synthetic table every month; shown is its error on\n"
               "the 2-way marginals (mean |true - synthetic| per cell, as a share of the true row\n"
               "count):\n",
            DP_DEMO_TABLE_INSERTS, DP_DEMO_TABLE_DELETES);
    fwrite(d->lines.data, 1, d->lines.len, f);
    dp_demo_ledger_print(f, &d->ledger, "per row event (parallel over months)");
}
