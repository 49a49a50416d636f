/* test_adaptive.c — `adaptive` (seed 003 corrected; BD/BA) through synth.h:
 * config errors name their key; DSFT/DSAT release at most C times (the SVT
 * stops after C − 1 positives) and spend exactly ε by the horizon; a
 * stable stream is not re-released until the last step's unspent budget;
 * released counts carry the discrete Laplace variance of scale C/ε₂ (a
 * halved release budget fails the bound); BD and BA never spend more than
 * ε in any w consecutive steps and do publish when the data moves; replays
 * are byte-identical, a restore continues byte-identically, another key
 * changes the release; bad reports are rejected with their reason and
 * change nothing; entity-sharded ingest merged equals the bundle. */
#include "dptest.h"
#include "synth_testkit.h"

#include "core/rational.h"
#include "core/sample.h"
#include "synth/adaptive/adaptive.h"
#include "synth/common/svt.h"

#include <math.h>


static int create_k(dp_synth **s, json_t *cfg, int key_i, dp_key *key, char *err, size_t errsz)
{
    dptest_key(key, 0);
    memcpy(key->bytes, &key_i, sizeof key_i);
    dp_synth_env env = {key, "ad/1", 4};
    return dp_synth_create(s, "adaptive", cfg, &env, err, errsz);
}

/* Step t of a population of n users: user u reports value(u, t). */
typedef int (*value_fn)(int u, int t);

static int stable(int u, int t) { return u % 4; }
static int flipping(int u, int t) { return t % 2 ? 0 : 3 - u % 2; }   /* the histogram moves between bins every step */
static int drifting(int u, int t) { return (u * 7 + (t / 10) * (u % 3)) % 4; }

static void run(dp_synth *s, tk_sink *k, int from, int T, int n, value_fn f)
{
    dp_release_sink rs = tk_sink_of(k);
    char err[256], id[24];
    for (int t = from; t <= T; t++) {
        for (int u = 0; u < n; u++) {
            snprintf(id, sizeof id, "u%d", u);
            dp_reject_reason why;
            CU_ASSERT_EQUAL(tk_report(s, (uint64_t)t, id, f(u, t), &why), DP_OK);
            CU_ASSERT_EQUAL(why, DP_REJECT_NONE);
        }
        int rc = dp_synth_close_step(s, &rs, err, sizeof err);
        if (rc != DP_OK)
            printf("\n    close %d: %s", t, err);
        CU_ASSERT_EQUAL_FATAL(rc, DP_OK);
    }
}

static void expect_refused(const char *text, const char *needle) { tk_expect_refused("adaptive", text, needle); }

static void test_config_errors(void)
{
    expect_refused("{\"categories\": 4, \"epsilon\": 1, \"horizon\": 10, \"n_min\": 5, \"colour\": 1}", "\"colour\"");
    expect_refused("{\"epsilon\": 1, \"horizon\": 10, \"n_min\": 5}", "categories");
    expect_refused("{\"categories\": 4, \"epsilon\": 1, \"horizon\": 10}", "n_min");
    expect_refused("{\"categories\": 4, \"epsilon\": 1, \"horizon\": 10, \"method\": \"bd\"}", "w_event");
    expect_refused("{\"categories\": 4, \"epsilon\": 1, \"horizon\": 10, \"method\": \"bd\", \"privacy\": \"w_event\"}",
                   "\"w\"");
    expect_refused("{\"categories\": 4, \"epsilon\": 1, \"horizon\": 10, \"privacy\": \"w_event\", \"w\": 3}",
                   "n_min");
    expect_refused("{\"categories\": 4, \"epsilon\": 1, \"horizon\": 10, \"n_min\": 5, \"privacy\": \"w_event\", "
                   "\"w\": 3, \"unsafe_paper_variant\": true}", "user-level");
    expect_refused("{\"categories\": 4, \"epsilon\": 1, \"horizon\": 10, \"n_min\": 5, \"privacy\": \"w_event\", "
                   "\"w\": 3, \"max_releases\": 4}", "max_releases");
    expect_refused("{\"categories\": 4, \"epsilon\": 1, \"horizon\": 10, \"n_min\": 5, \"max_releases\": 11}",
                   "max_releases");
    expect_refused("{\"categories\": 4, \"epsilon\": 1, \"horizon\": 10, \"n_min\": 5, \"decision_fraction\": 1}",
                   "decision_fraction");
    expect_refused("{\"categories\": 4, \"epsilon\": 1, \"horizon\": 10, \"n_min\": 5, \"method\": \"fast\"}",
                   "method");
}

static double kv(const tk_sink *k, const char *key) { return tk_kv(k->m_debias, (char (*)[24])k->m_debias_keys, k->m_n_debias, key); }

/* The histogram swaps every step: every decision is positive, so exactly C
 * releases happen, the SVT stops, and the ledger ends at exactly ε. */
static void test_svt_stops_after_c(void)
{
    for (int method = 0; method < 2; method++) {
        json_t *j = tk_cfg_text("{\"categories\": 4, \"epsilon\": 2, \"horizon\": 30, \"n_min\": 1000, \"max_releases\": 5,"
                             " \"method\": \"%s\", \"decision_fraction\": 0.3}", method ? "dsft" : "dsat");
        dp_synth *s;
        dp_key key;
        char err[256];
        CU_ASSERT_EQUAL_FATAL(create_k(&s, j, 1, &key, err, sizeof err), DP_OK);
        tk_sink k;
        tk_sink_init(&k);
        int released = 0, last_release = 0;
        for (int t = 1; t <= 30; t++) {
            run(s, &k, t, t, 2000, flipping);
            if (kv(&k, "released") == 1) {
                released++;
                last_release = t;
            }
            CU_ASSERT(kv(&k, "releases") <= 5);
            /* the budget event splits the step's spend: decisions (the SVT's ε₁, all at step 1) and releases */
            double dec = tk_kv(k.b_noise, k.b_noise_keys, k.b_n_noise, "decision_spent_step"),
                   rel = tk_kv(k.b_noise, k.b_noise_keys, k.b_n_noise, "release_spent_step");
            CU_ASSERT_DOUBLE_EQUAL(dec + rel, k.b_spent_step, 1e-12);
            CU_ASSERT(t == 1 ? fabs(dec - 0.6) < 1e-6 : dec == 0);
            CU_ASSERT(kv(&k, "released") == 1 ? rel > 0 : rel == 0);
        }
        printf("\n    %s: %d releases, the last at step %d", method ? "dsft" : "dsat", released, last_release);
        CU_ASSERT_EQUAL(released, 5);
        CU_ASSERT(last_release < 15);   /* positives come at once: nothing left for the end */
        CU_ASSERT_EQUAL(k.b_status, DP_BUDGET_EXHAUSTED);
        CU_ASSERT_EQUAL(k.b_spent_total, 2);
        CU_ASSERT_EQUAL(k.b_budget_total, 2);
        tk_sink_free(&k);
        dp_synth_destroy(s);
        json_decref(j);
    }
}

/* A stable population: the distance stays near 0, below T = 0.3, so after
 * the first release nothing is released until the last step, which spends
 * the unspent release budget; the ledger ends at exactly ε. */
static void test_stable_stream(void)
{
    json_t *j = tk_cfg_text("{\"categories\": 4, \"epsilon\": 4, \"horizon\": 20, \"n_min\": 1000, \"max_releases\": 4,"
                         " \"method\": \"dsft\", \"threshold\": 0.3, \"decision_fraction\": 0.5}");
    dp_synth *s;
    dp_key key;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(create_k(&s, j, 2, &key, err, sizeof err), DP_OK);
    tk_sink k;
    tk_sink_init(&k);
    int released = 0;
    for (int t = 1; t <= 20; t++) {
        uint64_t before = k.records;
        run(s, &k, t, t, 2000, stable);
        int r = kv(&k, "released") == 1;
        released += r;
        if (t > 1 && t < 20) {
            CU_ASSERT_EQUAL(r, 0);
            CU_ASSERT_EQUAL(kv(&k, "repeat_of"), 1);
            CU_ASSERT_EQUAL(k.records, before);
            CU_ASSERT_EQUAL(k.m_mode, DP_RELEASE_DELTA);
        }
    }
    CU_ASSERT_EQUAL(released, 2);   /* step 1 and the last step */
    CU_ASSERT_EQUAL(k.b_spent_total, 4);
    CU_ASSERT_EQUAL(k.b_status, DP_BUDGET_EXHAUSTED);
    tk_sink_free(&k);
    dp_synth_destroy(s);
    json_decref(j);
}

/* Step 1's release: H + DLap(C/ε₂) per bin.  Over many keys the variance of
 * a released count is the discrete Laplace variance (±5 standard errors of
 * the sample variance, kurtosis 6 of a Laplace). */
static void test_release_noise(void)
{
    enum { KEYS = 600 };
    json_t *j = tk_cfg_text("{\"categories\": 4, \"epsilon\": 1, \"horizon\": 10, \"n_min\": 100, \"max_releases\": 2,"
                         " \"decision_fraction\": 0.2}");
    double sum = 0, sumsq = 0, n = 0;
    for (int key_i = 0; key_i < KEYS; key_i++) {
        dp_synth *s;
        dp_key key;
        char err[256];
        CU_ASSERT_EQUAL_FATAL(create_k(&s, j, key_i, &key, err, sizeof err), DP_OK);
        tk_sink k;
        tk_sink_init(&k);
        run(s, &k, 1, 1, 400, stable);
        for (int b = 0; b < 4; b++) {
            char name[24];
            snprintf(name, sizeof name, "count.%d", b);
            double e = kv(&k, name) - 100;
            sum += e;
            sumsq += e * e;
            n++;
        }
        tk_sink_free(&k);
        dp_synth_destroy(s);
    }
    /* ε₂ = 0.8 of 1, C = 2: scale C/ε₂ = 2.5 (the ledger's exact units) */
    dp_rational q;
    CU_ASSERT_EQUAL_FATAL(dp_rational_from_double_up(2.5, &q), DP_OK);
    double want = dp_dlap_variance(q), mean = sum / n, var = (sumsq - n * mean * mean) / (n - 1);
    double sd_ratio = sqrt(2.0 / (n - 1) + 3.0 / n);
    printf("\n    released-count variance %.2f, discrete Laplace(2.5) %.2f", var, want);
    CU_ASSERT(fabs(var / want - 1) <= 5 * sd_ratio);
    json_decref(j);
}

/* w-event BD, BA, DSAT and DSFT: the budget events carry the window's
 * exact integer ledger (spent_units_total of budget_units, spent_total in
 * proportion; for BD/BA the sum of the window's spent_units_step); the
 * spends of any w consecutive steps (the budget events' spent_step) stay
 * within ε — for DSAT/DSFT spent_step counts
 * each new AboveThreshold instance's ε₁/(C+1) and each release's ε₂/C, and
 * the window's first instance is counted by spent_total; DSAT/DSFT release
 * at most C times in any window; the drifting stream makes all publish
 * more than once. */
static void test_window_budget(void)
{
    static const char *const METHODS[4] = {"bd", "ba", "dsat", "dsft"};
    for (int method = 0; method < 4; method++) {
        json_t *j = tk_cfg_text("{\"categories\": 4, \"epsilon\": 1, \"horizon\": 60, \"method\": \"%s\", "
                             "\"privacy\": \"w_event\", \"w\": 8%s}", METHODS[method],
                             method >= 2 ? ", \"n_min\": 2000, \"max_releases\": 3, \"decision_fraction\": 0.3" : "");
        dp_synth *s;
        dp_key key;
        char err[256];
        CU_ASSERT_EQUAL_FATAL(create_k(&s, j, 3, &key, err, sizeof err), DP_OK);
        tk_sink k;
        tk_sink_init(&k);
        double spent[61] = {0};
        uint64_t units[61] = {0};
        int pubs = 0, rel[61] = {0};
        for (int t = 1; t <= 60; t++) {
            run(s, &k, t, t, 3000, drifting);
            spent[t] = k.b_spent_step;
            units[t] = k.b_units_step;
            rel[t] = kv(&k, "released") == 1;
            pubs += rel[t];
            CU_ASSERT(k.b_spent_total <= 1 + 1e-9);
            /* the window's exact ledger: whole units, within the window's budget, ε in proportion */
            CU_ASSERT(k.b_budget_units > 0 && k.b_units_total <= k.b_budget_units);
            CU_ASSERT_DOUBLE_EQUAL(k.b_spent_total, (double)k.b_units_total / (double)k.b_budget_units, 1e-12);
            CU_ASSERT_DOUBLE_EQUAL(k.b_spent_step, (double)k.b_units_step / (double)k.b_budget_units, 1e-12);
            if (method < 2 && t >= 8) {   /* bd/ba: the window's total is its steps' sum */
                uint64_t sum = 0;
                for (int i = t - 7; i <= t; i++)
                    sum += units[i];
                CU_ASSERT_EQUAL(sum, k.b_units_total);
            }
        }
        if (method >= 2)   /* dsat/dsft: at most C = 3 releases in any 8 steps */
            for (int t = 1; t + 7 <= 60; t++) {
                int r = 0;
                for (int i = t; i < t + 8; i++)
                    r += rel[i];
                CU_ASSERT(r <= 3);
            }
        double worst = 0;
        for (int t = 1; t + 7 <= 60; t++) {
            double w = 0;
            for (int i = t; i < t + 8; i++)
                w += spent[i];
            worst = w > worst ? w : worst;
        }
        printf("\n    %s: %d publications, largest 8-step spend %.4f", METHODS[method], pubs, worst);
        CU_ASSERT(worst <= 1 + 1e-9);
        CU_ASSERT(pubs >= 3);
        tk_sink_free(&k);
        dp_synth_destroy(s);
        json_decref(j);
    }
}

static void run_bytes(void *ctx, uint8_t key_i, int restore_at, dp_buf *out)
{
    const char *method = ctx;
    json_t *j = !strcmp(method, "bd") || !strcmp(method, "ba")
                    ? tk_cfg_text("{\"categories\": 4, \"epsilon\": 1, \"horizon\": 12, \"method\": \"%s\", "
                               "\"privacy\": \"w_event\", \"w\": 4}", method)
                : !strcmp(method, "dsat-w")
                    ? tk_cfg_text("{\"categories\": 4, \"epsilon\": 1, \"horizon\": 12, \"n_min\": 500, \"privacy\": "
                               "\"w_event\", \"w\": 4, \"max_releases\": 2, \"decision_fraction\": 0.3}")
                    : tk_cfg_text("{\"categories\": 4, \"epsilon\": 1, \"horizon\": 12, \"method\": \"%s\", \"n_min\": 500,"
                               " \"max_releases\": 4, \"decision_fraction\": 0.3}", method);
    dp_synth *s;
    dp_key key;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(create_k(&s, j, key_i, &key, err, sizeof err), DP_OK);
    tk_sink k;
    tk_sink_init(&k);
    if (restore_at) {
        run(s, &k, 1, restore_at, 700, drifting);
        dp_synth_env env = {&key, "ad/1", 4};
        tk_snapshot_restore(&s, "adaptive", j, &env, NULL);
    }
    run(s, &k, restore_at + 1, 12, 700, drifting);
    dp_buf_put_bytes(out, k.out.data, k.out.len);
    tk_sink_free(&k);
    dp_synth_destroy(s);
    json_decref(j);
}

static void test_determinism_and_restore(void)
{
    static const char *const methods[5] = {"dsat", "dsft", "bd", "ba", "dsat-w"};
    for (int mi = 0; mi < 5; mi++)
        tk_check_replays(run_bytes, (void *)methods[mi], 1, 2, 5, 1000);
}

static void test_bad_input(void)
{
    json_t *j = tk_cfg_text("{\"categories\": 4, \"epsilon\": 1, \"horizon\": 5, \"n_min\": 10}");
    dp_synth *s;
    dp_key key;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(create_k(&s, j, 1, &key, err, sizeof err), DP_OK);
    dp_reject_reason why;
    CU_ASSERT_EQUAL(tk_report(s, 1, "alice", 2, &why), DP_OK);
    CU_ASSERT_EQUAL(why, DP_REJECT_NONE);
    dp_buf before, after;
    dp_buf_init(&before);
    dp_buf_init(&after);
    CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot(s, &before), DP_OK);
    CU_ASSERT_EQUAL(tk_report(s, 1, "alice", 1, &why), DP_OK);
    CU_ASSERT_EQUAL(why, DP_REJECT_DUPLICATE_REPORT);
    CU_ASSERT_EQUAL(tk_report(s, 1, "bob", 4, &why), DP_OK);
    CU_ASSERT_EQUAL(why, DP_REJECT_OUT_OF_DOMAIN);
    CU_ASSERT_EQUAL(tk_report(s, 1, "bob", -1, &why), DP_OK);
    CU_ASSERT_EQUAL(why, DP_REJECT_OUT_OF_DOMAIN);
    CU_ASSERT_EQUAL(tk_report(s, 2, "bob", 1, &why), DP_OK);
    CU_ASSERT_EQUAL(why, DP_REJECT_FUTURE_STEP);
    dp_update u = tk_update(1, "", 0, 1);
    CU_ASSERT_EQUAL(dp_synth_ingest(s, &u, &why), DP_OK);
    CU_ASSERT_EQUAL(why, DP_REJECT_MALFORMED);
    double pt[2] = {1, 2};
    u = tk_update(1, "carol", 5, 1);
    u.payload = (dp_payload){.kind = DP_PAYLOAD_POINT, .point = pt, .point_len = 2};
    CU_ASSERT_EQUAL(dp_synth_ingest(s, &u, &why), DP_OK);
    CU_ASSERT_EQUAL(why, DP_REJECT_WRONG_KIND);
    u = tk_update(1, "dave", 4, 0);   /* a row on a stream of plain categories */
    int32_t row[2] = {0, 1};
    u.payload = (dp_payload){.kind = DP_PAYLOAD_ROW, .row = row, .row_len = 2};
    CU_ASSERT_EQUAL(dp_synth_ingest(s, &u, &why), DP_OK);
    CU_ASSERT_EQUAL(why, DP_REJECT_OUT_OF_DOMAIN);
    CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot(s, &after), DP_OK);
    CU_ASSERT(before.len == after.len && memcmp(before.data, after.data, before.len) == 0);
    tk_sink k;
    tk_sink_init(&k);
    dp_release_sink rs = tk_sink_of(&k);
    CU_ASSERT_EQUAL(dp_synth_close_step(s, &rs, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(tk_report(s, 1, "bob", 1, &why), DP_OK);
    CU_ASSERT_EQUAL(why, DP_REJECT_LATE);
    tk_sink_free(&k);
    dp_buf_free(&before);
    dp_buf_free(&after);
    dp_synth_destroy(s);
    json_decref(j);
}

/* The published DSAT rule vs the corrected one, after DSAT's clip has
 * pulled the threshold to 0 (a release rate below C/N does that within a
 * step or two).  Neighbours: every distance is 0 under D and Δ under D'
 * (one user more).  Events: "the first positive comes at step k" (k <= K)
 * and "no positive in K steps" — a partition of the outputs.
 *  - exact: from the discrete Laplace pmf, max |log P_D(E) − log P_D'(E)|
 *    is at most ε₁ for the corrected SVT (the shared ρ bounds it), and
 *    exceeds ε₁ for the published rule, whose clipped threshold has lost
 *    its noise: each negative step costs up to Δ/b and they add up;
 *  - empirical: the code (svt.c, the decisions `adaptive` makes) draws the
 *    first-positive step over 20 000 keys per variant and neighbour, and a
 *    chi-square test (p = 10^-4) finds it distributed as computed — so the
 *    exact bound is the code's. */
static double dlap_sf(dp_rational scale, int64_t x)   /* P[X >= x] */
{
    double b = (double)scale.num / (double)scale.den, a = exp(-1.0 / b);
    return x >= 1 ? pow(a, (double)x) / (1 + a) : 1 - pow(a, (double)(1 - x)) / (1 + a);
}

enum { SVT_K = 12 };

/* P(first positive at k), k = 1..K, and P(none) in [K], for queries all q. */
static void svt_exact(const dp_svt *s, int64_t q, double *p)
{
    for (int k = 0; k <= SVT_K; k++)
        p[k] = 0;
    if (s->paper) {   /* the clipped threshold: 0, no noise left */
        double pos = dlap_sf(s->query_scale, -q), surv = 1;
        for (int k = 0; k < SVT_K; k++) {
            p[k] = surv * pos;
            surv *= 1 - pos;
        }
        p[SVT_K] = surv;
        return;
    }
    double b = (double)s->rho_scale.num / (double)s->rho_scale.den;
    int64_t R = (int64_t)(60 * b) + 10;
    for (int64_t rho = -R; rho <= R; rho++) {
        double w = dp_dlap_pmf(s->rho_scale, rho), pos = dlap_sf(s->query_scale, rho - q), surv = 1;
        for (int k = 0; k < SVT_K; k++) {
            p[k] += w * surv * pos;
            surv *= 1 - pos;
        }
        p[SVT_K] += w * surv;
    }
}

static void svt_empirical(dp_svt *s, int64_t q, int keys, double *count)
{
    for (int k = 0; k <= SVT_K; k++)
        count[k] = 0;
    dp_key key;
    dptest_key(&key, 9);
    for (int i = 0; i < keys; i++) {
        memcpy(key.bytes, &i, sizeof i);
        dp_drbg g;
        dp_drbg_init(&g, &key, "svt", 3, 1, "test/svt");
        dp_svt_start(s, 0, &g);
        dp_svt_move(s, (int64_t)1 << 40, 0);   /* DSAT's downward moves: the paper clips its noisy threshold at 0 */
        int k = 0;
        while (k < SVT_K && !dp_svt_decide(s, q, 0, &g))
            k++;
        count[k]++;
        dp_drbg_wipe(&g);
    }
}

static void test_clipped_threshold_privacy(void)
{
    const double eps1 = 4;
    const int64_t delta = 1000;
    for (int paper = 0; paper < 2; paper++) {
        dp_svt s;
        char err[256];
        CU_ASSERT_EQUAL_FATAL(dp_svt_prepare(&s, eps1, 1, 2, delta, 2 << 20, paper, err, sizeof err), DP_OK);
        double pd[SVT_K + 1], pn[SVT_K + 1], worst = 0;
        svt_exact(&s, 0, pd);
        svt_exact(&s, delta, pn);
        for (int k = 0; k <= SVT_K; k++)
            worst = fmax(worst, fabs(log(pd[k]) - log(pn[k])));
        printf("\n    %s rule: largest privacy loss over the %d events %.3f (epsilon_1 = %g)",
               paper ? "published" : "corrected", SVT_K + 1, worst, eps1);
        if (paper) {
            CU_ASSERT(worst > eps1 + 0.5);
        } else {
            CU_ASSERT(worst <= eps1 + 1e-9);
        }
        /* the code draws from exactly these distributions */
        for (int nb = 0; nb < 2; nb++) {
            enum { KEYS = 20000 };
            double count[SVT_K + 1], *p = nb ? pn : pd, chi = 0, pooled_e = 0, pooled_o = 0;
            svt_empirical(&s, nb ? delta : 0, KEYS, count);
            int df = -1;
            for (int k = 0; k <= SVT_K; k++) {
                double e = KEYS * p[k];
                if (e < 5) {   /* pool sparse cells */
                    pooled_e += e;
                    pooled_o += count[k];
                    continue;
                }
                chi += (count[k] - e) * (count[k] - e) / e;
                df++;
            }
            if (pooled_e > 0) {
                chi += (pooled_o - pooled_e) * (pooled_o - pooled_e) / fmax(pooled_e, 1e-9);
                df++;
            }
            double limit = dptest_chi2_isf(1e-4, df > 0 ? df : 1);
            if (chi > limit)
                printf("\n    %s, %s: chi-square %.1f > %.1f (df %d)", paper ? "published" : "corrected",
                       nb ? "D'" : "D", chi, limit, df);
            CU_ASSERT(chi <= limit);
        }
    }
}

static void count_bin5(void *ctx, const dp_synth_record *r)
{
    if (r->value.kind == DP_PAYLOAD_CATEGORY && r->value.category == 5)
        ++*(int *)ctx;
}

/* INSERT/DELETE of tuples (one per entity) and `attributes` rows: the
 * snapshot counts what is present; the reject reasons are the entity's own. */
static void test_tuples_and_attributes(void)
{
    json_t *j = tk_cfg_text("{\"attributes\": [{\"name\": \"a\", \"categories\": [\"x\", \"y\"]}, {\"name\": "
                         "\"b\", \"categories\": [\"p\", \"q\", \"r\"]}], \"epsilon\": 1000, \"horizon\": 4, "
                         "\"n_min\": 10, \"max_releases\": 4, \"decision_fraction\": 0.5}");
    dp_synth *s;
    dp_key key;
    char err[256], id[16];
    CU_ASSERT_EQUAL_FATAL(create_k(&s, j, 1, &key, err, sizeof err), DP_OK);
    dp_reject_reason why;
    int32_t r12[2] = {1, 2}, r01[2] = {0, 1}, bad[2] = {0, 3};
    for (int u = 0; u < 30; u++) {   /* 30 entities insert (1,2) = bin 5 */
        snprintf(id, sizeof id, "e%d", u);
        dp_update up = tk_update(1, id, strlen(id), 0);
        up.kind = DP_UPDATE_INSERT;
        up.payload = (dp_payload){.kind = DP_PAYLOAD_ROW, .row = r12, .row_len = 2};
        CU_ASSERT_EQUAL(dp_synth_ingest(s, &up, &why), DP_OK);
        CU_ASSERT_EQUAL(why, DP_REJECT_NONE);
    }
    dp_update up = tk_update(1, "e0", 2, 0);
    up.kind = DP_UPDATE_INSERT;
    up.payload = (dp_payload){.kind = DP_PAYLOAD_ROW, .row = bad, .row_len = 2};
    CU_ASSERT_EQUAL(dp_synth_ingest(s, &up, &why), DP_OK);
    CU_ASSERT_EQUAL(why, DP_REJECT_OUT_OF_DOMAIN);
    tk_sink k;
    tk_sink_init(&k);
    int in5 = 0;
    k.on_record = count_bin5;
    k.hook_ctx = &in5;
    dp_release_sink rs = tk_sink_of(&k);
    CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(s, &rs, err, sizeof err), DP_OK);
    CU_ASSERT(abs(in5 - 30) <= 1);   /* ε = 1000: the released rows of bin (1,2) = 5 are the 30 */
    /* step 2: e0 inserts again (USER_LIMIT), e1 deletes a value it does not
     * hold (NOT_PRESENT), e2 deletes its tuple, e3 moves to (0,1) by REPORT,
     * and e3 again (DUPLICATE_REPORT) */
    struct { const char *e; dp_update_kind kind; int32_t *row; dp_reject_reason want; } cases[] = {
        {"e0", DP_UPDATE_INSERT, r01, DP_REJECT_USER_LIMIT},
        {"e1", DP_UPDATE_DELETE, r01, DP_REJECT_NOT_PRESENT},
        {"nobody", DP_UPDATE_DELETE, r12, DP_REJECT_NOT_PRESENT},
        {"e2", DP_UPDATE_DELETE, r12, DP_REJECT_NONE},
        {"e3", DP_UPDATE_REPORT, r01, DP_REJECT_NONE},
        {"e3", DP_UPDATE_REPORT, r12, DP_REJECT_DUPLICATE_REPORT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        up = tk_update(2, cases[i].e, strlen(cases[i].e), 0);
        up.kind = cases[i].kind;
        up.payload = (dp_payload){.kind = DP_PAYLOAD_ROW, .row = cases[i].row, .row_len = 2};
        CU_ASSERT_EQUAL(dp_synth_ingest(s, &up, &why), DP_OK);
        if (why != cases[i].want)
            printf("\n    case %zu: %s, want %s", i, dp_reject_reason_name(why), dp_reject_reason_name(cases[i].want));
        CU_ASSERT_EQUAL(why, cases[i].want);
    }
    CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(s, &rs, err, sizeof err), DP_OK);
    tk_sink_free(&k);
    dp_synth_destroy(s);
    /* the statistics an ingest half hands the release, read directly */
    const dp_synth_ops *ops = dp_synth_ops_find("adaptive");
    dp_ingest_half *in;
    CU_ASSERT_EQUAL_FATAL(ops->ingest_create(&in, j, err, sizeof err), DP_OK);
    for (int u = 0; u < 3; u++) {
        snprintf(id, sizeof id, "e%d", u);
        up = tk_update(1, id, strlen(id), 0);
        up.kind = DP_UPDATE_INSERT;
        up.payload = (dp_payload){.kind = DP_PAYLOAD_ROW, .row = r12, .row_len = 2};
        CU_ASSERT_EQUAL(ops->ingest_update(in, &up, &why), DP_OK);
    }
    dp_stats st;
    dp_stats_init(&st, 1);
    CU_ASSERT_EQUAL_FATAL(ops->ingest_close(in, 1, &st), DP_OK);
    up = tk_update(2, "e1", 2, 0);
    up.kind = DP_UPDATE_DELETE;
    up.payload = (dp_payload){.kind = DP_PAYLOAD_ROW, .row = r12, .row_len = 2};
    CU_ASSERT_EQUAL(ops->ingest_update(in, &up, &why), DP_OK);
    up = tk_update(2, "e2", 2, 0);
    up.payload = (dp_payload){.kind = DP_PAYLOAD_ROW, .row = r01, .row_len = 2};
    CU_ASSERT_EQUAL(ops->ingest_update(in, &up, &why), DP_OK);
    dp_stats_clear(&st, 2);
    CU_ASSERT_EQUAL_FATAL(ops->ingest_close(in, 2, &st), DP_OK);
    CU_ASSERT_EQUAL(dp_stats_get(&st, 5), 1);   /* e0 */
    CU_ASSERT_EQUAL(dp_stats_get(&st, 1), 1);   /* e2 moved to (0,1) */
    CU_ASSERT_EQUAL(st.n_cells, 2);
    dp_stats_free(&st);
    ops->ingest_destroy(in);
    json_decref(j);
}


typedef struct shard_ctx { char id[24]; int standing; } shard_ctx;

/* 500 updates a step by 430 users, so the last 70 repeat a user of the
 * step (DUPLICATE_REPORT); values drift, so decisions go both ways.  On a
 * standing_values snapshot every ninth user DELETEs the value it held (or
 * a wrong one: NOT_PRESENT) and every thirteenth INSERTs (USER_LIMIT when
 * it holds one). */
static dp_update shard_update(void *ctx, int t, int i)
{
    shard_ctx *c = ctx;
    int u = i % 430;
    snprintf(c->id, sizeof c->id, "user-%d", u);
    dp_update up = tk_update((uint64_t)t, c->id, strlen(c->id), drifting(u, t * 10));
    if (c->standing && t > 1 && u % 9 == 0) {
        up.kind = DP_UPDATE_DELETE;
        up.payload.category = drifting(u, (t - (u % 2)) * 10);
    } else if (c->standing && u % 13 == 0) {
        up.kind = DP_UPDATE_INSERT;
    }
    return up;
}

/* 4 shards by the real key merged = the bundle at every step, under user
 * (DSAT's sparse-vector decisions, standing values with INSERT/DELETE) and
 * w_event (DSFT's sparse vector; BA's dissimilarity tests) privacy. */
static void test_shards_merge(void)
{
    static const struct { const char *cfg; int standing; } runs[] = {
        {"{\"categories\": 4, \"epsilon\": 1, \"horizon\": 6, \"n_min\": 200, \"max_releases\": 3,"
         " \"decision_fraction\": 0.3}", 1},
        {"{\"categories\": 4, \"epsilon\": 1, \"horizon\": 8, \"n_min\": 200, \"max_releases\": 2,"
         " \"method\": \"dsft\", \"privacy\": \"w_event\", \"w\": 3, \"decision_fraction\": 0.3}", 0},
        {"{\"categories\": 4, \"epsilon\": 1, \"horizon\": 8, \"method\": \"ba\", \"privacy\": \"w_event\","
         " \"w\": 3}", 0},
    };
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        json_t *j = tk_cfg_text("%s", runs[r].cfg);
        shard_ctx c = {.standing = runs[r].standing};
        CU_ASSERT(tk_check_shards_on("adaptive", j, "ad/1", runs[r].standing ? 6 : 8, 500, shard_update, &c) > 400);
        json_decref(j);
    }
    CU_ASSERT(dp_synth_shards_by_entity("adaptive"));
}

/* L1 distance between two finished statistics (sparse histograms). */
static int64_t stats_l1(const dp_stats *a, const dp_stats *b)
{
    int64_t d = 0;
    size_t i = 0, j = 0;
    while (i < a->n_cells || j < b->n_cells) {
        if (j >= b->n_cells || (i < a->n_cells && a->keys[i] < b->keys[j]))
            d += llabs(a->counts[i++]);
        else if (i >= a->n_cells || b->keys[j] < a->keys[i])
            d += llabs(b->counts[j++]);
        else
            d += llabs(a->counts[i++] - b->counts[j++]);
    }
    return d;
}

/* Six steps of five users' reports through an ingest half; user X reports
 * 3 at step 1 and, unless `drop`, 2 at step 4.  l1[t] = the L1 distance of
 * step t's snapshot between the two inputs. */
static void neighbour_snapshots(const char *snapshot, int64_t l1[7])
{
    json_t *j = tk_cfg_text("{\"categories\": 4, \"epsilon\": 1, \"horizon\": 6, \"method\": \"bd\", "
                            "\"privacy\": \"w_event\", \"w\": 3%s}", snapshot);
    dp_ingest_half *in[2];
    char err[256], id[8];
    for (int d = 0; d < 2; d++)
        CU_ASSERT_EQUAL_FATAL(dp_adaptive_ingest_create(&in[d], j, err, sizeof err), DP_OK);
    for (int t = 1; t <= 6; t++) {
        dp_stats st[2];
        for (int d = 0; d < 2; d++) {
            dp_reject_reason why;
            for (int u = 0; u < 5; u++) {
                snprintf(id, sizeof id, "u%d", u);
                dp_update up = tk_update((uint64_t)t, id, strlen(id), (u + t) % 3);
                CU_ASSERT_EQUAL(dp_adaptive_ingest_update(in[d], &up, &why), DP_OK);
                CU_ASSERT_EQUAL(why, DP_REJECT_NONE);
            }
            if (t == 1 || (t == 4 && d == 0)) {
                dp_update up = tk_update((uint64_t)t, "X", 1, t == 1 ? 3 : 2);
                CU_ASSERT_EQUAL(dp_adaptive_ingest_update(in[d], &up, &why), DP_OK);
                CU_ASSERT_EQUAL(why, DP_REJECT_NONE);
            }
            dp_stats_init(&st[d], (uint64_t)t);
            CU_ASSERT_EQUAL_FATAL(dp_adaptive_ingest_close(in[d], (uint64_t)t, &st[d]), DP_OK);
        }
        l1[t] = stats_l1(&st[0], &st[1]);
        dp_stats_free(&st[0]);
        dp_stats_free(&st[1]);
    }
    for (int d = 0; d < 2; d++)
        dp_adaptive_ingest_destroy(in[d]);
    json_decref(j);
}

/* What a scale in a budget event or plan says, for one w-event config. */
static double w_event_scale(const char *method, const char *snapshot, const char *name)
{
    json_t *j = tk_cfg_text("{\"categories\": 4, \"epsilon\": 1, \"horizon\": 6, \"method\": \"%s\", "
                            "\"privacy\": \"w_event\", \"w\": 3, \"n_min\": 10%s}", method, snapshot);
    dp_synth *s;
    dp_key key;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(create_k(&s, j, 1, &key, err, sizeof err), DP_OK);
    dp_synth_plan plan;
    CU_ASSERT_EQUAL_FATAL(dp_synth_describe(s, &plan, err, sizeof err), DP_OK);
    double v = NAN;
    for (size_t i = 0; i < plan.n_noise; i++)
        if (!strcmp(plan.noise[i].key, name))
            v = plan.noise[i].value;
    dp_synth_plan_free(&plan);
    dp_synth_destroy(s);
    json_decref(j);
    return v;
}

/* Under w-event (Kellaris et al.) a snapshot holds the reports made in its
 * step: the neighbour without X's step-4 report differs at step 4 alone, by
 * one tuple (L1 1), and X's step-1 report is in no later snapshot.  With
 * the opt-in standing values X's step-1 value stands in for the dropped
 * report at steps 4–6 — a replacement, L1 2 at each — so the release and
 * dissimilarity noise scales double; INSERT and DELETE are WRONG_KIND in
 * per-step snapshots (nothing stands to delete). */
static void test_w_event_snapshots(void)
{
    int64_t l1[7];
    neighbour_snapshots("", l1);
    for (int t = 1; t <= 6; t++)
        CU_ASSERT_EQUAL(l1[t], t == 4 ? 1 : 0);
    neighbour_snapshots(", \"snapshot\": \"standing_values\"", l1);
    for (int t = 1; t <= 6; t++)
        CU_ASSERT_EQUAL(l1[t], t >= 4 ? 2 : 0);
    printf("\n    standing values: L1 %lld %lld %lld at steps 4-6", (long long)l1[4], (long long)l1[5], (long long)l1[6]);
    static const char *const SNAP[] = {"", ", \"snapshot\": \"standing_values\""};
    double dis[2], rel[2];
    for (int i = 0; i < 2; i++) {
        dis[i] = w_event_scale("bd", SNAP[i], "dissimilarity_scale");
        rel[i] = w_event_scale("dsat", SNAP[i], "release_scale");
    }
    CU_ASSERT(dis[0] > 0 && fabs(dis[1] / dis[0] - 2) < 1e-9);
    CU_ASSERT(rel[0] > 0 && fabs(rel[1] / rel[0] - 2) < 1e-9);
    json_t *j = tk_cfg_text("{\"categories\": 4, \"epsilon\": 1, \"horizon\": 6, \"method\": \"ba\", "
                            "\"privacy\": \"w_event\", \"w\": 3}");
    dp_synth *s;
    dp_key key;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(create_k(&s, j, 1, &key, err, sizeof err), DP_OK);
    dp_reject_reason why;
    for (int kind = 0; kind < 2; kind++) {
        dp_update up = tk_update(1, "X", 1, 2);
        up.kind = kind ? DP_UPDATE_DELETE : DP_UPDATE_INSERT;
        CU_ASSERT_EQUAL(dp_synth_ingest(s, &up, &why), DP_OK);
        CU_ASSERT_EQUAL(why, DP_REJECT_WRONG_KIND);
    }
    dp_synth_destroy(s);
    json_decref(j);
}

int main(void)
{
    static const dptest_case cases[] = {
        {"config errors name their key", test_config_errors},
        {"DSAT/DSFT: at most C releases, the SVT stops, exactly epsilon spent", test_svt_stops_after_c},
        {"a stable stream repeats until the last step spends what is left", test_stable_stream},
        {"released counts: discrete Laplace variance of scale C/eps2", test_release_noise},
        {"BD/BA: any w consecutive steps spend at most epsilon; they publish", test_window_budget},
        {"replay byte-identical, restore continues byte-identically, key matters", test_determinism_and_restore},
        {"bad reports rejected with their reason, changing nothing", test_bad_input},
        {"INSERT/DELETE of tuples and attribute rows: the snapshot counts what is present", test_tuples_and_attributes},
        {"the published DSAT rule leaks once its clip binds; the corrected SVT does not (exact + drawn)",
         test_clipped_threshold_privacy},
        {"4 shards by the real key (user dsat, w_event dsft and ba) = the bundle at every step", test_shards_merge},
        {"w-event: a report is in its own step's snapshot only; standing values are calibrated for L1 2",
         test_w_event_snapshots},
        {NULL, NULL},
    };
    return dptest_run("adaptive", cases);
}
