/* accuracy_longitudinal.c — accuracy and throughput of the seed-000
 * synthesizers (`window`, `cumulative`).
 *
 *   A. seed 000 App. C.1 / Fig. 3–4: window, k = 3, n = 25 000, T = 12,
 *      rho = 0.005, R runs (one noise key each) on all-ones data (the
 *      paper's "extreme" setting) and on a Markov panel.  Per step: the
 *      max over the 2^k patterns of |synthetic fraction − true fraction|,
 *      debiased ((p_s − n_pad)/(n* − c^k n_pad)) and raw (p_s/n*); median
 *      and 2.5/97.5 % over runs, against the eq. (5) bound (with the σ²
 *      used) divided by n.  Under neighbors = add_remove (the paper's
 *      calibration, comparable to its figure) and replace (our default,
 *      σ² doubled: docs/privacy.md §3).
 *   B. seed 000 Fig. 2: cumulative on the Markov panel: per step the max
 *      over b of |Ŝ_b − S_b| (counts) and the mean signed error of S_3
 *      (unbiasedness) with its standard error.
 *   C. cumulative with different counters M_b at equal rho (every kind
 *      that can be created when the benchmark runs): T = 12 (paper) and
 *      T = 64.
 *   D. throughput at n = 10^6: updates/s through dp_synth_ingest (one
 *      call per update) and through dp_synth_ingest_batch (B updates per
 *      call, default 256, as a consumer poll delivers them), and the time
 *      of dp_synth_close_step, window k = 3 and k = 8, cumulative; and
 *      window k = 3 with each step's reports in a fresh random order.
 *
 * Usage: bench_accuracy_longitudinal [--runs R] [--no-accuracy]
 *        [--no-throughput] [--throughput-n N] [--batch B]
 * Output is Markdown, pasted into bench/RESULTS.md.  Timings use the
 * monotonic clock; nothing privacy-relevant depends on it. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "demo/longitudinal_view.h"
#include "connectors/panel/panel_gen.h"
#include "core/dp_error.h"
#include "core/drbg.h"
#include "synth/common/synth.h"

/* --- data ------------------------------------------------------------------------ */

typedef struct panel {
    uint64_t n, T;
    uint8_t *v;        /* v[(t-1)*n + i] */
    char    *ids;      /* "u1\0u2\0…" */
    uint64_t *id_off;
    uint8_t *id_len;
} panel;

static void panel_free(panel *p)
{
    free(p->v);
    free(p->ids);
    free(p->id_off);
    free(p->id_len);
    memset(p, 0, sizeof *p);
}

static int panel_ids(panel *p)
{
    p->ids = malloc(p->n * 12);
    p->id_off = malloc(p->n * sizeof *p->id_off);
    p->id_len = malloc(p->n);
    if (!p->ids || !p->id_off || !p->id_len)
        return -1;
    size_t off = 0;
    for (uint64_t i = 0; i < p->n; i++) {
        int len = snprintf(p->ids + off, 12, "u%" PRIu64, i + 1);
        p->id_off[i] = off;
        p->id_len[i] = (uint8_t)len;
        off += (size_t)len + 1;
    }
    return 0;
}

static int panel_all_ones(panel *p, uint64_t n, uint64_t T)
{
    memset(p, 0, sizeof *p);
    p->n = n;
    p->T = T;
    if (!(p->v = malloc(n * T)))
        return -1;
    memset(p->v, 1, n * T);
    return panel_ids(p);
}

static int panel_markov(panel *p, uint64_t n, uint64_t T, double stay0, double stay1)
{
    memset(p, 0, sizeof *p);
    dp_panel_params pp;
    memset(&pp, 0, sizeof pp);
    pp.n = n;
    pp.steps = T;
    pp.categories = 2;
    pp.stay[0] = stay0;
    pp.stay[1] = stay1;
    memcpy(pp.seed.bytes, "bench/accuracy_longitudinal/v1..", DP_KEY_BYTES);
    dp_panel_gen g;
    char err[256];
    if (dp_panel_gen_init(&g, &pp, err, sizeof err) != DP_OK) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    p->n = n;
    p->T = T;
    if (!(p->v = malloc(n * T)))
        return -1;
    for (uint64_t t = 1; t <= T; t++) {
        dp_panel_gen_next(&g);
        memcpy(p->v + (t - 1) * n, g.value, n);
    }
    dp_panel_gen_free(&g);
    return panel_ids(p);
}

static void run_key(dp_key *key, uint64_t run, uint8_t tag)
{
    memset(key->bytes, 0xB0, sizeof key->bytes);
    for (int i = 0; i < 8; i++)
        key->bytes[i] = (uint8_t)(run >> (8 * i));
    key->bytes[8] = tag;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Feed the values of panel step vt as the reports of step t, one
 * dp_synth_ingest call per update.  Returns DP_OK or the first failure. */
static int feed_step_v(dp_synth *s, const panel *p, const char *stream, uint64_t t, uint64_t vt)
{
    dp_update u = {.stream_id = stream, .stream_id_len = strlen(stream), .step = t, .kind = DP_UPDATE_REPORT,
                   .payload = {.kind = DP_PAYLOAD_CATEGORY}};
    const uint8_t *vals = p->v + (vt - 1) * p->n;
    for (uint64_t i = 0; i < p->n; i++) {
        u.entity_id = p->ids + p->id_off[i];
        u.entity_id_len = p->id_len[i];
        u.payload.category = vals[i];
        dp_reject_reason r = DP_REJECT_NONE;
        int rc = dp_synth_ingest(s, &u, &r);
        if (rc != DP_OK)
            return rc;
        if (r != DP_REJECT_NONE) {
            fprintf(stderr, "bench: report refused: %s\n", dp_reject_reason_name(r));
            return DP_ESTATE;
        }
    }
    return DP_OK;
}

static int feed_step(dp_synth *s, const panel *p, const char *stream, uint64_t t)
{
    return feed_step_v(s, p, stream, t, t);
}

/* Like feed_step_v, through dp_synth_ingest_batch in batches of `batch` updates,
 * as a consumer hands over one poll's records (the batch array is filled
 * inside the timed region, as a decoder would). */
#define FEED_BATCH_MAX 4096
static int feed_step_batch(dp_synth *s, const panel *p, const char *stream, uint64_t t, uint64_t vt, size_t batch)
{
    static dp_update u[FEED_BATCH_MAX];
    static dp_reject_reason r[FEED_BATCH_MAX];
    if (batch < 1 || batch > FEED_BATCH_MAX)
        return DP_EINVAL;
    const uint8_t *vals = p->v + (vt - 1) * p->n;
    size_t slen = strlen(stream);
    for (uint64_t i0 = 0; i0 < p->n; i0 += batch) {
        size_t m = p->n - i0 < batch ? (size_t)(p->n - i0) : batch;
        for (size_t j = 0; j < m; j++) {
            uint64_t i = i0 + j;
            u[j] = (dp_update){.stream_id = stream, .stream_id_len = slen, .step = t, .kind = DP_UPDATE_REPORT,
                               .entity_id = p->ids + p->id_off[i], .entity_id_len = p->id_len[i],
                               .payload = {.kind = DP_PAYLOAD_CATEGORY, .category = vals[i]}};
        }
        int rc = dp_synth_ingest_batch(s, u, m, r);
        if (rc != DP_OK)
            return rc;
        for (size_t j = 0; j < m; j++)
            if (r[j] != DP_REJECT_NONE) {
                fprintf(stderr, "bench: report refused: %s\n", dp_reject_reason_name(r[j]));
                return DP_ESTATE;
            }
    }
    return DP_OK;
}

/* --- sinks --------------------------------------------------------------------------- */

typedef struct capture {
    dp_window_view     win;
    dp_cumulative_view cum;
    int                is_window;
    double             max_abs_error;   /* from the budget event */
    double             n_pad;
    int                clamped;
} capture;

static int cap_record(void *ctx, const dp_synth_record *r)
{
    capture *c = ctx;
    return c->is_window ? dp_window_view_record(&c->win, r) : dp_cumulative_view_record(&c->cum, r);
}

static int cap_manifest(void *ctx, const dp_release_manifest *m)
{
    capture *c = ctx;
    c->clamped |= m->clamped;
    return c->is_window ? dp_window_view_manifest(&c->win, m) : dp_cumulative_view_manifest(&c->cum, m);
}

static int cap_budget(void *ctx, const dp_budget_event *e)
{
    capture *c = ctx;
    double b = dp_kv_find(e->accuracy, e->n_accuracy, "max_abs_error", NAN);
    if (isfinite(b))
        c->max_abs_error = b;
    return DP_OK;
}

/* --- statistics ---------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Quantile q of xs[0..n) (sorted in place), linear interpolation between order statistics. */
static double quantile(double *xs, size_t n, double q)
{
    qsort(xs, n, sizeof *xs, cmp_double);
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)floor(pos);
    size_t hi = lo + 1 < n ? lo + 1 : lo;
    return xs[lo] + (pos - (double)lo) * (xs[hi] - xs[lo]);
}

/* --- A. window ------------------------------------------------------------------------ */

static int bench_window(const panel *p, uint32_t k, double rho, const char *neighbors, uint64_t runs,
                        const char *label)
{
    uint64_t T = p->T, bins = 1u << k;
    double *true_frac = calloc(T * bins, sizeof *true_frac);
    double *deb = calloc(runs * T, sizeof *deb), *raw = calloc(runs * T, sizeof *raw);
    double *cnt = calloc(runs * T, sizeof *cnt);
    double *col = malloc(runs * sizeof *col);
    if (!true_frac || !deb || !raw || !cnt || !col)
        return DP_ENOMEM;
    dp_window_view tv;
    dp_window_view_init(&tv, k, 2);
    for (uint64_t t = 1; t <= T; t++) {
        dp_window_view_truth_step(&tv, p->v + (t - 1) * p->n, p->n);
        if (t >= k)
            for (uint64_t s = 0; s < bins; s++)
                true_frac[(t - 1) * bins + s] = dp_window_view_fraction_true(&tv, s);
    }
    dp_window_view_free(&tv);

    json_t *cfg = json_pack("{s:I, s:I, s:i, s:f, s:s}", "horizon", (json_int_t)T, "k", (json_int_t)k,
                            "categories", 2, "rho", rho, "neighbors", neighbors);
    double bound = NAN, n_pad = NAN;
    uint64_t clamped_runs = 0;
    int rc = DP_OK;
    char err[512];
    for (uint64_t r = 0; r < runs && rc == DP_OK; r++) {
        dp_key key;
        run_key(&key, r, 1);
        dp_synth_env env = {.key = &key, .stream_id = "bench/window", .stream_id_len = 12};
        dp_synth *s = NULL;
        if ((rc = dp_synth_create(&s, "window", cfg, &env, err, sizeof err)) != DP_OK) {
            fprintf(stderr, "window: %s\n", err);
            break;
        }
        capture c;
        memset(&c, 0, sizeof c);
        c.is_window = 1;
        dp_window_view_init(&c.win, k, 2);
        dp_release_sink sink = {.ctx = &c, .record = cap_record, .manifest = cap_manifest, .budget = cap_budget};
        for (uint64_t t = 1; t <= T && rc == DP_OK; t++) {
            if ((rc = feed_step(s, p, "bench/window", t)) != DP_OK)
                break;
            if ((rc = dp_synth_close_step(s, &sink, err, sizeof err)) != DP_OK) {
                fprintf(stderr, "window close: %s\n", err);
                break;
            }
            if (t < k)
                continue;
            double md = 0, mr = 0, mc = 0;
            for (uint64_t q = 0; q < bins; q++) {
                double tf = true_frac[(t - 1) * bins + q];
                md = fmax(md, fabs(dp_window_view_fraction_debiased(&c.win, q) - tf));
                mr = fmax(mr, fabs(dp_window_view_fraction_raw(&c.win, q) - tf));
                /* Thm 3.2's quantity: |p_s - (C_s + n_pad)| in counts */
                mc = fmax(mc, fabs((double)c.win.hist[q] - (tf * (double)p->n + c.win.n_pad)));
            }
            deb[r * T + (t - 1)] = md;
            raw[r * T + (t - 1)] = mr;
            cnt[r * T + (t - 1)] = mc;
        }
        bound = c.max_abs_error;
        n_pad = c.win.n_pad;
        clamped_runs += c.clamped ? 1 : 0;
        dp_window_view_free(&c.win);
        dp_synth_destroy(s);
    }
    json_decref(cfg);
    if (rc == DP_OK) {
        printf("\n#### window, %s, neighbors = %s (n = %" PRIu64 ", T = %" PRIu64 ", k = %u, rho = %g, %" PRIu64 " runs)\n\n",
               label, neighbors, p->n, T, k, rho, runs);
        printf("n_pad = %.0f per pattern; eq. (5) bound (beta = 0.05) = %.1f counts = %.5f as a fraction of n; "
               "runs with a clamped step: %" PRIu64 "\n\n",
               n_pad, bound, bound / (double)p->n, clamped_runs);
        printf("Fractions: debiased and raw max error over patterns; counts: max_s |p_s - (C_s + n_pad)|, the\n"
               "quantity eq. (5) bounds.\n\n");
        printf("| step | debiased median | 2.5 %% | 97.5 %% | raw median | 2.5 %% | 97.5 %% | bound/n | count err median | 97.5 %% | bound |\n");
        printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (uint64_t t = k; t <= T; t++) {
            double q[6];
            for (uint64_t r = 0; r < runs; r++)
                col[r] = deb[r * T + (t - 1)];
            q[0] = quantile(col, runs, 0.5);
            q[1] = quantile(col, runs, 0.025);
            q[2] = quantile(col, runs, 0.975);
            for (uint64_t r = 0; r < runs; r++)
                col[r] = raw[r * T + (t - 1)];
            q[3] = quantile(col, runs, 0.5);
            q[4] = quantile(col, runs, 0.025);
            q[5] = quantile(col, runs, 0.975);
            for (uint64_t r = 0; r < runs; r++)
                col[r] = cnt[r * T + (t - 1)];
            double c50 = quantile(col, runs, 0.5), c975 = quantile(col, runs, 0.975);
            printf("| %" PRIu64 " | %.5f | %.5f | %.5f | %.5f | %.5f | %.5f | %.5f | %.1f | %.1f | %.1f |\n", t, q[0], q[1],
                   q[2], q[3], q[4], q[5], bound / (double)p->n, c50, c975, bound);
        }
        /* share of runs whose max error over all steps stays under the bound
         * (Thm 3.2 promises >= 1 - beta = 95 % for the count error) */
        uint64_t within = 0, within_c = 0;
        for (uint64_t r = 0; r < runs; r++) {
            double m = 0, mc = 0;
            for (uint64_t t = k; t <= T; t++) {
                m = fmax(m, deb[r * T + (t - 1)]);
                mc = fmax(mc, cnt[r * T + (t - 1)]);
            }
            within += m <= bound / (double)p->n ? 1 : 0;
            within_c += mc <= bound ? 1 : 0;
        }
        printf("\nRuns whose max count error over all steps is <= the eq. (5) bound: %" PRIu64 " / %" PRIu64
               " (Thm 3.2: >= 95 %% expected).\n"
               "Runs whose debiased fraction error stays <= bound/n at every step: %" PRIu64 " / %" PRIu64
               " (not what eq. (5) bounds:\nthe debiasing denominator n* - c^k n_pad carries the noise of all c^k bins).\n",
               within_c, runs, within, runs);
    }
    free(true_frac);
    free(deb);
    free(raw);
    free(cnt);
    free(col);
    return rc;
}

/* --- B/C. cumulative --------------------------------------------------------------------- */

typedef struct cum_result {
    int    ok;
    double bound;
    double *maxerr;   /* runs × T */
    double *signed3;  /* runs × T: Ŝ_3 − S_3 */
} cum_result;

static int run_cumulative(const panel *p, double rho, const char *counter, uint64_t runs, cum_result *out,
                          char *err, size_t errsz)
{
    uint64_t T = p->T;
    memset(out, 0, sizeof *out);
    uint64_t *true_al = calloc(T * (T + 2), sizeof *true_al);
    out->maxerr = calloc(runs * T, sizeof *out->maxerr);
    out->signed3 = calloc(runs * T, sizeof *out->signed3);
    if (!true_al || !out->maxerr || !out->signed3)
        return DP_ENOMEM;
    dp_cumulative_view tv;
    dp_cumulative_view_init(&tv, T);
    for (uint64_t t = 1; t <= T; t++) {
        dp_cumulative_view_truth_step(&tv, p->v + (t - 1) * p->n, p->n);
        memcpy(true_al + (t - 1) * (T + 2), tv.at_least, (T + 2) * sizeof *true_al);
    }
    dp_cumulative_view_free(&tv);
    json_t *cfg = json_pack("{s:I, s:f, s:s, s:s}", "horizon", (json_int_t)T, "rho", rho, "counter", counter,
                            "neighbors", "replace");
    int rc = DP_OK;
    for (uint64_t r = 0; r < runs && rc == DP_OK; r++) {
        dp_key key;
        run_key(&key, r, 2);
        dp_synth_env env = {.key = &key, .stream_id = "bench/cumulative", .stream_id_len = 16};
        dp_synth *s = NULL;
        if ((rc = dp_synth_create(&s, "cumulative", cfg, &env, err, errsz)) != DP_OK)
            break;
        capture c;
        memset(&c, 0, sizeof c);
        dp_cumulative_view_init(&c.cum, T);
        dp_release_sink sink = {.ctx = &c, .record = cap_record, .manifest = cap_manifest, .budget = cap_budget};
        for (uint64_t t = 1; t <= T && rc == DP_OK; t++) {
            if ((rc = feed_step(s, p, "bench/cumulative", t)) != DP_OK)
                break;
            if ((rc = dp_synth_close_step(s, &sink, err, errsz)) != DP_OK)
                break;
            const uint64_t *ta = true_al + (t - 1) * (T + 2);
            double m = 0;
            for (uint64_t b = 1; b <= t; b++)
                m = fmax(m, fabs((double)c.cum.at_least[b] - (double)ta[b]));
            out->maxerr[r * T + (t - 1)] = m;
            out->signed3[r * T + (t - 1)] = T >= 3 ? (double)c.cum.at_least[3] - (double)ta[3] : 0;
        }
        out->bound = c.max_abs_error;
        dp_cumulative_view_free(&c.cum);
        dp_synth_destroy(s);
    }
    json_decref(cfg);
    free(true_al);
    out->ok = rc == DP_OK;
    return rc;
}

static void cum_result_free(cum_result *c)
{
    free(c->maxerr);
    free(c->signed3);
    memset(c, 0, sizeof *c);
}

static int bench_cumulative_fig2(const panel *p, double rho, uint64_t runs)
{
    cum_result res;
    char err[512];
    int rc = run_cumulative(p, rho, "tree", runs, &res, err, sizeof err);
    if (rc != DP_OK) {
        printf("\ncumulative (tree) unavailable: %s\n", err);
        cum_result_free(&res);
        return DP_OK;
    }
    uint64_t T = p->T;
    double *col = malloc(runs * sizeof *col);
    printf("\n#### cumulative, Markov panel, counter = tree, neighbors = replace (n = %" PRIu64 ", T = %" PRIu64
           ", rho = %g, %" PRIu64 " runs)\n\n",
           p->n, T, rho, runs);
    printf("Stated max count error (beta = 0.05, Cor. B.1 x sqrt 2 under replace): %.1f\n\n", res.bound);
    printf("| step | max_b abs err median | 2.5 %% | 97.5 %% | mean(S^_3 - S_3) | std. error |\n");
    printf("|---:|---:|---:|---:|---:|---:|\n");
    for (uint64_t t = 1; t <= T; t++) {
        double mean = 0, m2 = 0;
        for (uint64_t r = 0; r < runs; r++) {
            col[r] = res.maxerr[r * T + (t - 1)];
            double x = res.signed3[r * T + (t - 1)];
            mean += x;
            m2 += x * x;
        }
        mean /= (double)runs;
        double var = runs > 1 ? (m2 - (double)runs * mean * mean) / (double)(runs - 1) : 0;
        double q50 = quantile(col, runs, 0.5), q025 = quantile(col, runs, 0.025), q975 = quantile(col, runs, 0.975);
        printf("| %" PRIu64 " | %.1f | %.1f | %.1f | %+.2f | %.2f |\n", t, q50, q025, q975, mean,
               sqrt(fmax(var, 0) / (double)runs));
    }
    free(col);
    cum_result_free(&res);
    return DP_OK;
}

static int bench_counters(const panel *p, double rho, uint64_t runs)
{
    static const char *const KINDS[] = {"tree", "honaker", "sqrt", "blt", "simple", "block", "hybrid"};
    uint64_t T = p->T;
    double *col = malloc(runs * sizeof *col);
    printf("\n#### cumulative: counters M_b at equal rho (n = %" PRIu64 ", T = %" PRIu64 ", rho = %g, neighbors = replace, %" PRIu64
           " runs, Markov panel)\n\n",
           p->n, T, rho, runs);
    printf("Error = max over b <= t of |S^_b - S_b| (counts). Columns: median over runs of that error at the\n"
           "last step, median and 97.5 %% of its max over all steps, and the synthesizer's stated bound.\n\n");
    printf("| counter | median err at t = T | median max over t | 97.5 %% max over t | stated bound |\n");
    printf("|---|---:|---:|---:|---:|\n");
    for (size_t k = 0; k < sizeof KINDS / sizeof KINDS[0]; k++) {
        cum_result res;
        char err[512];
        err[0] = '\0';
        int rc = run_cumulative(p, rho, KINDS[k], runs, &res, err, sizeof err);
        if (rc != DP_OK) {
            printf("| %s | unavailable: %s | | | |\n", KINDS[k], err[0] ? err : dp_status_str(rc));
            cum_result_free(&res);
            continue;
        }
        for (uint64_t r = 0; r < runs; r++)
            col[r] = res.maxerr[r * T + (T - 1)];
        double last = quantile(col, runs, 0.5);
        for (uint64_t r = 0; r < runs; r++) {
            double m = 0;
            for (uint64_t t = 1; t <= T; t++)
                m = fmax(m, res.maxerr[r * T + (t - 1)]);
            col[r] = m;
        }
        double med = quantile(col, runs, 0.5), q975 = quantile(col, runs, 0.975);
        printf("| %s | %.1f | %.1f | %.1f | %.1f |\n", KINDS[k], last, med, q975, res.bound);
        cum_result_free(&res);
        fflush(stdout);
    }
    free(col);
    return DP_OK;
}

/* --- D. throughput ------------------------------------------------------------------------- */

static int null_record(void *ctx, const dp_synth_record *r) { (void)ctx; (void)r; return DP_OK; }
static int null_manifest(void *ctx, const dp_release_manifest *m) { (void)ctx; (void)m; return DP_OK; }
static int null_budget(void *ctx, const dp_budget_event *e) { (void)ctx; (void)e; return DP_OK; }

/* Step t's reports in a fresh uniformly random arrival order (Fisher-Yates
 * from a keyed DRBG, so reproducible), laid out as a consumer's poll
 * buffers would hold them: ids back to back in arrival order.  Built
 * outside the timed region; `out` gets ids/id_off/id_len and the step's
 * values at out->v (as step 1 of a one-step panel). */
static int shuffled_step(panel *out, const panel *p, uint64_t t)
{
    uint32_t *order = malloc(p->n * sizeof *order);
    if (!order)
        return -1;
    dp_key key;
    run_key(&key, t, 7);
    dp_drbg g;
    dp_drbg_init(&g, &key, "bench/order", 11, t, "bench/arrival_order");
    for (uint64_t i = 0; i < p->n; i++)
        order[i] = (uint32_t)i;
    for (uint64_t i = p->n; i > 1; i--) {
        uint64_t j = dp_drbg_uniform(&g, i);
        uint32_t x = order[i - 1];
        order[i - 1] = order[j];
        order[j] = x;
    }
    size_t off = 0;
    for (uint64_t q = 0; q < p->n; q++) {
        uint64_t i = order[q];
        memcpy(out->ids + off, p->ids + p->id_off[i], p->id_len[i]);
        out->id_off[q] = off;
        out->id_len[q] = p->id_len[i];
        out->v[q] = p->v[(t - 1) * p->n + i];
        off += p->id_len[i];
    }
    free(order);
    return 0;
}

/* batch = 0: one dp_synth_ingest call per update; else dp_synth_ingest_batch.
 * shuffled: each step's reports arrive in a fresh random order (the roster
 * is then in step 1's random order too, so ids, offsets and state are
 * random accesses; the input itself is contiguous in arrival order, as
 * in a consumer's buffers), else in panel order u1, u2, … every step. */
static int bench_throughput(const panel *p, const char *name, uint32_t k, size_t batch, int shuffled)
{
    json_t *cfg = k ? json_pack("{s:I, s:I, s:i, s:f}", "horizon", (json_int_t)p->T, "k", (json_int_t)k,
                                "categories", 2, "rho", 1.0)
                    : json_pack("{s:I, s:f}", "horizon", (json_int_t)p->T, "rho", 1.0);
    dp_key key;
    run_key(&key, 0, 3);
    dp_synth_env env = {.key = &key, .stream_id = "bench/tp", .stream_id_len = 8};
    dp_synth *s = NULL;
    char err[512];
    int rc = dp_synth_create(&s, name, cfg, &env, err, sizeof err);
    json_decref(cfg);
    if (rc != DP_OK) {
        printf("| %s k=%u | unavailable: %s | | | |\n", name, k, err);
        return DP_OK;
    }
    dp_release_sink sink = {.ctx = NULL, .record = null_record, .manifest = null_manifest, .budget = null_budget};
    double ingest1 = 0, ingest_rest = 0, close_max = 0, close_sum_rel = 0, close_first = 0;
    uint64_t n_rel = 0;
    panel arr;   /* shuffled: the open step's reports in arrival order */
    memset(&arr, 0, sizeof arr);
    if (shuffled) {
        arr.n = p->n;
        arr.T = 1;
        arr.ids = malloc(p->n * 12);
        arr.id_off = malloc(p->n * sizeof *arr.id_off);
        arr.id_len = malloc(p->n);
        arr.v = malloc(p->n);
        if (!arr.ids || !arr.id_off || !arr.id_len || !arr.v) {
            panel_free(&arr);
            dp_synth_destroy(s);
            return DP_ENOMEM;
        }
    }
    for (uint64_t t = 1; t <= p->T && rc == DP_OK; t++) {
        if (shuffled && shuffled_step(&arr, p, t) != 0) {
            rc = DP_ENOMEM;
            break;
        }
        /* arr holds one step: its values are "step 1" of arr, the update's step is t. */
        const panel *src = shuffled ? &arr : p;
        uint64_t vt = shuffled ? 1 : t;
        double a = now_s();
        rc = batch ? feed_step_batch(s, src, "bench/tp", t, vt, batch) : feed_step_v(s, src, "bench/tp", t, vt);
        double b = now_s();
        if (rc == DP_OK)
            rc = dp_synth_close_step(s, &sink, err, sizeof err);
        double c = now_s();
        if (t == 1)
            ingest1 = b - a;
        else
            ingest_rest += b - a;
        if (t == 1)
            close_first = c - b;
        if (!k || t >= k) {
            close_sum_rel += c - b;
            close_max = fmax(close_max, c - b);
            n_rel++;
        }
    }
    dp_synth_destroy(s);
    panel_free(&arr);
    if (rc != DP_OK) {
        printf("| %s k=%u | failed: %s | | | |\n", name, k, err);
        return rc;
    }
    double rate1 = (double)p->n / ingest1, rate = (double)p->n * (double)(p->T - 1) / ingest_rest;
    char label[80], mode[32];
    if (batch)
        snprintf(mode, sizeof mode, "batch %zu", batch);
    else
        snprintf(mode, sizeof mode, "single");
    if (k)
        snprintf(label, sizeof label, "%s k=%u, %s%s", name, k, mode, shuffled ? ", shuffled" : "");
    else
        snprintf(label, sizeof label, "%s, %s%s", name, mode, shuffled ? ", shuffled" : "");
    printf("| %s | %.2f M/s | %.2f M/s | %.1f ms | %.1f ms | %.1f ms |\n", label, rate1 / 1e6, rate / 1e6,
           1e3 * close_first, 1e3 * close_sum_rel / (double)(n_rel ? n_rel : 1), 1e3 * close_max);
    fflush(stdout);
    return DP_OK;
}

/* --- main ------------------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    uint64_t runs = 200, tp_n = 1000000, tp_batch = 256;
    int do_acc = 1, do_tp = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--throughput-n") == 0 && i + 1 < argc)
            tp_n = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc)
            tp_batch = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--no-accuracy") == 0)
            do_acc = 0;
        else if (strcmp(argv[i], "--no-throughput") == 0)
            do_tp = 0;
        else {
            fprintf(stderr, "usage: %s [--runs R] [--throughput-n N] [--batch B] [--no-accuracy] [--no-throughput]\n", argv[0]);
            return 2;
        }
    }
    if (runs < 2 || tp_n < 1 || tp_batch < 1 || tp_batch > FEED_BATCH_MAX) {
        fprintf(stderr, "--runs must be >= 2, --throughput-n >= 1, --batch in 1..%d\n", FEED_BATCH_MAX);
        return 2;
    }
    int rc = DP_OK;
    if (do_acc) {
        panel ones, markov, markov64;
        if (panel_all_ones(&ones, 25000, 12) != 0 || panel_markov(&markov, 25000, 12, 0.9, 0.7) != 0 ||
            panel_markov(&markov64, 5000, 64, 0.9, 0.7) != 0) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
        printf("### A. window (seed 000 Alg. 1, App. C.1 Fig. 3-4)\n");
        printf("\nError per step = max over the 8 patterns of |synthetic fraction - true fraction|.\n");
        if (rc == DP_OK) rc = bench_window(&ones, 3, 0.005, "add_remove", runs, "all-ones data");
        if (rc == DP_OK) rc = bench_window(&ones, 3, 0.005, "replace", runs, "all-ones data");
        if (rc == DP_OK) rc = bench_window(&markov, 3, 0.005, "replace", runs, "Markov panel (stay 0.9 / 0.7)");
        printf("\n### B. cumulative (seed 000 Alg. 2, Fig. 2)\n");
        if (rc == DP_OK) rc = bench_cumulative_fig2(&markov, 0.005, runs);
        printf("\n### C. counters inside cumulative\n");
        if (rc == DP_OK) rc = bench_counters(&markov, 0.005, runs);
        if (rc == DP_OK) rc = bench_counters(&markov64, 0.005, runs / 4 > 2 ? runs / 4 : 2);
        panel_free(&ones);
        panel_free(&markov);
        panel_free(&markov64);
    }
    if (do_tp && rc == DP_OK) {
        panel big;
        if (panel_markov(&big, tp_n, 12, 0.9, 0.7) != 0) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
        printf("\n### D. throughput (n = %" PRIu64 ", T = 12, one core, dp_synth_ingest one update per call (single) or dp_synth_ingest_batch (batch B) + dp_synth_close_step, null sink)\n\n",
               tp_n);
        printf("| synthesizer | ingest step 1 (roster) | ingest steps 2..T | close step 1 | close, mean over releasing steps | close, max |\n");
        printf("|---|---:|---:|---:|---:|---:|\n");
        if (rc == DP_OK) rc = bench_throughput(&big, "window", 3, 0, 0);
        if (rc == DP_OK) rc = bench_throughput(&big, "window", 3, tp_batch, 0);
        if (rc == DP_OK) rc = bench_throughput(&big, "window", 8, 0, 0);
        if (rc == DP_OK) rc = bench_throughput(&big, "window", 8, tp_batch, 0);
        if (rc == DP_OK) rc = bench_throughput(&big, "cumulative", 0, 0, 0);
        if (rc == DP_OK) rc = bench_throughput(&big, "cumulative", 0, tp_batch, 0);
        if (rc == DP_OK) rc = bench_throughput(&big, "window", 3, 0, 1);
        if (rc == DP_OK) rc = bench_throughput(&big, "window", 3, tp_batch, 1);
        panel_free(&big);
    }
    return rc == DP_OK ? 0 : 1;
}
