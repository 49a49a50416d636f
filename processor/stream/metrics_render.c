/* metrics_render.c — a view of the metrics: the Prometheus text exposition
 * format (https://prometheus.io/docs/instrumenting/exposition_formats/),
 * the page's streams JSON and each stream's history JSON.  Streams in id
 * order, so a view is a function of the state alone. */
#include "stream/metrics_internal.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"

const double MX_SECONDS_BOUNDS[MX_BUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                              0.25,  0.5,    1,     2.5,  10,    INFINITY};
const double MX_RECORDS_BOUNDS[MX_BUCKETS] = {1, 10, 100, 1e3, 1e4, 3e4, 1e5, 3e5, 1e6, 3e6, 1e7, 1e8, INFINITY};

mx_text *mx_text_new(const char *s, size_t len)
{
    mx_text *t = malloc(sizeof *t + len + 1);
    if (!t)
        return NULL;
    atomic_init(&t->refs, 1);
    t->len = len;
    memcpy(t->data, s, len);
    t->data[len] = '\0';
    return t;
}

void mx_text_ref(mx_text *t)
{
    if (t)
        atomic_fetch_add(&t->refs, 1);
}

void mx_text_unref(mx_text *t)
{
    if (t && atomic_fetch_sub(&t->refs, 1) == 1)
        free(t);
}

void dp_metrics_escape_label(const char *s, size_t len, char *out, size_t out_size)
{
    size_t k = 0;
    for (size_t i = 0; i < len && k + 3 < out_size; i++) {
        char c = s[i];
        if (c == '\\' || c == '"') {
            out[k++] = '\\';
            out[k++] = c;
        } else if (c == '\n') {
            out[k++] = '\\';
            out[k++] = 'n';
        } else {
            out[k++] = c;
        }
    }
    out[k] = '\0';
}

static void put(dp_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(dp_buf *b, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0)
        dp_buf_put_bytes(b, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

static void head(dp_buf *b, const char *name, const char *type, const char *help)
{
    put(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A float as Prometheus writes it: shortest round trip, +Inf/NaN spelled out. */
static const char *num(char *buf, size_t n, double v)
{
    if (isnan(v))
        return "NaN";
    if (isinf(v))
        return v > 0 ? "+Inf" : "-Inf";
    if (v == floor(v) && fabs(v) < 1e15) {   /* integers as integers: le="10", not "1e+01" */
        snprintf(buf, n, "%.0f", v);
        return buf;
    }
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, n, "%.*g", p, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return buf;
}

static void histogram(dp_buf *b, const char *name, const char *help, const mx_hist *h, const double *bounds)
{
    head(b, name, "histogram", help);
    uint64_t cum = 0;
    char nb[40], sb[40];
    for (int i = 0; i < MX_BUCKETS; i++) {
        cum += h->bucket[i];
        put(b, "%s_bucket{le=\"%s\"} %" PRIu64 "\n", name, num(nb, sizeof nb, bounds[i]), cum);
    }
    put(b, "%s_sum %s\n%s_count %" PRIu64 "\n", name, num(sb, sizeof sb, h->sum), name, h->count);
}

static const char *model_name(int model) { return model == DP_PRIVACY_ZCDP ? "zcdp" : "pure"; }

static void public_metrics(dp_buf *b, const dp_metrics *m, const dp_bytes_map_slot **ss, size_t n)
{
    char nb[40], lb[600];
    head(b, "dpstream_build_info", "gauge", "The running dpstream build (always 1).");
    dp_metrics_escape_label(m->o.version, strlen(m->o.version), lb, sizeof lb);
    put(b, "dpstream_build_info{version=\"%s\"} 1\n", lb);
    head(b, "dpstream_process_start_time_seconds", "gauge", "When the process started (Unix time).");
    put(b, "dpstream_process_start_time_seconds %s\n", num(nb, sizeof nb, m->start_wall_s));
    head(b, "dpstream_streams", "gauge", "Streams with a committed release on this instance.");
    put(b, "dpstream_streams %zu\n", n);
    /* per stream: the labels stream and synthesizer */
    static const struct { const char *name, *type, *help; } PER[] = {
        {"dpstream_stream_status", "gauge", "1 for the stream's status (ACTIVE or EXHAUSTED), 0 for the other."},
        {"dpstream_stream_steps_released_total", "counter", "Steps released (committed) by this instance."},
        {"dpstream_stream_last_step", "gauge", "The last step released."},
        {"dpstream_stream_release_records", "gauge", "Records in the last release (a released figure)."},
        {"dpstream_stream_budget_total", "gauge", "The stream's privacy budget (epsilon or rho, label model)."},
        {"dpstream_stream_budget_spent", "gauge", "Budget spent so far, as the last budget event says."},
        {"dpstream_stream_budget_remaining", "gauge", "Budget total minus spent."},
        {"dpstream_stream_epsilon_spent", "gauge", "The (epsilon, delta) equivalent of the spend (CKS conversion; pure: epsilon)."},
        {"dpstream_stream_delta", "gauge", "The delta of that equivalent (0 for pure epsilon)."},
    };
    for (size_t k = 0; k < sizeof PER / sizeof PER[0]; k++) {
        head(b, PER[k].name, PER[k].type, PER[k].help);
        for (size_t i = 0; i < n; i++) {
            const mx_stream *s = ss[i]->value;
            char id[600], syn[80];
            dp_metrics_escape_label(s->id, s->id_len, id, sizeof id);
            dp_metrics_escape_label(s->synthesizer ? s->synthesizer : "", s->synthesizer ? strlen(s->synthesizer) : 0,
                                    syn, sizeof syn);
            const char *nm = PER[k].name;
            switch (k) {
            case 0:
                put(b, "%s{stream=\"%s\",synthesizer=\"%s\",status=\"ACTIVE\"} %d\n", nm, id, syn, !s->exhausted);
                put(b, "%s{stream=\"%s\",synthesizer=\"%s\",status=\"EXHAUSTED\"} %d\n", nm, id, syn, s->exhausted);
                break;
            case 1:
                put(b, "%s{stream=\"%s\",synthesizer=\"%s\"} %" PRIu64 "\n", nm, id, syn, s->steps);
                break;
            case 2:
                put(b, "%s{stream=\"%s\",synthesizer=\"%s\"} %" PRIu64 "\n", nm, id, syn, s->last_step);
                break;
            case 3:
                put(b, "%s{stream=\"%s\",synthesizer=\"%s\"} %" PRIu64 "\n", nm, id, syn, s->last_records);
                break;
            default: {
                if (!s->have_budget)
                    break;
                double v = k == 4 ? s->total : k == 5 ? s->spent : k == 6 ? fmax(0, s->total - s->spent)
                         : k == 7 ? s->eps : s->delta;
                if (k <= 6)
                    put(b, "%s{stream=\"%s\",synthesizer=\"%s\",model=\"%s\"} %s\n", nm, id, syn,
                        model_name(s->model), num(nb, sizeof nb, v));
                else
                    put(b, "%s{stream=\"%s\",synthesizer=\"%s\"} %s\n", nm, id, syn, num(nb, sizeof nb, v));
            }
            }
        }
    }
    histogram(b, "dpstream_release_records", "Records per committed release (released figures).", &m->records,
              MX_RECORDS_BOUNDS);
}

/* Sharded streams' progress, by stream id then shard (the processor's
 * table order is a hash's), so a view stays a function of the state. */
static int by_stream_shard(const void *a, const void *b)
{
    const mx_progress *x = a, *y = b;
    int c = dp_bytes_key_cmp(x->id, x->id_len, y->id, y->id_len);
    return c ? c : (x->shard > y->shard) - (x->shard < y->shard);
}

static uint32_t waiting(const mx_progress *e)
{
    uint32_t w = 0;
    for (uint32_t i = 0; i < e->shards; i++)
        w += !e->arrived[i];
    return w;
}

/* Public (docs/privacy.md §1): step boundaries, and which shards'
 * statistics of the next step have arrived — each shard publishes them
 * when its step closes, on markers or the step timer, never on data. */
static void progress_metrics(dp_buf *b, const dp_metrics *m)
{
    static const struct { const char *name, *help; int release; } FAM[] = {
        {"dpstream_shard_open_step", "Ingest role: the step a shard (partition) of a sharded stream has open.", 0},
        {"dpstream_shard_closed_step", "Ingest role: the last step a shard closed and published statistics of (0: none).", 0},
        {"dpstream_release_next_step", "Release role: the step of a sharded stream released next.", 1},
        {"dpstream_release_shard_arrived", "Release role: 1 if a shard's statistics of the next step have arrived, 0 while the step waits for it.", 1},
        {"dpstream_release_shards_waiting", "Release role: shards whose statistics of the next step have not arrived.", 1},
    };
    int have[2] = {0, 0};
    for (size_t i = 0; i < m->n_prog; i++)
        have[m->prog[i].shard < 0] = 1;
    for (size_t k = 0; k < sizeof FAM / sizeof FAM[0]; k++) {
        if (!have[FAM[k].release])
            continue;
        head(b, FAM[k].name, "gauge", FAM[k].help);
        for (size_t i = 0; i < m->n_prog; i++) {
            const mx_progress *e = &m->prog[i];
            if ((e->shard < 0) != FAM[k].release)
                continue;
            char id[600];
            dp_metrics_escape_label(e->id, e->id_len, id, sizeof id);
            if (k < 2)
                put(b, "%s{stream=\"%s\",shard=\"%" PRId32 "\"} %" PRIu64 "\n", FAM[k].name, id, e->shard,
                    k == 0 ? e->step : e->step - 1);
            else if (k == 3)
                for (uint32_t s = 0; s < e->shards; s++)
                    put(b, "%s{stream=\"%s\",shard=\"%" PRIu32 "\"} %d\n", FAM[k].name, id, s, e->arrived[s]);
            else
                put(b, "%s{stream=\"%s\"} %" PRIu64 "\n", FAM[k].name, id, k == 2 ? e->step : waiting(e));
        }
    }
}

static json_t *progress_json(const dp_metrics *m)
{
    json_t *shards = json_array(), *releases = json_array();
    for (size_t i = 0; i < m->n_prog; i++) {
        const mx_progress *e = &m->prog[i];
        if (e->shard >= 0) {
            json_array_append_new(shards, json_pack("{s:s%, s:i, s:I, s:I}", "stream", e->id, e->id_len, "shard",
                                                    (int)e->shard, "open_step", (json_int_t)e->step, "closed_step",
                                                    (json_int_t)(e->step - 1)));
            continue;
        }
        json_t *arrived = json_array(), *wait = json_array();
        for (uint32_t s = 0; s < e->shards; s++)
            json_array_append_new(e->arrived[s] ? arrived : wait, json_integer(s));
        json_array_append_new(releases, json_pack("{s:s%, s:I, s:I, s:o, s:o}", "stream", e->id, e->id_len,
                                                  "next_step", (json_int_t)e->step, "shards", (json_int_t)e->shards,
                                                  "arrived", arrived, "waiting", wait));
    }
    return json_pack("{s:o, s:o}", "shards", shards, "releases", releases);
}

static void input_metrics(dp_buf *b, const dp_metrics *m)
{
    char nb[40];
    head(b, "dpstream_updates_consumed_total", "counter",
         "Input messages handled, by partition (re-reads after a rewind count again). Input class: exact counts of "
         "private input.");
    for (int32_t i = 0; i < m->n_parts; i++)
        if (m->consumed[i])
            put(b, "dpstream_updates_consumed_total{partition=\"%" PRId32 "\"} %" PRIu64 "\n", i, m->consumed[i]);
    head(b, "dpstream_updates_accepted_total", "counter", "Updates a synthesizer took (or held for the next step).");
    put(b, "dpstream_updates_accepted_total %" PRIu64 "\n", m->accepted);
    head(b, "dpstream_updates_rejected_total", "counter", "Dead letters committed, by reason.");
    for (int r = 1; r < DP_REJECT_REASON_COUNT; r++)
        put(b, "dpstream_updates_rejected_total{reason=\"%s\"} %" PRIu64 "\n", dp_reject_reason_name((dp_reject_reason)r),
            m->rejected[r]);
    head(b, "dpstream_steps_released_total", "counter", "Steps released (committed), all streams.");
    put(b, "dpstream_steps_released_total %" PRIu64 "\n", m->steps);
    histogram(b, "dpstream_close_step_seconds", "Time to close a step: noise, release and snapshot (before the commit).",
              &m->close_s, MX_SECONDS_BOUNDS);
    histogram(b, "dpstream_commit_seconds", "Time from a transaction's hand-off to its commit.", &m->commit_s,
              MX_SECONDS_BOUNDS);
    head(b, "dpstream_consumer_lag_messages", "gauge", "High watermark minus the handled position, by assigned partition.");
    for (int32_t i = 0; i < m->n_parts; i++)
        if (m->lag[i] >= 0)
            put(b, "dpstream_consumer_lag_messages{partition=\"%" PRId32 "\"} %" PRId64 "\n", i, m->lag[i]);
    head(b, "dpstream_assigned_partitions", "gauge", "Partitions of the updates topic assigned to this instance.");
    put(b, "dpstream_assigned_partitions %d\n", m->assigned);
    head(b, "dpstream_transactions_total", "counter", "Kafka transactions, by outcome.");
    put(b, "dpstream_transactions_total{outcome=\"committed\"} %" PRIu64 "\n", m->txn_committed);
    put(b, "dpstream_transactions_total{outcome=\"aborted\"} %" PRIu64 "\n", m->txn_aborted);
    head(b, "dpstream_rewinds_total", "counter", "Restores after an aborted transaction.");
    put(b, "dpstream_rewinds_total %" PRIu64 "\n", m->rewinds);
    head(b, "dpstream_restores_total", "counter", "Restores from the state topic (assignments and rewinds).");
    put(b, "dpstream_restores_total %" PRIu64 "\n", m->restores);
    head(b, "dpstream_restore_seconds_total", "counter", "Time spent restoring.");
    put(b, "dpstream_restore_seconds_total %s\n", num(nb, sizeof nb, m->restore_s_total));
    head(b, "dpstream_last_restore_seconds", "gauge", "The last restore's duration.");
    put(b, "dpstream_last_restore_seconds %s\n", num(nb, sizeof nb, m->restore_s_last));
    head(b, "dpstream_kafka_rx_bytes_total", "counter", "Bytes the consumer received (librdkafka statistics).");
    put(b, "dpstream_kafka_rx_bytes_total %" PRIu64 "\n", m->kafka_rx_bytes);
    head(b, "dpstream_kafka_tx_bytes_total", "counter", "Bytes the consumer sent (librdkafka statistics).");
    put(b, "dpstream_kafka_tx_bytes_total %" PRIu64 "\n", m->kafka_tx_bytes);
    head(b, "dpstream_kafka_broker_rtt_seconds", "gauge", "Average broker round-trip time (librdkafka statistics).");
    for (int i = 0; i < m->n_brokers; i++) {
        char lb[160];
        dp_metrics_escape_label(m->broker[i], strlen(m->broker[i]), lb, sizeof lb);
        put(b, "dpstream_kafka_broker_rtt_seconds{broker=\"%s\"} %s\n", lb, num(nb, sizeof nb, m->broker_rtt_s[i]));
    }
}

static json_t *streams_json(const dp_metrics *m, const dp_bytes_map_slot **ss, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        const mx_stream *s = ss[i]->value;
        json_t *o = json_pack("{s:s%, s:s, s:s, s:I, s:I, s:I}", "id", s->id, s->id_len, "synthesizer",
                              s->synthesizer ? s->synthesizer : "", "status", s->exhausted ? "EXHAUSTED" : "ACTIVE",
                              "steps_released", (json_int_t)s->steps, "last_step", (json_int_t)s->last_step,
                              "last_records", (json_int_t)s->last_records);
        if (o && s->have_budget) {
            json_object_set_new(o, "model", json_string(model_name(s->model)));
            json_object_set_new(o, "budget_total", json_real(s->total));
            json_object_set_new(o, "spent_total", json_real(s->spent));
            json_object_set_new(o, "remaining", json_real(fmax(0, s->total - s->spent)));
            if (isfinite(s->eps))
                json_object_set_new(o, "epsilon", json_real(s->eps));
            json_object_set_new(o, "delta", json_real(s->delta));
            json_object_set_new(o, "mechanism", json_string(s->mechanism));
        }
        json_array_append_new(arr, o);
    }
    json_t *root = json_pack("{s:o, s:b}", "streams", arr, "input_metrics", m->o.input_metrics);
    if (root && m->n_prog)
        json_object_set_new(root, "sharded", progress_json(m));
    if (root && m->o.input_metrics) {
        json_t *dl = json_object(), *lag = json_object();
        for (int r = 1; r < DP_REJECT_REASON_COUNT; r++)
            if (m->rejected[r])
                json_object_set_new(dl, dp_reject_reason_name((dp_reject_reason)r), json_integer((json_int_t)m->rejected[r]));
        for (int32_t i = 0; i < m->n_parts; i++)
            if (m->lag[i] >= 0) {
                char k[16];
                snprintf(k, sizeof k, "%" PRId32, i);
                json_object_set_new(lag, k, json_integer(m->lag[i]));
            }
        json_object_set_new(root, "input", json_pack("{s:o, s:o}", "dead_letters", dl, "lag", lag));
    }
    return root;
}

mx_text *mx_stream_history(mx_stream *s)
{
    if (s->history)
        return s->history;
    dp_buf b;
    dp_buf_init(&b);
    json_t *head_o = json_pack("{s:s%, s:s}", "id", s->id, s->id_len, "synthesizer", s->synthesizer ? s->synthesizer : "");
    char *h = head_o ? json_dumps(head_o, JSON_COMPACT) : NULL;
    json_decref(head_o);
    if (!h)
        return NULL;
    /* {"id":…,"synthesizer":…,"history":[entries oldest first]} */
    dp_buf_put_bytes(&b, h, strlen(h) - 1);
    free(h);
    dp_buf_put_bytes(&b, ",\"history\":[", 12);
    uint32_t cap = s->n_entries, first = s->head;
    for (uint32_t i = 0; i < cap; i++) {
        const char *e = s->entries[(first + i) % cap];
        if (i)
            dp_buf_put_bytes(&b, ",", 1);
        dp_buf_put_bytes(&b, e, strlen(e));
    }
    dp_buf_put_bytes(&b, "]}", 2);
    s->history = dp_buf_status(&b) == 0 ? mx_text_new((const char *)b.data, b.len) : NULL;
    dp_buf_free(&b);
    return s->history;
}

void mx_view_free(dp_metrics_view *v)
{
    if (!v)
        return;
    mx_text_unref(v->prom);
    mx_text_unref(v->streams);
    for (size_t i = 0; i < v->n; i++) {
        free(v->ids[i]);
        mx_text_unref(v->hist[i]);
    }
    free(v->ids);
    free(v->id_lens);
    free(v->hist);
    free(v);
}

static int has_release(const void *value) { return ((const mx_stream *)value)->known; }

dp_metrics_view *mx_render(dp_metrics *m)
{
    dp_metrics_view *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    atomic_init(&v->refs, 1);
    size_t n = 0;
    const dp_bytes_map_slot **ss = m->streams.count ? dp_bytes_map_sorted(&m->streams, has_release, &n) : NULL;
    if (m->streams.count && !ss) {
        free(v);
        return NULL;
    }
    dp_buf b;
    dp_buf_init(&b);
    if (m->n_prog)
        qsort(m->prog, m->n_prog, sizeof *m->prog, by_stream_shard);
    public_metrics(&b, m, ss, n);
    progress_metrics(&b, m);
    if (m->o.input_metrics)
        input_metrics(&b, m);
    json_t *sj = streams_json(m, ss, n);
    char *st = sj ? json_dumps(sj, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(sj);
    int ok = dp_buf_status(&b) == 0 && st;
    if (ok) {
        v->prom = mx_text_new((const char *)b.data, b.len);
        v->streams = mx_text_new(st, strlen(st));
        v->ids = calloc(n ? n : 1, sizeof *v->ids);
        v->id_lens = calloc(n ? n : 1, sizeof *v->id_lens);
        v->hist = calloc(n ? n : 1, sizeof *v->hist);
        ok = v->prom && v->streams && v->ids && v->id_lens && v->hist;
    }
    for (size_t i = 0; ok && i < n; i++) {
        mx_stream *s = (mx_stream *)ss[i]->value;
        mx_text *h = mx_stream_history(s);
        if (!h || !(v->ids[i] = malloc(s->id_len + 1))) {
            ok = 0;
            break;
        }
        memcpy(v->ids[i], s->id, s->id_len + 1);
        v->id_lens[i] = s->id_len;
        mx_text_ref(h);
        v->hist[i] = h;
        v->n = i + 1;
    }
    free(st);
    free(ss);
    dp_buf_free(&b);
    if (!ok) {
        mx_view_free(v);
        return NULL;
    }
    return v;
}
