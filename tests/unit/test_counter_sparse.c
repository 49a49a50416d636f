/* test_counter_sparse.c — sparse(T) and sparse_inhomogeneous: error on
 * sparse streams against the stated bound (and far below the tree's),
 * the bound's O(log² T) growth, a wrong bound rejected on dense streams,
 * snapshot/restore continuity across segment and level boundaries,
 * validation.
 *
 * Tolerances.  e_i = out_T − truth over n keys are iid; m2 = mean e_i²
 * estimates E e² with standard error sqrt((m4 − m2²)/n) (plug-in; the
 * sparse kinds are non-linear so there is no kurtosis bound).  One-sided
 * checks use the normal quantile z at p = 1e-6. */
#include "dptest.h"

#include "core/counter.h"
#include "core/dp_error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define P_CHECK 1e-6

static dp_counter *make(dp_counter_kind kind, uint64_t T, dp_privacy_model m, double v,
                        const dp_key *key, char *err, size_t n)
{
    dp_counter_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.kind = kind;
    cfg.horizon = T;
    cfg.budget.model = m;
    cfg.budget.value = v;
    dp_noise_source ns = {key, "sp", 2, "s"};
    dp_counter *c = NULL;
    if (dp_counter_create(&c, &cfg, &ns, err, n) != DP_OK)
        return NULL;
    return c;
}

static void key_for(dp_key *key, uint32_t i)
{
    dptest_key(key, 9);
    key->bytes[29] ^= (uint8_t)i;
    key->bytes[30] ^= (uint8_t)(i >> 8);
}

/* A sparse bit stream: 12 ones at fixed pseudo-random steps. */
static int64_t sparse_input(uint64_t t, uint64_t T)
{
    return (t * 2654435761u) % T < 12 ? 1 : 0;
}

typedef struct stats {
    double s2, s4;
    int n;
} stats;

static void run_keys(dp_counter_kind kind, uint64_t T, int dense, int nkeys, stats *st, double *bound)
{
    memset(st, 0, sizeof *st);
    char err[256];
    for (int i = 0; i < nkeys; i++) {
        dp_key key;
        key_for(&key, (uint32_t)i);
        dp_counter *c = make(kind, T, DP_PRIVACY_PURE, 1.0, &key, err, sizeof err);
        CU_ASSERT_FATAL(c != NULL);
        if (i == 0)
            *bound = dp_counter_variance(c, T);
        int64_t truth = 0, out = 0;
        for (uint64_t t = 1; t <= T; t++) {
            int64_t x = dense ? 1 : sparse_input(t, T);
            truth += x;
            CU_ASSERT_EQUAL_FATAL(dp_counter_add(c, x, &out), DP_OK);
        }
        double e = (double)(out - truth);
        st->s2 += e * e;
        st->s4 += e * e * e * e;
        st->n++;
        dp_counter_destroy(c);
    }
}

static void test_sparse_streams(void)
{
    const uint64_t T = 4096;
    const dp_counter_kind kinds[2] = {DP_COUNTER_SPARSE, DP_COUNTER_SPARSE_INHOMOGENEOUS};
    double z = dptest_normal_isf(P_CHECK);
    /* Tree at the same ε for comparison: exact variance. */
    dp_key key;
    key_for(&key, 0);
    char err[256];
    dp_counter *tree = make(DP_COUNTER_TREE, T, DP_PRIVACY_PURE, 1.0, &key, err, sizeof err);
    double vtree = tree ? dp_counter_variance(tree, T - 1) : NAN;   /* popcount 12 */
    dp_counter_destroy(tree);
    for (int k = 0; k < 2; k++) {
        stats st;
        double bound;
        run_keys(kinds[k], T, 0, 400, &st, &bound);
        double m2 = st.s2 / st.n, se = sqrt(fmax(st.s4 / st.n - m2 * m2, 0) / st.n);
        printf("\n  %-21s sparse stream T=%llu: MSE %.1f (se %.1f), bound %.1f, tree(T-1) %.1f",
               dp_counter_kind_name(kinds[k]), (unsigned long long)T, m2, se, bound, vtree);
        CU_ASSERT(m2 <= bound + z * se);
        /* On a stream with 12 events the error is the (small) open count
         * plus a few tree nodes: well below the tree's variance. */
        CU_ASSERT(m2 + z * se < vtree);
    }
}

/* The bound is O(log² T) (threshold 9 ln T/ε and the max of the threshold
 * noises), not the tree's O(log³ T): V(T)/ln²T stays within a factor 2
 * over T = 2^8 .. 2^20 for sparse(T). */
static void test_bound_growth(void)
{
    dp_key key;
    key_for(&key, 1);
    char err[256];
    double lo = INFINITY, hi = 0;
    for (unsigned e = 8; e <= 20; e += 4) {
        uint64_t T = (uint64_t)1 << e;
        dp_counter *c = make(DP_COUNTER_SPARSE, T, DP_PRIVACY_PURE, 1.0, &key, err, sizeof err);
        CU_ASSERT_FATAL(c != NULL);
        double r = dp_counter_variance(c, T) / (log((double)T) * log((double)T));
        printf("\n  T=2^%-2u bound/ln²T = %.2f", e, r);
        lo = fmin(lo, r);
        hi = fmax(hi, r);
        dp_counter_destroy(c);
    }
    CU_ASSERT(hi <= 2.0 * lo);
}

/* On a dense stream (all ones) segments close about every T0 steps, so the
 * open count is ~T0 and the tree holds ~T/T0 segments: the empirical MSE
 * must still respect the data-independent bound, and exceed the sparse
 * stream's (the threshold term is what the bound pays for). */
static void test_dense_stream_bound(void)
{
    const uint64_t T = 1024;
    stats st, sp;
    double bound, bound2;
    run_keys(DP_COUNTER_SPARSE, T, 1, 300, &st, &bound);
    run_keys(DP_COUNTER_SPARSE, T, 0, 300, &sp, &bound2);
    double m2 = st.s2 / st.n, se = sqrt(fmax(st.s4 / st.n - m2 * m2, 0) / st.n);
    double p2 = sp.s2 / sp.n, pse = sqrt(fmax(sp.s4 / sp.n - p2 * p2, 0) / sp.n);
    double z = dptest_normal_isf(P_CHECK);
    printf("\n  T=%llu: dense MSE %.1f (se %.1f), sparse MSE %.1f (se %.1f), bound %.1f",
           (unsigned long long)T, m2, se, p2, pse, bound);
    CU_ASSERT(bound == bound2);
    CU_ASSERT(m2 <= bound + z * se);
    CU_ASSERT(m2 - z * se > p2 + z * pse);
}

static int64_t mixed_input(uint64_t t)
{
    return t % 5 == 0 ? 1 : (t % 13 == 0 ? -1 : (t % 7 == 0 ? 2 : 0));
}

/* Snapshot at many points (inside segments, right after a segment closes,
 * across inhomogeneous levels: ε = 0.25 puts level starts at 8, 16, 32, …),
 * restore, continue: identical outputs to the uninterrupted run. */
static void test_snapshot_continuity(void)
{
    const dp_counter_kind kinds[2] = {DP_COUNTER_SPARSE, DP_COUNTER_SPARSE_INHOMOGENEOUS};
    const uint64_t T = 300;
    char err[256];
    for (int k = 0; k < 2; k++) {
        dp_key key;
        key_for(&key, 77);
        dp_counter *ref = make(kinds[k], T, DP_PRIVACY_PURE, 0.25, &key, err, sizeof err);
        CU_ASSERT_FATAL(ref != NULL);
        int64_t want[301];
        for (uint64_t t = 1; t <= T; t++)
            CU_ASSERT_EQUAL_FATAL(dp_counter_add(ref, mixed_input(t), &want[t]), DP_OK);
        dp_counter_destroy(ref);
        int mismatches = 0, checked = 0;
        for (uint64_t cut = 1; cut < T; cut += 7) {
            dp_counter *a = make(kinds[k], T, DP_PRIVACY_PURE, 0.25, &key, err, sizeof err);
            int64_t out;
            for (uint64_t t = 1; t <= cut; t++)
                dp_counter_add(a, mixed_input(t), &out);
            dp_buf b;
            dp_buf_init(&b);
            CU_ASSERT_EQUAL_FATAL(dp_counter_snapshot(a, &b), DP_OK);
            dp_counter_destroy(a);
            dp_counter *r = NULL;
            CU_ASSERT_EQUAL_FATAL(dp_counter_restore(&r, b.data, b.len, &key, err, sizeof err), DP_OK);
            dp_buf_free(&b);
            for (uint64_t t = cut + 1; t <= T; t++) {
                CU_ASSERT_EQUAL_FATAL(dp_counter_add(r, mixed_input(t), &out), DP_OK);
                mismatches += out != want[t];
            }
            checked++;
            dp_counter_destroy(r);
        }
        printf("\n  %-21s %d cut points, %d mismatching outputs", dp_counter_kind_name(kinds[k]), checked, mismatches);
        CU_ASSERT_EQUAL(mismatches, 0);
    }
}

static void test_validation(void)
{
    dp_key key;
    key_for(&key, 3);
    char err[256] = "";
    const dp_counter_kind kinds[2] = {DP_COUNTER_SPARSE, DP_COUNTER_SPARSE_INHOMOGENEOUS};
    for (int k = 0; k < 2; k++) {
        CU_ASSERT(make(kinds[k], 64, DP_PRIVACY_ZCDP, 1.0, &key, err, sizeof err) == NULL);
        CU_ASSERT(strstr(err, "cannot be calibrated to rho") != NULL);
        dp_counter *c = make(kinds[k], 64, DP_PRIVACY_PURE, 1.0, &key, err, sizeof err);
        CU_ASSERT_FATAL(c != NULL);
        int64_t out;
        CU_ASSERT_EQUAL(dp_counter_add(c, ((int64_t)1 << 40) + 1, &out), DP_EINVAL);
        CU_ASSERT_EQUAL(dp_counter_add(c, INT64_MIN, &out), DP_EINVAL);
        CU_ASSERT_EQUAL(dp_counter_steps(c), 0);
        CU_ASSERT_EQUAL(dp_counter_add(c, -((int64_t)1 << 40), &out), DP_OK);
        CU_ASSERT_EQUAL(dp_counter_variance_is_exact(c), 0);
        dp_counter_destroy(c);
    }
    CU_ASSERT(make(DP_COUNTER_SPARSE, 0, DP_PRIVACY_PURE, 1.0, &key, err, sizeof err) == NULL);
    CU_ASSERT(make(DP_COUNTER_SPARSE, 64, DP_PRIVACY_PURE, 0.0, &key, err, sizeof err) == NULL);
}

static const dptest_case CASES[] = {
    {"sparse streams: MSE within the stated bound and below the tree's variance", test_sparse_streams},
    {"sparse bound grows like log² T", test_bound_growth},
    {"dense stream: bound holds, error above the sparse stream's", test_dense_stream_bound},
    {"snapshot/restore continues identically (segments, levels)", test_snapshot_continuity},
    {"validation: rho refused, input range, horizon", test_validation},
    {NULL, NULL},
};

int main(void)
{
    return dptest_run("counter_sparse", CASES);
}
