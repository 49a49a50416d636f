/* test_counter_tree_family.c — kind-specific checks for block,
 * block_unbounded, tree, hybrid and honaker: sensitivity structure and
 * calibration, an enumeration (on the real code path, through the
 * dp_counter_trace_noised hook) of the noised sums each entry enters,
 * exact linearity, Honaker's variance reduction, and that the statistical
 * variance check of test_counter_common rejects a mis-calibrated counter. */
#include "dptest.h"

#include "core/counter_impl.h"
#include "core/dp_error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void key_for(dp_key *key, uint32_t i)
{
    dptest_key(key, 3);
    key->bytes[28] ^= (uint8_t)i;
    key->bytes[29] ^= (uint8_t)(i >> 8);
    key->bytes[30] ^= (uint8_t)(i >> 16);
}

static dp_counter *make(dp_counter_kind kind, dp_privacy_model m, double budget, uint64_t T,
                        uint64_t B, const dp_key *key)
{
    dp_counter_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.kind = kind;
    cfg.horizon = T;
    cfg.block = B;
    cfg.budget.model = m;
    cfg.budget.value = budget;
    dp_noise_source ns = {key, "tf", 2, "fam"};
    dp_counter *c = NULL;
    char err[256] = "";
    int rc = dp_counter_create(&c, &cfg, &ns, err, sizeof err);
    if (rc != DP_OK)
        fprintf(stderr, "\n  create %s failed: %s\n", dp_counter_kind_name(kind), err);
    CU_ASSERT_EQUAL_FATAL(rc, DP_OK);
    return c;
}

static double dlap_var(uint64_t num, uint64_t den) { return dp_dlap_variance((dp_rational){num, den}); }
static double dgauss_var(uint64_t num, uint64_t den) { return dp_dgauss_variance((dp_rational){num, den}); }

static int close_rel(double a, double b) { return fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b)); }

/* --- sensitivity and calibration ------------------------------------- */

static void test_tree_levels_and_calibration(void)
{
    static const uint64_t TS[] = {1, 2, 3, 4, 255, 256, 257};
    static const unsigned LS[] = {1, 2, 2, 3, 8, 9, 9};
    dp_key key;
    key_for(&key, 1);
    for (size_t i = 0; i < sizeof TS / sizeof TS[0]; i++) {
        dp_counter_kind kinds[2] = {DP_COUNTER_TREE, DP_COUNTER_HONAKER};
        for (int k = 0; k < 2; k++) {
            double l1, l2;
            /* ε = 1: each node DLap(L/1); ρ = 1/2: each node N_Z(L/(2·1/2)) = N_Z(L). */
            dp_counter *c = make(kinds[k], DP_PRIVACY_PURE, 1.0, TS[i], 0, &key);
            CU_ASSERT_EQUAL(dp_counter_sensitivity(c, &l1, &l2), DP_OK);
            CU_ASSERT_EQUAL(l1, (double)LS[i]);
            CU_ASSERT_EQUAL(l2, (double)LS[i]);
            CU_ASSERT(close_rel(dp_counter_variance(c, 1), dlap_var(LS[i], 1)));
            dp_counter_destroy(c);
            c = make(kinds[k], DP_PRIVACY_ZCDP, 0.5, TS[i], 0, &key);
            CU_ASSERT_EQUAL(dp_counter_sensitivity(c, &l1, &l2), DP_OK);
            CU_ASSERT_EQUAL(l2, (double)LS[i]);
            CU_ASSERT(close_rel(dp_counter_variance(c, 1), dgauss_var(LS[i], 1)));
            if (kinds[k] == DP_COUNTER_TREE && TS[i] >= 255)   /* popcount(255) = 8 */
                CU_ASSERT(close_rel(dp_counter_variance(c, 255), 8.0 * dgauss_var(LS[i], 1)));
            dp_counter_destroy(c);
        }
    }
    /* Replacement neighbours (two entries) and Δ = 3 scale the calibration:
     * ℓ1·entries·Δ/ε = 9·2·3/1 = 54. */
    dp_counter_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.kind = DP_COUNTER_TREE;
    cfg.horizon = 256;
    cfg.budget = (dp_privacy){DP_PRIVACY_PURE, 1.0};
    cfg.neighbor_entries = 2;
    cfg.max_abs_change = 3;
    dp_noise_source ns = {&key, "", 0, "x"};
    dp_counter *c;
    CU_ASSERT_EQUAL_FATAL(dp_counter_create(&c, &cfg, &ns, NULL, 0), DP_OK);
    CU_ASSERT(close_rel(dp_counter_variance(c, 1), dlap_var(54, 1)));
    dp_counter_destroy(c);
}

static void test_block_structure(void)
{
    dp_key key;
    key_for(&key, 2);
    double l1, l2;
    /* Default B = ceil(sqrt T): 16 for T = 256, 17 for T = 257. */
    uint64_t TS[2] = {256, 257}, BS[2] = {16, 17};
    for (int i = 0; i < 2; i++) {
        dp_counter *c = make(DP_COUNTER_BLOCK, DP_PRIVACY_PURE, 1.0, TS[i], 0, &key);
        double V = dlap_var(2, 1);      /* each layer: sensitivity 1 at ε/2 */
        CU_ASSERT(close_rel(dp_counter_variance(c, 1), V));
        CU_ASSERT(close_rel(dp_counter_variance(c, BS[i] - 1), (double)(BS[i] - 1) * V));
        CU_ASSERT(close_rel(dp_counter_variance(c, BS[i]), V));
        CU_ASSERT(close_rel(dp_counter_variance(c, BS[i] + 1), 2.0 * V));
        CU_ASSERT(close_rel(dp_counter_variance(c, 3 * BS[i] + 5), 8.0 * V));
        CU_ASSERT_EQUAL(dp_counter_sensitivity(c, &l1, &l2), DP_OK);
        CU_ASSERT(l1 == 2.0 && l2 == 2.0);
        dp_counter_destroy(c);
    }
    /* B = 1: no per-entry layer, the block layer gets the whole budget. */
    dp_counter *c = make(DP_COUNTER_BLOCK, DP_PRIVACY_ZCDP, 0.5, 10, 1, &key);
    CU_ASSERT_EQUAL(dp_counter_sensitivity(c, &l1, &l2), DP_OK);
    CU_ASSERT(l1 == 1.0 && l2 == 1.0);
    CU_ASSERT(close_rel(dp_counter_variance(c, 7), 7.0 * dgauss_var(1, 1)));
    dp_counter_destroy(c);
    /* block_unbounded: stages 4, 9, 16, … with B = 2, 3, 4; DLap(2/ε). */
    c = make(DP_COUNTER_BLOCK_UNBOUNDED, DP_PRIVACY_PURE, 1.0, 0, 0, &key);
    double V = dlap_var(2, 1);
    CU_ASSERT_EQUAL(dp_counter_sensitivity(c, &l1, &l2), DP_OK);
    CU_ASSERT(l1 == 2.0 && l2 == 2.0);
    CU_ASSERT(close_rel(dp_counter_variance(c, 1), V));
    CU_ASSERT(close_rel(dp_counter_variance(c, 4), 2.0 * V));        /* blocks [1,2],[3,4] */
    CU_ASSERT(close_rel(dp_counter_variance(c, 5), 3.0 * V));        /* + one entry */
    CU_ASSERT(close_rel(dp_counter_variance(c, 12), 6.0 * V));       /* 2+2 blocks, 2 entries */
    CU_ASSERT(close_rel(dp_counter_variance(c, 13), 5.0 * V));       /* 2+3 blocks */
    CU_ASSERT(close_rel(dp_counter_variance(c, 29), 9.0 * V));       /* 2+3+4 blocks */
    dp_counter_destroy(c);
    /* hybrid: log layer DLap(1/(ε/2)); range k tree DLap(k/(ε/2)). */
    c = make(DP_COUNTER_HYBRID, DP_PRIVACY_PURE, 1.0, 0, 0, &key);
    CU_ASSERT_EQUAL(dp_counter_sensitivity(c, &l1, &l2), DP_OK);
    CU_ASSERT(l1 == 2.0 && l2 == 2.0);
    CU_ASSERT(close_rel(dp_counter_variance(c, 1), dlap_var(2, 1)));
    CU_ASSERT(close_rel(dp_counter_variance(c, 3), 2.0 * dlap_var(2, 1) + dlap_var(2, 1)));
    CU_ASSERT(close_rel(dp_counter_variance(c, 7), 3.0 * dlap_var(2, 1) + 2.0 * dlap_var(4, 1)));
    CU_ASSERT(close_rel(dp_counter_variance(c, 1024), 11.0 * dlap_var(2, 1)));
    CU_ASSERT(close_rel(dp_counter_variance(c, 1024 + 7), 11.0 * dlap_var(2, 1) + 3.0 * dlap_var(20, 1)));
    dp_counter_destroy(c);
}

/* --- enumeration of the noised sums each entry enters ------------------ */

#define TRACE_MAX 4096

typedef struct trace_log {
    size_t   n;
    char     purpose[TRACE_MAX][64];
    int64_t  value[TRACE_MAX];
} trace_log;

static void trace_cb(void *ctx, uint64_t step, const char *purpose, int64_t value)
{
    trace_log *l = ctx;
    (void)step;
    if (value == 0 || l->n >= TRACE_MAX)
        return;
    snprintf(l->purpose[l->n], sizeof l->purpose[0], "%s", purpose);
    l->value[l->n] = value;
    l->n++;
}

/* Feed the unit impulse e_s for `steps` steps and return the nonzero
 * pre-noise values of the noised quantities (all must be exactly 1: each
 * noised sum contains the entry with weight 1). */
static void impulse(dp_counter *c, uint64_t s, uint64_t steps, trace_log *log)
{
    log->n = 0;
    dp_counter_set_trace(c, trace_cb, log);
    for (uint64_t t = 1; t <= steps; t++) {
        int64_t out;
        CU_ASSERT_EQUAL_FATAL(dp_counter_add(c, t == s ? 1 : 0, &out), DP_OK);
    }
    for (size_t i = 0; i < log->n; i++)
        CU_ASSERT_EQUAL(log->value[i], 1);
    CU_ASSERT(log->n < TRACE_MAX);
}

static size_t count_prefix(const trace_log *log, const char *prefix)
{
    size_t n = 0;
    for (size_t i = 0; i < log->n; i++)
        n += strncmp(log->purpose[i], prefix, strlen(prefix)) == 0;
    return n;
}

/* Level-i dyadic node containing s ends at e_i = ceil(s/2^i)·2^i.  All of
 * them up to T are noised by honaker; the binary mechanism noises a node
 * only at the step where it is the top completed level (e_i/2^i odd). */
static unsigned expected_nodes(uint64_t s, uint64_t T, unsigned L, int binary)
{
    unsigned n = 0;
    for (unsigned i = 0; i < L; i++) {
        uint64_t e = ((s + (1ull << i) - 1) >> i) << i;
        if (e <= T && (!binary || ((e >> i) & 1u)))
            n++;
    }
    return n;
}

static void test_enumerate_tree_and_honaker(void)
{
    static const uint64_t TS[] = {1, 7, 64, 100};
    dp_key key;
    key_for(&key, 3);
    trace_log *log = malloc(sizeof *log);
    for (size_t i = 0; i < sizeof TS / sizeof TS[0]; i++) {
        uint64_t T = TS[i];
        unsigned L = 0;
        while ((1ull << L) <= T)
            L++;
        for (int h = 0; h < 2; h++) {
            dp_counter_kind kind = h ? DP_COUNTER_HONAKER : DP_COUNTER_TREE;
            unsigned maxc = 0;
            for (uint64_t s = 1; s <= T; s++) {
                dp_counter *c = make(kind, DP_PRIVACY_PURE, 1.0, T, 0, &key);
                impulse(c, s, T, log);
                CU_ASSERT_EQUAL(log->n, expected_nodes(s, T, L, !h));
                CU_ASSERT(log->n <= L);
                if (log->n > maxc)
                    maxc = (unsigned)log->n;
                dp_counter_destroy(c);
            }
            /* The claimed sensitivity L is attained (by entry 1). */
            CU_ASSERT_EQUAL(maxc, L);
        }
    }
    free(log);
}

static void test_enumerate_block(void)
{
    dp_key key;
    key_for(&key, 4);
    trace_log *log = malloc(sizeof *log);
    uint64_t T = 50, B = 7;       /* 7 full blocks and a partial one */
    size_t maxc = 0;
    for (uint64_t s = 1; s <= T; s++) {
        dp_counter *c = make(DP_COUNTER_BLOCK, DP_PRIVACY_PURE, 1.0, T, B, &key);
        impulse(c, s, T, log);
        size_t sums = count_prefix(log, "block/sum"), items = count_prefix(log, "block/item");
        CU_ASSERT_EQUAL(sums, ((s + B - 1) / B) * B <= T ? 1u : 0u);
        CU_ASSERT_EQUAL(items, s % B ? 1u : 0u);
        CU_ASSERT_EQUAL(sums + items, log->n);
        if (log->n > maxc)
            maxc = log->n;
        dp_counter_destroy(c);
    }
    CU_ASSERT_EQUAL(maxc, 2);
    /* block_unbounded over 210 steps (stages end at 4, 13, 29, 54, 90,
     * 139, 203): every entry up to 203 is in exactly one block sum, and in
     * one per-entry value unless it ends a block. */
    maxc = 0;
    for (uint64_t s = 1; s <= 203; s++) {
        dp_counter *c = make(DP_COUNTER_BLOCK_UNBOUNDED, DP_PRIVACY_ZCDP, 0.5, 0, 0, &key);
        impulse(c, s, 210, log);
        uint64_t b = 2, start = 0;
        while (s - start > b * b) {
            start += b * b;
            b++;
        }
        CU_ASSERT_EQUAL(count_prefix(log, "block_unbounded/sum"), 1);
        CU_ASSERT_EQUAL(count_prefix(log, "block_unbounded/item"), (s - start) % b ? 1u : 0u);
        if (log->n > maxc)
            maxc = log->n;
        dp_counter_destroy(c);
    }
    CU_ASSERT_EQUAL(maxc, 2);
    free(log);
}

static void test_enumerate_hybrid(void)
{
    dp_key key;
    key_for(&key, 5);
    trace_log *log = malloc(sizeof *log);
    unsigned max_tree[9] = {0};
    for (uint64_t s = 1; s <= 256; s++) {
        dp_counter *c = make(DP_COUNTER_HYBRID, DP_PRIVACY_PURE, 1.0, 0, 0, &key);
        impulse(c, s, 300, log);
        /* Exactly one log-layer sum. */
        CU_ASSERT_EQUAL(count_prefix(log, "log/"), 1);
        unsigned k = 0;
        while ((2ull << k) <= s)
            k++;
        uint64_t u = s - (1ull << k);
        char prefix[32];
        snprintf(prefix, sizeof prefix, "tree/%u/", k);
        size_t in_range = count_prefix(log, prefix), trees = count_prefix(log, "tree/");
        /* Only the tree of s's own range, as a binary mechanism of horizon 2^k - 1. */
        CU_ASSERT_EQUAL(in_range, trees);
        CU_ASSERT_EQUAL(in_range, u ? expected_nodes(u, (1ull << k) - 1, k, 1) : 0u);
        if (in_range > max_tree[k])
            max_tree[k] = (unsigned)in_range;
        dp_counter_destroy(c);
    }
    /* In range k the tree sensitivity k is attained: normalised ℓ1 = 1 + k/k = 2. */
    for (unsigned k = 1; k < 8; k++)
        CU_ASSERT_EQUAL(max_tree[k], k);
    free(log);
}

/* --- exact linearity --------------------------------------------------- */

/* Same key: out(x + e_s)_t − out(x)_t = [t ≥ s] exactly, for every kind
 * here (noise independent of the data, exact prefix, and for honaker the
 * estimate weights summing to one and integer shifts surviving rounding). */
static void test_linearity(void)
{
    dp_counter_kind kinds[5] = {DP_COUNTER_BLOCK, DP_COUNTER_BLOCK_UNBOUNDED, DP_COUNTER_TREE,
                                DP_COUNTER_HYBRID, DP_COUNTER_HONAKER};
    dp_key key;
    key_for(&key, 6);
    for (int k = 0; k < 5; k++) {
        for (int m = 0; m < 2; m++) {
            dp_privacy_model model = m ? DP_PRIVACY_ZCDP : DP_PRIVACY_PURE;
            uint64_t T = 200;
            int ok = 1;
            for (uint64_t s = 1; s <= T; s += 13) {
                dp_counter *a = make(kinds[k], model, 0.7, T, 0, &key);
                dp_counter *b = make(kinds[k], model, 0.7, T, 0, &key);
                for (uint64_t t = 1; t <= T; t++) {
                    int64_t x = (int64_t)(t * 31 % 9) - 4, oa, ob;
                    CU_ASSERT_EQUAL_FATAL(dp_counter_add(a, x, &oa), DP_OK);
                    CU_ASSERT_EQUAL_FATAL(dp_counter_add(b, x + (t == s), &ob), DP_OK);
                    ok &= ob - oa == (t >= s);
                }
                dp_counter_destroy(a);
                dp_counter_destroy(b);
            }
            CU_ASSERT(ok);
        }
    }
}

/* --- Honaker's variance reduction ------------------------------------- */

/* Honaker's noise variance at t: V·Σ_{bit h of t} 2^h/(2^{h+1}−1), with V
 * the per-node variance (the tree's variance at t = 1: one node, same
 * calibration, checked above). */
static double honaker_noise_var(double V, uint64_t t)
{
    double v = 0;
    for (unsigned h = 0; h < 64; h++)
        if ((t >> h) & 1u)
            v += V * ldexp(1.0, (int)h) / (ldexp(1.0, (int)h + 1) - 1.0);
    return v;
}

/* honaker reports the rigorous bound Var_noise + 1/4 for its randomly
 * rounded output (exact at t = 1); the reduction is in the noise variance,
 * which is what is compared with the plain tree here. */
static void test_honaker_reduces_max_variance(void)
{
    dp_key key;
    key_for(&key, 7);
    const uint64_t T = 1024;
    for (int m = 0; m < 2; m++) {
        dp_privacy_model model = m ? DP_PRIVACY_ZCDP : DP_PRIVACY_PURE;
        double budgets[2] = {m ? 0.5 : 1.0, m ? 5.0 : 8.0};
        for (int b = 0; b < 2; b++) {
            dp_counter *tr = make(DP_COUNTER_TREE, model, budgets[b], T, 0, &key);
            dp_counter *ho = make(DP_COUNTER_HONAKER, model, budgets[b], T, 0, &key);
            CU_ASSERT_EQUAL(dp_counter_variance_is_exact(ho), 0);
            double V = dp_counter_variance(tr, 1), mt = 0, mn = 0, mh = 0;
            for (uint64_t t = 1; t <= T; t++) {
                double vn = honaker_noise_var(V, t), vh = dp_counter_variance(ho, t);
                CU_ASSERT(close_rel(vh, t == 1 ? vn : vn + 0.25));
                mt = fmax(mt, dp_counter_variance(tr, t));
                mn = fmax(mn, vn);
                mh = fmax(mh, vh);
                /* Never noisier than the plain tree. */
                CU_ASSERT(vn <= dp_counter_variance(tr, t) * (1.0 + 1e-12));
            }
            printf("\n  T=1024 %s=%g: max var tree %.2f honaker noise %.2f (ratio %.4f), bound %.2f",
                   m ? "rho" : "eps", budgets[b], mt, mn, mn / mt, mh);
            CU_ASSERT(mn <= 0.6 * mt);
            dp_counter_destroy(tr);
            dp_counter_destroy(ho);
        }
    }
    printf("\n");
}

/* --- the statistical check, and that it rejects a wrong calibration ---- */

#define N_KEYS 2000

/* Same check as test_counter_common: |m2 − v| ≤ z·se, se² = max((2+γ)v²,
 * m4 − m2²)/n, γ = 3 + (1−e^{−1})²/(2e^{−1}) (kurtosis bound for DLap
 * with b ≥ 1 and sums of such), z at two-sided p = 1e-6. */
static int variance_ok(double m2, double m4, double v, double n)
{
    double p = exp(-1.0), g = 3.0 + (1.0 - p) * (1.0 - p) / (2.0 * p);
    double se = sqrt(fmax((2.0 + g) * v * v, m4 - m2 * m2) / n);
    return fabs(m2 - v) <= dptest_normal_isf(0.5e-6) * se;
}

/* Empirical m2, m4 of (out_t − prefix_t) at step t over N_KEYS keys. */
static void empirical(dp_counter_kind kind, dp_privacy_model model, double budget, uint64_t T,
                      uint64_t t_check, double *m2, double *m4)
{
    double s2 = 0, s4 = 0;
    for (uint32_t i = 0; i < N_KEYS; i++) {
        dp_key key;
        key_for(&key, 1000 + i);
        dp_counter *c = make(kind, model, budget, T, 0, &key);
        int64_t prefix = 0, out = 0;
        for (uint64_t t = 1; t <= t_check; t++) {
            int64_t x = (int64_t)((t + i) % 5) - 2;
            prefix += x;
            CU_ASSERT_EQUAL_FATAL(dp_counter_add(c, x, &out), DP_OK);
        }
        double e = (double)(out - prefix);
        s2 += e * e;
        s4 += e * e * e * e;
        dp_counter_destroy(c);
    }
    *m2 = s2 / N_KEYS;
    *m4 = s4 / N_KEYS;
}

static void test_wrong_calibration_is_caught(void)
{
    dp_key key;
    key_for(&key, 8);
    double m2, m4;
    /* Correct tree at ρ = 1/2, t = 255 (8 noisy p-sums): accepted. */
    dp_counter *ref = make(DP_COUNTER_TREE, DP_PRIVACY_ZCDP, 0.5, 256, 0, &key);
    double v = dp_counter_variance(ref, 255);
    empirical(DP_COUNTER_TREE, DP_PRIVACY_ZCDP, 0.5, 256, 255, &m2, &m4);
    printf("\n  tree rho=0.5 t=255: emp %.2f analytic %.2f", m2, v);
    CU_ASSERT(variance_ok(m2, m4, v, N_KEYS));
    /* A tree whose σ is half the correct one (what ρ' = 4ρ produces) must
     * be rejected against the correct analytic variance. */
    empirical(DP_COUNTER_TREE, DP_PRIVACY_ZCDP, 2.0, 256, 255, &m2, &m4);
    printf("\n  tree with halved sigma t=255: emp %.2f vs claimed %.2f -> %s", m2, v,
           variance_ok(m2, m4, v, N_KEYS) ? "accepted (BAD)" : "rejected");
    CU_ASSERT(!variance_ok(m2, m4, v, N_KEYS));
    /* Same with a pure-ε Laplace scale halved (ε' = 2ε). */
    dp_counter *ref2 = make(DP_COUNTER_TREE, DP_PRIVACY_PURE, 1.0, 256, 0, &key);
    double v2 = dp_counter_variance(ref2, 255);
    empirical(DP_COUNTER_TREE, DP_PRIVACY_PURE, 2.0, 256, 255, &m2, &m4);
    CU_ASSERT(!variance_ok(m2, m4, v2, N_KEYS));
    dp_counter_destroy(ref);
    dp_counter_destroy(ref2);
    printf("\n");
}

/* Honaker at T = 2^10: its empirical second moment lies within the
 * rigorous interval [sd², sd² + 1/4] around its noise variance sd² (the
 * reported bound is the top end), and is far from the plain tree's
 * variance at the worst step t = 1023. */
static void test_honaker_empirical_reduction(void)
{
    dp_key key;
    key_for(&key, 9);
    dp_counter *ho = make(DP_COUNTER_HONAKER, DP_PRIVACY_PURE, 1.0, 1024, 0, &key);
    dp_counter *tr = make(DP_COUNTER_TREE, DP_PRIVACY_PURE, 1.0, 1024, 0, &key);
    double m2, m4;
    empirical(DP_COUNTER_HONAKER, DP_PRIVACY_PURE, 1.0, 1024, 1023, &m2, &m4);
    double vh = dp_counter_variance(ho, 1023), vt = dp_counter_variance(tr, 1023);
    double sd = sqrt(honaker_noise_var(dp_counter_variance(tr, 1), 1023));
    double lo = sd * sd;
    printf("\n  honaker eps=1 t=1023: emp %.1f, rigorous [%.1f, %.1f] (reported bound %.1f; tree %.1f)\n",
           m2, lo, sd * sd + 0.25, vh, vt);
    /* The same z·se tolerance as variance_ok, taken at the larger end. */
    double p = exp(-1.0), g = 3.0 + (1.0 - p) * (1.0 - p) / (2.0 * p);
    double tol = dptest_normal_isf(0.5e-6) * sqrt(fmax((2.0 + g) * vh * vh, m4 - m2 * m2) / N_KEYS);
    CU_ASSERT(m2 <= vh + tol);
    CU_ASSERT(m2 >= lo - tol);
    CU_ASSERT(!variance_ok(m2, m4, vt, N_KEYS));
    dp_counter_destroy(ho);
    dp_counter_destroy(tr);
}

static const dptest_case CASES[] = {
    {"tree/honaker: L = floor(log2 T)+1 and the noise it implies", test_tree_levels_and_calibration},
    {"block, block_unbounded, hybrid: structure and calibration", test_block_structure},
    {"enumeration: noised sums per entry, tree and honaker", test_enumerate_tree_and_honaker},
    {"enumeration: noised sums per entry, block and block_unbounded", test_enumerate_block},
    {"enumeration: noised sums per entry, hybrid", test_enumerate_hybrid},
    {"exact linearity: one extra unit shifts later outputs by exactly 1", test_linearity},
    {"honaker max noise variance <= 0.6 x tree at T = 2^10; bound", test_honaker_reduces_max_variance},
    {"variance check rejects a halved noise scale", test_wrong_calibration_is_caught},
    {"honaker empirical variance: within its bounds, tree formula no", test_honaker_empirical_reduction},
    {NULL, NULL},
};

int main(void) { return dptest_run("counter_tree_family", CASES); }
