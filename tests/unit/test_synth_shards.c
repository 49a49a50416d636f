/* test_synth_shards.c — splitting the entities over several ingest halves,
 * merging their statistics, and releasing once gives byte-identical
 * output (records, manifests, budget events) to the single-shard bundle,
 * for `window` (c = 2 and 3) and `cumulative` (adaptive, spatial and marginal:
 * tk_check_shards in their own tests); and every synthesizer that shards
 * stops an ingest-only close exactly where the combined close stops. */
#include "dptest.h"
#include "synth_testkit.h"

enum { SHARDS = 3 };

/* Deterministic rule: the sum of the id's bytes, mod SHARDS. */
static int shard_of(const char *id)
{
    unsigned s = 0;
    for (const char *p = id; *p; p++)
        s += (unsigned char)*p;
    return (int)(s % SHARDS);
}

static int value_of(int i, int t, int cats) { return (i * 13 + t * t * (i % 7)) % cats; }
static int skipped(int i, int t) { return t > 1 && (i * 17 + t * 5) % 11 == 0; }

static void check(const char *name, const char *cfg_text, int n, int T, int cats)
{
    dp_key key;
    dptest_key(&key, 21);
    json_error_t je;
    json_t *cfg = json_loads(cfg_text, 0, &je);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
    dp_synth_env env = {&key, "s", 1};
    char err[256], id[24];
    dp_reject_reason why;

    /* single shard: the bundle */
    dp_synth *s;
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&s, name, cfg, &env, err, sizeof err), DP_OK);
    tk_sink a;
    tk_sink_init(&a);
    dp_release_sink sa = tk_sink_of(&a);
    for (int t = 1; t <= T; t++) {
        for (int i = 0; i < n; i++) {
            if (skipped(i, t))
                continue;
            snprintf(id, sizeof id, "ent/%d", i);
            tk_report(s, (uint64_t)t, id, value_of(i, t, cats), &why);
        }
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(s, &sa, err, sizeof err), DP_OK);
    }
    dp_synth_destroy(s);

    /* three ingest halves, one release half */
    const dp_synth_ops *ops = dp_synth_ops_find(name);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ops);
    dp_ingest_half *in[SHARDS];
    dp_release_half *rel;
    for (int k = 0; k < SHARDS; k++)
        CU_ASSERT_EQUAL_FATAL(ops->ingest_create(&in[k], cfg, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL_FATAL(ops->release_create(&rel, cfg, &env, err, sizeof err), DP_OK);
    tk_sink b;
    tk_sink_init(&b);
    dp_release_sink sb = tk_sink_of(&b);
    dp_stats part, merged;
    dp_stats_init(&part, 1);
    dp_stats_init(&merged, 1);
    int used[SHARDS] = {0};
    for (int t = 1; t <= T; t++) {
        /* reversed arrival order too: nothing may depend on it */
        for (int i = n - 1; i >= 0; i--) {
            if (skipped(i, t))
                continue;
            snprintf(id, sizeof id, "ent/%d", i);
            dp_update u = tk_update((uint64_t)t, id, strlen(id), value_of(i, t, cats));
            CU_ASSERT_EQUAL(ops->ingest_update(in[shard_of(id)], &u, &why), DP_OK);
            CU_ASSERT_EQUAL(why, DP_REJECT_NONE);
            used[shard_of(id)]++;
        }
        dp_stats_clear(&merged, (uint64_t)t);
        for (int k = 0; k < SHARDS; k++) {
            dp_stats_clear(&part, (uint64_t)t);
            CU_ASSERT_EQUAL_FATAL(ops->ingest_close(in[k], (uint64_t)t, &part), DP_OK);
            CU_ASSERT_EQUAL_FATAL(dp_stats_merge(&merged, &part), DP_OK);
        }
        CU_ASSERT_EQUAL_FATAL(ops->release_step(rel, (uint64_t)t, &merged, &sb, err, sizeof err), DP_OK);
    }
    for (int k = 0; k < SHARDS; k++) {
        CU_ASSERT(used[k] > 0);   /* every shard really holds entities */
        ops->ingest_destroy(in[k]);
    }
    ops->release_destroy(rel);
    CU_ASSERT(a.records > 0);
    CU_ASSERT_EQUAL(a.out.len, b.out.len);
    CU_ASSERT(a.out.len == b.out.len && memcmp(a.out.data, b.out.data, a.out.len) == 0);
    dp_stats_free(&part);
    dp_stats_free(&merged);
    tk_sink_free(&a);
    tk_sink_free(&b);
    json_decref(cfg);
}

static void test_window_c2(void) { check("window", "{\"horizon\":10,\"k\":3,\"rho\":1}", 2000, 10, 2); }
static void test_window_c3(void)
{
    check("window", "{\"horizon\":8,\"k\":2,\"categories\":3,\"rho\":1,\"neighbors\":\"add_remove\"}", 1500, 8, 3);
}
static void test_cumulative_tree(void) { check("cumulative", "{\"horizon\":10,\"rho\":1}", 2000, 10, 2); }

/* For every synthesizer whose ingest half shards (the registry, each from
 * its example config): the ingest-only close (dp_synth_close_ingest, what
 * an ingest instance runs) is refused as EXHAUSTED after exactly the step
 * the combined close is, and dp_synth_exhausted agrees at every step — the
 * public rule (release_last_step), never the release half's own state,
 * which an ingest instance does not have (docs/kafka.md §10). */
static void test_ingest_exhausts_with_combined(void)
{
    dp_key key;
    dptest_key(&key, 22);
    dp_synth_env env = {&key, "s", 1};
    char err[256];
    int n_sharding = 0;
    for (size_t i = 0; dp_synth_ops_at(i); i++) {
        const dp_synth_ops *ops = dp_synth_ops_at(i);
        if (!ops->shards_by_entity)
            continue;
        n_sharding++;
        json_t *cfg = json_loads(ops->example_config, 0, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
        dp_synth *all, *ing;
        CU_ASSERT_EQUAL_FATAL(dp_synth_create(&all, ops->name, cfg, &env, err, sizeof err), DP_OK);
        CU_ASSERT_EQUAL_FATAL(dp_synth_create(&ing, ops->name, cfg, &env, err, sizeof err), DP_OK);
        tk_sink k;
        tk_sink_init(&k);
        dp_release_sink sk = tk_sink_of(&k);
        dp_stats st;
        dp_stats_init(&st, 1);
        for (int t = 1; t <= 40; t++) {
            int a = dp_synth_close_step(all, &sk, err, sizeof err);
            int b = dp_synth_close_ingest(ing, &st, err, sizeof err);
            CU_ASSERT_EQUAL(a, b);
            CU_ASSERT_EQUAL(dp_synth_exhausted(all), dp_synth_exhausted(ing));
            if (a != b)
                fprintf(stderr, "%s: step %d combined %d, ingest-only %d\n", ops->name, t, a, b);
        }
        dp_stats_free(&st);
        tk_sink_free(&k);
        dp_synth_destroy(all);
        dp_synth_destroy(ing);
        json_decref(cfg);
    }
    CU_ASSERT_EQUAL(n_sharding, 5);
}

int main(void)
{
    static const dptest_case cases[] = {
        {"window c=2: 3 shards merged = 1 shard, byte for byte", test_window_c2},
        {"window c=3: 3 shards merged = 1 shard, byte for byte", test_window_c3},
        {"cumulative: 3 shards merged = 1 shard, byte for byte", test_cumulative_tree},
        {"every sharding synthesizer: the ingest-only close exhausts at the combined close's step",
         test_ingest_exhausts_with_combined},
        {NULL, NULL},
    };
    return dptest_run("synth shards", cases);
}
