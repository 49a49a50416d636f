/* synth_testkit.h — helpers shared by the synthesizers' unit tests (every
 * tests/unit/test_*.c that drives a dp_synth; not a test executable itself).
 *
 *   tk_sink      a dp_release_sink that serialises every callback, field by
 *                field (doubles as bit patterns), into one byte buffer, so two
 *                runs can be compared byte for byte; it also keeps the last
 *                manifest's and budget event's scalars for assertions.
 *   tk_report    build and ingest a REPORT update. */
#ifndef SYNTH_TESTKIT_H
#define SYNTH_TESTKIT_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/dp_error.h"
#include "synth/common/synth.h"
#include "stream/kafka_util.h"
#include "stream/shard_key.h"

/* manifest key-value pairs kept from the last manifest (marginal's, at K = 2, has 10) */
#define TK_MAX_KV 16

typedef struct tk_sink {
    dp_buf   out;
    uint64_t records, manifests, budgets;
    /* last manifest / budget event */
    uint64_t m_step, m_records;
    int      m_clamped, m_mode;
    double   m_debias[TK_MAX_KV];
    char     m_debias_keys[TK_MAX_KV][24];
    size_t   m_n_debias;
    uint64_t b_step;
    int      b_status;
    char     b_mechanism[48], b_unit[48], b_neighbors[16];
    double   b_spent_step, b_spent_total, b_budget_total, b_delta, b_eps_simple, b_eps_cks;
    uint64_t b_units_step, b_units_total, b_budget_units;   /* the exact ledger's */
    double   b_noise[8], b_acc[8];
    char     b_noise_keys[8][24], b_acc_keys[8][24];
    size_t   b_n_noise, b_n_acc;
    /* optional per-record hook */
    void   (*on_record)(void *ctx, const dp_synth_record *r);
    void    *hook_ctx;
} tk_sink;

/* A 32-bit integer hash (lowbias32): the tests' reproducible pseudo-random
 * choices of who reports what. */
static inline uint32_t tk_mix32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    return x ^ (x >> 16);
}

static inline void tk_put_str(dp_buf *b, const char *s)
{
    dp_buf_put_blob(b, s ? s : "", s ? strlen(s) : 0);
}

static inline int tk_record(void *ctx, const dp_synth_record *r)
{
    tk_sink *s = ctx;
    dp_buf_put_u8(&s->out, 'R');
    dp_buf_put_u64(&s->out, r->synthetic_id);
    dp_buf_put_u32(&s->out, (uint32_t)r->value.kind);
    dp_buf_put_i64(&s->out, r->value.category);
    dp_buf_put_u64(&s->out, r->value.row_len);
    for (size_t i = 0; i < r->value.row_len; i++)
        dp_buf_put_u32(&s->out, (uint32_t)r->value.row[i]);
    dp_buf_put_u64(&s->out, r->value.point_len);
    for (size_t i = 0; i < r->value.point_len; i++)
        dp_buf_put_f64(&s->out, r->value.point[i]);
    s->records++;
    if (s->on_record)
        s->on_record(s->hook_ctx, r);
    return 0;
}

static inline int tk_manifest(void *ctx, const dp_release_manifest *m)
{
    tk_sink *s = ctx;
    dp_buf_put_u8(&s->out, 'M');
    dp_buf_put_blob(&s->out, m->stream_id, m->stream_id_len);
    dp_buf_put_u64(&s->out, m->step);
    tk_put_str(&s->out, m->synthesizer);
    dp_buf_put_u32(&s->out, (uint32_t)m->mode);
    dp_buf_put_u64(&s->out, m->record_count);
    dp_buf_put_u32(&s->out, (uint32_t)m->clamped);
    s->m_n_debias = m->n_debias < TK_MAX_KV ? m->n_debias : TK_MAX_KV;
    for (size_t i = 0; i < m->n_debias; i++) {
        tk_put_str(&s->out, m->debias[i].key);
        dp_buf_put_f64(&s->out, m->debias[i].value);
        if (i < TK_MAX_KV) {
            s->m_debias[i] = m->debias[i].value;
            snprintf(s->m_debias_keys[i], 24, "%s", m->debias[i].key);
        }
    }
    s->manifests++;
    s->m_step = m->step;
    s->m_records = m->record_count;
    s->m_clamped = m->clamped;
    s->m_mode = (int)m->mode;
    return 0;
}

static inline void tk_put_kvs(tk_sink *s, const dp_kv *kv, size_t n, double *vals, char (*keys)[24], size_t *nout)
{
    dp_buf_put_u64(&s->out, n);
    *nout = n < 8 ? n : 8;
    for (size_t i = 0; i < n; i++) {
        tk_put_str(&s->out, kv[i].key);
        dp_buf_put_f64(&s->out, kv[i].value);
        if (i < 8) {
            vals[i] = kv[i].value;
            snprintf(keys[i], 24, "%s", kv[i].key);
        }
    }
}

static inline int tk_budget(void *ctx, const dp_budget_event *e)
{
    tk_sink *s = ctx;
    dp_buf_put_u8(&s->out, 'B');
    dp_buf_put_blob(&s->out, e->stream_id, e->stream_id_len);
    dp_buf_put_u64(&s->out, e->step);
    dp_buf_put_u32(&s->out, (uint32_t)e->status);
    tk_put_str(&s->out, e->mechanism);
    tk_put_str(&s->out, e->unit);
    tk_put_str(&s->out, e->neighbors);
    dp_buf_put_u32(&s->out, (uint32_t)e->model);
    dp_buf_put_f64(&s->out, e->spent_step);
    dp_buf_put_f64(&s->out, e->spent_total);
    dp_buf_put_f64(&s->out, e->budget_total);
    dp_buf_put_f64(&s->out, e->delta);
    dp_buf_put_f64(&s->out, e->eps_simple);
    dp_buf_put_f64(&s->out, e->eps_cks);
    tk_put_kvs(s, e->noise, e->n_noise, s->b_noise, s->b_noise_keys, &s->b_n_noise);
    tk_put_kvs(s, e->accuracy, e->n_accuracy, s->b_acc, s->b_acc_keys, &s->b_n_acc);
    s->budgets++;
    s->b_step = e->step;
    s->b_status = (int)e->status;
    snprintf(s->b_mechanism, sizeof s->b_mechanism, "%s", e->mechanism ? e->mechanism : "");
    snprintf(s->b_unit, sizeof s->b_unit, "%s", e->unit ? e->unit : "");
    snprintf(s->b_neighbors, sizeof s->b_neighbors, "%s", e->neighbors ? e->neighbors : "");
    s->b_spent_step = e->spent_step;
    s->b_spent_total = e->spent_total;
    s->b_budget_total = e->budget_total;
    s->b_delta = e->delta;
    s->b_eps_simple = e->eps_simple;
    s->b_eps_cks = e->eps_cks;
    s->b_units_step = e->spent_units_step;
    s->b_units_total = e->spent_units_total;
    s->b_budget_units = e->budget_units;
    return 0;
}

static inline void tk_sink_init(tk_sink *s)
{
    memset(s, 0, sizeof *s);
    dp_buf_init(&s->out);
}

static inline void tk_sink_free(tk_sink *s) { dp_buf_free(&s->out); }

static inline dp_release_sink tk_sink_of(tk_sink *s)
{
    dp_release_sink k = {s, tk_record, tk_manifest, tk_budget};
    return k;
}

/* Value of a named kv captured from the last event (NAN if absent). */
static inline double tk_kv(const double *vals, char (*keys)[24], size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(keys[i], key) == 0)
            return vals[i];
    return NAN;
}

static inline int tk_report(dp_synth *s, uint64_t step, const char *id, int64_t value, dp_reject_reason *why)
{
    dp_update u;
    memset(&u, 0, sizeof u);
    u.stream_id = "s";
    u.stream_id_len = 1;
    u.step = step;
    u.kind = DP_UPDATE_REPORT;
    u.entity_id = id;
    u.entity_id_len = strlen(id);
    u.payload.kind = DP_PAYLOAD_CATEGORY;
    u.payload.category = value;
    return dp_synth_ingest(s, &u, why);
}

static inline dp_update tk_update(uint64_t step, const char *id, size_t id_len, int64_t value)
{
    dp_update u;
    memset(&u, 0, sizeof u);
    u.stream_id = "s";
    u.stream_id_len = 1;
    u.step = step;
    u.kind = DP_UPDATE_REPORT;
    u.entity_id = id;
    u.entity_id_len = id_len;
    u.payload.kind = DP_PAYLOAD_CATEGORY;
    u.payload.category = value;
    return u;
}

/* A JSON config from a printf format (the test fails if it does not parse). */
static inline json_t *tk_cfg_text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline json_t *tk_cfg_text(const char *fmt, ...)
{
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    return j;
}

/* Creating synthesizer `name` from config `text` fails with a message naming `needle`. */
static inline void tk_expect_refused(const char *name, const char *text, const char *needle)
{
    json_t *j = tk_cfg_text("%s", text);
    dp_key key;
    memset(&key, 1, sizeof key);
    dp_synth_env env = {&key, "t/1", 3};
    dp_synth *s = NULL;
    char err[512] = "";
    CU_ASSERT_NOT_EQUAL(dp_synth_create(&s, name, j, &env, err, sizeof err), DP_OK);
    if (!strstr(err, needle))
        printf("\n    error \"%s\" does not name \"%s\"", err, needle);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, needle));
    dp_synth_destroy(s);
    json_decref(j);
}

/* Snapshot *s, destroy it and restore it in place (the test fails if the
 * restore does); the snapshot's bytes go to keep if given. */
static inline void tk_snapshot_restore(dp_synth **s, const char *name, const json_t *cfg, const dp_synth_env *env,
                                       dp_buf *keep)
{
    dp_buf snap;
    dp_buf_init(&snap);
    CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot(*s, &snap), DP_OK);
    dp_synth_destroy(*s);
    char err[256];
    int rc = dp_synth_restore(s, name, cfg, env, snap.data, snap.len, err, sizeof err);
    if (rc != DP_OK)
        printf("\n    restore: %s", err);
    CU_ASSERT_EQUAL_FATAL(rc, DP_OK);
    if (keep)
        dp_buf_put_bytes(keep, snap.data, snap.len);
    dp_buf_free(&snap);
}

/* An entity-less DELETE is ENTITY_REQUIRED whatever others inserted:
 * `del` (a DELETE at step 1 with no entity) is refused, changing nothing,
 * whether nobody holds its value, an entity inserted it (alice), or an
 * anonymous INSERT did.  Matched by value it would be NOT_PRESENT in the
 * first case and used in the last — one person's verdict decided by
 * another's data (docs/privacy.md §1).  An empty entity ("") counts as none. */
static inline void tk_check_entityless_delete(const char *name, const json_t *cfg, const dp_synth_env *env,
                                              dp_update del)
{
    static const char *const holder[] = {"nobody", "alice", "an anonymous insert"};
    for (int h = 0; h < 3; h++) {
        dp_synth *s = NULL;
        char err[256];
        CU_ASSERT_EQUAL_FATAL(dp_synth_create(&s, name, cfg, env, err, sizeof err), DP_OK);
        dp_reject_reason why;
        if (h) {   /* the holder's INSERT (refused as USER_LIMIT on a user-level stream if anonymous) */
            dp_update ins = del;
            ins.kind = DP_UPDATE_INSERT;
            ins.entity_id = h == 1 ? "alice" : NULL;
            ins.entity_id_len = h == 1 ? 5 : 0;
            CU_ASSERT_EQUAL(dp_synth_ingest(s, &ins, &why), DP_OK);
        }
        dp_buf before, after;
        dp_buf_init(&before);
        dp_buf_init(&after);
        CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot(s, &before), DP_OK);
        for (int empty = 0; empty < 2; empty++) {
            dp_update d = del;
            d.entity_id = empty ? "" : NULL;
            d.entity_id_len = 0;
            CU_ASSERT_EQUAL(dp_synth_ingest(s, &d, &why), DP_OK);
            if (why != DP_REJECT_ENTITY_REQUIRED)
                printf("\n    %s, value held by %s: %s, want ENTITY_REQUIRED", name, holder[h],
                       dp_reject_reason_name(why));
            CU_ASSERT_EQUAL(why, DP_REJECT_ENTITY_REQUIRED);
        }
        CU_ASSERT_EQUAL_FATAL(dp_synth_snapshot(s, &after), DP_OK);
        CU_ASSERT(before.len == after.len && memcmp(before.data, after.data, before.len) == 0);
        dp_buf_free(&before);
        dp_buf_free(&after);
        dp_synth_destroy(s);
    }
}

/* The determinism checks of a synthesizer's test: run(ctx, key, restore_at,
 * out) appends a whole run's sink bytes; the same key twice gives the same
 * bytes, a run snapshotted and restored after step restore_at gives them
 * too, and key2 gives other bytes.  min_len guards against empty runs. */
typedef void (*tk_run_fn)(void *ctx, uint8_t key, int restore_at, dp_buf *out);

static inline void tk_check_replays(tk_run_fn run, void *ctx, uint8_t key, uint8_t key2, int restore_at,
                                    size_t min_len)
{
    dp_buf a, b, c, d;
    dp_buf_init(&a);
    dp_buf_init(&b);
    dp_buf_init(&c);
    dp_buf_init(&d);
    run(ctx, key, 0, &a);
    run(ctx, key, 0, &b);
    run(ctx, key, restore_at, &c);
    run(ctx, key2, 0, &d);
    CU_ASSERT(a.len > min_len);
    CU_ASSERT(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
    CU_ASSERT(c.len == a.len && memcmp(a.data, c.data, a.len) == 0);
    CU_ASSERT(a.len != d.len || memcmp(a.data, d.data, a.len) != 0);
    dp_buf_free(&a);
    dp_buf_free(&b);
    dp_buf_free(&c);
    dp_buf_free(&d);
}

/* Sharded ingest merged = the bundle, byte for byte, at every step
 * (docs/kafka.md §10): `steps` steps of `per_step` updates from make(ctx,
 * t, i) (the update's pointers may borrow from ctx until the next call; an
 * update without an entity — an anonymous INSERT — is the shard of key
 * stream ‖ 0x00) go to one dp_synth and to TK_SHARDS ingest halves, each
 * update to the partition the real partitioner gives its sharded key
 * (dp_update_key, dp_kafka_key_partition), with the same reject reasons;
 * every step the shards' statistics are merged (in reverse shard order)
 * into one release half, whose records, manifests and budget events must
 * equal the bundle's after that step.  Every shard must hold updates.
 * Returns the bundle's record count. */
typedef dp_update (*tk_make_update)(void *ctx, int t, int i);

enum { TK_SHARDS = 4 };

static inline int tk_shard_of(const dp_update *u, const dp_synth_env *env)
{
    dp_update k = *u;
    if (!k.stream_id) {
        k.stream_id = env->stream_id;
        k.stream_id_len = env->stream_id_len;
    }
    dp_buf key;
    dp_buf_init(&key);
    CU_ASSERT_EQUAL_FATAL(dp_update_key(&k, 1, &key), DP_OK);
    int32_t p = dp_kafka_key_partition("consistent_random", key.data, key.len, TK_SHARDS);
    dp_buf_free(&key);
    CU_ASSERT_FATAL(p >= 0 && p < TK_SHARDS);
    return (int)p;
}

/* Close step t of every shard and merge their statistics into *merged. */
static inline void tk_merge_shards(const dp_synth_ops *ops, dp_ingest_half **in, int t, dp_stats *merged)
{
    dp_stats part;
    dp_stats_init(&part, (uint64_t)t);
    dp_stats_clear(merged, (uint64_t)t);
    for (int k = TK_SHARDS - 1; k >= 0; k--) {
        dp_stats_clear(&part, (uint64_t)t);
        CU_ASSERT_EQUAL_FATAL(ops->ingest_close(in[k], (uint64_t)t, &part), DP_OK);
        CU_ASSERT_EQUAL_FATAL(dp_stats_merge(merged, &part), DP_OK);
    }
    dp_stats_free(&part);
}

static inline uint64_t tk_check_shards(const char *name, const json_t *cfg, const dp_synth_env *env, int steps,
                                       int per_step, tk_make_update make, void *ctx)
{
    char err[256];
    dp_reject_reason why, why2;
    dp_synth *s;
    CU_ASSERT_EQUAL_FATAL(dp_synth_create(&s, name, cfg, env, err, sizeof err), DP_OK);
    tk_sink a, b;
    tk_sink_init(&a);
    tk_sink_init(&b);
    dp_release_sink sa = tk_sink_of(&a), sb = tk_sink_of(&b);
    const dp_synth_ops *ops = dp_synth_ops_find(name);
    dp_ingest_half *in[TK_SHARDS];
    dp_release_half *rel;
    for (int k = 0; k < TK_SHARDS; k++)
        CU_ASSERT_EQUAL_FATAL(ops->ingest_create(&in[k], cfg, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL_FATAL(ops->release_create(&rel, cfg, env, err, sizeof err), DP_OK);
    dp_stats merged;
    dp_stats_init(&merged, 1);
    int used[TK_SHARDS] = {0}, same = 1;
    for (int t = 1; t <= steps; t++) {
        for (int i = 0; i < per_step; i++) {
            dp_update u = make(ctx, t, i);
            int k = tk_shard_of(&u, env);
            CU_ASSERT_EQUAL(dp_synth_ingest(s, &u, &why), DP_OK);
            CU_ASSERT_EQUAL(ops->ingest_update(in[k], &u, &why2), DP_OK);
            CU_ASSERT_EQUAL(why, why2);
            used[k]++;
        }
        CU_ASSERT_EQUAL_FATAL(dp_synth_close_step(s, &sa, err, sizeof err), DP_OK);
        tk_merge_shards(ops, in, t, &merged);
        CU_ASSERT_EQUAL_FATAL(ops->release_step(rel, (uint64_t)t, &merged, &sb, err, sizeof err), DP_OK);
        same = same && a.out.len == b.out.len && memcmp(a.out.data, b.out.data, a.out.len) == 0;
    }
    CU_ASSERT(same);
    for (int k = 0; k < TK_SHARDS; k++)
        CU_ASSERT(used[k] > 0);
    uint64_t records = a.records;
    for (int k = 0; k < TK_SHARDS; k++)
        ops->ingest_destroy(in[k]);
    ops->release_destroy(rel);
    dp_stats_free(&merged);
    tk_sink_free(&a);
    tk_sink_free(&b);
    dp_synth_destroy(s);
    return records;
}

/* tk_check_shards under test key 8 for stream `stream`. */
static inline uint64_t tk_check_shards_on(const char *name, const json_t *cfg, const char *stream, int steps,
                                          int per_step, tk_make_update make, void *ctx)
{
    dp_key key;
    dptest_key(&key, 8);
    dp_synth_env env = {&key, stream, strlen(stream)};
    return tk_check_shards(name, cfg, &env, steps, per_step, make, ctx);
}

#endif
