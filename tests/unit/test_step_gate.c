/* test_step_gate.c — the step gate (synth/common/step_gate.h), the one rule for
 * what an update does: every row of its decision table, holding reports
 * for the next step and applying them (in arrival order, with their own
 * verdicts) when it opens, the roster close as an opt-in only, runs that
 * decide exactly what single offers decide, and the input digest (order
 * free, sensitive to one changed update). */
#include "dptest.h"
#include "synth_testkit.h"

#include "synth/common/step_gate.h"

static dp_key g_key;

static dp_synth *make_window(uint64_t horizon)
{
    char text[160];
    snprintf(text, sizeof text, "{\"horizon\": %llu, \"k\": 1, \"categories\": 2, \"rho\": 1}",
             (unsigned long long)horizon);
    json_error_t e;
    json_t *cfg = json_loads(text, 0, &e);
    dp_synth_env env = {&g_key, "s", 1};
    dp_synth *s = NULL;
    char err[256] = "";
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&s, "window", cfg, &env, err, sizeof err), DP_OK);
    json_decref(cfg);
    return s;
}

static dp_update marker(uint64_t step)
{
    dp_update u;
    memset(&u, 0, sizeof u);
    u.stream_id = "s";
    u.stream_id_len = 1;
    u.step = step;
    u.kind = DP_UPDATE_CLOSE_STEP;
    return u;
}

static dp_gate_verdict offer(dp_step_gate *g, dp_update u, uint64_t origin)
{
    dp_gate_verdict v;
    CU_ASSERT_EQUAL_FATAL(dp_gate_offer(g, &u, origin, (const uint8_t *)"raw", 3, &v), DP_OK);
    return v;
}

static dp_gate_verdict report(dp_step_gate *g, uint64_t step, const char *id, int64_t value, uint64_t origin)
{
    return offer(g, tk_update(step, id, strlen(id), value), origin);
}

/* What dp_gate_close reported for held updates. */
typedef struct applied_log {
    uint64_t         origin[16];
    dp_reject_reason reason[16];
    size_t           n;
} applied_log;

static int log_applied(void *ctx, const dp_update *u, uint64_t origin, const uint8_t *raw, size_t raw_len,
                       dp_reject_reason reason)
{
    applied_log *l = ctx;
    CU_ASSERT_EQUAL(raw_len, 3);
    CU_ASSERT(memcmp(raw, "raw", 3) == 0);
    CU_ASSERT_EQUAL(u->stream_id_len, 1);
    if (l->n < 16) {
        l->origin[l->n] = origin;
        l->reason[l->n] = reason;
    }
    l->n++;
    return DP_OK;
}

static int close_gate(dp_step_gate *g, applied_log *log, int *again)
{
    tk_sink sink;
    tk_sink_init(&sink);
    dp_release_sink k = tk_sink_of(&sink);
    char err[256] = "";
    int rc = dp_gate_close(g, &k, log_applied, log, again, err, sizeof err);
    tk_sink_free(&sink);
    return rc;
}

static void test_decision_table(void)
{
    dp_synth *s = make_window(3);
    dp_gate_policy pol = {.lookahead = 0, .close_on_roster = 0};
    dp_step_gate g;
    dp_gate_init(&g, s, &pol);
    applied_log log = {0};
    int again = 0;

    CU_ASSERT_EQUAL(report(&g, 1, "a", 1, 1).action, DP_GATE_USED);
    dp_gate_verdict v = report(&g, 1, "a", 0, 2);
    CU_ASSERT_EQUAL(v.action, DP_GATE_REJECTED);
    CU_ASSERT_EQUAL(v.reason, DP_REJECT_DUPLICATE_REPORT);
    v = report(&g, 2, "a", 0, 3);   /* lookahead 0: the next step is the future */
    CU_ASSERT_EQUAL(v.action, DP_GATE_REJECTED);
    CU_ASSERT_EQUAL(v.reason, DP_REJECT_FUTURE_STEP);
    CU_ASSERT(strstr(v.text, "step 2") != NULL);
    v = offer(&g, marker(2), 4);
    CU_ASSERT_EQUAL(v.action, DP_GATE_REJECTED);
    CU_ASSERT_EQUAL(v.reason, DP_REJECT_FUTURE_STEP);
    CU_ASSERT_EQUAL(offer(&g, marker(1), 5).action, DP_GATE_CLOSE);
    CU_ASSERT_EQUAL(close_gate(&g, &log, &again), DP_OK);
    CU_ASSERT_EQUAL(again, 0);
    CU_ASSERT_EQUAL(offer(&g, marker(1), 6).action, DP_GATE_IGNORED);
    v = report(&g, 1, "a", 1, 7);
    CU_ASSERT_EQUAL(v.reason, DP_REJECT_LATE);
    v = report(&g, 2, "zz", 1, 8);
    CU_ASSERT_EQUAL(v.reason, DP_REJECT_UNKNOWN_ENTITY);
    v = report(&g, 2, "a", 7, 9);
    CU_ASSERT_EQUAL(v.reason, DP_REJECT_OUT_OF_DOMAIN);
    /* the roster {a} is complete, but the policy does not close on it */
    v = report(&g, 2, "a", 1, 10);
    CU_ASSERT_EQUAL(v.action, DP_GATE_USED);
    CU_ASSERT_EQUAL(v.close_after, 0);
    for (uint64_t t = 2; t <= 3; t++) {
        CU_ASSERT_EQUAL(offer(&g, marker(t), 10 + t).action, DP_GATE_CLOSE);
        CU_ASSERT_EQUAL(close_gate(&g, &log, &again), DP_OK);
    }
    CU_ASSERT(dp_synth_exhausted(s));
    CU_ASSERT_EQUAL(report(&g, 4, "a", 1, 20).reason, DP_REJECT_EXHAUSTED);
    CU_ASSERT_EQUAL(offer(&g, marker(4), 21).reason, DP_REJECT_EXHAUSTED);
    CU_ASSERT_EQUAL(offer(&g, marker(3), 22).action, DP_GATE_IGNORED);
    CU_ASSERT_EQUAL(log.n, 0);
    dp_gate_free(&g);
    dp_synth_destroy(s);
}

/* Reports for the next step are held and applied, with their own
 * verdicts, by the close that opens their step; two steps ahead is the
 * future whatever anyone else did. */
static void test_hold_next_step(void)
{
    dp_synth *s = make_window(4);
    dp_gate_policy pol = {.lookahead = 1, .close_on_roster = 0};
    dp_step_gate g;
    dp_gate_init(&g, s, &pol);
    applied_log log = {0};
    int again = 0;
    CU_ASSERT_EQUAL(report(&g, 1, "a", 1, 1).action, DP_GATE_USED);
    CU_ASSERT_EQUAL(report(&g, 1, "b", 0, 2).action, DP_GATE_USED);
    CU_ASSERT_EQUAL(report(&g, 2, "a", 0, 3).action, DP_GATE_BUFFERED);
    CU_ASSERT_EQUAL(report(&g, 2, "zz", 0, 4).action, DP_GATE_BUFFERED);   /* judged when step 2 opens */
    CU_ASSERT_EQUAL(report(&g, 2, "a", 1, 5).action, DP_GATE_BUFFERED);
    CU_ASSERT_EQUAL(report(&g, 3, "b", 0, 6).reason, DP_REJECT_FUTURE_STEP);
    CU_ASSERT_EQUAL(dp_gate_held_count(&g), 3);
    CU_ASSERT_EQUAL(dp_gate_first_held_origin(&g), 3);
    CU_ASSERT_EQUAL(offer(&g, marker(1), 7).action, DP_GATE_CLOSE);
    CU_ASSERT_EQUAL(close_gate(&g, &log, &again), DP_OK);
    CU_ASSERT_EQUAL(dp_gate_held_count(&g), 0);
    CU_ASSERT_EQUAL(dp_gate_first_held_origin(&g), UINT64_MAX);
    CU_ASSERT_EQUAL_FATAL(log.n, 3);
    CU_ASSERT_EQUAL(log.origin[0], 3);
    CU_ASSERT_EQUAL(log.reason[0], DP_REJECT_NONE);
    CU_ASSERT_EQUAL(log.origin[1], 4);
    CU_ASSERT_EQUAL(log.reason[1], DP_REJECT_UNKNOWN_ENTITY);
    CU_ASSERT_EQUAL(log.origin[2], 5);
    CU_ASSERT_EQUAL(log.reason[2], DP_REJECT_DUPLICATE_REPORT);
    /* step 2 is open and holds a's report: b's is used as usual */
    CU_ASSERT_EQUAL(report(&g, 2, "b", 1, 8).action, DP_GATE_USED);
    CU_ASSERT_EQUAL(report(&g, 3, "b", 1, 9).action, DP_GATE_BUFFERED);
    dp_gate_drop_held(&g);
    CU_ASSERT_EQUAL(dp_gate_held_count(&g), 0);
    dp_gate_free(&g);
    dp_synth_destroy(s);
}

/* With the opt-in, a complete roster closes the step; held reports that
 * complete the next roster ask for another close at once. */
static void test_roster_close_opt_in(void)
{
    dp_synth *s = make_window(4);
    dp_gate_policy pol = {.lookahead = 1, .close_on_roster = 1};
    dp_step_gate g;
    dp_gate_init(&g, s, &pol);
    applied_log log = {0};
    int again = 0;
    CU_ASSERT_EQUAL(report(&g, 1, "a", 1, 1).action, DP_GATE_USED);
    CU_ASSERT_EQUAL(report(&g, 1, "b", 1, 2).action, DP_GATE_USED);
    CU_ASSERT_EQUAL(report(&g, 2, "a", 1, 3).action, DP_GATE_BUFFERED);
    CU_ASSERT_EQUAL(report(&g, 2, "b", 0, 4).action, DP_GATE_BUFFERED);
    CU_ASSERT_EQUAL(offer(&g, marker(1), 5).action, DP_GATE_CLOSE);   /* the roster is fixed at step 1's close */
    CU_ASSERT_EQUAL(close_gate(&g, &log, &again), DP_OK);
    CU_ASSERT_EQUAL(log.n, 2);
    CU_ASSERT_EQUAL(again, 1);
    CU_ASSERT_EQUAL(close_gate(&g, &log, &again), DP_OK);
    CU_ASSERT_EQUAL(again, 0);
    CU_ASSERT_EQUAL(dp_synth_open_step(s), 3);
    CU_ASSERT_EQUAL(report(&g, 3, "a", 1, 6).close_after, 0);
    dp_gate_verdict v = report(&g, 3, "b", 1, 7);
    CU_ASSERT_EQUAL(v.action, DP_GATE_USED);
    CU_ASSERT_EQUAL(v.close_after, 1);
    dp_gate_free(&g);
    dp_synth_destroy(s);
}

/* A run decides exactly what single offers decide, and is cut at the
 * update that completes the roster (opt-in). */
static void test_run_matches_single(void)
{
    static const char *ids[] = {"a", "b", "c", "d"};
    for (int roster = 0; roster <= 1; roster++) {
        dp_synth *s1 = make_window(3), *s2 = make_window(3);
        dp_gate_policy pol = {.lookahead = 1, .close_on_roster = roster};
        dp_step_gate g1, g2;
        dp_gate_init(&g1, s1, &pol);
        dp_gate_init(&g2, s2, &pol);
        applied_log log = {0};
        int again;
        for (int i = 0; i < 4; i++) {
            report(&g1, 1, ids[i], i & 1, (uint64_t)i);
            report(&g2, 1, ids[i], i & 1, (uint64_t)i);
        }
        offer(&g1, marker(1), 9);
        offer(&g2, marker(1), 9);
        close_gate(&g1, &log, &again);
        close_gate(&g2, &log, &again);
        /* step 2: a, b, zz, c, d, a (duplicate) */
        const char *seq[] = {"a", "b", "zz", "c", "d", "a"};
        dp_update u[6];
        for (int i = 0; i < 6; i++) {
            u[i] = tk_update(2, seq[i], strlen(seq[i]), 1);
            CU_ASSERT(dp_gate_run_eligible(&g2, &u[i]));
        }
        dp_reject_reason reasons[6];
        size_t taken;
        int close_due;
        CU_ASSERT_EQUAL(dp_gate_offer_run(&g2, u, 6, reasons, &taken, &close_due), DP_OK);
        CU_ASSERT_EQUAL(close_due, roster);
        CU_ASSERT_EQUAL(taken, roster ? 5u : 6u);
        for (size_t i = 0; i < taken; i++) {
            dp_gate_verdict v = offer(&g1, u[i], 20 + i);
            CU_ASSERT_EQUAL(v.action == DP_GATE_USED ? DP_REJECT_NONE : v.reason, reasons[i]);
            CU_ASSERT_EQUAL(v.close_after, roster && i == 4);
        }
        CU_ASSERT_FALSE(dp_gate_run_eligible(&g2, &(dp_update){.kind = DP_UPDATE_CLOSE_STEP, .step = 2}));
        CU_ASSERT_FALSE(dp_gate_run_eligible(&g2, &u[0]) && u[0].step != dp_synth_open_step(s2));
        dp_gate_free(&g1);
        dp_gate_free(&g2);
        dp_synth_destroy(s1);
        dp_synth_destroy(s2);
    }
}

static void step_digest(const char *const *ids, const int64_t *vals, size_t n, uint8_t out[DP_GATE_DIGEST_BYTES])
{
    dp_synth *s = make_window(3);
    dp_gate_policy pol = {.lookahead = 1, .close_on_roster = 0};
    dp_step_gate g;
    dp_gate_init(&g, s, &pol);
    uint8_t dkey[32];
    memset(dkey, 7, sizeof dkey);
    dp_gate_track_input(&g, dkey);
    for (size_t i = 0; i < n; i++)
        report(&g, 1, ids[i], vals[i], i);
    report(&g, 1, ids[0], vals[0], 99);   /* a rejected duplicate does not count */
    dp_gate_open_digest(&g, out);
    dp_gate_free(&g);
    dp_synth_destroy(s);
}

static void test_input_digest(void)
{
    const char *ids[] = {"a", "b", "c"}, *rev[] = {"c", "b", "a"};
    const int64_t vals[] = {1, 0, 1}, rvals[] = {1, 0, 1}, changed[] = {1, 0, 0};
    uint8_t d1[DP_GATE_DIGEST_BYTES], d2[DP_GATE_DIGEST_BYTES], d3[DP_GATE_DIGEST_BYTES],
        zero[DP_GATE_DIGEST_BYTES] = {0};
    step_digest(ids, vals, 3, d1);
    step_digest(rev, rvals, 3, d2);
    step_digest(ids, changed, 3, d3);
    CU_ASSERT(memcmp(d1, zero, sizeof d1) != 0);
    CU_ASSERT(memcmp(d1, d2, sizeof d1) == 0);   /* order free */
    CU_ASSERT(memcmp(d1, d3, sizeof d1) != 0);   /* c's value changed */
    step_digest(ids, vals, 2, d3);
    CU_ASSERT(memcmp(d1, d3, sizeof d1) != 0);   /* c missing */
}

int main(void)
{
    dptest_key(&g_key, 3);
    static const dptest_case cases[] = {
        {"decision table: used, duplicate, late, future, markers, exhausted", test_decision_table},
        {"lookahead 1: next-step reports held, applied in order with their verdicts", test_hold_next_step},
        {"roster close only when asked; held reports can complete the next roster", test_roster_close_opt_in},
        {"a run decides what single offers decide, cut at the roster completion", test_run_matches_single},
        {"input digest: order free, sensitive to one value or one missing update", test_input_digest},
        {NULL, NULL},
    };
    return dptest_run("step_gate", cases);
}
