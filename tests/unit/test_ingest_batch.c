/* test_ingest_batch.c — dp_synth_ingest_batch is exactly n calls of
 * dp_synth_ingest (synth.h): the same reject reason for every update, the
 * same state (byte-identical snapshots after every step's ingest) and the
 * same releases (byte-identical sink output), for `window` and
 * `cumulative`, with batch sizes 1, 7 and 256.
 *
 * The update sequences are built to hit every path of the batched ingest
 * (longitudinal_ingest.c, dp_lingest_offer_batch): shuffled arrival order;
 * at step 1 a roster that grows inside a batch, across several table
 * rebuilds, with duplicates of an id inserted a few updates earlier in the
 * same batch; at later steps duplicates, unknown ids, ids that share a
 * prefix with rostered ones, ids of every length 0..23; plus wrong steps
 * (late / future), wrong update and payload kinds, missing ids,
 * out-of-domain values, a restore mid-stream, and updates after the
 * horizon (exhausted).  Every reason is asserted to occur, so the
 * comparison is not vacuous.  Sequences come from a keyed DRBG (fixed test
 * key), so the test is deterministic. */
#include "dptest.h"
#include "synth_testkit.h"

enum { N_ENT = 3000, N_UNKNOWN = 200, MAX_UPDATES = 8 * N_ENT };

typedef struct seqgen {
    dp_drbg g;
    char    ids[N_ENT][24];
    char    unknown[N_UNKNOWN][24];
    size_t  id_len[N_ENT], unknown_len[N_UNKNOWN];
    dp_update u[MAX_UPDATES];
    size_t  n;
} seqgen;

static seqgen G;

static void gen_ids(void)
{
    for (int i = 0; i < N_ENT; i++) {
        /* Lengths 0..23: the hash and the inline id compare have separate
         * paths for 0, 1-3, 4-7, 8 and > 8 bytes. */
        size_t len = (size_t)(i % 24);
        char buf[48];
        snprintf(buf, sizeof buf, "%d/entity-%05d-padding-xyz", i, i);
        memcpy(G.ids[i], buf, len);
        G.id_len[i] = len;
    }
    /* Short prefixes of "<i>/..." would collide across i (every length-0
     * id is ""): beyond the first 24, lengths >= 6 keep "<i>/" whole, so
     * all ids are distinct. */
    for (int i = 0; i < N_ENT; i++) {
        if (G.id_len[i] >= 6 || i < 24)
            continue;
        G.id_len[i] = 6 + (size_t)(i % 18);
        char buf[48];
        snprintf(buf, sizeof buf, "%d/entity-%05d-padding-xyz", i, i);
        memcpy(G.ids[i], buf, G.id_len[i]);
    }
    for (int j = 0; j < N_UNKNOWN; j++) {
        /* Same prefix as a rostered id, one byte more or different. */
        int i = (j * 37) % N_ENT;
        size_t len = G.id_len[i] + (size_t)(j % 2);
        memcpy(G.unknown[j], G.ids[i], G.id_len[i]);
        if (len > G.id_len[i])
            G.unknown[j][len - 1] = '!';
        else if (len > 0)
            G.unknown[j][len - 1] ^= 0x20;
        else
            G.unknown[j][len++] = '?';
        G.unknown_len[j] = len;
    }
}

static void push(dp_update u)
{
    if (G.n < MAX_UPDATES)
        G.u[G.n++] = u;
}

/* The updates offered in step t (the open step), in a shuffled order. */
static void gen_step(uint64_t t, int cats)
{
    G.n = 0;
    for (int i = 0; i < N_ENT; i++) {
        /* ~10 % of the individuals miss a step (imputed); at step 1 they
         * are simply not in the roster. */
        if (dp_drbg_uniform(&G.g, 10) == 0)
            continue;
        push(tk_update(t, G.ids[i], G.id_len[i], (int64_t)dp_drbg_uniform(&G.g, (uint64_t)cats)));
    }
    size_t good = G.n;
    for (int k = 0; k < 400; k++) {
        dp_update u = tk_update(t, G.unknown[k % N_UNKNOWN], G.unknown_len[k % N_UNKNOWN], 0);
        switch (dp_drbg_uniform(&G.g, 8)) {
        case 0: u.step = t + 1; break;                                   /* FUTURE_STEP */
        case 1: u.step = t - 1; break;                                   /* LATE (or 0 at t = 1) */
        case 2: u.kind = DP_UPDATE_INSERT; break;                        /* WRONG_KIND */
        case 3: u.payload.kind = DP_PAYLOAD_ROW; break;                  /* WRONG_KIND */
        case 4: u.entity_id = NULL; u.entity_id_len = 0; break;          /* MALFORMED */
        case 5: u.payload.category = dp_drbg_uniform(&G.g, 2) ? cats : -1; break;   /* OUT_OF_DOMAIN */
        default: break;                                                  /* unknown id (new at step 1) */
        }
        push(u);
    }
    /* Later duplicates of reported ids, with any value. */
    for (int k = 0; k < 300 && good; k++) {
        dp_update u = G.u[dp_drbg_uniform(&G.g, good)];
        u.payload.category = (int64_t)dp_drbg_uniform(&G.g, (uint64_t)cats);
        push(u);
    }
    /* Fisher-Yates */
    for (size_t i = G.n; i > 1; i--) {
        size_t j = dp_drbg_uniform(&G.g, i);
        dp_update tmp = G.u[i - 1];
        G.u[i - 1] = G.u[j];
        G.u[j] = tmp;
    }
    /* Duplicates a few positions after the original, so that within one
     * batch (and, at step 1, within the prefetch window) an id is
     * inserted and then looked up again. */
    size_t n0 = G.n;
    for (int k = 0; k < 300 && G.n < MAX_UPDATES; k++) {
        size_t at = dp_drbg_uniform(&G.g, n0 - 6);
        size_t gap = 1 + dp_drbg_uniform(&G.g, 5);
        memmove(&G.u[at + gap + 1], &G.u[at + gap], (G.n - at - gap) * sizeof G.u[0]);
        G.u[at + gap] = G.u[at];
        G.n++;
    }
}

static int snapshots_equal(const dp_synth *a, const dp_synth *b)
{
    dp_buf x, y;
    dp_buf_init(&x);
    dp_buf_init(&y);
    int ok = dp_synth_snapshot(a, &x) == DP_OK && dp_synth_snapshot(b, &y) == DP_OK && x.len == y.len &&
             memcmp(x.data, y.data, x.len) == 0;
    dp_buf_free(&x);
    dp_buf_free(&y);
    return ok;
}

static void check(const char *name, const char *cfg_text, int cats, int T, size_t batch, uint8_t variant)
{
    dp_key key;
    dptest_key(&key, 40);
    json_error_t je;
    json_t *cfg = json_loads(cfg_text, 0, &je);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
    dp_synth_env env = {&key, "s", 1};
    char err[256];
    dp_synth *one, *bat;
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&one, name, cfg, &env, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&bat, name, cfg, &env, err, sizeof err), DP_OK);
    tk_sink sa, sb;
    tk_sink_init(&sa);
    tk_sink_init(&sb);
    dp_release_sink ka = tk_sink_of(&sa), kb = tk_sink_of(&sb);
    dp_key seqkey;
    dptest_key(&seqkey, variant);
    dp_drbg_init(&G.g, &seqkey, name, strlen(name), batch, "test_ingest_batch/sequence");

    static dp_reject_reason ra[MAX_UPDATES], rb[MAX_UPDATES];
    uint64_t seen[DP_REJECT_REASON_COUNT] = {0};
    size_t mismatches = 0;
    /* T + 1: the last round is offered after the horizon (exhausted). */
    for (int t = 1; t <= T + 1; t++) {
        gen_step((uint64_t)t, cats);
        for (size_t i = 0; i < G.n; i++)
            CU_ASSERT_EQUAL_FATAL(dp_synth_ingest(one, &G.u[i], &ra[i]), DP_OK);
        for (size_t i = 0; i < G.n; i += batch) {
            size_t m = G.n - i < batch ? G.n - i : batch;
            for (size_t j = 0; j < m; j++)
                rb[i + j] = DP_REJECT_REASON_COUNT;   /* must be overwritten */
            CU_ASSERT_EQUAL_FATAL(dp_synth_ingest_batch(bat, &G.u[i], m, &rb[i]), DP_OK);
        }
        for (size_t i = 0; i < G.n; i++) {
            mismatches += ra[i] != rb[i];
            if ((unsigned)ra[i] < DP_REJECT_REASON_COUNT)
                seen[ra[i]]++;
        }
        CU_ASSERT(snapshots_equal(one, bat));
        if (t > T)
            break;
        if (t == 3) {
            /* Continue the batched stream from a restored copy: the table is
             * rebuilt from the roster, prefetch guesses come from the new one. */
            dp_buf snap;
            dp_buf_init(&snap);
            CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot(bat, &snap), DP_OK);
            dp_synth *r;
            CU_ASSERT_EQUAL_FATAL(dp_synth_restore(&r, name, cfg, &env, snap.data, snap.len, err, sizeof err),
                                  DP_OK);
            dp_synth_destroy(bat);
            bat = r;
            dp_buf_free(&snap);
        }
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(one, &ka, err, sizeof err), DP_OK);
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(bat, &kb, err, sizeof err), DP_OK);
    }
    CU_ASSERT_EQUAL(mismatches, 0);
    /* Every reason the longitudinal ingest can give occurred. */
    const dp_reject_reason expect[] = {DP_REJECT_NONE, DP_REJECT_MALFORMED, DP_REJECT_WRONG_KIND,
                                       DP_REJECT_UNKNOWN_ENTITY, DP_REJECT_DUPLICATE_REPORT,
                                       DP_REJECT_OUT_OF_DOMAIN, DP_REJECT_LATE, DP_REJECT_FUTURE_STEP,
                                       DP_REJECT_EXHAUSTED};
    for (size_t k = 0; k < sizeof expect / sizeof expect[0]; k++) {
        if (seen[expect[k]] == 0)
            fprintf(stderr, "%s batch %zu: reason %s never occurred\n", name, batch,
                    dp_reject_reason_name(expect[k]));
        CU_ASSERT(seen[expect[k]] > 0);
    }
    CU_ASSERT(sa.records > 0);
    CU_ASSERT(sa.manifests > 0);
    CU_ASSERT(sa.out.len == sb.out.len && memcmp(sa.out.data, sb.out.data, sa.out.len) == 0);
    tk_sink_free(&sa);
    tk_sink_free(&sb);
    dp_synth_destroy(one);
    dp_synth_destroy(bat);
    json_decref(cfg);
}

static const char *const WINDOW_CFG = "{\"horizon\":5,\"k\":2,\"categories\":3,\"rho\":1}";
static const char *const CUMUL_CFG = "{\"horizon\":5,\"rho\":1}";

static void test_window_b1(void) { check("window", WINDOW_CFG, 3, 5, 1, 1); }
static void test_window_b7(void) { check("window", WINDOW_CFG, 3, 5, 7, 2); }
static void test_window_b256(void) { check("window", WINDOW_CFG, 3, 5, 256, 3); }
static void test_cumul_b1(void) { check("cumulative", CUMUL_CFG, 2, 5, 1, 4); }
static void test_cumul_b7(void) { check("cumulative", CUMUL_CFG, 2, 5, 7, 5); }
static void test_cumul_b256(void) { check("cumulative", CUMUL_CFG, 2, 5, 256, 6); }

/* A batch of n = 0 is a no-op, and an exhausted stream refuses a whole
 * batch without touching the synthesizer. */
static void test_edges(void)
{
    dp_key key;
    dptest_key(&key, 41);
    json_error_t je;
    json_t *cfg = json_loads("{\"horizon\":1,\"rho\":1}", 0, &je);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
    dp_synth_env env = {&key, "s", 1};
    char err[256];
    dp_synth *s;
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&s, "cumulative", cfg, &env, err, sizeof err), DP_OK);
    dp_reject_reason r[3];
    CU_ASSERT_EQUAL(dp_synth_ingest_batch(s, NULL, 0, r), DP_OK);
    dp_update u[3] = {tk_update(1, "a", 1, 1), tk_update(1, "a", 1, 0), tk_update(1, "b", 1, 0)};
    CU_ASSERT_EQUAL(dp_synth_ingest_batch(s, u, 3, r), DP_OK);
    CU_ASSERT_EQUAL(r[0], DP_REJECT_NONE);
    CU_ASSERT_EQUAL(r[1], DP_REJECT_DUPLICATE_REPORT);
    CU_ASSERT_EQUAL(r[2], DP_REJECT_NONE);
    tk_sink k;
    tk_sink_init(&k);
    dp_release_sink ks = tk_sink_of(&k);
    CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(s, &ks, err, sizeof err), DP_OK);
    CU_ASSERT(dp_synth_exhausted(s));
    u[0].step = u[1].step = u[2].step = 2;
    CU_ASSERT_EQUAL(dp_synth_ingest_batch(s, u, 3, r), DP_OK);
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(r[i], DP_REJECT_EXHAUSTED);
    tk_sink_free(&k);
    dp_synth_destroy(s);
    json_decref(cfg);
}

int main(void)
{
    gen_ids();
    static const dptest_case cases[] = {
        {"window: batch 1 == single updates", test_window_b1},
        {"window: batch 7 == single updates", test_window_b7},
        {"window: batch 256 == single updates", test_window_b256},
        {"cumulative: batch 1 == single updates", test_cumul_b1},
        {"cumulative: batch 7 == single updates", test_cumul_b7},
        {"cumulative: batch 256 == single updates", test_cumul_b256},
        {"empty batch; exhausted stream", test_edges},
        {NULL, NULL},
    };
    return dptest_run("ingest batch", cases);
}
