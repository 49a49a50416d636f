/* test_exact_ledger.c — the ledger is exact (issue 12.7): every
 * synthesizer's budget events carry integer units whose running total is
 * exactly the sum of the steps' spends, and a plan that uses the whole
 * budget ends with spent_total == budget_total bit for bit (the old float
 * sums ended at 0.49999999999999994 of 0.5 for T = 8, k = 3, ρ = 0.5).
 * Horizons up to 10^4 (window) and the cumulative maximum 1024; budgets
 * that are not dyadic (0.1, 1/3).  Plus the unit split and the exact
 * ledger's serialization. */
#include "dptest.h"
#include "synth_testkit.h"

#include "core/accountant.h"

static dp_key g_key;

typedef struct ledger_watch {
    uint64_t events, sum_units, last_total, budget_units;
    double   last_spent_total, budget_total;
    int      status, consistent;
} ledger_watch;

static int watch_budget(void *ctx, const dp_budget_event *e)
{
    ledger_watch *w = ctx;
    w->events++;
    w->sum_units += e->spent_units_step;
    if (e->spent_units_total != w->sum_units || e->budget_units == 0 || e->spent_units_total > e->budget_units ||
        (w->budget_units && e->budget_units != w->budget_units))
        w->consistent = 0;
    w->last_total = e->spent_units_total;
    w->budget_units = e->budget_units;
    w->last_spent_total = e->spent_total;
    w->budget_total = e->budget_total;
    w->status = (int)e->status;
    return 0;
}

/* Run the whole horizon of one stream with one person; 1 if exact. */
static int run_plan(const char *synth, const char *cfg_text, uint64_t T)
{
    json_error_t je;
    json_t *cfg = json_loads(cfg_text, 0, &je);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
    dp_synth_env env = {&g_key, "s", 1};
    dp_synth *s = NULL;
    char err[512] = "";
    int rc = dp_synth_create(&s, synth, cfg, &env, err, sizeof err);
    json_decref(cfg);
    if (rc != DP_OK) {
        fprintf(stderr, "\n  %s %s: %s", synth, cfg_text, err);
        return 0;
    }
    dp_reject_reason why;
    tk_report(s, 1, "u1", 1, &why);
    ledger_watch w = {.consistent = 1};
    dp_release_sink sink = {.ctx = &w, .budget = watch_budget};
    for (uint64_t t = 1; t <= T && rc == DP_OK; t++)
        rc = dp_synth_close_step(s, &sink, err, sizeof err);
    dp_synth_destroy(s);
    int ok = rc == DP_OK && w.events == T && w.consistent && w.last_total == w.budget_units &&
             memcmp(&w.last_spent_total, &w.budget_total, sizeof(double)) == 0 && w.status == DP_BUDGET_EXHAUSTED;
    if (!ok)
        fprintf(stderr, "\n  %s %s: rc %d, %llu events, units %llu of %llu, spent %.17g of %.17g", synth, cfg_text,
                rc, (unsigned long long)w.events, (unsigned long long)w.last_total,
                (unsigned long long)w.budget_units, w.last_spent_total, w.budget_total);
    return ok;
}

static void test_window_plans(void)
{
    static const uint64_t horizons[] = {1, 2, 3, 7, 8, 12, 97, 1000, 10000};
    static const char *rhos[] = {"0.5", "0.1", "0.005", "0.3333333333333333"};
    char cfg[256];
    for (size_t h = 0; h < sizeof horizons / sizeof horizons[0]; h++)
        for (uint64_t k = 1; k <= 3; k += 2) {
            if (k > horizons[h])
                continue;
            for (size_t r = 0; r < sizeof rhos / sizeof rhos[0]; r++) {
                if (horizons[h] >= 1000 && r > 1)
                    continue;   /* the long horizons once per k and a dyadic and a non-dyadic budget */
                snprintf(cfg, sizeof cfg, "{\"horizon\":%llu,\"k\":%llu,\"rho\":%s,\"n_pad\":1}",
                         (unsigned long long)horizons[h], (unsigned long long)k, rhos[r]);
                CU_ASSERT(run_plan("window", cfg, horizons[h]));
            }
        }
}

static void test_cumulative_plans(void)
{
    static const uint64_t horizons[] = {1, 2, 6, 8, 64, 1000, 1024};
    static const char *counters[] = {"tree", "simple", "honaker"};
    char cfg[256];
    for (size_t h = 0; h < sizeof horizons / sizeof horizons[0]; h++)
        for (size_t c = 0; c < sizeof counters / sizeof counters[0]; c++) {
            if (horizons[h] >= 1000 && c > 0)
                continue;
            snprintf(cfg, sizeof cfg, "{\"horizon\":%llu,\"rho\":0.1,\"counter\":\"%s\"}",
                     (unsigned long long)horizons[h], counters[c]);
            CU_ASSERT(run_plan("cumulative", cfg, horizons[h]));
        }
}

static void test_split_and_serialize(void)
{
    double w[7] = {1, 2, 3, 0.5, 1e-9, 7, 1.0 / 3};
    uint64_t out[7], total = (1ull << 52) + 12345;
    CU_ASSERT_EQUAL_FATAL(dp_ledger_split_units(w, 7, total, out), DP_OK);
    uint64_t sum = 0;
    for (int i = 0; i < 7; i++)
        sum += out[i];
    CU_ASSERT_EQUAL(sum, total);
    CU_ASSERT(out[5] > out[2] && out[2] > out[1] && out[1] > out[0]);
    double bad[2] = {1, 0};
    CU_ASSERT_EQUAL(dp_ledger_split_units(bad, 2, 10, out), DP_EINVAL);

    dp_ledger l;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_ledger_init_exact(&l, DP_PRIVACY_ZCDP, 0.1, 3, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_ledger_spend_units(&l, 1, "m", 1, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_ledger_spend_units(&l, 2, "m", 1, err, sizeof err), DP_OK);
    CU_ASSERT_FALSE(l.exhausted);
    uint8_t *bytes;
    size_t len;
    CU_ASSERT_EQUAL_FATAL(dp_ledger_serialize(&l, &bytes, &len), DP_OK);
    dp_ledger back;
    CU_ASSERT_EQUAL(dp_ledger_deserialize(&back, bytes, len, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(back.units_spent, 2);
    CU_ASSERT_EQUAL(dp_ledger_spend_units(&back, 3, "m", 2, err, sizeof err), DP_EBUDGET);   /* over */
    dp_ledger_free(&back);
    CU_ASSERT_EQUAL(dp_ledger_deserialize(&back, bytes, len, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_ledger_spend_units(&back, 3, "m", 1, err, sizeof err), DP_OK);
    CU_ASSERT(back.exhausted);
    double b = 0.1;
    CU_ASSERT(memcmp(&back.spent, &b, sizeof b) == 0);
    dp_ledger_free(&back);
    free(bytes);
    dp_ledger_free(&l);
}

int main(void)
{
    dptest_key(&g_key, 9);
    static const dptest_case cases[] = {
        {"window: every horizon up to 10^4 ends exactly on its budget", test_window_plans},
        {"cumulative: horizons up to 1024, three counters, exact", test_cumulative_plans},
        {"unit split sums exactly; exact ledger serializes and refuses overspend", test_split_and_serialize},
        {NULL, NULL},
    };
    return dptest_run("exact_ledger", cases);
}
