/* metrics.c — recording, staging per transaction, health, and the view
 * swap (metrics.h says who calls what from which thread). */
#include "stream/metrics_internal.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/dp_error.h"
#include "stream/log.h"

void mx_hist_observe(mx_hist *h, const double *bounds, double v)
{
    for (int i = 0; i < MX_BUCKETS; i++)
        if (v <= bounds[i]) {
            h->bucket[i]++;
            break;
        }
    h->count++;
    h->sum += v;
}

/* --- lifecycle ------------------------------------------------------------------------ */

int dp_metrics_create(dp_metrics **out, const dp_metrics_options *o)
{
    *out = NULL;
    dp_metrics *m = calloc(1, sizeof *m);
    if (!m)
        return DP_ENOMEM;
    m->o = *o;
    if (m->o.publish_ms <= 0)
        m->o.publish_ms = 1000;
    if (m->o.stall_ms <= 0)
        m->o.stall_ms = 60000;
    if (m->o.history_steps == 0)
        m->o.history_steps = 500;
    if (!m->o.version)
        m->o.version = "unknown";
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    m->start_wall_s = (double)ts.tv_sec + ts.tv_nsec * 1e-9;   /* public: when the process started */
    dp_bytes_map_init(&m->streams);
    pthread_mutex_init(&m->lock, NULL);
    atomic_init(&m->heartbeat_ms, 0);
    atomic_init(&m->restoring, 0);
    atomic_init(&m->joined, 0);
    atomic_init(&m->fatal, 0);
    if (!(m->view = mx_render(m))) {
        dp_metrics_destroy(m);
        return DP_ENOMEM;
    }
    *out = m;
    return DP_OK;
}

static void stream_free(mx_stream *s)
{
    if (!s)
        return;
    for (uint32_t i = 0; i < s->n_entries; i++)
        free(s->entries[i]);
    free(s->entries);
    mx_text_unref(s->history);
    free(s->id);
    free(s);
}

static void staged_clear(dp_metrics *m)
{
    for (size_t i = 0; i < m->n_staged; i++)
        free(m->staged[i].stream);
    m->n_staged = 0;
}

void dp_metrics_destroy(dp_metrics *m)
{
    if (!m)
        return;
    dp_metrics_progress_begin(m);
    free(m->prog);
    for (size_t i = 0; i < m->streams.cap; i++)
        stream_free(dp_bytes_map_at(&m->streams, i));
    dp_bytes_map_free(&m->streams);
    staged_clear(m);
    free(m->staged);
    free(m->consumed);
    free(m->lag);
    if (m->view)
        mx_view_free(m->view);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

int dp_metrics_input_enabled(const dp_metrics *m) { return m->o.input_metrics; }

/* --- recording ------------------------------------------------------------------------- */

static int grow_parts(dp_metrics *m, int32_t partition)
{
    if (partition < 0 || partition > 1 << 20)
        return DP_EINVAL;
    if (partition < m->n_parts)
        return DP_OK;
    int32_t n = partition + 1;
    uint64_t *c = realloc(m->consumed, (size_t)n * sizeof *c);
    if (!c)
        return DP_ENOMEM;
    m->consumed = c;
    int64_t *l = realloc(m->lag, (size_t)n * sizeof *l);
    if (!l)
        return DP_ENOMEM;
    m->lag = l;
    for (int32_t i = m->n_parts; i < n; i++)
        m->consumed[i] = 0, m->lag[i] = -1;
    m->n_parts = n;
    return DP_OK;
}

void dp_metrics_consumed(dp_metrics *m, int32_t partition, uint64_t n)
{
    if (grow_parts(m, partition) == DP_OK)
        m->consumed[partition] += n;
    m->dirty = 1;
}

void dp_metrics_accepted(dp_metrics *m, uint64_t n)
{
    m->accepted += n;
    m->dirty = 1;
}

void dp_metrics_lag(dp_metrics *m, int32_t partition, int64_t lag)
{
    if (grow_parts(m, partition) == DP_OK)
        m->lag[partition] = lag;
}

void dp_metrics_partitions(dp_metrics *m, int assigned)
{
    m->assigned = assigned;
    atomic_store(&m->joined, 1);
    m->dirty = 1;
}

/* Room for one more element in the array *arr of *cap (n used). */
static int room(void **arr, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return DP_OK;
    size_t c = *cap ? 2 * *cap : 16;
    void *p = realloc(*arr, c * size);
    if (!p)
        return DP_ENOMEM;
    *arr = p;
    *cap = c;
    return DP_OK;
}

static mx_staged *stage(dp_metrics *m, mx_kind kind, const char *stream, size_t stream_len)
{
    if (room((void **)&m->staged, &m->cap_staged, m->n_staged, sizeof *m->staged) != DP_OK)
        return NULL;
    mx_staged *e = &m->staged[m->n_staged];
    memset(e, 0, sizeof *e);
    e->kind = kind;
    if (stream) {
        if (!(e->stream = malloc(stream_len + 1)))
            return NULL;
        memcpy(e->stream, stream, stream_len);
        e->stream[stream_len] = '\0';
        e->stream_len = stream_len;
    }
    m->n_staged++;
    return e;
}

static size_t copy_figs(mx_fig *to, const dp_kv *kv, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k < MX_FIGS; i++) {
        if (!isfinite(kv[i].value))
            continue;
        snprintf(to[k].key, sizeof to[k].key, "%s", kv[i].key);
        to[k++].v = kv[i].value;
    }
    return k;
}

void dp_metrics_stage_dead_letter(dp_metrics *m, dp_reject_reason reason)
{
    mx_staged *e = stage(m, MX_DEAD_LETTER, NULL, 0);
    if (e)
        e->reason = reason;
}

void dp_metrics_stage_release(dp_metrics *m, const dp_release_manifest *man, double close_seconds)
{
    mx_staged *e = stage(m, MX_RELEASE, man->stream_id, man->stream_id_len);
    if (!e)
        return;
    e->step = man->step;
    e->records = man->record_count;
    e->synthesizer = man->synthesizer;
    e->close_s = close_seconds;
    e->n_figs = copy_figs(e->figs, man->debias, man->n_debias);
}

void dp_metrics_stage_close_time(dp_metrics *m, double close_seconds)
{
    for (size_t i = m->n_staged; i-- > 0;)
        if (m->staged[i].kind == MX_RELEASE) {
            m->staged[i].close_s = close_seconds;
            return;
        }
}

void dp_metrics_stage_budget(dp_metrics *m, const dp_budget_event *b)
{
    mx_staged *e = stage(m, MX_BUDGET, b->stream_id, b->stream_id_len);
    if (!e)
        return;
    e->step = b->step;
    e->exhausted = b->status == DP_BUDGET_EXHAUSTED;
    e->model = (int)b->model;
    e->spent = b->spent_total;
    e->total = b->budget_total;
    e->eps = b->eps_cks;
    e->delta = b->delta;
    snprintf(e->mechanism, sizeof e->mechanism, "%s", b->mechanism ? b->mechanism : "");
    e->n_acc = copy_figs(e->acc, b->accuracy, b->n_accuracy);
}

static mx_stream *stream_of(dp_metrics *m, const char *id, size_t len)
{
    dp_bytes_map_slot *slot = dp_bytes_map_upsert(&m->streams, id, len);
    if (!slot)
        return NULL;
    if (!slot->value) {
        mx_stream *s = calloc(1, sizeof *s);
        if (!s || !(s->id = malloc(len + 1)) || !(s->entries = calloc(m->o.history_steps, sizeof *s->entries))) {
            if (s)
                free(s->id);
            free(s);
            return NULL;
        }
        memcpy(s->id, id, len);
        s->id[len] = '\0';
        s->id_len = len;
        slot->value = s;
    }
    return slot->value;
}

static void put_figs(json_t *o, const char *name, const mx_fig *f, size_t n)
{
    json_t *x = json_object();
    for (size_t i = 0; i < n; i++)
        json_object_set_new(x, f[i].key, json_real(f[i].v));
    json_object_set_new(o, name, x);
}

/* A committed budget event completes its step's history entry (the
 * release of the same step came first in the transaction). */
static void history_add(dp_metrics *m, mx_stream *s, const mx_staged *b)
{
    json_t *o = json_pack("{s:I, s:I, s:f, s:f, s:b}", "step", (json_int_t)b->step, "records",
                          (json_int_t)(s->figs_step == b->step ? s->last_records : 0), "spent", b->spent, "budget",
                          b->total, "exhausted", b->exhausted);
    if (!o)
        return;
    if (isfinite(b->eps))
        json_object_set_new(o, "epsilon", json_real(b->eps));
    put_figs(o, "figures", s->figs, s->figs_step == b->step ? s->n_figs : 0);
    put_figs(o, "accuracy", b->acc, b->n_acc);
    char *text = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(o);
    if (!text)
        return;
    uint32_t cap = m->o.history_steps;
    if (s->n_entries < cap) {
        s->entries[s->n_entries++] = text;
    } else {   /* full: overwrite the oldest */
        free(s->entries[s->head]);
        s->entries[s->head] = text;
        s->head = (s->head + 1) % cap;
    }
    mx_text_unref(s->history);
    s->history = NULL;
}

static void apply(dp_metrics *m, const mx_staged *e)
{
    if (e->kind == MX_DEAD_LETTER) {
        if (e->reason < DP_REJECT_REASON_COUNT)
            m->rejected[e->reason]++;
        return;
    }
    mx_stream *s = stream_of(m, e->stream, e->stream_len);
    if (!s)
        return;
    s->known = 1;
    if (e->kind == MX_RELEASE) {
        s->synthesizer = e->synthesizer;
        s->steps++;
        s->last_step = e->step;
        s->last_records = e->records;
        memcpy(s->figs, e->figs, sizeof s->figs);
        s->n_figs = e->n_figs;
        s->figs_step = e->step;
        m->steps++;
        mx_hist_observe(&m->close_s, MX_SECONDS_BOUNDS, e->close_s);
        mx_hist_observe(&m->records, MX_RECORDS_BOUNDS, (double)e->records);
        return;
    }
    s->have_budget = 1;
    s->exhausted = e->exhausted;
    s->model = e->model;
    s->spent = e->spent;
    s->total = e->total;
    s->eps = e->eps;
    s->delta = e->delta;
    memcpy(s->mechanism, e->mechanism, sizeof s->mechanism);
    history_add(m, s, e);
}

void dp_metrics_txn_committed(dp_metrics *m, double commit_seconds)
{
    for (size_t i = 0; i < m->n_staged; i++)
        apply(m, &m->staged[i]);
    staged_clear(m);
    m->txn_committed++;
    mx_hist_observe(&m->commit_s, MX_SECONDS_BOUNDS, commit_seconds);
    m->dirty = 1;
}

void dp_metrics_txn_aborted(dp_metrics *m)
{
    staged_clear(m);
    m->txn_aborted++;
    m->dirty = 1;
}

void dp_metrics_restored_stream(dp_metrics *m, const char *id, size_t len, const char *synthesizer,
                                const dp_ledger *l, uint64_t released_steps, int exhausted, double delta)
{
    mx_stream *s = stream_of(m, id, len);
    if (!s)
        return;
    s->synthesizer = synthesizer;
    s->exhausted = exhausted;
    if (s->last_step < released_steps)
        s->last_step = released_steps;
    s->known = 1;
    if (l) {
        s->have_budget = 1;
        s->model = (int)l->model;
        s->spent = l->spent;
        s->total = l->budget;
        s->delta = l->model == DP_PRIVACY_ZCDP ? delta : 0;
        double simple;
        if (dp_privacy_describe((dp_privacy){l->model, l->spent}, delta, &simple, &s->eps) != DP_OK)
            s->eps = NAN;
    }
    m->dirty = 1;
}

void dp_metrics_rewind(dp_metrics *m)
{
    m->rewinds++;
    m->dirty = 1;
}

void dp_metrics_restore_begin(dp_metrics *m, int64_t now_ms)
{
    m->restore_began_ms = now_ms;
    atomic_store(&m->heartbeat_ms, now_ms);
    atomic_store(&m->restoring, 1);
}

void dp_metrics_restore_end(dp_metrics *m, int64_t now_ms)
{
    m->restore_s_last = (double)(now_ms - m->restore_began_ms) / 1000.0;
    m->restore_s_total += m->restore_s_last;
    m->restores++;
    atomic_store(&m->heartbeat_ms, now_ms);
    atomic_store(&m->restoring, 0);
    m->dirty = 1;
}

void dp_metrics_fatal(dp_metrics *m, const char *msg)
{
    pthread_mutex_lock(&m->lock);
    snprintf(m->fatal_msg, sizeof m->fatal_msg, "%s", msg ? msg : "fatal error");
    pthread_mutex_unlock(&m->lock);
    atomic_store(&m->fatal, 1);
}

/* librdkafka's statistics (https://github.com/confluentinc/librdkafka/blob/master/STATISTICS.md):
 * the client's rx/tx bytes and each broker's average round-trip time. */
void dp_metrics_kafka_stats(dp_metrics *m, const char *text, size_t len)
{
    json_error_t je;
    json_t *o = json_loadb(text, len, 0, &je);
    if (!o)
        return;
    json_t *v;
    if ((v = json_object_get(o, "rx_bytes")) && json_is_integer(v))
        m->kafka_rx_bytes = (uint64_t)json_integer_value(v);
    if ((v = json_object_get(o, "tx_bytes")) && json_is_integer(v))
        m->kafka_tx_bytes = (uint64_t)json_integer_value(v);
    json_t *brokers = json_object_get(o, "brokers");
    const char *name;
    json_t *b;
    m->n_brokers = 0;
    json_object_foreach(brokers, name, b)
    {
        json_t *rtt = json_object_get(json_object_get(b, "rtt"), "avg");   /* microseconds */
        if (m->n_brokers >= MX_BROKERS || !json_is_integer(rtt) || json_integer_value(rtt) <= 0)
            continue;
        snprintf(m->broker[m->n_brokers], sizeof m->broker[0], "%s", name);
        m->broker_rtt_s[m->n_brokers++] = (double)json_integer_value(rtt) / 1e6;
    }
    json_decref(o);
    m->dirty = 1;
}

/* --- sharded streams' progress (metrics.h; docs/kafka.md §10) -------------------------- */

int dp_metrics_due(const dp_metrics *m, int64_t now_ms) { return now_ms - m->last_publish_ms >= m->o.publish_ms; }

void dp_metrics_progress_begin(dp_metrics *m)
{
    for (size_t i = 0; i < m->n_prog; i++) {
        free(m->prog[i].id);
        free(m->prog[i].arrived);
    }
    m->n_prog = 0;
}

static mx_progress *progress_add(dp_metrics *m, const char *id, size_t len, int32_t shard, uint64_t step)
{
    if (room((void **)&m->prog, &m->cap_prog, m->n_prog, sizeof *m->prog) != DP_OK)
        return NULL;
    mx_progress *e = &m->prog[m->n_prog];
    memset(e, 0, sizeof *e);
    if (!(e->id = malloc(len + 1)))
        return NULL;
    memcpy(e->id, id, len);
    e->id[len] = '\0';
    e->id_len = len;
    e->shard = shard;
    e->step = step;
    m->n_prog++;
    m->dirty = 1;
    return e;
}

void dp_metrics_shard_progress(dp_metrics *m, const char *id, size_t len, int32_t shard, uint64_t open_step)
{
    if (shard >= 0)
        progress_add(m, id, len, shard, open_step);
}

uint8_t *dp_metrics_release_progress(dp_metrics *m, const char *id, size_t len, uint64_t next_step,
                                     uint32_t shards)
{
    mx_progress *e = progress_add(m, id, len, -1, next_step);
    if (!e || !shards || !(e->arrived = calloc(shards, 1)))
        return NULL;
    e->shards = shards;
    return e->arrived;
}

/* --- views ------------------------------------------------------------------------------- */

void dp_metrics_tick(dp_metrics *m, int64_t now_ms)
{
    atomic_store(&m->heartbeat_ms, now_ms);
    if (now_ms - m->last_publish_ms < m->o.publish_ms)
        return;
    m->last_publish_ms = now_ms;
    dp_metrics_view *v = mx_render(m);
    if (!v)
        return;   /* out of memory: keep serving the last view */
    pthread_mutex_lock(&m->lock);
    dp_metrics_view *old = m->view;
    m->view = v;
    pthread_mutex_unlock(&m->lock);
    dp_metrics_release(m, old);
}

dp_metrics_view *dp_metrics_acquire(dp_metrics *m)
{
    pthread_mutex_lock(&m->lock);
    dp_metrics_view *v = m->view;
    atomic_fetch_add(&v->refs, 1);
    pthread_mutex_unlock(&m->lock);
    return v;
}

void dp_metrics_release(dp_metrics *m, dp_metrics_view *v)
{
    (void)m;
    if (v && atomic_fetch_sub(&v->refs, 1) == 1)
        mx_view_free(v);
}

const char *dp_metrics_view_prometheus(const dp_metrics_view *v, size_t *len)
{
    *len = v->prom->len;
    return v->prom->data;
}

const char *dp_metrics_view_streams(const dp_metrics_view *v, size_t *len)
{
    *len = v->streams->len;
    return v->streams->data;
}

const char *dp_metrics_view_history(const dp_metrics_view *v, const char *id, size_t id_len, size_t *len)
{
    size_t lo = 0, hi = v->n;   /* ids are sorted */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = dp_bytes_key_cmp(v->ids[mid], v->id_lens[mid], id, id_len);
        if (c == 0) {
            *len = v->hist[mid]->len;
            return v->hist[mid]->data;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* --- health -------------------------------------------------------------------------------- */

int dp_metrics_alive(dp_metrics *m, int64_t now_ms, char *why, size_t n)
{
    int64_t hb = atomic_load(&m->heartbeat_ms);
    if (atomic_load(&m->restoring) || hb == 0 || now_ms - hb <= m->o.stall_ms)
        return 1;   /* a restore in progress, or starting up, is not a stuck loop */
    snprintf(why, n, "the processing loop has not turned for %lld ms (limit %lld)", (long long)(now_ms - hb),
             (long long)m->o.stall_ms);
    return 0;
}

int dp_metrics_ready(dp_metrics *m, char *why, size_t n)
{
    if (atomic_load(&m->fatal)) {
        pthread_mutex_lock(&m->lock);
        snprintf(why, n, "stopped: %s", m->fatal_msg);
        pthread_mutex_unlock(&m->lock);
        return 0;
    }
    if (atomic_load(&m->restoring)) {
        snprintf(why, n, "restoring assigned partitions from the state topic");
        return 0;
    }
    if (!atomic_load(&m->joined)) {
        snprintf(why, n, "waiting for the consumer group's partition assignment");
        return 0;
    }
    return 1;
}
