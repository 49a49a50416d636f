/* test_shard_seam.c — the ingest/release seam of a sharded stream, offline
 * (synth.h: dp_synth_close_ingest, dp_synth_release_stats; step_gate.h:
 * dp_gate_close_ingest; docs/kafka.md §10):
 *   * a window and a cumulative panel run to exhaustion, split over 4
 *     shards by the real sharded key and partitioner: each shard's gate
 *     closes only its ingest half, each shard's statistics record (MAC'd or
 *     sealed) goes through the codec into dp_stats_merger in an order that
 *     runs the shards steps apart, and every merged step is released from
 *     the statistics.  The releases and budget events are byte for byte
 *     those of `dpstream replay` (dp_replay_run) of the same input, the
 *     release state after every step is the combined close's (the end of
 *     its snapshot), and every update's verdict — used, held, rejected and
 *     why, EXHAUSTED included — is the combined gate's;
 *   * exhaustion: at every step of a run to exhaustion the ingest side's
 *     verdict (the public rule alone) equals the release side's (its
 *     ledger), for several plans;
 *   * restarts (per-role snapshots): the same runs with every ingest shard
 *     snapshotted (dp_synth_snapshot_role, ingest), destroyed and restored
 *     at every one of its step boundaries, and the release bundle with its
 *     merger (dp_synth_snapshot_role, release; dp_stats_merger_save) after
 *     every record it takes in — mid-step, with steps pending — give the
 *     same bytes: releases and budget events = replay, release state =
 *     the combined close's; each restored state re-saves byte for byte;
 *   * the refusals (a released or skipped step, a role snapshot mixed,
 *     cut or moved) are test_shard_refusals.c. */
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

/* Restart every role at every step boundary (test_*_restarts). */
static int restarts;

/* --- the input: one log, as replay reads it ------------------------------- */

typedef struct msg {
    dp_update u;
    char      id[24];
} msg;

typedef struct input {
    msg   *m;
    size_t n, cap;
} input;

static int skipped(int i, int t) { return t > 1 && (i * 17 + t * 5) % 11 == 0; }
static int early(int i, int t) { return t > 1 && i % 23 == 5; }   /* reported before the previous step closes */
static int value_of(int i, int t, int cats) { return (i * 13 + t * t * (i % 7)) % cats; }

static void put(input *in, uint64_t step, dp_update_kind kind, const char *id, int64_t value)
{
    CU_ASSERT_FATAL(in->n < in->cap);
    msg *m = &in->m[in->n++];
    memset(m, 0, sizeof *m);
    m->u.stream_id = STREAM;
    m->u.stream_id_len = sizeof STREAM - 1;
    m->u.step = step;
    m->u.kind = kind;
    if (id) {
        snprintf(m->id, sizeof m->id, "%s", id);
        m->u.entity_id = m->id;   /* the array never moves: allocated once */
        m->u.entity_id_len = strlen(m->id);
    }
    if (kind == DP_UPDATE_REPORT)
        m->u.payload = (dp_payload){.kind = DP_PAYLOAD_CATEGORY, .category = value};
}

/* Steps 1..T+1 (T+1 after the horizon: all EXHAUSTED): each entity's
 * report (some skip a step, some come early, held for the next step), a
 * duplicate, an unknown entity, a value out of the domain, the marker and
 * now and then a repeated marker; then a marker past the end. */
static void make_input(input *in, int T, int cats)
{
    in->cap = (size_t)(N + 16) * (size_t)(T + 2);
    in->m = calloc(in->cap, sizeof *in->m);
    CU_ASSERT_PTR_NOT_NULL_FATAL(in->m);
    char id[24];
    for (int t = 1; t <= T + 1; t++) {
        int last = -1;
        for (int i = 0; i < N; i++) {
            if (skipped(i, t) || early(i, t))
                continue;
            snprintf(id, sizeof id, "ent/%d", i);
            put(in, (uint64_t)t, DP_UPDATE_REPORT, id, value_of(i, t, cats));
            last = i;
        }
        if (t > 1) {
            snprintf(id, sizeof id, "ent/%d", last);
            put(in, (uint64_t)t, DP_UPDATE_REPORT, id, value_of(last, t, cats));   /* DUPLICATE_REPORT */
            snprintf(id, sizeof id, "new/%d", t);
            put(in, (uint64_t)t, DP_UPDATE_REPORT, id, 0);                           /* UNKNOWN_ENTITY */
            snprintf(id, sizeof id, "ent/%d", last - 1);
            put(in, (uint64_t)t, DP_UPDATE_REPORT, id, cats);                        /* OUT_OF_DOMAIN or DUPLICATE */
        }
        for (int i = 0; i < N; i++)
            if (early(i, t + 1) && !skipped(i, t + 1)) {
                snprintf(id, sizeof id, "ent/%d", i);
                put(in, (uint64_t)(t + 1), DP_UPDATE_REPORT, id, value_of(i, t + 1, cats));
            }
        put(in, (uint64_t)t, DP_UPDATE_CLOSE_STEP, NULL, 0);
        if (t % 2)
            put(in, (uint64_t)t, DP_UPDATE_CLOSE_STEP, NULL, 0);   /* IGNORED */
    }
    put(in, (uint64_t)T + 2, DP_UPDATE_CLOSE_STEP, NULL, 0);       /* EXHAUSTED */
}

/* The shard of a data update: the partition of its sharded key. */
static uint32_t shard_of(const dp_update *u)
{
    dp_buf key;
    dp_buf_init(&key);
    CU_ASSERT_EQUAL_FATAL(dp_update_key(u, 1, &key), DP_OK);
    uint32_t k = (uint32_t)dp_kafka_key_partition("consistent_random", key.data, key.len, SHARDS);
    dp_buf_free(&key);
    return k;
}

/* --- outputs: replay's JSON lines ----------------------------------------- */

typedef struct jsink {
    dp_jbuf  rel, bud;
    uint64_t step;
} jsink;

static int js_record(void *ctx, const dp_synth_record *r)
{
    jsink *j = ctx;
    return dp_update_json_format_record(&j->rel, STREAM, sizeof STREAM - 1, j->step, r) ? DP_ENOMEM : 0;
}

static int js_manifest(void *ctx, const dp_release_manifest *m)
{
    return dp_update_json_format_manifest(&((jsink *)ctx)->rel, m) ? DP_ENOMEM : 0;
}

static int js_budget(void *ctx, const dp_budget_event *e)
{
    return dp_update_json_format_budget(&((jsink *)ctx)->bud, e) ? DP_ENOMEM : 0;
}

static dp_release_sink js_of(jsink *j)
{
    dp_jbuf_init(&j->rel);
    dp_jbuf_init(&j->bud);
    return (dp_release_sink){.ctx = j, .record = js_record, .manifest = js_manifest, .budget = js_budget};
}

static void js_free(jsink *j)
{
    dp_jbuf_free(&j->rel);
    dp_jbuf_free(&j->bud);
}

static char *slurp(const char *dir, const char *name, size_t *len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)n + 1);
    CU_ASSERT_FATAL(p && fread(p, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return p;
}

static void same_bytes(const char *what, const char *a, size_t na, const char *b, size_t nb)
{
    int same = na == nb && memcmp(a, b, na) == 0;
    if (!same)
        fprintf(stderr, "  %s differ (%zu vs %zu bytes)\n", what, na, nb);
    CU_ASSERT(same);
}

/* dpstream replay of the input under a sharded route: releases.jsonl and
 * budget.jsonl into *rel / *bud, the summary into *sum. */
static void replay_of(const input *in, const char *name, const char *cfg_text, const dp_key *key, char **rel,
                      size_t *rel_len, char **bud, size_t *bud_len, dp_replay_summary *sum)
{
    char dir[] = "/tmp/dp_shard_seam_XXXXXX", path[512], conf[1024], err[512];
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/input.jsonl", dir);
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    dp_jbuf line;
    dp_jbuf_init(&line);
    for (size_t i = 0; i < in->n; i++)
        CU_ASSERT_EQUAL_FATAL(dp_update_json_format(&line, &in->m[i].u), 0);
    CU_ASSERT_EQUAL_FATAL(fwrite(line.data, 1, line.len, f), line.len);
    fclose(f);
    dp_jbuf_free(&line);
    snprintf(conf, sizeof conf, "{\"streams\": [{\"match\": \"%s\", \"synthesizer\": \"%s\", \"sharded\": true, "
             "\"config\": %s}]}", STREAM, name, cfg_text);
    dp_stream_config *cfg;
    CU_ASSERT_EQUAL_FATAL(dp_stream_config_parse(&cfg, conf, strlen(conf), err, sizeof err), DP_OK);
    char out[600];
    snprintf(out, sizeof out, "%s/out", dir);
    dp_replay_options o = {.cfg = cfg, .key = key, .input_path = path, .out_dir = out};
    int rc = dp_replay_run(&o, sum, err, sizeof err);
    if (rc != DP_OK)
        fprintf(stderr, "replay: %s\n", err);
    CU_ASSERT_EQUAL_FATAL(rc, DP_OK);
    dp_stream_config_free(cfg);
    *rel = slurp(out, "releases.jsonl", rel_len);
    *bud = slurp(out, "budget.jsonl", bud_len);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CU_ASSERT_EQUAL(system(cmd), 0);
}

/* --- verdicts ------------------------------------------------------------- */

#define HELD_BIT 0x100   /* a verdict given when the held update's step opened */

typedef struct verdicts {
    int *v;   /* per message: action << 4 | reason, HELD_BIT when decided at a close */
} verdicts;

static int held_applied(void *ctx, const dp_update *u, uint64_t origin, const uint8_t *raw, size_t raw_len,
                        dp_reject_reason reason)
{
    (void)u, (void)raw, (void)raw_len;
    ((verdicts *)ctx)->v[origin] = HELD_BIT | (int)reason;
    return DP_OK;
}

static void record_verdict(verdicts *vs, size_t i, const dp_gate_verdict *v)
{
    if (v->action != DP_GATE_BUFFERED || !(vs->v[i] & HELD_BIT))
        vs->v[i] = (int)v->action << 4 | (int)(v->action == DP_GATE_REJECTED ? v->reason : 0);
}

/* --- the run -------------------------------------------------------------- */

typedef struct reference {
    verdicts vs;
    dp_buf   state[MAXT + 2];   /* the release state after each step */
    int      exhausted[MAXT + 2];
    int      steps;
    jsink    js;
} reference;

/* Today's combined close through the gate, as replay and `run` do it. */
static void run_combined(const input *in, const char *name, const json_t *cfg, const dp_synth_env *env,
                         reference *ref)
{
    char err[512];
    dp_synth *s;
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&s, name, cfg, env, err, sizeof err), DP_OK);
    dp_step_gate g;
    dp_gate_init(&g, s, NULL);
    dp_release_sink sink = js_of(&ref->js);
    dp_buf snap;
    dp_buf_init(&snap);
    for (size_t i = 0; i < in->n; i++) {
        dp_gate_verdict v;
        CU_ASSERT_EQUAL_FATAL(dp_gate_offer(&g, &in->m[i].u, i, NULL, 0, &v), DP_OK);
        record_verdict(&ref->vs, i, &v);
        if (v.action != DP_GATE_CLOSE)
            continue;
        int again;
        ref->js.step = dp_synth_open_step(s);
        CU_ASSERT_EQUAL_FATAL(dp_gate_close(&g, &sink, held_applied, &ref->vs, &again, err, sizeof err), DP_OK);
        int t = ++ref->steps;
        CU_ASSERT_FATAL(t <= MAXT);
        dp_buf_init(&ref->state[t]);
        CU_ASSERT_EQUAL_FATAL(dp_synth_release_state(s, &ref->state[t]), DP_OK);
        ref->exhausted[t] = dp_synth_exhausted(s);
        /* the snapshot ends with the release half's state */
        dp_buf_clear(&snap);
        CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot(s, &snap), DP_OK);
        CU_ASSERT(snap.len >= ref->state[t].len &&
                  memcmp(snap.data + snap.len - ref->state[t].len, ref->state[t].data, ref->state[t].len) == 0);
    }
    dp_buf_free(&snap);
    dp_gate_free(&g);
    dp_synth_destroy(s);
}

typedef struct shard {
    dp_synth    *s;
    dp_step_gate g;
    dp_buf       rec[MAXT + 2];   /* its statistics record of each step */
    int          exhausted[MAXT + 2];
    int          steps, used;
} shard;

/* Snapshot one role's bundle, destroy it, restore it; the restored state
 * re-saves to the same bytes. */
static dp_synth *restart_role(dp_synth *s, dp_synth_role role, const char *name, const json_t *cfg,
                              const dp_synth_env *env)
{
    char err[512];
    dp_buf a, b;
    dp_buf_init(&a);
    dp_buf_init(&b);
    int exhausted = dp_synth_exhausted(s);
    uint64_t open = dp_synth_open_step(s), next = dp_synth_release_next_step(s);
    CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot_role(s, role, &a), DP_OK);
    dp_synth_destroy(s);
    CU_ASSERT_EQUAL_FATAL(dp_synth_restore_role(&s, role, name, cfg, env, a.data, a.len, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot_role(s, role, &b), DP_OK);
    CU_ASSERT(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
    CU_ASSERT_EQUAL(dp_synth_exhausted(s), exhausted);
    CU_ASSERT_EQUAL(role == DP_SYNTH_ROLE_INGEST ? dp_synth_open_step(s) : dp_synth_release_next_step(s),
                    role == DP_SYNTH_ROLE_INGEST ? open : next);
    dp_buf_free(&a);
    dp_buf_free(&b);
    return s;
}

/* One shard's whole partition: its entities' updates and every marker,
 * closing only the ingest half; each closed step's record encoded. */
static void run_shard(const input *in, uint32_t k, shard *sh, const char *name, const json_t *cfg,
                      const dp_synth_env *env, const reference *ref, verdicts *vs, const dp_key *state_key)
{
    char err[512];
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&sh->s, name, cfg, env, err, sizeof err), DP_OK);
    dp_gate_init(&sh->g, sh->s, NULL);
    dp_stats part;
    dp_stats_init(&part, 1);
    for (size_t i = 0; i < in->n; i++) {
        const dp_update *u = &in->m[i].u;
        int marker = u->kind == DP_UPDATE_CLOSE_STEP;
        if (!marker && shard_of(u) != k)
            continue;
        dp_gate_verdict v;
        CU_ASSERT_EQUAL_FATAL(dp_gate_offer(&sh->g, u, i, NULL, 0, &v), DP_OK);
        if (marker) {   /* every shard decides each marker as the whole stream does */
            CU_ASSERT_EQUAL(v.action << 4 | (v.action == DP_GATE_REJECTED ? (int)v.reason : 0), ref->vs.v[i]);
        } else {
            record_verdict(vs, i, &v);
        }
        sh->used += v.action == DP_GATE_USED;
        if (v.action != DP_GATE_CLOSE)
            continue;
        int again;
        CU_ASSERT_EQUAL_FATAL(dp_gate_close_ingest(&sh->g, &part, held_applied, vs, &again, err, sizeof err), DP_OK);
        int t = ++sh->steps;
        CU_ASSERT_FATAL(t <= MAXT && part.step == (uint64_t)t);
        sh->exhausted[t] = dp_synth_exhausted(sh->s);
        dp_stats_record r = {.updates_topic = "t.updates", .updates_topic_len = 9, .stream_id = STREAM,
                             .stream_id_len = sizeof STREAM - 1, .step = (uint64_t)t, .shard = k,
                             .shard_count = SHARDS};
        dp_buf_init(&sh->rec[t]);
        CU_ASSERT_EQUAL_FATAL(dp_stats_record_encode(&r, &part, k % 2 ? state_key : NULL, env->key, &sh->rec[t],
                                                     err, sizeof err), DP_OK);
        /* a restart at the step boundary: the gate's held updates are the
         * log's to re-read (the committed offset stays before them) */
        if (restarts)
            sh->g.synth = sh->s = restart_role(sh->s, DP_SYNTH_ROLE_INGEST, name, cfg, env);
    }
    dp_stats_free(&part);
}

typedef struct releaser {
    dp_synth        *rel;
    dp_release_sink  sink;
    jsink           *js;
    dp_stats_merger  m;
    dp_stats         back, merged;
    dp_buf           state;
    int              released;
    const char      *name;
    const json_t    *cfg;
    const dp_synth_env *env;
} releaser;

/* The release instance restarted: its release-role snapshot and its
 * merger's pending statistics saved, both destroyed, both restored. */
static void restart_release(releaser *r)
{
    char err[512];
    dp_buf a, b;
    dp_buf_init(&a);
    dp_buf_init(&b);
    size_t pending = r->m.n_pending;
    CU_ASSERT_EQUAL_FATAL(dp_stats_merger_save(&r->m, &a), DP_OK);
    dp_stats_merger_free(&r->m);
    r->rel = restart_role(r->rel, DP_SYNTH_ROLE_RELEASE, r->name, r->cfg, r->env);
    CU_ASSERT_EQUAL_FATAL(dp_stats_merger_load(&r->m, STREAM, sizeof STREAM - 1, SHARDS,
                                               dp_synth_release_next_step(r->rel) - 1, a.data, a.len, err,
                                               sizeof err), DP_OK);
    CU_ASSERT_EQUAL(r->m.n_pending, pending);
    CU_ASSERT_EQUAL_FATAL(dp_stats_merger_save(&r->m, &b), DP_OK);
    CU_ASSERT(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
    dp_buf_free(&a);
    dp_buf_free(&b);
}

/* Shard k's record of step t into the merger; every step then complete
 * released from its merged statistics and checked against the combined
 * close: the release state, and the exhaustion verdicts of the release
 * side, of every shard (the public rule) and of the combined close. */
static void send_record(releaser *r, shard *sh, uint32_t k, int t, const reference *ref, const dp_key *state_key,
                 const dp_key *mac_key)
{
    char err[512];
    dp_stats_record d;
    CU_ASSERT_EQUAL_FATAL(dp_stats_record_decode(sh[k].rec[t].data, sh[k].rec[t].len, SHARDS,
                                                 k % 2 ? state_key : NULL, mac_key, &d, &r->back, err, sizeof err),
                          DP_OK);
    CU_ASSERT_EQUAL_FATAL(dp_stats_merger_add(&r->m, &d, &r->back, err, sizeof err), DP_OK);
    uint64_t next;
    while (dp_stats_merger_complete(&r->m, next = dp_synth_release_next_step(r->rel))) {
        CU_ASSERT_EQUAL_FATAL(dp_stats_merger_take(&r->m, next, &r->merged), DP_OK);
        r->js->step = next;
        CU_ASSERT_EQUAL_FATAL(dp_synth_release_stats(r->rel, &r->merged, &r->sink, err, sizeof err), DP_OK);
        r->released++;
        dp_buf_clear(&r->state);
        CU_ASSERT_EQUAL_FATAL(dp_synth_release_state(r->rel, &r->state), DP_OK);
        CU_ASSERT(r->state.len == ref->state[next].len &&
                  memcmp(r->state.data, ref->state[next].data, r->state.len) == 0);
        CU_ASSERT_EQUAL(dp_synth_exhausted(r->rel), ref->exhausted[next]);
        for (uint32_t q = 0; q < SHARDS; q++)
            CU_ASSERT_EQUAL(sh[q].exhausted[next], ref->exhausted[next]);
    }
    if (restarts)
        restart_release(r);
}

/* The records into the merger with the shards running steps apart: the
 * last shard all its steps first, then the others step by step in a
 * rotating order; each step released as soon as it is complete. */
static void run_release(shard *sh, int steps, const char *name, const json_t *cfg, const dp_synth_env *env,
                        const reference *ref, const dp_key *state_key, jsink *js)
{
    char err[512];
    releaser r;
    memset(&r, 0, sizeof r);
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&r.rel, name, cfg, env, err, sizeof err), DP_OK);
    r.sink = js_of(js);
    r.js = js;
    r.name = name;
    r.cfg = cfg;
    r.env = env;
    CU_ASSERT_EQUAL_FATAL(dp_stats_merger_init(&r.m, STREAM, sizeof STREAM - 1, SHARDS, 0), DP_OK);
    dp_stats_init(&r.back, 1);
    dp_stats_init(&r.merged, 1);
    dp_buf_init(&r.state);
    for (int t = 1; t <= steps; t++)
        send_record(&r, sh, SHARDS - 1, t, ref, state_key, env->key);
    CU_ASSERT_EQUAL(r.released, 0);
    for (int t = 1; t <= steps; t++)
        for (uint32_t q = 0; q < SHARDS - 1; q++)
            send_record(&r, sh, (q + (uint32_t)t) % (SHARDS - 1), t, ref, state_key, env->key);
    CU_ASSERT_EQUAL(r.released, steps);
    CU_ASSERT(dp_synth_exhausted(r.rel));
    dp_buf_free(&r.state);
    dp_stats_free(&r.back);
    dp_stats_free(&r.merged);
    dp_stats_merger_free(&r.m);
    dp_synth_destroy(r.rel);
}

static void sharded_equals_replay(const char *name, const char *cfg_text, int T, int cats)
{
    dp_key key, state_key;
    dptest_key(&key, 31);
    dptest_key(&state_key, 32);
    json_error_t je;
    json_t *cfg = json_loads(cfg_text, 0, &je);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
    dp_synth_env env = {&key, STREAM, sizeof STREAM - 1};
    input in = {0};
    make_input(&in, T, cats);

    reference ref;
    memset(&ref, 0, sizeof ref);
    ref.vs.v = calloc(in.n, sizeof *ref.vs.v);
    run_combined(&in, name, cfg, &env, &ref);
    CU_ASSERT_EQUAL(ref.steps, T);
    CU_ASSERT(ref.exhausted[T] && !ref.exhausted[T - 1]);

    verdicts vs = {calloc(in.n, sizeof(int))};
    shard sh[SHARDS];
    memset(sh, 0, sizeof sh);
    for (uint32_t k = 0; k < SHARDS; k++) {
        run_shard(&in, k, &sh[k], name, cfg, &env, &ref, &vs, &state_key);
        CU_ASSERT_EQUAL(sh[k].steps, T);
        CU_ASSERT(sh[k].used > 0);   /* every shard really holds entities */
    }
    int diff = 0;
    for (size_t i = 0; i < in.n; i++)
        diff += in.m[i].u.kind != DP_UPDATE_CLOSE_STEP && vs.v[i] != ref.vs.v[i];
    CU_ASSERT_EQUAL(diff, 0);

    jsink js;
    run_release(sh, T, name, cfg, &env, &ref, &state_key, &js);

    char *rel, *bud;
    size_t rel_len, bud_len;
    dp_replay_summary sum;
    replay_of(&in, name, cfg_text, &key, &rel, &rel_len, &bud, &bud_len, &sum);
    same_bytes("combined vs replay releases", ref.js.rel.data, ref.js.rel.len, rel, rel_len);
    same_bytes("combined vs replay budget", ref.js.bud.data, ref.js.bud.len, bud, bud_len);
    same_bytes("sharded vs replay releases", js.rel.data, js.rel.len, rel, rel_len);
    same_bytes("sharded vs replay budget", js.bud.data, js.bud.len, bud, bud_len);
    CU_ASSERT_EQUAL(sum.closes, (uint64_t)T);
    /* replay's counts of used updates, repeated markers and rejections by
     * reason: the shards' verdicts on data, the markers' (every shard's
     * alike, checked in run_shard) */
    uint64_t used = 0, ignored = 0, held = 0, rejected[DP_REJECT_REASON_COUNT] = {0};
    for (size_t i = 0; i < in.n; i++) {
        int v = in.m[i].u.kind == DP_UPDATE_CLOSE_STEP ? ref.vs.v[i] : vs.v[i];
        int reason = v & 0xf, action = v & HELD_BIT ? (reason ? DP_GATE_REJECTED : DP_GATE_USED) : v >> 4;
        used += action == DP_GATE_USED || action == DP_GATE_CLOSE;   /* replay counts a close as used */
        ignored += action == DP_GATE_IGNORED;
        held += (v & HELD_BIT) != 0;
        rejected[reason] += action == DP_GATE_REJECTED;
    }
    CU_ASSERT(held > 0 && rel_len > 1000 && bud_len > 0);
    CU_ASSERT(rejected[DP_REJECT_EXHAUSTED] > 0 && rejected[DP_REJECT_DUPLICATE_REPORT] > 0 &&
              rejected[DP_REJECT_UNKNOWN_ENTITY] > 0);
    CU_ASSERT_EQUAL(used, sum.used);
    CU_ASSERT_EQUAL(ignored, sum.duplicate_markers);
    for (int why = 1; why < DP_REJECT_REASON_COUNT; why++)
        CU_ASSERT_EQUAL(rejected[why], sum.rejected[why]);

    for (int k = 0; k < SHARDS; k++) {
        for (int t = 1; t <= T; t++)
            dp_buf_free(&sh[k].rec[t]);
        dp_gate_free(&sh[k].g);
        dp_synth_destroy(sh[k].s);
    }
    for (int t = 1; t <= T; t++)
        dp_buf_free(&ref.state[t]);
    js_free(&js);
    js_free(&ref.js);
    free(rel);
    free(bud);
    free(vs.v);
    free(ref.vs.v);
    free(in.m);
    json_decref(cfg);
}

static void test_window_sharded(void)
{
    sharded_equals_replay("window", "{\"horizon\": 7, \"k\": 3, \"rho\": 1}", 7, 2);
}

static void test_window_c3_sharded(void)
{
    sharded_equals_replay("window", "{\"horizon\": 5, \"k\": 2, \"categories\": 3, \"rho\": 1, "
                          "\"neighbors\": \"add_remove\"}", 5, 3);
}

static void test_cumulative_sharded(void)
{
    sharded_equals_replay("cumulative", "{\"horizon\": 8, \"rho\": 1}", 8, 2);
}

static void test_restarts(void)
{
    restarts = 1;
    sharded_equals_replay("window", "{\"horizon\": 7, \"k\": 3, \"rho\": 1}", 7, 2);
    sharded_equals_replay("window", "{\"horizon\": 5, \"k\": 2, \"categories\": 3, \"rho\": 1, "
                          "\"neighbors\": \"add_remove\"}", 5, 3);
    sharded_equals_replay("cumulative", "{\"horizon\": 8, \"rho\": 1}", 8, 2);
    restarts = 0;
}

/* --- exhaustion: the ingest side's verdict is the release side's ---------- */

static void exhaustion_agrees(const char *name, const char *cfg_text, uint64_t T)
{
    dp_key key;
    dptest_key(&key, 33);
    json_error_t je;
    json_t *cfg = json_loads(cfg_text, 0, &je);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
    dp_synth_env env = {&key, STREAM, sizeof STREAM - 1};
    char err[512], id[24];
    dp_synth *in, *rel;
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&in, name, cfg, &env, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&rel, name, cfg, &env, err, sizeof err), DP_OK);
    dp_stats st;
    dp_stats_init(&st, 1);
    dp_release_sink none = {0};
    dp_reject_reason why;
    int agree = 0;
    for (uint64_t t = 1; t <= T; t++) {
        /* before the close of t: both still run, and agree with the ledger */
        agree += !dp_synth_exhausted(in) && !dp_synth_exhausted(rel) && !dp_synth_ledger(rel)->exhausted;
        for (int i = 0; i < 50; i++) {
            snprintf(id, sizeof id, "e%d", i);
            CU_ASSERT_EQUAL(tk_report(in, t, id, (i + (int)t) % 2, &why), DP_OK);
            CU_ASSERT_EQUAL(why, DP_REJECT_NONE);
        }
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_ingest(in, &st, err, sizeof err), DP_OK);
        /* the ingest side alone, by the public rule: its release half never ran */
        CU_ASSERT(dp_synth_ledger(in)->n_entries == 0);
        CU_ASSERT_EQUAL_FATAL(dp_synth_release_stats(rel, &st, &none, err, sizeof err), DP_OK);
        /* the release side by its ledger: the spend that meets the budget */
        CU_ASSERT_EQUAL(dp_synth_exhausted(in), dp_synth_ledger(rel)->exhausted);
        CU_ASSERT_EQUAL(dp_synth_exhausted(in), dp_synth_exhausted(rel));
        CU_ASSERT_EQUAL(dp_synth_exhausted(in), t == T);
    }
    CU_ASSERT_EQUAL(agree, (int)T);
    /* exhausted on the ingest side: nothing taken, nothing closed */
    CU_ASSERT_EQUAL(tk_report(in, T + 1, "e1", 0, &why), DP_OK);
    CU_ASSERT_EQUAL(why, DP_REJECT_EXHAUSTED);
    CU_ASSERT_EQUAL(dp_synth_close_ingest(in, &st, err, sizeof err), DP_EHORIZON);
    dp_stats_clear(&st, T + 1);
    CU_ASSERT_EQUAL(dp_stats_finish(&st), DP_OK);
    CU_ASSERT_EQUAL(dp_synth_release_stats(rel, &st, &none, err, sizeof err), DP_EHORIZON);
    dp_stats_free(&st);
    dp_synth_destroy(in);
    dp_synth_destroy(rel);
    json_decref(cfg);
}

static void test_exhaustion(void)
{
    exhaustion_agrees("window", "{\"horizon\": 1, \"k\": 1, \"rho\": 1}", 1);
    exhaustion_agrees("window", "{\"horizon\": 6, \"k\": 3, \"rho\": 0.5}", 6);
    exhaustion_agrees("window", "{\"horizon\": 4, \"k\": 4, \"rho\": 1}", 4);
    exhaustion_agrees("cumulative", "{\"horizon\": 1, \"rho\": 1}", 1);
    exhaustion_agrees("cumulative", "{\"horizon\": 9, \"rho\": 2}", 9);
    exhaustion_agrees("cumulative", "{\"horizon\": 7, \"rho\": 1, \"counter\": \"honaker\"}", 7);
}

static const dptest_case CASES[] = {
    {"window, 4 shards to exhaustion: ingest-only closes, merged records, releases from statistics = replay, "
     "state and verdicts = the combined close", test_window_sharded},
    {"window c=3, 4 shards: the same", test_window_c3_sharded},
    {"cumulative, 4 shards: the same", test_cumulative_sharded},
    {"exhaustion: the ingest side's public rule = the release side's ledger at every step", test_exhaustion},
    {"restarts: every ingest shard at every step boundary and the release bundle with its merger's pending "
     "steps after every record, snapshotted per role, destroyed and restored: the same bytes as replay",
     test_restarts},
    {NULL, NULL},
};

int main(void) { return dptest_run("shard seam", CASES); }
