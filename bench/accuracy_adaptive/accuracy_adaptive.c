/* accuracy_adaptive.c — seed 003's evaluation (§7) of `adaptive` on a
 * moving-objects grid stream: DSAT, DSFT, BD, BA (through synth.h, the code
 * `dpstream` runs) and the fixed-interval sampler of §4 (here: a release
 * every N/C steps at ε/C each, user-level), by three metrics:
 *   MAE   mean over steps and bins of |x − x̂| (x̂ = the release in force)
 *   ARE   mean of |x − x̂| / max(x, 0.01·Σ_t x_bin)  (streamdp-benchmark's "MRE")
 *   range mean over steps of the mean |q(x) − q(x̂)| over 5000 random
 *         range-count queries (bin intervals, the same queries every step)
 *
 *   bench_accuracy_adaptive --method M [--epsilon 1] [--w 20] [--key 1] [--users 5000]
 *                           [--steps 200] [--side 16] [--releases 20] [--n-min 4000]
 *                           [--test-fraction 0.5] (bd, ba) [--w-event 1] (dsat, dsft: w-event,
 *                           C = --releases per window)
 *                           [--truth FILE]   (write the true histograms as CSV and exit)
 *                           [--truth-in FILE] (instead of the grid: histograms from a CSV — e.g.
 *                           census.py's — turned into INSERT/DELETE updates: a bin's count going up
 *                           inserts tuples of new entities, going down deletes its latest ones)
 *                           [--threshold T] (dsat, dsft)
 *
 * The stream: `users` objects on a side × side grid (U = side² bins, row
 * major); each step an object moves to a random neighbouring cell with a
 * probability that alternates between 0.02 (quiet periods) and 0.3 (busy
 * ones) every 25 steps, towards a hotspot that jumps every 50 steps.  It is
 * a public, seeded generator (the data are not anyone's). */
#include "synth/common/synth.h"

#include "core/dp_error.h"
#include "core/drbg.h"
#include "core/rational.h"
#include "core/sample.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void die(const char *m) { fprintf(stderr, "bench_accuracy_adaptive: %s\n", m); exit(2); }

typedef struct opts {
    const char *method, *truth, *truth_in;
    double eps;
    int w, key, users, steps, side, releases, n_min;
    double test_fraction, threshold;
    int w_event;   /* dsat, dsft under w-event privacy */
} opts;

/* Histograms from a CSV (one line per step, the same number of bins on each). */
static int64_t *read_truth(const char *path, int *U, int *T)
{
    FILE *f = fopen(path, "r");
    if (!f)
        die("cannot read the --truth-in file");
    size_t cap = 1 << 16, n = 0;
    int64_t *h = malloc(cap * sizeof *h);
    int bins = 0, lines = 0, col = 0;
    long long v;
    int ch;
    while (fscanf(f, "%lld", &v) == 1) {
        if (n == cap && !(h = realloc(h, (cap *= 2) * sizeof *h)))
            die("out of memory");
        h[n++] = v;
        col++;
        ch = fgetc(f);
        if (ch == '\n' || ch == EOF) {
            if (lines == 0)
                bins = col;
            else if (col != bins)
                die("--truth-in: lines of different lengths");
            lines++;
            col = 0;
        }
    }
    fclose(f);
    *U = bins;
    *T = lines;
    return h;
}

/* the true histograms, steps × U, from the generator */
static int64_t *generate(const opts *o)
{
    int U = o->side * o->side;
    int64_t *h = calloc((size_t)o->steps * U, sizeof *h);
    int *pos = malloc(o->users * sizeof *pos);
    if (!h || !pos)
        die("out of memory");
    dp_key seed;
    memset(&seed, 0x33, sizeof seed);
    dp_drbg g;
    dp_drbg_init(&g, &seed, "grid", 4, 0, "bench/adaptive/start");
    for (int u = 0; u < o->users; u++)
        pos[u] = (int)dp_drbg_uniform(&g, (uint64_t)U);
    dp_drbg_wipe(&g);
    int hx = o->side / 4, hy = o->side / 4;
    for (int t = 0; t < o->steps; t++) {
        dp_drbg_init(&g, &seed, "grid", 4, (uint64_t)t + 1, "bench/adaptive/move");
        if (t % 50 == 0 && t > 0) {
            hx = (int)dp_drbg_uniform(&g, (uint64_t)o->side);
            hy = (int)dp_drbg_uniform(&g, (uint64_t)o->side);
        }
        uint64_t p_move = (t / 25) % 2 ? 300 : 20;   /* per mille */
        for (int u = 0; u < o->users; u++) {
            if (t > 0 && dp_drbg_uniform(&g, 1000) < p_move) {
                int x = pos[u] % o->side, y = pos[u] / o->side;
                int dx = (hx > x) - (hx < x), dy = (hy > y) - (hy < y);
                if (dp_drbg_uniform(&g, 3) == 0) {   /* a random step a third of the time */
                    dx = (int)dp_drbg_uniform(&g, 3) - 1;
                    dy = (int)dp_drbg_uniform(&g, 3) - 1;
                }
                x = x + dx < 0 ? 0 : x + dx >= o->side ? o->side - 1 : x + dx;
                y = y + dy < 0 ? 0 : y + dy >= o->side ? o->side - 1 : y + dy;
                pos[u] = y * o->side + x;
            }
            h[(size_t)t * U + pos[u]]++;
        }
        dp_drbg_wipe(&g);
    }
    free(pos);
    return h;
}

typedef struct cap { int64_t *cur; int U; int released; } cap;

static int on_manifest(void *ctx, const dp_release_manifest *m)
{
    cap *c = ctx;
    c->released = 0;
    for (size_t i = 0; i < m->n_debias; i++) {
        unsigned b;
        if (strcmp(m->debias[i].key, "released") == 0)
            c->released = m->debias[i].value == 1;
        else if (sscanf(m->debias[i].key, "count.%u", &b) == 1 && b < (unsigned)c->U)
            c->cur[b] = (int64_t)m->debias[i].value;
    }
    return 0;
}

int main(int argc, char **argv)
{
    opts o = {.method = "dsat", .eps = 1, .w = 20, .key = 1, .users = 5000, .steps = 200, .side = 16,
              .releases = 20, .n_min = 4000, .test_fraction = 0.5, .threshold = 0.025};
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--method")) o.method = v;
        else if (!strcmp(k, "--epsilon")) o.eps = atof(v);
        else if (!strcmp(k, "--w")) o.w = atoi(v);
        else if (!strcmp(k, "--key")) o.key = atoi(v);
        else if (!strcmp(k, "--users")) o.users = atoi(v);
        else if (!strcmp(k, "--steps")) o.steps = atoi(v);
        else if (!strcmp(k, "--side")) o.side = atoi(v);
        else if (!strcmp(k, "--releases")) o.releases = atoi(v);
        else if (!strcmp(k, "--n-min")) o.n_min = atoi(v);
        else if (!strcmp(k, "--truth")) o.truth = v;
        else if (!strcmp(k, "--truth-in")) o.truth_in = v;
        else if (!strcmp(k, "--threshold")) o.threshold = atof(v);
        else if (!strcmp(k, "--test-fraction")) o.test_fraction = atof(v);
        else if (!strcmp(k, "--w-event")) o.w_event = atoi(v);
        else die("unknown option");
    }
    int U = o.side * o.side, T = o.steps;
    int64_t *h = o.truth_in ? read_truth(o.truth_in, &U, &T) : generate(&o);
    if (o.truth) {
        FILE *f = fopen(o.truth, "w");
        if (!f)
            die("cannot write the truth file");
        for (int t = 0; t < T; t++)
            for (int b = 0; b < U; b++)
                fprintf(f, "%lld%c", (long long)h[(size_t)t * U + b], b + 1 < U ? ',' : '\n');
        fclose(f);
        return 0;
    }
    dp_key key;
    memset(&key, 0, sizeof key);
    memcpy(key.bytes, &o.key, sizeof o.key);
    key.bytes[31] = 0xa5;
    int64_t *cur = calloc(U, sizeof *cur), *est = calloc((size_t)T * U, sizeof *est);
    if (!cur || !est)
        die("out of memory");
    int releases = 0;
    double busy = 0;
    char err[512];
    if (!strcmp(o.method, "fixed")) {
        /* a release every ceil(N/C) steps at ε/C: DLap(C/ε) per bin */
        int every = (T + o.releases - 1) / o.releases;
        dp_rational q;
        dp_dlap lap;
        if (dp_rational_from_double_up(o.releases / o.eps, &q) || dp_dlap_prepare(&lap, q, err, sizeof err))
            die(err);
        for (int t = 0; t < T; t++) {
            if (t % every == 0) {
                dp_drbg g;
                dp_drbg_init(&g, &key, "fixed", 5, (uint64_t)t + 1, "bench/adaptive/fixed");
                for (int b = 0; b < U; b++)
                    cur[b] = h[(size_t)t * U + b] + dp_dlap_sample(&lap, &g);
                dp_drbg_wipe(&g);
                releases++;
            }
            memcpy(est + (size_t)t * U, cur, U * sizeof *cur);
        }
    } else {
        int window = !strcmp(o.method, "bd") || !strcmp(o.method, "ba");
        int svt_window = !window && o.w_event;
        json_t *cfg = window ? json_pack("{s:i, s:s, s:f, s:i, s:s, s:i, s:f}", "categories", U, "method", o.method,
                                         "epsilon", o.eps, "horizon", T, "privacy", "w_event", "w", o.w,
                                         "test_fraction", o.test_fraction)
                     : svt_window
                         ? json_pack("{s:i, s:s, s:f, s:i, s:i, s:i, s:s, s:i, s:f}", "categories", U, "method",
                                     o.method, "epsilon", o.eps, "horizon", T, "max_releases", o.releases, "n_min",
                                     o.n_min, "privacy", "w_event", "w", o.w, "threshold", o.threshold)
                         : json_pack("{s:i, s:s, s:f, s:i, s:i, s:i, s:f}", "categories", U, "method", o.method,
                                     "epsilon", o.eps, "horizon", T, "max_releases", o.releases, "n_min",
                                     o.n_min, "threshold", o.threshold);
        dp_synth_env env = {&key, "bench/adaptive", 14};
        dp_synth *s;
        if (dp_synth_create(&s, "adaptive", cfg, &env, err, sizeof err) != DP_OK)
            die(err);
        cap c = {cur, U, 0};
        dp_release_sink sink = {&c, NULL, on_manifest, NULL};
        char id[24];
        int *val = malloc(o.users * sizeof *val);
        /* --truth-in: per bin, a stack of its present entities (ids n<k>) */
        int64_t **stack = calloc(U, sizeof *stack), *depth = calloc(U, sizeof *depth), next = 0;
        for (int t = 0; t < T; t++) {
            struct timespec a, z;
            clock_gettime(CLOCK_MONOTONIC, &a);
            /* Under w-event a snapshot is the step's reports (adaptive_config.h): the
             * standing population is fed as every present entity's report each step. */
            if (o.truth_in && !window && !o.w_event) {
                for (int b = 0; b < U; b++) {
                    int64_t want = h[(size_t)t * U + b];
                    if (want > depth[b] && !(stack[b] = realloc(stack[b], (size_t)want * sizeof **stack)))
                        die("out of memory");
                    while (depth[b] != want) {
                        int ins = want > depth[b];
                        int64_t e = ins ? next++ : stack[b][depth[b] - 1];
                        snprintf(id, sizeof id, "n%lld", (long long)e);
                        dp_update up = {.stream_id = "bench/adaptive", .stream_id_len = 14, .step = (uint64_t)t + 1,
                                        .kind = ins ? DP_UPDATE_INSERT : DP_UPDATE_DELETE, .entity_id = id,
                                        .entity_id_len = strlen(id),
                                        .payload = {.kind = DP_PAYLOAD_CATEGORY, .category = b}};
                        dp_reject_reason why;
                        if (dp_synth_ingest(s, &up, &why) != DP_OK || why != DP_REJECT_NONE)
                            die("an update was rejected");
                        if (ins)
                            stack[b][depth[b]++] = e;
                        else
                            depth[b]--;
                    }
                }
            } else {
                /* rebuild the users' cells from the histogram: user u holds the u-th unit of the counts */
                int u = 0, present = 0;
                for (int b = 0; b < U; b++)
                    present += (int)h[(size_t)t * U + b];
                if (present > o.users && !(val = realloc(val, (size_t)present * sizeof *val)))
                    die("out of memory");
                for (int b = 0; b < U; b++)
                    for (int64_t k = 0; k < h[(size_t)t * U + b]; k++)
                        val[u++] = b;
                for (u = 0; u < present; u++) {
                    snprintf(id, sizeof id, "o%d", u);
                    dp_update up = {.stream_id = "bench/adaptive", .stream_id_len = 14, .step = (uint64_t)t + 1,
                                    .kind = DP_UPDATE_REPORT, .entity_id = id, .entity_id_len = strlen(id),
                                    .payload = {.kind = DP_PAYLOAD_CATEGORY, .category = val[u]}};
                    dp_reject_reason why;
                    if (dp_synth_ingest(s, &up, &why) != DP_OK || why != DP_REJECT_NONE)
                        die("a report was rejected");
                }
            }
            if (dp_synth_close_step(s, &sink, err, sizeof err) != DP_OK)
                die(err);
            clock_gettime(CLOCK_MONOTONIC, &z);
            busy += (double)(z.tv_sec - a.tv_sec) + (z.tv_nsec - a.tv_nsec) * 1e-9;
            releases += c.released;
            memcpy(est + (size_t)t * U, cur, U * sizeof *cur);
        }
        for (int b = 0; b < U; b++)
            free(stack[b]);
        free(stack);
        free(depth);
        free(val);
        dp_synth_destroy(s);
        json_decref(cfg);
    }
    /* metrics */
    double mae = 0, are = 0, range = 0;
    double *bin_total = calloc(U, sizeof *bin_total);
    for (int t = 0; t < T; t++)
        for (int b = 0; b < U; b++)
            bin_total[b] += (double)h[(size_t)t * U + b];
    enum { Q = 5000 };
    int *qa = malloc(Q * sizeof *qa), *qb = malloc(Q * sizeof *qb);
    dp_key qkey;
    memset(&qkey, 0x77, sizeof qkey);
    dp_drbg g;
    dp_drbg_init(&g, &qkey, "queries", 7, 0, "bench/adaptive/queries");
    for (int i = 0; i < Q; i++) {
        int a = (int)dp_drbg_uniform(&g, (uint64_t)U), b = (int)dp_drbg_uniform(&g, (uint64_t)U);
        qa[i] = a < b ? a : b;
        qb[i] = a < b ? b : a;
    }
    dp_drbg_wipe(&g);
    double *pre_x = malloc((U + 1) * sizeof *pre_x), *pre_e = malloc((U + 1) * sizeof *pre_e);
    for (int t = 0; t < T; t++) {
        pre_x[0] = pre_e[0] = 0;
        for (int b = 0; b < U; b++) {
            double x = (double)h[(size_t)t * U + b], e = (double)est[(size_t)t * U + b];
            mae += fabs(x - e);
            are += fabs(x - e) / fmax(x, 0.01 * bin_total[b]);
            pre_x[b + 1] = pre_x[b] + x;
            pre_e[b + 1] = pre_e[b] + e;
        }
        double s = 0;
        for (int i = 0; i < Q; i++)
            s += fabs((pre_x[qb[i] + 1] - pre_x[qa[i]]) - (pre_e[qb[i] + 1] - pre_e[qa[i]]));
        range += s / Q;
    }
    printf("%s eps %g w %d key %d: MAE %.3f ARE %.4f range %.2f releases %d time/step %.6f s\n", o.method, o.eps,
           o.w, o.key, mae / ((double)T * U), are / ((double)T * U), range / T, releases, busy / T);
    return 0;
}
