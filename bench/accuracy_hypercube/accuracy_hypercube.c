/* accuracy_hypercube.c — seed 004's accuracy claim for `hypercube` (He,
 * Vershynin, Zhu 2024, Theorem 1.1, eq. (1.1)):
 *     E W1(μ_X_t, μ_Y_t) ≲ log(t)·(εt)^(−1/d)                  d >= 2
 *     E W1(μ_X_t, μ_Y_t) ≲ log³(εt)·log^1.5(t)·(εt)^(−1)       d = 1
 * measured on one point stream (issue 17).
 *
 *   bench_accuracy_hypercube --points FILE --dims D --epsilon E [--points-per-step B]
 *                            [--max-depth 20] [--key K] [--stream NAME] [--t-max N]
 *                            [--eval-min 64] [--evals-per-octave 1] [--eval-from 0]
 *                            [--grid 362] [--grid-min 181]
 *                            [--exact-max 2048] [--check 0] [--subsample 0] [--baseline 1] [--variant V]
 *   bench_accuracy_hypercube --selftest      (the W1 solvers against each other)
 *
 * FILE: CSV, one point "x1,...,xd" per line, in [0,1]^d, in stream order.
 * The first min(N, lines) points are fed to `hypercube` behind synth.h (the
 * code `dpstream` runs; config {"epsilon", "dims", "points_per_step": B,
 * "max_depth", "output": "full"}), key bytes from K.  A step holds B
 * consecutive points (the paper's times t+1..t+B), except that a step also
 * ends at each evaluation time, so the release is evaluated at exactly
 * t = round(eval_min·2^(i/evals_per_octave)) and at the last t; steps end
 * there even below --eval-from, where W1 is skipped (so a run that only
 * re-evaluates a late t releases exactly what the full run released: the
 * noise is keyed by the step).
 *
 * Metric: W1 between the true empirical measure of the first t points and
 * the FULL release (exactly t synthetic points), under the ℓ∞ metric on
 * [0,1]^d (the paper's: diam(Ω_θ) ≍ 2^(−|θ|/d) in its proof).  No
 * subsampling: both full sets, by `method`
 *   sort   d = 1, exact (sorted matching);
 *   exact  d = 2, t <= exact-max: exact optimal assignment;
 *   gridG  d = 2, larger t: exact transport between the two measures rounded
 *          to the centres of a G×G grid (network simplex on the king graph,
 *          w1.h), G = 181 or 362 chosen by the value (non-dyadic: see w1());
 *          `disc` = the exact mean rounding displacement of both sets, a
 *          bound on |W1_grid − W1|, far above the actual gap; `w1_err` =
 *          |W1_G − W1_{G/2}|, an indicator of it (--check 1 also prints the
 *          grid value where the exact one is known, as `w1_check`).
 * Reference columns (same metric and method):
 *   w1_uniform  a NON-private baseline: t iid uniform points (what the
 *               algorithm releases when no count rises above 0: even splits),
 *               on the grid of --grid-min at most (it is only a reference);
 *   w1_sub      with --subsample n (n < t): exact W1 between two independent
 *               size-n subsamples (without replacement) of the same true t
 *               points: the floor a size-n subsample evaluation would add.
 *
 * Prints one line per evaluation:
 *   stream eps d key t w1 method depth time_per_step w1_uniform disc w1_err w1_check w1_sub n_sub released
 * time_per_step: mean seconds per step (ingest + close, all t points
 * emitted) over the steps since the previous evaluation; depth: the
 * release's partition depth (manifest); released: the release's point count
 * (must be t).  Unavailable values are "nan". */
#include "synth/common/synth.h"

#include "core/dp_error.h"
#include "core/drbg.h"

#include "w1.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void die(const char *m)
{
    fprintf(stderr, "bench_accuracy_hypercube: %s\n", m);
    exit(2);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct cfg {
    const char *points, *stream, *variant;
    unsigned d, max_depth, grid, grid_min, per_octave, baseline, check;
    double eps;
    int key;
    uint64_t b, t_max, eval_min, eval_from, exact_max, subsample;
} cfg;

/* --- input --------------------------------------------------------------------------------- */

static double *read_points(const char *path, unsigned d, uint64_t limit, uint64_t *n)
{
    FILE *f = fopen(path, "r");
    if (!f)
        die("cannot open the points file");
    size_t cap = 1 << 16;
    double *p = malloc(cap * d * sizeof *p);
    char line[4096];
    *n = 0;
    while (*n < limit && fgets(line, sizeof line, f)) {
        if (line[0] == '\n' || line[0] == '#')
            continue;
        if (*n == cap && !(p = realloc(p, (cap *= 2) * d * sizeof *p)))
            die("out of memory");
        char *s = line, *end;
        for (unsigned k = 0; k < d; k++) {
            double v = strtod(s, &end);
            if (end == s || !(v >= 0 && v <= 1))
                die("bad point (need d numbers in [0,1] per line)");
            p[*n * d + k] = v;
            s = end + (*end == ',');
        }
        (*n)++;
    }
    fclose(f);
    if (!p)
        die("out of memory");
    return p;
}

/* --- the release ----------------------------------------------------------------------------- */

typedef struct collect {
    int      on;
    unsigned d;
    double  *pts;
    uint64_t n, cap;
    double   depth;
    uint64_t records;
    int      clamped;
} collect;

static int on_record(void *ctx, const dp_synth_record *r)
{
    collect *c = ctx;
    if (!c->on)
        return 0;
    if (r->value.kind != DP_PAYLOAD_POINT || r->value.point_len != c->d)
        die("release record is not a point of dimension d");
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 1 << 16;
        if (!(c->pts = realloc(c->pts, c->cap * c->d * sizeof *c->pts)))
            die("out of memory");
    }
    memcpy(c->pts + c->n * c->d, r->value.point, c->d * sizeof *c->pts);
    c->n++;
    return 0;
}

static int on_manifest(void *ctx, const dp_release_manifest *m)
{
    collect *c = ctx;
    c->records = m->record_count;
    c->clamped = m->clamped;
    for (size_t i = 0; i < m->n_debias; i++)
        if (strcmp(m->debias[i].key, "depth") == 0)
            c->depth = m->debias[i].value;
    return 0;
}

/* --- W1 ---------------------------------------------------------------------------------- */

/* The primary W1: d = 1 sorting; d = 2 the exact assignment up to
 * --exact-max points, else the grid.  Rounding errs far less than the bound
 * *disc ≈ 2/(3G) (errors of nearby points largely cancel in the transport):
 * on one release (uniform stream, ε = 1, t = 2^15) W1 at G = 128, 181, 256,
 * 362, 1024 was 0.04004, 0.03938, 0.03959, 0.03947, 0.03949.  G is odd-sized
 * (181, a prime, or twice it), so grid cells never coincide with the
 * release's dyadic cells; G = 2·181 when 181·W1 < 5 by a 90-grid estimate,
 * i.e. when the typical transport spans few cells (cost grows steeply with
 * G; a coarse grid suffices for large W1), up to `gmax`.  *err = |W1_G −
 * W1_{G/2}|, the change from halving the resolution: an indicator only
 * (run.py re-evaluates some releases at G = 2·--grid). */
static double w1(const cfg *c, const double *x, const double *y, uint64_t n, unsigned gmax, double *disc,
                 double *err, char *method, size_t msz)
{
    *disc = 0;
    *err = 0;
    if (c->d == 1) {
        double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
        if (!a || !b)
            die("out of memory");
        memcpy(a, x, n * sizeof *a);
        memcpy(b, y, n * sizeof *b);
        double v = w1_1d(a, b, (size_t)n);
        free(a), free(b);
        snprintf(method, msz, "sort");
        return v;
    }
    if (n <= c->exact_max) {
        snprintf(method, msz, "exact");
        return w1_assignment(x, y, (size_t)n, c->d);
    }
    unsigned G0 = c->grid_min / 2;
    double d0, coarse = w1_grid2(x, y, (size_t)n, G0, &d0);
    unsigned G = c->grid_min;
    while (2 * G <= gmax && (double)G * coarse < 5.0)
        G *= 2;
    double dh, half = G / 2 == G0 ? coarse : w1_grid2(x, y, (size_t)n, G / 2, &dh);
    double v = w1_grid2(x, y, (size_t)n, G, disc);
    *err = fabs(v - half);
    snprintf(method, msz, "grid%u", G);
    return v;
}

/* n of the first t points, uniformly without replacement (partial Fisher–Yates). */
static void subsample(const double *x, uint64_t t, unsigned d, uint64_t n, uint64_t *idx, dp_drbg *g, double *out)
{
    for (uint64_t i = 0; i < t; i++)
        idx[i] = i;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t j = i + dp_drbg_uniform(g, t - i), tmp = idx[i];
        idx[i] = idx[j];
        idx[j] = tmp;
        memcpy(out + i * d, x + idx[i] * d, d * sizeof *out);
    }
}

static void evaluate(const cfg *c, const dp_key *key, const double *x, uint64_t t, const collect *col,
                     double step_s)
{
    if (col->n != t || col->records != t)
        fprintf(stderr, "bench_accuracy_hypercube: release at t=%llu has %llu points\n", (unsigned long long)t,
                (unsigned long long)col->n);
    if (col->clamped)
        fprintf(stderr, "bench_accuracy_hypercube: release at t=%llu was cut (max_release_points)\n",
                (unsigned long long)t);
    uint64_t n = col->n < t ? col->n : t;
    char method[16], m2[16];
    double disc = 0, disc2, err = 0, err2;
    double w = w1(c, x, col->pts, n, c->grid, &disc, &err, method, sizeof method);
    double wu = NAN, wc = NAN, ws = NAN;
    dp_drbg g;
    if (c->baseline) {   /* t iid uniform points, keyed by (key, t) */
        double *u = malloc(t * c->d * sizeof *u);
        if (!u)
            die("out of memory");
        dp_drbg_init(&g, key, "bench/hypercube", 15, t, "uniform-baseline");
        for (uint64_t i = 0; i < t * c->d; i++)
            u[i] = (double)(dp_drbg_u64(&g) >> 11) * 0x1.0p-53;
        wu = w1(c, x, u, t, c->grid_min, &disc2, &err2, m2, sizeof m2);   /* a reference: the coarser grid */
        free(u);
    }
    if (c->check && c->d == 2 && n <= c->exact_max)   /* the grid where the exact value is known */
        wc = w1_grid2(x, col->pts, (size_t)n, c->grid, &disc2);
    uint64_t ns = c->subsample;
    if (ns && ns < t) {
        double *a = malloc(ns * c->d * sizeof *a), *b = malloc(ns * c->d * sizeof *b);
        uint64_t *idx = malloc(t * sizeof *idx);
        if (!a || !b || !idx)
            die("out of memory");
        dp_drbg_init(&g, key, "bench/hypercube", 15, t, "subsample");
        subsample(x, t, c->d, ns, idx, &g, a);
        subsample(x, t, c->d, ns, idx, &g, b);
        ws = c->d == 1 ? w1_1d(a, b, (size_t)ns) : w1_assignment(a, b, (size_t)ns, c->d);   /* exact */
        free(a), free(b), free(idx);
    } else {
        ns = 0;
    }
    printf("%s %g %u %d %llu %.6f %s %.0f %.6f %.6f %.6f %.6f %.6f %.6f %llu %llu\n", c->stream, c->eps, c->d,
           c->key, (unsigned long long)t, w, method, col->depth, step_s, wu, disc, err, wc, ws, (unsigned long long)ns,
           (unsigned long long)col->n);
    fflush(stdout);
}

/* --- self-test of the solvers ---------------------------------------------------------------- */

/* Points at grid-cell centres: the grid solver is then exact, so it must
 * agree with the assignment to rounding; and d = 1 sorting likewise. */
static int selftest(void)
{
    dp_key key;
    memset(&key, 0x11, sizeof key);
    dp_drbg g;
    dp_drbg_init(&g, &key, "selftest", 8, 0, "w1");
    int bad = 0;
    for (int trial = 0; trial < 40; trial++) {
        unsigned G = 4 + (unsigned)dp_drbg_uniform(&g, 29);
        size_t n = 1 + (size_t)dp_drbg_uniform(&g, 200);
        double *x = malloc(2 * n * sizeof *x), *y = malloc(2 * n * sizeof *y);
        int clustered = trial % 2;   /* half of the trials: y crowded in one corner */
        for (size_t i = 0; i < 2 * n; i++) {
            unsigned a = (unsigned)dp_drbg_uniform(&g, G);
            unsigned b = (unsigned)dp_drbg_uniform(&g, clustered ? (G + 3) / 4 : G);
            x[i] = (a + 0.5) / G;
            y[i] = (b + 0.5) / G;
        }
        double disc, wg = w1_grid2(x, y, n, G, &disc), wa = w1_assignment(x, y, n, 2);
        if (fabs(wg - wa) > 1e-9 || disc > 1e-12) {
            fprintf(stderr, "selftest: G=%u n=%zu grid %.9f assignment %.9f disc %g\n", G, n, wg, wa, disc);
            bad++;
        }
        double w1a = w1_assignment(x, y, n, 1), w1s = w1_1d(x, y, n);   /* first n coordinates as 1-d points */
        if (fabs(w1a - w1s) > 1e-9) {
            fprintf(stderr, "selftest: d=1 n=%zu sort %.9f assignment %.9f\n", n, w1s, w1a);
            bad++;
        }
        free(x), free(y);
    }
    /* arbitrary points: |grid − exact| within the stated bound */
    for (int trial = 0; trial < 10; trial++) {
        size_t n = 300;
        unsigned G = 64;
        double *x = malloc(2 * n * sizeof *x), *y = malloc(2 * n * sizeof *y);
        for (size_t i = 0; i < 2 * n; i++) {
            x[i] = (double)(dp_drbg_u64(&g) >> 11) * 0x1.0p-53;
            y[i] = (double)(dp_drbg_u64(&g) >> 11) * 0x1.0p-53 * (trial % 2 ? 0.3 : 1);
        }
        double disc, wg = w1_grid2(x, y, n, G, &disc), wa = w1_assignment(x, y, n, 2);
        if (fabs(wg - wa) > disc + 1e-12) {
            fprintf(stderr, "selftest: off-grid |%.6f − %.6f| > disc %.6f\n", wg, wa, disc);
            bad++;
        }
    }
    printf("selftest: %s\n", bad ? "FAILED" : "ok");
    return bad ? 1 : 0;
}

/* --- main -------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    cfg c = {.stream = "stream", .d = 2, .max_depth = 20, .grid = 362, .grid_min = 181, .per_octave = 1,
             .baseline = 1, .eps = 1, .key = 1, .b = 1024, .t_max = UINT64_MAX, .eval_min = 64, .exact_max = 2048};
    if (argc == 2 && !strcmp(argv[1], "--selftest"))
        return selftest();
    for (int i = 1; i < argc; i += 2) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            die("option without a value");
        if (!strcmp(k, "--points")) c.points = v;
        else if (!strcmp(k, "--stream")) c.stream = v;
        else if (!strcmp(k, "--dims")) c.d = (unsigned)atoi(v);
        else if (!strcmp(k, "--epsilon")) c.eps = atof(v);
        else if (!strcmp(k, "--points-per-step")) c.b = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--max-depth")) c.max_depth = (unsigned)atoi(v);
        else if (!strcmp(k, "--key")) c.key = atoi(v);
        else if (!strcmp(k, "--t-max")) c.t_max = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--eval-min")) c.eval_min = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--eval-from")) c.eval_from = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--evals-per-octave")) c.per_octave = (unsigned)atoi(v);
        else if (!strcmp(k, "--grid")) c.grid = (unsigned)atoi(v);
        else if (!strcmp(k, "--grid-min")) c.grid_min = (unsigned)atoi(v);
        else if (!strcmp(k, "--exact-max")) c.exact_max = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--subsample")) c.subsample = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--baseline")) c.baseline = (unsigned)atoi(v);
        else if (!strcmp(k, "--check")) c.check = (unsigned)atoi(v);
        else if (!strcmp(k, "--variant")) c.variant = v;
        else die("unknown option");
    }
    if (!c.points)
        die("usage: --points FILE --dims D --epsilon E [--points-per-step B] [--max-depth 20] [--key K] "
            "[--stream NAME] [--t-max N] [--eval-min 64] [--evals-per-octave 1] [--eval-from 0] [--grid 362] "
            "[--grid-min 181] [--exact-max 2048] [--check 0] [--subsample 0] [--baseline 1] [--variant V]   |   --selftest");
    if (c.d != 1 && c.d != 2)
        die("--dims must be 1 or 2 (the exact W1 solvers here are for d <= 2)");
    if (c.b == 0 || c.eval_min == 0 || c.per_octave == 0 || c.grid_min < 16 || c.grid < c.grid_min)
        die("--points-per-step, --eval-min, --evals-per-octave must be >= 1, 16 <= --grid-min <= --grid");
    uint64_t N;
    double *x = read_points(c.points, c.d, c.t_max, &N);
    if (N == 0)
        die("no points");

    dp_key key;
    memset(&key, 0, sizeof key);
    key.bytes[0] = (uint8_t)c.key;
    key.bytes[1] = (uint8_t)(c.key >> 8);
    key.bytes[31] = 0x5a;
    json_t *j = json_pack("{s:f, s:i, s:I, s:i, s:s}", "epsilon", c.eps, "dims", (int)c.d, "points_per_step",
                          (json_int_t)c.b, "max_depth", (int)c.max_depth, "output", "full");
    if (j && c.variant)   /* issue 38: "paper" (the default) or "dense" */
        json_object_set_new(j, "variant", json_string(c.variant));
    char err[512];
    dp_synth *s = NULL;
    dp_synth_env env = {&key, "bench/hypercube", 15};
    if (!j || dp_synth_create(&s, "hypercube", j, &env, err, sizeof err) != DP_OK) {
        fprintf(stderr, "bench_accuracy_hypercube: %s\n", err);
        return 2;
    }
    json_decref(j);

    collect col = {.d = c.d};
    dp_release_sink sink = {&col, on_record, on_manifest, NULL};
    uint64_t t = 0, step = 0, oct_i = 0, steps_since = 0;
    double busy = 0;
    /* evaluation times eval_min·2^(i/per_octave), rounded, then N */
    uint64_t next_eval = c.eval_min;
    while (t < N) {
        uint64_t target = N;
        if (next_eval < target)
            target = next_eval;
        uint64_t k = target - t < c.b ? target - t : c.b;
        int eval_now = t + k == target;
        col.on = eval_now;
        col.n = 0;
        double t0 = now();
        step++;
        for (uint64_t i = 0; i < k; i++) {
            dp_update u = {.stream_id = "bench/hypercube", .stream_id_len = 15, .step = step,
                           .kind = DP_UPDATE_REPORT,
                           .payload = {.kind = DP_PAYLOAD_POINT, .point = x + (t + i) * c.d, .point_len = c.d}};
            dp_reject_reason why;
            if (dp_synth_ingest(s, &u, &why) != DP_OK || why != DP_REJECT_NONE) {
                fprintf(stderr, "bench_accuracy_hypercube: point %llu rejected: %s\n",
                        (unsigned long long)(t + i), dp_reject_reason_name(why));
                return 2;
            }
        }
        if (dp_synth_close_step(s, &sink, err, sizeof err) != DP_OK) {
            fprintf(stderr, "bench_accuracy_hypercube: step %llu: %s\n", (unsigned long long)step, err);
            return 2;
        }
        busy += now() - t0;
        steps_since++;
        t += k;
        if (eval_now) {
            if (t >= c.eval_from)
                evaluate(&c, &key, x, t, &col, busy / (double)steps_since);
            busy = 0;
            steps_since = 0;
            while (next_eval <= t) {   /* the next distinct evaluation time */
                oct_i++;
                next_eval = (uint64_t)llround((double)c.eval_min * pow(2.0, (double)oct_i / c.per_octave));
            }
        }
    }
    dp_synth_destroy(s);
    free(col.pts);
    free(x);
    return 0;
}
