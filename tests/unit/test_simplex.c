/* test_simplex.c — the projection onto {x ≥ 0, Σx = total}
 * (processor/core/simplex.{h,c}). */
#include "dptest.h"

#include "core/dp_error.h"
#include "core/drbg.h"
#include "core/simplex.h"

#include <math.h>
#include <string.h>

#define N_MAX 512

static void test_worked_examples(void)
{
    double v[3] = {3, -1, 1};   /* δ = 0.5: (3 + 1 − 3) / 2, and −1 < 0.5 */
    CU_ASSERT_FATAL(dp_project_simplex(v, 3, 3) == DP_OK);
    CU_ASSERT_DOUBLE_EQUAL(v[0], 2.5, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(v[1], 0, 0);
    CU_ASSERT_DOUBLE_EQUAL(v[2], 0.5, 1e-12);

    double w[4] = {1, 2, 3, 4};   /* already on the simplex of total 10: unchanged */
    CU_ASSERT_FATAL(dp_project_simplex(w, 4, 10) == DP_OK);
    for (int i = 0; i < 4; i++)
        CU_ASSERT_DOUBLE_EQUAL(w[i], i + 1, 1e-12);

    double u[3] = {1, 1, 1};      /* a total above the sum adds to every cell (δ < 0) */
    CU_ASSERT_FATAL(dp_project_simplex(u, 3, 6) == DP_OK);
    for (int i = 0; i < 3; i++)
        CU_ASSERT_DOUBLE_EQUAL(u[i], 2, 1e-12);

    double z[3] = {5, -2, 7};     /* no non-negative vector has a total ≤ 0 but 0 */
    CU_ASSERT_FATAL(dp_project_simplex(z, 3, -1) == DP_OK);
    CU_ASSERT(z[0] == 0 && z[1] == 0 && z[2] == 0);

    double bad[4] = {NAN, 2, INFINITY, -INFINITY};   /* non-finite entries end at 0 */
    CU_ASSERT_FATAL(dp_project_simplex(bad, 4, 1) == DP_OK);
    CU_ASSERT(bad[0] == 0 && bad[2] == 0 && bad[3] == 0);
    CU_ASSERT_DOUBLE_EQUAL(bad[1], 1, 1e-12);

    CU_ASSERT(dp_project_simplex(NULL, 0, 1) == DP_OK);
    CU_ASSERT(dp_project_simplex(NULL, 2, 1) == DP_EINVAL);
}

/* The projection's optimality conditions (KKT): x ≥ 0, Σx = total, and one δ
 * with x_i = v_i − δ wherever x_i > 0 and v_i ≤ δ wherever x_i = 0.  δ is
 * found independently here, by bisection on Σ max(v − δ, 0) = total. */
static void test_random_vectors_satisfy_kkt(void)
{
    dp_drbg g;
    dp_key key = {{7}};
    dp_drbg_init(&g, &key, "t", 1, 0, "test/simplex");
    for (int trial = 0; trial < 400; trial++) {
        uint64_t n = 1 + dp_drbg_u64(&g) % N_MAX;
        double v[N_MAX], x[N_MAX], sum = 0;
        for (uint64_t i = 0; i < n; i++) {
            v[i] = ((double)(dp_drbg_u64(&g) >> 11) * 0x1.0p-53 - 0.4) * 100.0;
            sum += v[i];
        }
        double total = trial % 3 == 0 ? fabs(sum) + 1 : trial % 3 == 1 ? 50.0 : 0.5;
        memcpy(x, v, n * sizeof *v);
        CU_ASSERT_FATAL(dp_project_simplex(x, n, total) == DP_OK);
        double lo = -200, hi = 200;
        for (int it = 0; it < 200; it++) {
            double mid = (lo + hi) / 2, s = 0;
            for (uint64_t i = 0; i < n; i++)
                s += v[i] > mid ? v[i] - mid : 0;
            if (s > total)
                lo = mid;
            else
                hi = mid;
        }
        double delta = (lo + hi) / 2, got = 0;
        int ok = 1;
        for (uint64_t i = 0; i < n; i++) {
            got += x[i];
            ok &= x[i] >= 0;
            ok &= x[i] > 0 ? fabs(x[i] - (v[i] - delta)) < 1e-9 : v[i] <= delta + 1e-9;
        }
        ok &= fabs(got - total) < 1e-9 * (1 + total);
        CU_ASSERT(ok);
        if (!ok)
            break;
    }
}

/* A permutation of the input gives the same permutation of the output. */
static void test_order_independent(void)
{
    double a[6] = {4, -3, 0.5, 9, 0.5, -1}, b[6] = {0.5, 9, -1, 4, 0.5, -3};
    const int perm[6] = {2, 3, 5, 0, 4, 1};   /* b[i] = a[perm[i]] */
    CU_ASSERT_FATAL(dp_project_simplex(a, 6, 7) == DP_OK);
    CU_ASSERT_FATAL(dp_project_simplex(b, 6, 7) == DP_OK);
    for (int i = 0; i < 6; i++)
        CU_ASSERT(b[i] == a[perm[i]]);
}

/* Why `marginal` projects instead of clipping: on a histogram that is mostly
 * empty, zero-mean noise clipped at 0 puts E[noise⁺] into every empty cell,
 * the projection (which keeps the total) far less.  Noise ±s with equal
 * probability on 99 empty cells, 1 cell of 10 000: clipping adds s/2 a
 * cell on average; the projection moves the empty cells' mass back to the
 * measured total, so its mean over the empty cells stays below s/10. */
static void test_projection_removes_clipping_bias(void)
{
    dp_drbg g;
    dp_key key = {{9}};
    dp_drbg_init(&g, &key, "t", 1, 0, "test/simplex-bias");
    const double s = 8;
    double clip_mean = 0, proj_mean = 0;
    const int trials = 200;
    for (int t = 0; t < trials; t++) {
        double v[100], total = 10000;
        v[0] = 10000;
        for (int i = 1; i < 100; i++)
            v[i] = dp_drbg_u64(&g) & 1 ? s : -s;
        double c = 0;
        for (int i = 1; i < 100; i++)
            c += v[i] > 0 ? v[i] : 0;
        CU_ASSERT_FATAL(dp_project_simplex(v, 100, total) == DP_OK);
        double p = 0;
        for (int i = 1; i < 100; i++)
            p += v[i];
        clip_mean += c / 99 / trials;
        proj_mean += p / 99 / trials;
    }
    CU_ASSERT(clip_mean > 0.4 * s);
    CU_ASSERT(proj_mean < 0.1 * s);
}

static const dptest_case CASES[] = {
    {"worked examples, total <= 0, non-finite entries", test_worked_examples},
    {"random vectors satisfy the projection's KKT conditions", test_random_vectors_satisfy_kkt},
    {"order independent", test_order_independent},
    {"projection vs clipping on a mostly empty histogram", test_projection_removes_clipping_bias},
    {NULL, NULL},
};

int main(void)
{
    return dptest_run("simplex", CASES);
}
