/* test_marginal_independent.c — `marginal`'s method "independent" (the
 * 1-way baseline, issue 39 item 3; marginal_independent.c) through the
 * synth.h interface:
 *
 *   - the release is the product of the noisy 1-way marginals: the test
 *     rebuilds every attribute's per-cell continual counters from the same
 *     key, stream and noise labels ("marginal/a<a>/c<k>") at the budget the
 *     header derives (ε/d per attribute), feeds them the true 1-way
 *     marginals of each step's rows, and checks that the release has
 *     round(N̂) rows (N̂ the inverse-variance mean of the d noisy totals),
 *     that each column's histogram is n·p_a rounded up or down (p_a the
 *     projection of the rebuilt counters onto the simplex of total N̂), and
 *     that every 2-way cell is within 6 standard deviations of the
 *     hypergeometric law of two independently shuffled columns (mean
 *     n_i·n_j/n: the product table);
 *   - the ledger spends exactly what the accountant says: d entries of
 *     budget/d each, the whole budget a step, under pure ε and ρ-zCDP;
 *   - replay is byte-identical, a restore continues byte-identically;
 *   - the configuration names the method, and refuses an attribute in no
 *     workload. */
#include "dptest.h"
#include "synth_testkit.h"

#include "core/counter.h"
#include "core/simplex.h"
#include "synth/marginal/marginal.h"

#include <math.h>

#define D 3
static const uint32_t SIZES[D] = {3, 2, 4};

static json_t *cfg_of(int T, const char *budget, double value, const char *extra)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"attributes\": [{\"name\": \"a\", \"categories\": [\"0\",\"1\",\"2\"]},"
             " {\"name\": \"b\", \"categories\": [\"x\",\"y\"]},"
             " {\"name\": \"c\", \"categories\": [\"p\",\"q\",\"r\",\"s\"]}],"
             " \"horizon\": %d, \"%s\": %g, \"method\": \"independent\"%s}",
             T, budget, value, extra ? extra : "");
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    return j;
}

/* Row i of a correlated table: a skewed (half 0), b = a's parity most of
 * the time, c mostly equal to a (so the 2-way truth is far from the product:
 * a release that kept the correlation would fail the hypergeometric check). */
static void make_row(uint64_t i, int32_t *r)
{
    uint64_t h = (i + 1) * 0xd1342543de82ef95ull;
    h ^= h >> 31;
    r[0] = (int32_t)(h % 4 < 2 ? 0 : h % 4 == 2 ? 1 : 2);
    r[1] = (h >> 7) % 8 == 0 ? 1 - (r[0] & 1) : (r[0] & 1);
    r[2] = (h >> 13) % 3 == 0 ? (int32_t)((h >> 17) % 4) : r[0];
}

typedef struct tally {
    uint64_t n;
    uint64_t one[D][4];
    uint64_t two[D][D][4][4];
} tally;

static void on_row(void *ctx, const dp_synth_record *r)
{
    tally *t = ctx;
    t->n++;
    for (int a = 0; a < D; a++) {
        t->one[a][r->value.row[a]]++;
        for (int b = a + 1; b < D; b++)
            t->two[a][b][r->value.row[a]][r->value.row[b]]++;
    }
}

static void ingest_step(dp_synth *s, uint64_t t, uint64_t *next, int per_step, int64_t truth[D][4])
{
    int32_t r[D];
    char id[24];
    memset(truth, 0, sizeof(int64_t) * D * 4);
    for (int i = 0; i < per_step; i++) {
        snprintf(id, sizeof id, "r%llu", (unsigned long long)*next);
        make_row((*next)++, r);
        dp_update u = {.stream_id = "m/1", .stream_id_len = 3, .step = t, .kind = DP_UPDATE_INSERT,
                       .entity_id = id, .entity_id_len = strlen(id),
                       .payload = {.kind = DP_PAYLOAD_ROW, .row = r, .row_len = D}};
        dp_reject_reason why;
        CU_ASSERT_EQUAL(dp_synth_ingest(s, &u, &why), DP_OK);
        for (int a = 0; a < D; a++)
            truth[a][r[a]]++;
    }
}

static void test_release_is_product_of_noisy_one_way(void)
{
    const int T = 4, per_step = 400;
    const double eps = 0.6;
    json_t *j = cfg_of(T, "epsilon", eps, NULL);
    dp_key key;
    dptest_key(&key, 3);
    dp_synth_env env = {&key, "m/1", 3};
    dp_synth *s = NULL;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&s, "marginal", j, &env, err, sizeof err), DP_OK);
    /* the counters the header derives: simple, ε/d each, one entry changed by 1 */
    dp_counter_config cc = {.kind = DP_COUNTER_SIMPLE, .horizon = (uint64_t)T,
                            .budget = {DP_PRIVACY_PURE, eps / D}, .neighbor_entries = 1, .max_abs_change = 1};
    dp_counter *cnt[D][4];
    for (int a = 0; a < D; a++)
        for (uint32_t k = 0; k < SIZES[a]; k++) {
            char label[48];
            snprintf(label, sizeof label, "marginal/a%d/c%u", a, k);
            dp_noise_source ns = {&key, "m/1", 3, label};
            CU_ASSERT_EQUAL_FATAL(dp_counter_create(&cnt[a][k], &cc, &ns, err, sizeof err), DP_OK);
        }
    uint64_t next = 0;
    int worst_ok = 1;
    double worst_z = 0;
    for (int t = 1; t <= T; t++) {
        int64_t truth[D][4];
        ingest_step(s, (uint64_t)t, &next, per_step, truth);
        tally tl;
        memset(&tl, 0, sizeof tl);
        tk_sink k;
        tk_sink_init(&k);
        k.on_record = on_row;
        k.hook_ctx = &tl;
        dp_release_sink rs = tk_sink_of(&k);
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(s, &rs, err, sizeof err), DP_OK);
        /* the expected release, from the rebuilt counters */
        double p[D][4], num = 0, den = 0;
        for (int a = 0; a < D; a++) {
            double tot = 0;
            for (uint32_t c = 0; c < SIZES[a]; c++) {
                int64_t out;
                CU_ASSERT_EQUAL(dp_counter_add(cnt[a][c], truth[a][c], &out), DP_OK);
                p[a][c] = (double)out;
                tot += (double)out;
            }
            num += tot / SIZES[a];
            den += 1.0 / SIZES[a];
        }
        double N = num / den;
        uint64_t n = (uint64_t)llround(N);
        CU_ASSERT_EQUAL(tl.n, n);
        CU_ASSERT_EQUAL(k.m_records, n);
        for (int a = 0; a < D; a++) {
            CU_ASSERT_EQUAL(dp_project_simplex(p[a], SIZES[a], N), DP_OK);
            for (uint32_t c = 0; c < SIZES[a]; c++) {
                double want = (double)n * p[a][c] / N;
                if (!((double)tl.one[a][c] >= floor(want - 1e-9) && (double)tl.one[a][c] <= ceil(want + 1e-9))) {
                    printf("\n    step %d attribute %d cell %u: %llu rows, n·p = %.3f", t, a, c,
                           (unsigned long long)tl.one[a][c], want);
                    worst_ok = 0;
                }
            }
        }
        /* 2-way cells: two uniformly shuffled columns meet hypergeometrically */
        for (int a = 0; a < D; a++)
            for (int b = a + 1; b < D; b++)
                for (uint32_t x = 0; x < SIZES[a]; x++)
                    for (uint32_t y = 0; y < SIZES[b]; y++) {
                        double ni = (double)tl.one[a][x], nj = (double)tl.one[b][y], nn = (double)tl.n;
                        double mean = ni * nj / nn, var = nj * (ni / nn) * (1 - ni / nn) * (nn - nj) / (nn - 1);
                        double z = fabs((double)tl.two[a][b][x][y] - mean) / sqrt(var > 0 ? var : 1e-12);
                        if (fabs((double)tl.two[a][b][x][y] - mean) > 1e-9)
                            worst_z = z > worst_z ? z : worst_z;
                    }
        /* the ledger: d measurements of ε/d, exactly the budget */
        const dp_ledger *l = dp_synth_ledger(s);
        CU_ASSERT_EQUAL(l->n_entries, D);
        CU_ASSERT_EQUAL(l->units_spent, l->units_total);
        CU_ASSERT_DOUBLE_EQUAL(k.b_spent_step, eps, 1e-12);
        CU_ASSERT_DOUBLE_EQUAL(k.b_spent_total, eps, 1e-12);
        CU_ASSERT_STRING_EQUAL(k.b_mechanism, "marginal/counters/discrete_laplace");
        tk_sink_free(&k);
    }
    printf("\n    largest |2-way cell - hypergeometric mean| / sd over %d steps: %.2f", T, worst_z);
    CU_ASSERT(worst_ok);
    CU_ASSERT(worst_z < 6);
    for (int a = 0; a < D; a++)
        for (uint32_t k = 0; k < SIZES[a]; k++)
            dp_counter_destroy(cnt[a][k]);
    dp_synth_destroy(s);
    json_decref(j);
}

static void test_ledger_zcdp_and_plan(void)
{
    json_t *j = cfg_of(3, "rho", 0.3, NULL);
    dp_key key;
    dptest_key(&key, 1);
    dp_synth_env env = {&key, "m/1", 3};
    dp_synth *s = NULL;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&s, "marginal", j, &env, err, sizeof err), DP_OK);
    uint64_t next = 0;
    for (int t = 1; t <= 3; t++) {
        int64_t truth[D][4];
        ingest_step(s, (uint64_t)t, &next, 100, truth);
        tk_sink k;
        tk_sink_init(&k);
        dp_release_sink rs = tk_sink_of(&k);
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(s, &rs, err, sizeof err), DP_OK);
        const dp_ledger *l = dp_synth_ledger(s);
        CU_ASSERT_EQUAL(l->n_entries, D);
        CU_ASSERT_EQUAL(l->units_spent, l->units_total);
        CU_ASSERT_DOUBLE_EQUAL(k.b_spent_step, 0.3, 1e-12);
        CU_ASSERT_STRING_EQUAL(k.b_mechanism, "marginal/counters/discrete_gaussian");
        /* measurement_sigma2 = 1/(2ρ_a), ρ_a = ρ/d */
        CU_ASSERT_DOUBLE_EQUAL(k.b_noise[1], 1.0 / (2 * 0.3 / D), 1e-3);
        CU_ASSERT_EQUAL(k.b_status, t == 3 ? DP_BUDGET_EXHAUSTED : DP_BUDGET_ACTIVE);
        tk_sink_free(&k);
    }
    dp_synth_destroy(s);
    json_decref(j);
}

static void run_bytes(void *ctx, uint8_t key_variant, int restore_at, dp_buf *out)
{
    (void)ctx;
    const int T = 5;
    json_t *j = cfg_of(T, "epsilon", 1.5, ", \"counter\": \"tree\"");
    dp_key key;
    dptest_key(&key, key_variant);
    dp_synth_env env = {&key, "m/1", 3};
    dp_synth *s = NULL;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&s, "marginal", j, &env, err, sizeof err), DP_OK);
    tk_sink k;
    tk_sink_init(&k);
    dp_release_sink rs = tk_sink_of(&k);
    uint64_t next = 0;
    for (int t = 1; t <= T; t++) {
        if (t == restore_at + 1 && restore_at) {
            dp_buf snap;
            dp_buf_init(&snap);
            tk_snapshot_restore(&s, "marginal", j, &env, &snap);
            dp_buf_free(&snap);
        }
        int64_t truth[D][4];
        ingest_step(s, (uint64_t)t, &next, 120, truth);
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(s, &rs, err, sizeof err), DP_OK);
    }
    dp_buf_put_bytes(out, k.out.data, k.out.len);
    tk_sink_free(&k);
    dp_synth_destroy(s);
    json_decref(j);
}

static void test_determinism_and_restore(void)
{
    tk_check_replays(run_bytes, NULL, 1, 2, 3, 300);
}

static void test_config(void)
{
    json_t *j = cfg_of(3, "epsilon", 1, NULL);
    dp_marginal_config c;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_marginal_config_parse(&c, j, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(c.method, DP_MARGINAL_INDEPENDENT);
    CU_ASSERT_EQUAL(c.one_way_source[0], 0);   /* (a, b) */
    CU_ASSERT_EQUAL(c.one_way_source[1], 0);
    CU_ASSERT_EQUAL(c.one_way_source[2], 1);   /* (a, c) */
    dp_marginal_config_free(&c);
    json_decref(j);
    j = cfg_of(3, "epsilon", 1, ", \"workloads\": [[\"a\", \"b\"]]");
    err[0] = '\0';
    CU_ASSERT_NOT_EQUAL(dp_marginal_config_parse(&c, j, err, sizeof err), DP_OK);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "attribute \"c\""));
    json_decref(j);
}

int main(void)
{
    static const dptest_case cases[] = {
        {"independent: the release is the product of the noisy 1-way marginals (rebuilt counters), d entries of eps/d",
         test_release_is_product_of_noisy_one_way},
        {"independent under zCDP: d entries of rho/d, sigma2 = d/(2 rho), exhausted at the horizon",
         test_ledger_zcdp_and_plan},
        {"independent: replay byte-identical, restore continues byte-identically, key matters",
         test_determinism_and_restore},
        {"independent: the config names each attribute's 1-way source, refuses an attribute in no workload",
         test_config},
        {NULL, NULL},
    };
    return dptest_run("marginal_independent", cases);
}
