/* test_shard_refusals.c — what the sharded seam refuses, offline
 * (synth.h: dp_synth_release_stats, dp_synth_snapshot_role /
 * dp_synth_restore_role; stream/stats_record.h: dp_stats_merger;
 * docs/kafka.md §10).  The runs that show the seam gives replay's bytes are
 * test_shard_seam.c; here:
 *   * statistics of a step already released or of a skipped step, an
 *     exhausted stream, an incomplete step, a synthesizer that does not
 *     shard — errors, with nothing released or spent;
 *   * a role snapshot given to the other role's restore (or a combined
 *     one), a truncated one, another stream's, and the same for the
 *     merger's state; a restored bundle doing the other role's work. */
#define _GNU_SOURCE   /* mkdtemp */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "connectors/jsonl/update_json.h"
#include "connectors/replay/replay_run.h"
#include "core/dp_error.h"
#include "dptest.h"
#include "stream/kafka_util.h"
#include "stream/shard_key.h"
#include "stream/stats_record.h"
#include "synth/common/step_gate.h"
#include "synth_testkit.h"

enum { SHARDS = 4, N = 400, MAXT = 16 };

static const char STREAM[] = "panel";

/* --- refusals ------------------------------------------------------------- */

static void test_refusals(void)
{
    dp_key key;
    dptest_key(&key, 34);
    json_t *cfg = json_loads("{\"horizon\": 5, \"k\": 2, \"rho\": 1}", 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
    dp_synth_env env = {&key, STREAM, sizeof STREAM - 1};
    char err[512], id[24];
    dp_synth *whole, *in, *rel;
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&whole, "window", cfg, &env, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&in, "window", cfg, &env, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&rel, "window", cfg, &env, err, sizeof err), DP_OK);
    tk_sink a, b;
    tk_sink_init(&a);
    tk_sink_init(&b);
    dp_release_sink sa = tk_sink_of(&a), sb = tk_sink_of(&b);
    dp_stats st[6];
    dp_buf before, after;
    dp_buf_init(&before);
    dp_buf_init(&after);
    dp_reject_reason why;
    for (int t = 1; t <= 5; t++) {
        dp_stats_init(&st[t], 1);
        for (int i = 0; i < 40; i++) {
            snprintf(id, sizeof id, "e%d", i);
            tk_report(whole, (uint64_t)t, id, (i * t) % 2, &why);
            tk_report(in, (uint64_t)t, id, (i * t) % 2, &why);
        }
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(whole, &sa, err, sizeof err), DP_OK);
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_ingest(in, &st[t], err, sizeof err), DP_OK);
    }
    for (int t = 1; t <= 5; t++) {
        if (t == 3) {
            /* a step already released, and a step skipped: refused, nothing released or spent */
            dp_buf_clear(&before);
            CU_ASSERT_EQUAL(dp_synth_release_state(rel, &before), DP_OK);
            size_t out = b.out.len;
            CU_ASSERT_EQUAL(dp_synth_release_stats(rel, &st[2], &sb, err, sizeof err), DP_ESTATE);
            CU_ASSERT_PTR_NOT_NULL(strstr(err, "statistics of step 2, but step 3 is the next to release (that step "
                                               "is already released)"));
            CU_ASSERT_EQUAL(dp_synth_release_stats(rel, &st[4], &sb, err, sizeof err), DP_ESTATE);
            CU_ASSERT_PTR_NOT_NULL(strstr(err, "statistics of step 4, but step 3 is the next to release (a step "
                                               "would be skipped)"));
            CU_ASSERT_EQUAL(b.out.len, out);
            dp_buf_clear(&after);
            CU_ASSERT_EQUAL(dp_synth_release_state(rel, &after), DP_OK);
            CU_ASSERT(before.len == after.len && memcmp(before.data, after.data, before.len) == 0);
        }
        CU_ASSERT_EQUAL_FATAL(dp_synth_release_stats(rel, &st[t], &sb, err, sizeof err), DP_OK);
    }
    /* the refusals changed nothing: the same bytes as the combined close */
    CU_ASSERT(a.out.len == b.out.len && memcmp(a.out.data, b.out.data, a.out.len) == 0);
    CU_ASSERT_EQUAL(dp_synth_release_stats(rel, &st[5], &sb, err, sizeof err), DP_EHORIZON);

    /* a step one shard has not sent is not complete, and cannot be taken */
    dp_stats_merger m;
    CU_ASSERT_EQUAL_FATAL(dp_stats_merger_init(&m, STREAM, sizeof STREAM - 1, 2, 0), DP_OK);
    dp_stats_record r = {.updates_topic = "t", .updates_topic_len = 1, .stream_id = STREAM,
                         .stream_id_len = sizeof STREAM - 1, .step = 1, .shard = 1, .shard_count = 2};
    CU_ASSERT_EQUAL(dp_stats_merger_add(&m, &r, &st[1], err, sizeof err), DP_OK);
    CU_ASSERT(!dp_stats_merger_complete(&m, 1));
    dp_stats merged;
    dp_stats_init(&merged, 1);
    CU_ASSERT_EQUAL(dp_stats_merger_take(&m, 1, &merged), DP_ESTATE);
    dp_stats_free(&merged);
    dp_stats_merger_free(&m);

    /* a synthesizer whose ingest half does not shard: its close is not split */
    dp_synth *hc;
    json_t *hcfg = json_loads(dp_synth_ops_find("hypercube")->example_config, 0, NULL);
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&hc, "hypercube", hcfg, &env, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_synth_close_ingest(hc, &st[1], err, sizeof err), DP_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "does not shard by entity"));
    CU_ASSERT_EQUAL(dp_synth_release_stats(hc, &st[1], &sb, err, sizeof err), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_synth_open_step(hc), 1);
    dp_synth_destroy(hc);
    json_decref(hcfg);

    for (int t = 1; t <= 5; t++)
        dp_stats_free(&st[t]);
    dp_buf_free(&before);
    dp_buf_free(&after);
    tk_sink_free(&a);
    tk_sink_free(&b);
    dp_synth_destroy(whole);
    dp_synth_destroy(in);
    dp_synth_destroy(rel);
    json_decref(cfg);
}

/* --- role snapshots: refused when mixed, cut or moved ---------------------- */

/* 30 entities report step t: value 1 for every third. */
static void report_panel(dp_synth *s, uint64_t t)
{
    char id[16];
    dp_reject_reason why;
    for (unsigned i = 0; i < 30; i++) {
        snprintf(id, sizeof id, "p%u", i);
        CU_ASSERT_EQUAL(tk_report(s, t, id, (i + t) % 3 == 0, &why), DP_OK);
        CU_ASSERT_EQUAL(why, DP_REJECT_NONE);
    }
}

static int restore_as(dp_synth_role role, const dp_synth_env *env, const json_t *cfg, const dp_buf *b, size_t len,
                      char *err, size_t errsz)
{
    dp_synth *s = NULL;
    int rc = dp_synth_restore_role(&s, role, "window", cfg, env, b->data, len, err, errsz);
    CU_ASSERT((rc == DP_OK) == (s != NULL));
    dp_synth_destroy(s);
    return rc;
}

static void test_role_refusals(void)
{
    dp_key key, other_key;
    dptest_key(&key, 36);
    dptest_key(&other_key, 37);
    json_t *cfg = json_loads("{\"horizon\": 5, \"k\": 2, \"rho\": 1}", 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
    dp_synth_env env = {&key, STREAM, sizeof STREAM - 1}, other = {&key, "panel2", 6},
                 rekeyed = {&other_key, STREAM, sizeof STREAM - 1};
    char err[512];
    dp_synth *in, *rel, *whole;
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&in, "window", cfg, &env, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&rel, "window", cfg, &env, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&whole, "window", cfg, &env, err, sizeof err), DP_OK);
    tk_sink a;
    tk_sink_init(&a);
    dp_release_sink sa = tk_sink_of(&a);
    dp_stats st[3];
    for (int t = 1; t <= 2; t++) {
        dp_stats_init(&st[t], 1);
        report_panel(in, (uint64_t)t);
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_ingest(in, &st[t], err, sizeof err), DP_OK);
    }
    CU_ASSERT_EQUAL_FATAL(dp_synth_release_stats(rel, &st[1], &sa, err, sizeof err), DP_OK);
    dp_stats_merger m;   /* step 1 released, step 2 pending from shard 0 of 2 */
    CU_ASSERT_EQUAL_FATAL(dp_stats_merger_init(&m, STREAM, sizeof STREAM - 1, 2, 1), DP_OK);
    dp_stats_record rec = {.stream_id = STREAM, .stream_id_len = sizeof STREAM - 1, .step = 2, .shard = 0,
                           .shard_count = 2};
    CU_ASSERT_EQUAL_FATAL(dp_stats_merger_add(&m, &rec, &st[2], err, sizeof err), DP_OK);

    dp_buf ing, rls, comb, mst;
    dp_buf_init(&ing);
    dp_buf_init(&rls);
    dp_buf_init(&comb);
    dp_buf_init(&mst);
    CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot_role(in, DP_SYNTH_ROLE_INGEST, &ing), DP_OK);
    CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot_role(rel, DP_SYNTH_ROLE_RELEASE, &rls), DP_OK);
    CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot(whole, &comb), DP_OK);
    CU_ASSERT_EQUAL_FATAL(dp_stats_merger_save(&m, &mst), DP_OK);
    CU_ASSERT_EQUAL(restore_as(DP_SYNTH_ROLE_INGEST, &env, cfg, &ing, ing.len, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(restore_as(DP_SYNTH_ROLE_RELEASE, &env, cfg, &rls, rls.len, err, sizeof err), DP_OK);

    /* a restore never mixes roles, and names what it was given */
    CU_ASSERT_EQUAL(restore_as(DP_SYNTH_ROLE_RELEASE, &env, cfg, &ing, ing.len, err, sizeof err), DP_ECORRUPT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "an ingest-role snapshot"));
    CU_ASSERT_EQUAL(restore_as(DP_SYNTH_ROLE_INGEST, &env, cfg, &rls, rls.len, err, sizeof err), DP_ECORRUPT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "a release-role snapshot"));
    CU_ASSERT_EQUAL(restore_as(DP_SYNTH_ROLE_INGEST, &env, cfg, &comb, comb.len, err, sizeof err), DP_ECORRUPT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "combined"));
    dp_synth *s = NULL;
    CU_ASSERT_NOT_EQUAL(dp_synth_restore(&s, "window", cfg, &env, ing.data, ing.len, err, sizeof err), DP_OK);
    CU_ASSERT_NOT_EQUAL(dp_synth_restore(&s, "window", cfg, &env, rls.data, rls.len, err, sizeof err), DP_OK);
    CU_ASSERT_PTR_NULL(s);
    /* truncated at every length */
    int cut = 0;
    for (size_t n = 0; n < ing.len; n++)
        cut += restore_as(DP_SYNTH_ROLE_INGEST, &env, cfg, &ing, n, err, sizeof err) == DP_OK;
    for (size_t n = 0; n < rls.len; n++)
        cut += restore_as(DP_SYNTH_ROLE_RELEASE, &env, cfg, &rls, n, err, sizeof err) == DP_OK;
    dp_stats_merger back;
    for (size_t n = 0; n < mst.len; n++)
        cut += dp_stats_merger_load(&back, STREAM, sizeof STREAM - 1, 2, 1, mst.data, n, err, sizeof err) == DP_OK;
    CU_ASSERT_EQUAL(cut, 0);
    /* another stream, another key */
    CU_ASSERT_EQUAL(restore_as(DP_SYNTH_ROLE_INGEST, &other, cfg, &ing, ing.len, err, sizeof err), DP_ECORRUPT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "of stream 'panel'"));
    CU_ASSERT_EQUAL(restore_as(DP_SYNTH_ROLE_RELEASE, &other, cfg, &rls, rls.len, err, sizeof err), DP_ECORRUPT);
    CU_ASSERT_EQUAL(restore_as(DP_SYNTH_ROLE_RELEASE, &rekeyed, cfg, &rls, rls.len, err, sizeof err), DP_EKEY);
    /* the merger's state: another stream, shard count or released step */
    CU_ASSERT_EQUAL(dp_stats_merger_load(&back, "panel2", 6, 2, 1, mst.data, mst.len, err, sizeof err), DP_ECORRUPT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "of another stream"));
    CU_ASSERT_EQUAL(dp_stats_merger_load(&back, STREAM, sizeof STREAM - 1, 3, 1, mst.data, mst.len, err, sizeof err),
                    DP_ECORRUPT);
    CU_ASSERT_EQUAL(dp_stats_merger_load(&back, STREAM, sizeof STREAM - 1, 2, 0, mst.data, mst.len, err, sizeof err),
                    DP_ECORRUPT);
    CU_ASSERT_EQUAL(dp_stats_merger_load(&back, STREAM, sizeof STREAM - 1, 2, 1, ing.data, ing.len, err, sizeof err),
                    DP_ECORRUPT);
    CU_ASSERT_EQUAL_FATAL(dp_stats_merger_load(&back, STREAM, sizeof STREAM - 1, 2, 1, mst.data, mst.len, err,
                                               sizeof err), DP_OK);
    CU_ASSERT(back.n_pending == 1 && !dp_stats_merger_complete(&back, 2));
    rec.shard = 0;   /* the pending shard is in: its repeat is refused */
    CU_ASSERT_EQUAL(dp_stats_merger_add(&back, &rec, &st[2], err, sizeof err), DP_ECORRUPT);
    dp_stats_merger_free(&back);
    /* the merger's state is a function of what it holds, not of the order it came in */
    dp_stats_merger ma, mb;
    dp_buf sa_, sb_;
    dp_buf_init(&sa_);
    dp_buf_init(&sb_);
    dp_stats_record r1 = {.stream_id = STREAM, .stream_id_len = sizeof STREAM - 1, .step = 1, .shard = 1,
                          .shard_count = 2}, r2 = r1;
    r2.step = 2;
    r2.shard = 0;
    CU_ASSERT_EQUAL_FATAL(dp_stats_merger_init(&ma, STREAM, sizeof STREAM - 1, 2, 0), DP_OK);
    CU_ASSERT_EQUAL_FATAL(dp_stats_merger_init(&mb, STREAM, sizeof STREAM - 1, 2, 0), DP_OK);
    CU_ASSERT_EQUAL(dp_stats_merger_add(&ma, &r1, &st[1], err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_stats_merger_add(&ma, &r2, &st[2], err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_stats_merger_add(&mb, &r2, &st[2], err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_stats_merger_add(&mb, &r1, &st[1], err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_stats_merger_save(&ma, &sa_), DP_OK);
    CU_ASSERT_EQUAL(dp_stats_merger_save(&mb, &sb_), DP_OK);
    CU_ASSERT(sa_.len == sb_.len && memcmp(sa_.data, sb_.data, sa_.len) == 0);
    dp_buf_free(&sa_);
    dp_buf_free(&sb_);
    dp_stats_merger_free(&ma);
    dp_stats_merger_free(&mb);

    /* a restored bundle does its role's work only */
    dp_synth *ri, *rr;
    CU_ASSERT_EQUAL_FATAL(dp_synth_restore_role(&ri, DP_SYNTH_ROLE_INGEST, "window", cfg, &env, ing.data, ing.len,
                                                err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL_FATAL(dp_synth_restore_role(&rr, DP_SYNTH_ROLE_RELEASE, "window", cfg, &env, rls.data, rls.len,
                                                err, sizeof err), DP_OK);
    dp_buf x;
    dp_buf_init(&x);
    size_t before = a.records;
    CU_ASSERT_EQUAL(dp_synth_release_stats(ri, &st[2], &sa, err, sizeof err), DP_ESTATE);
    CU_ASSERT_EQUAL(dp_synth_close_step(ri, &sa, err, sizeof err), DP_ESTATE);
    CU_ASSERT_EQUAL(dp_synth_close_step(rr, &sa, err, sizeof err), DP_ESTATE);
    CU_ASSERT_EQUAL(dp_synth_close_ingest(rr, &st[2], err, sizeof err), DP_ESTATE);
    CU_ASSERT_EQUAL(a.records, before);
    CU_ASSERT_EQUAL(dp_synth_snapshot(ri, &x), DP_ESTATE);
    CU_ASSERT_EQUAL(dp_synth_snapshot(rr, &x), DP_ESTATE);
    CU_ASSERT_EQUAL(dp_synth_snapshot_role(ri, DP_SYNTH_ROLE_RELEASE, &x), DP_ESTATE);
    CU_ASSERT_EQUAL(dp_synth_snapshot_role(rr, DP_SYNTH_ROLE_INGEST, &x), DP_ESTATE);
    /* …and that work resumes where it stopped */
    CU_ASSERT_EQUAL(dp_synth_release_stats(rr, &st[2], &sa, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(dp_synth_open_step(ri), 3);

    dp_buf_free(&x);
    dp_buf_free(&ing);
    dp_buf_free(&rls);
    dp_buf_free(&comb);
    dp_buf_free(&mst);
    dp_stats_merger_free(&m);
    for (int t = 1; t <= 2; t++)
        dp_stats_free(&st[t]);
    tk_sink_free(&a);
    dp_synth_destroy(ri);
    dp_synth_destroy(rr);
    dp_synth_destroy(in);
    dp_synth_destroy(rel);
    dp_synth_destroy(whole);
    json_decref(cfg);
}

static const dptest_case CASES[] = {
    {"refused, nothing released or spent: a released step, a skipped step, an exhausted stream, an incomplete "
     "step, a synthesizer that does not shard", test_refusals},
    {"role snapshots refused: the other role's or a combined one, a truncated one, another stream's (and the "
     "merger's state alike); a restored bundle refuses the other role's work", test_role_refusals},
    {NULL, NULL},
};

int main(void) { return dptest_run("shard refusals", CASES); }
