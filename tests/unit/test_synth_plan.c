/* test_synth_plan.c — the plan a synthesizer states from its configuration
 * (synth.h, dp_synth_describe; what `dpstream check-config` prints) is what
 * its budget events then carry: the same mechanism, unit, neighbours and
 * budget; where the plan fixes per-step spends, every event's spent_step
 * equals them exactly and a sequential plan's spends add up to the budget;
 * every noise, spend and accuracy figure that an event also names has the
 * same value (a "_max" figure bounds the event's).  And the plan is public:
 * the same under another key and after a restore, whatever the data. */
#include "dptest.h"
#include "synth_testkit.h"

#include <math.h>

typedef struct plan_check {
    const dp_synth_plan *plan;
    uint64_t events;
    uint64_t matched;      /* figures compared */
    double   sum;          /* Σ spent_step */
    double   last_total;
    double   last_eps_simple, last_eps_cks;
    int      last_status;
} plan_check;

static const dp_plan_run *run_at(const dp_synth_plan *p, uint64_t step)
{
    for (size_t i = 0; i < p->n_runs; i++)
        if (step >= p->runs[i].first && (p->runs[i].last == 0 || step <= p->runs[i].last))
            return &p->runs[i];
    return NULL;
}

static double kv_get(const dp_kv *kv, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(kv[i].key, key) == 0)
            return kv[i].value;
    return NAN;
}

static void compare_figures(plan_check *c, const dp_kv *pk, size_t n, const dp_budget_event *e)
{
    for (size_t i = 0; i < n; i++) {
        double v = kv_get(e->noise, e->n_noise, pk[i].key);
        if (isnan(v))
            v = kv_get(e->accuracy, e->n_accuracy, pk[i].key);
        if (isnan(v))
            continue;
        size_t kl = strlen(pk[i].key);
        if (kl > 4 && strcmp(pk[i].key + kl - 4, "_max") == 0) {
            CU_ASSERT(v <= pk[i].value * (1 + 1e-12));
        } else if (v != pk[i].value) {
            printf("\n    step %llu: %s is %.17g, the plan says %.17g", (unsigned long long)e->step, pk[i].key, v,
                   pk[i].value);
            CU_FAIL("a figure differs from the plan");
        }
        c->matched++;
    }
}

static int check_budget(void *ctx, const dp_budget_event *e)
{
    plan_check *c = ctx;
    const dp_synth_plan *p = c->plan;
    CU_ASSERT_STRING_EQUAL(e->mechanism, p->mechanism);
    CU_ASSERT_STRING_EQUAL(e->unit, p->unit);
    CU_ASSERT_STRING_EQUAL(e->neighbors, p->neighbors);
    CU_ASSERT_STRING_EQUAL(e->public_inputs, p->public_inputs);
    CU_ASSERT_EQUAL(e->model, p->model);
    CU_ASSERT_EQUAL(e->budget_total, p->budget_total);
    if (p->n_runs) {
        const dp_plan_run *r = run_at(p, e->step);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        if (e->spent_step != r->spend)
            printf("\n    step %llu spends %.17g, the plan %.17g", (unsigned long long)e->step, e->spent_step,
                   r->spend);
        CU_ASSERT_EQUAL(e->spent_step, r->spend);
    }
    compare_figures(c, p->spend, p->n_spend, e);
    compare_figures(c, p->noise, p->n_noise, e);
    compare_figures(c, p->accuracy, p->n_accuracy, e);
    double sd_max = kv_get(p->accuracy, p->n_accuracy, "measurement_sd_max");
    double sd = kv_get(e->accuracy, e->n_accuracy, "selected_sd_max");
    if (!isnan(sd_max) && !isnan(sd))
        CU_ASSERT(sd <= sd_max * (1 + 1e-12));
    CU_ASSERT(e->spent_step >= 0 && e->spent_total <= p->budget_total * (1 + 1e-12));
    if (strcmp(p->composition, "parallel") == 0) {
        CU_ASSERT(e->spent_step <= p->budget_total);
    }
    c->events++;
    c->sum += e->spent_step;
    c->last_total = e->spent_total;
    c->last_eps_simple = e->eps_simple;
    c->last_eps_cks = e->eps_cks;
    c->last_status = (int)e->status;
    return 0;
}

static dp_synth *create(const char *name, const json_t *cfg, uint8_t key_variant, dp_key *key)
{
    dptest_key(key, key_variant);
    dp_synth_env env = {key, "plan/s", 6};
    dp_synth *s = NULL;
    char err[512] = "";
    int rc = dp_synth_create(&s, name, cfg, &env, err, sizeof err);
    if (rc != DP_OK)
        printf("\n    %s: %s", name, err);
    CU_ASSERT_EQUAL_FATAL(rc, DP_OK);
    return s;
}

static void describe(const dp_synth *s, dp_synth_plan *p)
{
    char err[256] = "";
    int rc = dp_synth_describe(s, p, err, sizeof err);
    if (rc != DP_OK)
        printf("\n    describe: %s", err);
    CU_ASSERT_EQUAL_FATAL(rc, DP_OK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p->mechanism);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p->composition);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p->spend_rule);
}

static void same_kvs(const dp_kv *a, size_t na, const dp_kv *b, size_t nb)
{
    CU_ASSERT_EQUAL_FATAL(na, nb);
    for (size_t i = 0; i < na; i++) {
        CU_ASSERT_STRING_EQUAL(a[i].key, b[i].key);
        CU_ASSERT(memcmp(&a[i].value, &b[i].value, sizeof a[i].value) == 0);
    }
}

static void same_plan(const dp_synth_plan *a, const dp_synth_plan *b)
{
    CU_ASSERT_STRING_EQUAL(a->mechanism, b->mechanism);
    CU_ASSERT_STRING_EQUAL(a->unit, b->unit);
    CU_ASSERT_STRING_EQUAL(a->neighbors, b->neighbors);
    CU_ASSERT_STRING_EQUAL(a->composition, b->composition);
    CU_ASSERT_STRING_EQUAL(a->spend_rule, b->spend_rule);
    CU_ASSERT_EQUAL(a->model, b->model);
    CU_ASSERT_EQUAL(a->budget_total, b->budget_total);
    CU_ASSERT_EQUAL(a->horizon, b->horizon);
    CU_ASSERT_EQUAL_FATAL(a->n_runs, b->n_runs);
    for (size_t i = 0; i < a->n_runs; i++) {
        CU_ASSERT_EQUAL(a->runs[i].first, b->runs[i].first);
        CU_ASSERT_EQUAL(a->runs[i].last, b->runs[i].last);
        CU_ASSERT_EQUAL(a->runs[i].spend, b->runs[i].spend);
    }
    same_kvs(a->spend, a->n_spend, b->spend, b->n_spend);
    same_kvs(a->noise, a->n_noise, b->noise, b->n_noise);
    same_kvs(a->accuracy, a->n_accuracy, b->accuracy, b->n_accuracy);
}

/* --- input per synthesizer ---------------------------------------------------------- */

typedef void (*feed_fn)(dp_synth *s, uint64_t step);

static void feed_categories(dp_synth *s, uint64_t step, int categories, int n)
{
    dp_reject_reason why;
    for (int i = 0; i < n; i++) {
        char id[16];
        snprintf(id, sizeof id, "u%d", i);
        tk_report(s, step, id, (int64_t)((i * 7 + step * (uint64_t)(i % 3)) % (uint64_t)categories), &why);
    }
}

static void feed_bits(dp_synth *s, uint64_t step) { feed_categories(s, step, 2, 40); }
static void feed_three(dp_synth *s, uint64_t step) { feed_categories(s, step, 3, 60); }

static void feed_rows(dp_synth *s, uint64_t step)
{
    dp_reject_reason why;
    for (int i = 0; i < 30; i++) {
        int32_t row[3] = {(int32_t)((i + step) % 2), (int32_t)(i % 3), (int32_t)(i % 5 == 0)};
        char id[24];
        snprintf(id, sizeof id, "r%llu-%d", (unsigned long long)step, i);
        dp_update u = {.stream_id = "s", .stream_id_len = 1, .step = step, .kind = DP_UPDATE_INSERT,
                       .entity_id = id, .entity_id_len = strlen(id),
                       .payload = {.kind = DP_PAYLOAD_ROW, .row = row, .row_len = 3}};
        dp_synth_ingest(s, &u, &why);
    }
}

static void feed_points(dp_synth *s, uint64_t step)
{
    dp_reject_reason why;
    for (int i = 0; i < 40; i++) {
        double x[2] = {fmod(0.37 * i + 0.11 * (double)step, 1.0), fmod(0.61 * i * i + 0.05, 1.0)};
        char id[24];
        snprintf(id, sizeof id, "p%llu-%d", (unsigned long long)step, i);
        dp_update u = {.stream_id = "s", .stream_id_len = 1, .step = step, .kind = DP_UPDATE_INSERT,
                       .entity_id = id, .entity_id_len = strlen(id),
                       .payload = {.kind = DP_PAYLOAD_POINT, .point = x, .point_len = 2}};
        if (dp_synth_ingest(s, &u, &why) == DP_OK && why == DP_REJECT_WRONG_KIND) {
            u.kind = DP_UPDATE_REPORT;   /* hypercube takes REPORT */
            dp_synth_ingest(s, &u, &why);
        }
    }
}

/* Create, describe, run `steps` steps with `feed`, checking every budget
 * event against the plan; restore half-way and check the plan again. */
static void run_against_plan(const char *name, const char *text, feed_fn feed, uint64_t steps, plan_check *out)
{
    json_t *cfg = tk_cfg_text("%s", text);
    dp_key key, key2;
    dp_synth *s = create(name, cfg, 1, &key);
    dp_synth_plan plan, plan2;
    describe(s, &plan);
    /* public: another key states the same plan */
    dp_synth *other = create(name, cfg, 2, &key2);
    describe(other, &plan2);
    same_plan(&plan, &plan2);
    dp_synth_plan_free(&plan2);
    dp_synth_destroy(other);

    memset(out, 0, sizeof *out);
    out->plan = &plan;
    dp_release_sink sink = {.ctx = out, .budget = check_budget};
    dp_synth_env env = {&key, "plan/s", 6};
    for (uint64_t t = 1; t <= steps; t++) {
        feed(s, t);
        char err[512] = "";
        int rc = dp_synth_close_step(s, &sink, err, sizeof err);
        if (rc != DP_OK)
            printf("\n    %s step %llu: %s", name, (unsigned long long)t, err);
        CU_ASSERT_EQUAL_FATAL(rc, DP_OK);
        if (t == steps / 2) {   /* a restored synthesizer states the same plan */
            tk_snapshot_restore(&s, name, cfg, &env, NULL);
            describe(s, &plan2);
            same_plan(&plan, &plan2);
            dp_synth_plan_free(&plan2);
        }
    }
    CU_ASSERT_EQUAL(out->events, steps);
    out->plan = NULL;
    dp_synth_plan_free(&plan);
    dp_synth_destroy(s);
    json_decref(cfg);
}

static void test_window(void)
{
    plan_check c;
    run_against_plan("window", "{\"horizon\": 6, \"k\": 3, \"categories\": 3, \"rho\": 0.5, \"delta\": 1e-6}",
                     feed_three, 6, &c);
    CU_ASSERT(c.matched >= 6 * 4);   /* sigma2, n_pad, beta, max_abs_error every step */
    /* the plan spends exactly the budget, and its (ε, δ) is the last event's */
    CU_ASSERT_EQUAL(c.last_total, 0.5);
    CU_ASSERT(fabs(c.sum - 0.5) < 1e-12);
    CU_ASSERT_EQUAL(c.last_status, DP_BUDGET_EXHAUSTED);
    json_t *cfg = tk_cfg_text("{\"horizon\": 6, \"k\": 3, \"categories\": 3, \"rho\": 0.5, \"delta\": 1e-6}");
    dp_key key;
    dp_synth *s = create("window", cfg, 1, &key);
    dp_synth_plan p;
    describe(s, &p);
    CU_ASSERT_EQUAL(p.n_runs, 2);   /* 1..2 nothing, 3..6 ρ/4 */
    CU_ASSERT(p.runs[0].first == 1 && p.runs[0].last == 2 && p.runs[0].spend == 0);
    CU_ASSERT(p.runs[1].first == 3 && p.runs[1].last == 6 && p.runs[1].spend == 0.125);
    CU_ASSERT_EQUAL(p.eps_simple, c.last_eps_simple);
    CU_ASSERT_EQUAL(p.eps_cks, c.last_eps_cks);
    CU_ASSERT_STRING_EQUAL(p.composition, "sequential");
    dp_synth_plan_free(&p);
    dp_synth_destroy(s);
    json_decref(cfg);
}

static void test_cumulative(void)
{
    static const char *const counters[] = {"tree", "honaker", "simple"};
    for (size_t i = 0; i < 3; i++) {
        char text[256];
        snprintf(text, sizeof text, "{\"horizon\": 7, \"rho\": 0.25, \"counter\": \"%s\", \"delta\": 1e-6}",
                 counters[i]);
        plan_check c;
        run_against_plan("cumulative", text, feed_bits, 7, &c);
        CU_ASSERT(c.matched >= 7 * 3);   /* sigma2_max, beta, max_abs_error */
        CU_ASSERT_EQUAL(c.last_total, 0.25);
        CU_ASSERT(fabs(c.sum - 0.25) < 1e-12);
    }
}

static void test_marginal(void)
{
    static const char *const budgets[] = {"\"epsilon\": 1.0", "\"rho\": 0.3"};
    for (size_t i = 0; i < 2; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "{\"attributes\": [{\"name\": \"a\", \"categories\": [\"0\", \"1\"]},"
                 " {\"name\": \"b\", \"categories\": [\"0\", \"1\", \"2\"]},"
                 " {\"name\": \"c\", \"categories\": [\"x\", \"y\"]}],"
                 " \"horizon\": 5, %s, \"selections_per_step\": 2, \"counter\": \"tree\", \"delta\": 1e-6,"
                 " \"method\": \"select_measure_fit\"}",
                 budgets[i]);
        plan_check c;
        run_against_plan("marginal", text, feed_rows, 5, &c);
        CU_ASSERT(c.matched >= 5 * 3);   /* selection_epsilon, measurement_*, group */
    }
}

static void test_spatial(void)
{
    plan_check c;
    run_against_plan("spatial",
                     "{\"box\": [[0, 1], [0, 1]], \"epsilon\": 1.0, \"horizon\": 6, \"init_steps\": 2, "
                     "\"max_depth\": 8, \"counter\": {\"kind\": \"block\", \"block\": 3}}",
                     feed_points, 6, &c);
    CU_ASSERT(c.matched >= 6 * 6);
    CU_ASSERT_EQUAL(c.last_total, 1.0);
    run_against_plan("spatial", "{\"epsilon\": 1.0, \"horizon\": 4, \"max_depth\": 8, \"unsafe_paper_variant\": true}",
                     feed_points, 4, &c);
    CU_ASSERT(c.matched >= 4 * 7);   /* dp 0 among them */
}

static void test_hypercube(void)
{
    plan_check c;
    run_against_plan("hypercube", "{\"box\": [[0, 1], [0, 1]], \"epsilon\": 2, \"points_per_step\": 40, "
                     "\"max_depth\": 8}", feed_points, 8, &c);
    CU_ASSERT(c.matched >= 8 * 5);   /* series_sum, C1, alpha, dims, points_per_step */
    CU_ASSERT(c.last_total > 0 && c.last_total <= 2);
}

static void test_adaptive(void)
{
    plan_check c;
    run_against_plan("adaptive", "{\"categories\": 3, \"epsilon\": 1, \"horizon\": 8, \"n_min\": 30, "
                     "\"max_releases\": 4, \"decision_fraction\": 0.3}", feed_three, 8, &c);
    CU_ASSERT(c.matched >= 8 * 5);
    /* user-level: every release's ε₂/C and the decisions' ε₁ add up to ε at the end */
    CU_ASSERT(fabs(c.sum - 1.0) < 1e-9);
    run_against_plan("adaptive", "{\"categories\": 3, \"epsilon\": 1, \"horizon\": 8, \"method\": \"ba\", "
                     "\"privacy\": \"w_event\", \"w\": 3}", feed_three, 8, &c);
    CU_ASSERT(c.matched >= 8);   /* dissimilarity_scale, w */
    run_against_plan("adaptive", "{\"categories\": 3, \"epsilon\": 1, \"horizon\": 8, \"n_min\": 30, "
                     "\"privacy\": \"w_event\", \"w\": 4, \"max_releases\": 2}", feed_three, 8, &c);
}

int main(void)
{
    static const dptest_case cases[] = {
        {"window: the plan's spends, noise and bound are its events'", test_window},
        {"cumulative: per-step spends add up to rho exactly", test_cumulative},
        {"marginal: parallel steps, selection and measurement figures", test_marginal},
        {"spatial: nothing before init_steps, epsilon a step after; unsafe_paper_variant's dp 0", test_spatial},
        {"hypercube: series figures, spends within the budget", test_hypercube},
        {"adaptive: user-level and w-event plans", test_adaptive},
        {NULL, NULL},
    };
    return dptest_run("synth_plan", cases);
}
