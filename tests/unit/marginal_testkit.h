/* marginal_testkit.h — `marginal`'s two halves driven directly through
 * their ops (white-box tests that read the release half's state:
 * test_marginal_estimate.c, test_marginal_forest.c).  Owns nothing; calls
 * the synth ops, dp_stats and synth_testkit.h's sink.
 *
 *   mk_open   make the ingest and release halves of a configuration
 *   mk_step   one step of `rows` inserts (rows make_row(next++), entities
 *             "r<i>"), plus `extra` inserts of make_row(1000000 + t) by
 *             entity "extra" — a neighbour's row — then close and release
 *   mk_restore  save both halves, destroy them, make them again and load
 *             (the sink and the row counter carry on)
 *   mk_close  destroy both halves */
#ifndef DP_TEST_MARGINAL_TESTKIT_H
#define DP_TEST_MARGINAL_TESTKIT_H

#include "synth_testkit.h"

#include "synth/common/stats.h"

typedef void (*mk_row_fn)(uint64_t i, int32_t *row);

typedef struct mk_run {
    const dp_synth_ops *ops;
    dp_ingest_half     *in;
    dp_release_half    *rel;
    tk_sink             sink;
    uint64_t            next;
    uint32_t            d;
    mk_row_fn           make_row;
} mk_run;

static inline void mk_open(mk_run *s, const json_t *j, const dp_key *key, uint32_t d, mk_row_fn make_row)
{
    char err[256];
    memset(s, 0, sizeof *s);
    s->d = d;
    s->make_row = make_row;
    s->ops = dp_synth_ops_find("marginal");
    CU_ASSERT_PTR_NOT_NULL_FATAL(s->ops);
    dp_synth_env env = {key, "m/1", 3};
    CU_ASSERT_EQUAL_FATAL(s->ops->ingest_create(&s->in, j, err, sizeof err), DP_OK);
    int rc = s->ops->release_create(&s->rel, j, &env, err, sizeof err);
    if (rc != DP_OK)
        printf("\n    %s", err);
    CU_ASSERT_EQUAL_FATAL(rc, DP_OK);
    tk_sink_init(&s->sink);
}

static inline void mk_step(mk_run *s, uint64_t t, int rows, int extra)
{
    char id[24], err[256];
    int32_t r[64];
    for (int i = 0; i < rows + extra; i++) {
        snprintf(id, sizeof id, "r%llu", (unsigned long long)s->next);
        s->make_row(i < rows ? s->next++ : 1000000 + t, r);
        dp_update u = {.stream_id = "m/1", .stream_id_len = 3, .step = t, .kind = DP_UPDATE_INSERT,
                       .entity_id = id, .entity_id_len = strlen(id),
                       .payload = {.kind = DP_PAYLOAD_ROW, .row = r, .row_len = s->d}};
        if (i >= rows)
            u.entity_id = "extra", u.entity_id_len = 5;
        dp_reject_reason why;
        CU_ASSERT_EQUAL(s->ops->ingest_update(s->in, &u, &why), DP_OK);
    }
    dp_stats st;
    dp_stats_init(&st, t);
    CU_ASSERT_EQUAL_FATAL(s->ops->ingest_close(s->in, t, &st), DP_OK);
    dp_release_sink rs = tk_sink_of(&s->sink);
    int rc = s->ops->release_step(s->rel, t, &st, &rs, err, sizeof err);
    if (rc != DP_OK)
        printf("\n    step %llu: %s", (unsigned long long)t, err);
    CU_ASSERT_EQUAL_FATAL(rc, DP_OK);
    dp_stats_free(&st);
}

static inline void mk_restore(mk_run *s, const json_t *j, const dp_key *key)
{
    dp_buf bi, br;
    dp_buf_init(&bi);
    dp_buf_init(&br);
    CU_ASSERT_EQUAL_FATAL(s->ops->ingest_save(s->in, &bi), DP_OK);
    CU_ASSERT_EQUAL_FATAL(s->ops->release_save(s->rel, &br), DP_OK);
    s->ops->ingest_destroy(s->in);
    s->ops->release_destroy(s->rel);
    char err[256];
    dp_synth_env env = {key, "m/1", 3};
    CU_ASSERT_EQUAL_FATAL(s->ops->ingest_create(&s->in, j, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL_FATAL(s->ops->release_create(&s->rel, j, &env, err, sizeof err), DP_OK);
    dp_reader ri, rr;
    dp_reader_init(&ri, bi.data, bi.len);
    dp_reader_init(&rr, br.data, br.len);
    CU_ASSERT_EQUAL_FATAL(s->ops->ingest_load(s->in, &ri), DP_OK);
    CU_ASSERT_EQUAL_FATAL(s->ops->release_load(s->rel, &rr), DP_OK);
    dp_buf_free(&bi);
    dp_buf_free(&br);
}

static inline void mk_close(mk_run *s)
{
    s->ops->ingest_destroy(s->in);
    s->ops->release_destroy(s->rel);
    tk_sink_free(&s->sink);
}

#endif
