/* export_run.c — one export (export_run.h): complete releases (and budget events,
 * dead letters) out of the output topics, or out of `dpstream replay`'s
 * files, into files downstream tools read.
 *
 *   dpstream export (--config CONFIG.json | --from-replay DIR) --out OUT
 *                   [--layout releases|per-step|single] [--format csv|jsonl]
 *                   [--follow] [--timeout-ms MS]
 *
 * Kafka (--config): a read_committed consumer (docs/design.md §1: downstream
 * sees whole transactions or nothing) of the synthetic, budget and
 * dead-letter topics named by the config.  A message's "dpstream.type"
 * header tells record chunks ("SyntheticRecord") from manifests; bodies
 * are decoded by the codec (codec/codec.h).  Every release goes through
 * the reassembler (export_assemble.h), which writes it only once its
 * manifest has arrived and its chunks match the manifest's chunk count,
 * record count and BLAKE2b checksum — never a partial release.
 *   Without --follow: each topic is read from the beginning to its end,
 *   one partition at a time in ascending order, so the output files are
 *   a deterministic function of the topics' committed contents; then
 *   exit.  With --follow: all partitions of the three topics are read
 *   concurrently from the beginning until SIGINT/SIGTERM (files grow as
 *   releases complete).
 *
 * Replay (--from-replay DIR): DIR/releases.jsonl and DIR/budget.jsonl as
 * `dpstream replay` wrote them.  A release's record lines (which precede
 * its manifest line) form its chunk; the manifest's record_count is
 * checked (replay writes no checksum), so a truncated file never yields a
 * partial release.  Replay writes each release's lines contiguously; if
 * another release's lines were interleaved, the parts would count as
 * separate chunks renumbered from 0 and the release would be refused,
 * never written wrong.  With --layout releases the output reproduces
 * releases.jsonl byte for byte — the round trip tests rely on it.
 *
 * Layouts and formats: export_writer.h.
 *
 * Exit status: 0; 1 when something did not add up — an undecodable
 * message or line, a release whose chunks contradict its manifest, data
 * for a release already written, or (without --follow) releases still
 * incomplete at the end — each reported on stderr; 2 for usage errors.
 * A read_committed export of a healthy pipeline never sees any of these,
 * so a 1 is worth investigating. */
#include <errno.h>
#include "connectors/export/export_run.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "connectors/jsonl/payload_json.h"
#include "connectors/jsonl/update_json.h"
#include "core/dp_error.h"
#include "stream/kafka_util.h"

/* "dpstream export: <message>" on stderr; returns 2 like the CLI's own. */
static int export_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int export_fail(const char *fmt, ...)
{
    va_list ap;
    fputs("dpstream export: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 2;
}

typedef struct export_run {
    dp_export_writer *w;
    dp_export_asm    *as;
    dp_export_sink    sink;
    dp_jbuf           line;
    uint64_t          problems;      /* undecodable input, refused releases */
    uint64_t          budget_events, dead_letters;
    char              err[512];
    volatile sig_atomic_t *stop;     /* set by the caller's signal handler */
    int               with_dead_letters;
} export_run;

static int on_release(void *ctx, const dp_release_manifest *m, const dp_synth_record *r, size_t n)
{
    export_run *x = ctx;
    int rc = dp_export_writer_release(x->w, m, r, n, x->err, sizeof x->err);
    if (rc != DP_OK)
        fprintf(stderr, "dpstream export: %s\n", x->err);
    return rc;
}

static void on_notice(void *ctx, const char *stream, size_t len, uint64_t step, const char *text)
{
    export_run *x = ctx;
    x->problems++;
    fprintf(stderr, "dpstream export: stream '%.*s' step %" PRIu64 ": %s\n", (int)(len < 200 ? len : 200), stream,
            step, text);
}

static void on_pending(void *ctx, const char *stream, size_t len, uint64_t step, const char *what)
{
    (void)ctx;
    fprintf(stderr, "dpstream export: stream '%.*s' step %" PRIu64 " incomplete, not written: %s\n",
            (int)(len < 200 ? len : 200), stream, step, what);
}

/* --- from replay files ------------------------------------------------------------------- */

/* Records of the release being read, with their payload arrays. */
typedef struct replay_chunk {
    char            *stream;
    size_t           stream_len, stream_cap;
    uint64_t         step;
    int              open;
    dp_synth_record *recs;
    size_t           n, cap;
    /* each record's payload array, allocated separately (freed per chunk) */
    void           **arrays;
    size_t           n_arrays, cap_arrays;
    uint32_t         chunks_done;   /* chunks already fed for (stream, step) */
} replay_chunk;

static void chunk_reset(replay_chunk *c)
{
    for (size_t i = 0; i < c->n_arrays; i++)
        free(c->arrays[i]);
    c->n_arrays = 0;
    c->n = 0;
}

static int keep_array(replay_chunk *c, void *p)
{
    if (c->n_arrays == c->cap_arrays) {
        size_t cap = c->cap_arrays ? c->cap_arrays * 2 : 64;
        void **a = realloc(c->arrays, cap * sizeof *a);
        if (!a)
            return -1;
        c->arrays = a;
        c->cap_arrays = cap;
    }
    c->arrays[c->n_arrays++] = p;
    return 0;
}

/* Payload of a record line: exactly one of value, row, point
 * (payload_json.h; arrays may be empty); its array is kept with the
 * chunk.  0, or -1 when the line is not a valid record. */
static int parse_payload(replay_chunk *c, const json_t *o, dp_payload *p)
{
    const json_t *v = json_object_get(o, "value"), *row = json_object_get(o, "row"), *pt = json_object_get(o, "point");
    memset(p, 0, sizeof *p);
    if ((v != NULL) + (row != NULL) + (pt != NULL) != 1)
        return -1;
    dp_payload_buf b;
    memset(&b, 0, sizeof b);
    char err[128];
    int rc = dp_payload_json_parse(v, row, pt, DP_PAYLOAD_JSON_EMPTY_OK, &b, p, err, sizeof err);
    void *array = b.row ? (void *)b.row : (void *)b.point;
    if (array && keep_array(c, array) != 0) {
        dp_payload_buf_free(&b);
        return -1;
    }
    return rc == DP_OK ? 0 : -1;
}

/* Feed the buffered records as the next chunk of their release. */
static int chunk_flush(export_run *x, replay_chunk *c)
{
    if (!c->open)
        return DP_OK;
    int rc = dp_export_asm_chunk(x->as, c->stream, c->stream_len, c->step, c->chunks_done, c->recs, c->n, &x->sink);
    c->chunks_done++;
    chunk_reset(c);
    return rc;
}

static int same_release(const replay_chunk *c, const char *s, size_t n, uint64_t step)
{
    return c->open && c->step == step && c->stream_len == n && memcmp(c->stream, s, n) == 0;
}

static int chunk_start(export_run *x, replay_chunk *c, const char *s, size_t n, uint64_t step)
{
    if (same_release(c, s, n, step))
        return DP_OK;
    int rc = chunk_flush(x, c);
    if (rc != DP_OK)
        return rc;
    if (n + 1 > c->stream_cap) {
        char *p = realloc(c->stream, n + 1);
        if (!p)
            return DP_ENOMEM;
        c->stream = p;
        c->stream_cap = n + 1;
    }
    memcpy(c->stream, s, n);
    c->stream[n] = '\0';
    c->stream_len = n;
    c->step = step;
    c->open = 1;
    c->chunks_done = 0;
    return DP_OK;
}

static void bad_line(export_run *x, const char *file, uint64_t line_no, const char *what)
{
    x->problems++;
    fprintf(stderr, "dpstream export: %s line %" PRIu64 ": %s\n", file, line_no, what);
}

/* A manifest line → dp_export_manifest (debias pairs in the line's order). */
static int replay_manifest(export_run *x, replay_chunk *c, const json_t *o, const char *stream, size_t slen,
                           uint64_t step, const char *file, uint64_t line_no)
{
    const json_t *syn = json_object_get(o, "synthesizer"), *mode = json_object_get(o, "mode"),
                 *count = json_object_get(o, "record_count"), *clamped = json_object_get(o, "clamped"),
                 *debias = json_object_get(o, "debias");
    dp_release_mode rmode;
    if (!json_is_string(syn) || !json_is_string(mode) || !json_is_integer(count) || json_integer_value(count) < 0 ||
        !json_is_boolean(clamped) || !json_is_object(debias) ||
        dp_release_mode_parse(json_string_value(mode), &rmode) != 0) {
        bad_line(x, file, line_no, "not a valid manifest line");
        return DP_OK;
    }
    size_t nd = json_object_size(debias);
    dp_kv *kv = calloc(nd ? nd : 1, sizeof *kv);
    if (!kv)
        return DP_ENOMEM;
    size_t k = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)debias, key, v) {
        kv[k].key = key;
        /* null stands for a non-finite value (update_json.h) */
        kv[k].value = json_is_number(v) ? json_number_value(v) : (double)NAN;
        k++;
    }
    /* the record lines before this manifest are the release's (last) chunk */
    int rc = DP_OK;
    uint32_t chunks = 0;
    if (same_release(c, stream, slen, step)) {
        rc = chunk_flush(x, c);
        chunks = c->chunks_done;
        c->open = 0;
    }
    dp_export_manifest em;
    memset(&em, 0, sizeof em);
    em.m.stream_id = stream;
    em.m.stream_id_len = slen;
    em.m.step = step;
    em.m.synthesizer = json_string_value(syn);
    em.m.mode = rmode;
    em.m.record_count = (uint64_t)json_integer_value(count);
    em.m.clamped = json_is_true(clamped);
    em.m.debias = kv;
    em.m.n_debias = nd;
    em.chunk_count = chunks;
    em.has_checksum = 0;
    if (rc == DP_OK)
        rc = dp_export_asm_manifest(x->as, &em, &x->sink);
    free(kv);
    return rc;
}

static FILE *open_in(const char *dir, const char *name, char *path, size_t path_size)
{
    snprintf(path, path_size, "%s/%s", dir, name);
    return fopen(path, "rb");
}

static int export_from_replay(export_run *x, const char *dir)
{
    char path[4096];
    FILE *f = open_in(dir, "releases.jsonl", path, sizeof path);
    if (!f)
        return export_fail("cannot open %s: %s", path, strerror(errno)), DP_EIO;
    replay_chunk c;
    memset(&c, 0, sizeof c);
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    uint64_t line_no = 0;
    int rc = DP_OK;
    while (rc == DP_OK && (got = getline(&line, &cap, f)) >= 0) {
        line_no++;
        json_error_t jerr;
        json_t *o = json_loadb(line, (size_t)got, JSON_REJECT_DUPLICATES, &jerr);
        const json_t *type = json_object_get(o, "type"), *stream = json_object_get(o, "stream"),
                     *step = json_object_get(o, "step");
        if (!json_is_object(o) || !json_is_string(type) || !json_is_string(stream) ||
            json_string_length(stream) == 0 || !json_is_integer(step) || json_integer_value(step) < 1) {
            bad_line(x, "releases.jsonl", line_no, "not a record or manifest line");
            json_decref(o);
            continue;
        }
        const char *s = json_string_value(stream);
        size_t slen = json_string_length(stream);
        uint64_t st = (uint64_t)json_integer_value(step);
        if (strcmp(json_string_value(type), "record") == 0) {
            const json_t *sid = json_object_get(o, "synthetic_id");
            dp_synth_record r;
            memset(&r, 0, sizeof r);
            if ((rc = chunk_start(x, &c, s, slen, st)) != DP_OK) {
                json_decref(o);
                break;
            }
            if (!json_is_integer(sid) || json_integer_value(sid) < 0 || parse_payload(&c, o, &r.value) != 0) {
                bad_line(x, "releases.jsonl", line_no, "not a valid record line");
                json_decref(o);
                continue;
            }
            r.synthetic_id = (uint64_t)json_integer_value(sid);
            if (c.n == c.cap) {
                size_t ncap = c.cap ? c.cap * 2 : 256;
                dp_synth_record *p = realloc(c.recs, ncap * sizeof *p);
                if (!p) {
                    rc = DP_ENOMEM;
                    json_decref(o);
                    break;
                }
                c.recs = p;
                c.cap = ncap;
            }
            c.recs[c.n++] = r;
        } else if (strcmp(json_string_value(type), "manifest") == 0) {
            rc = replay_manifest(x, &c, o, s, slen, st, "releases.jsonl", line_no);
        } else {
            bad_line(x, "releases.jsonl", line_no, "unknown \"type\"");
        }
        json_decref(o);
    }
    /* trailing records without a manifest stay with the reassembler as an
     * incomplete release (reported, never written) */
    if (rc == DP_OK)
        rc = chunk_flush(x, &c);
    if (rc == DP_OK && ferror(f)) {
        export_fail("read error on %s", path);
        rc = DP_EIO;
    }
    fclose(f);
    chunk_reset(&c);
    free(c.arrays);
    free(c.recs);
    free(c.stream);
    if (rc != DP_OK)
        return rc;

    /* budget events: validated and copied (they are already in the
     * exporter's output format) */
    f = open_in(dir, "budget.jsonl", path, sizeof path);
    if (!f)
        return export_fail("cannot open %s: %s", path, strerror(errno)), DP_EIO;
    line_no = 0;
    while (rc == DP_OK && (got = getline(&line, &cap, f)) >= 0) {
        line_no++;
        json_t *o = json_loadb(line, (size_t)got, 0, NULL);
        const json_t *type = json_object_get(o, "type");
        if (!json_is_object(o) || !json_is_string(type) || strcmp(json_string_value(type), "budget") != 0 ||
            got == 0 || line[got - 1] != '\n') {
            bad_line(x, "budget.jsonl", line_no, "not a budget event line");
        } else {
            rc = dp_export_writer_budget_line(x->w, line, (size_t)got, x->err, sizeof x->err);
            if (rc != DP_OK)
                fprintf(stderr, "dpstream export: %s\n", x->err);
            x->budget_events++;
        }
        json_decref(o);
    }
    fclose(f);
    free(line);
    return rc;
}

/* --- from Kafka ---------------------------------------------------------------------------- */

static void undecodable(export_run *x, const rd_kafka_message_t *m, const char *what, const char *err)
{
    x->problems++;
    fprintf(stderr, "dpstream export: undecodable %s at %s[%" PRId32 "] offset %" PRId64 ": %s\n", what,
            rd_kafka_topic_name(m->rkt), m->partition, m->offset, err);
}

static int on_synthetic(export_run *x, const rd_kafka_message_t *m, dp_codec *codec)
{
    char type[64], err[256];
    dp_kafka_message_type(m, type, sizeof type);
    if (strcmp(type, dp_codec_type_name(DP_CODEC_SYNTHETIC_RECORD)) == 0) {
        dp_codec_chunk c;
        if (dp_codec_decode_chunk(codec, m->payload, m->len, &c, err, sizeof err) != DP_OK) {
            undecodable(x, m, "record chunk", err);
            return DP_OK;
        }
        return dp_export_asm_chunk(x->as, c.stream_id, c.stream_id_len, c.step, c.chunk_index, c.records,
                                   c.n_records, &x->sink);
    }
    if (strcmp(type, dp_codec_type_name(DP_CODEC_RELEASE_MANIFEST)) == 0) {
        dp_codec_manifest cm;
        if (dp_codec_decode_manifest(codec, m->payload, m->len, &cm, err, sizeof err) != DP_OK) {
            undecodable(x, m, "manifest", err);
            return DP_OK;
        }
        dp_export_manifest em;
        memset(&em, 0, sizeof em);
        em.m = cm.m;
        em.chunk_count = cm.chunk_count;
        em.has_checksum = 1;
        memcpy(em.checksum, cm.checksum, sizeof em.checksum);
        return dp_export_asm_manifest(x->as, &em, &x->sink);
    }
    undecodable(x, m, "message", "no \"dpstream.type\" header naming SyntheticRecord or ReleaseManifest");
    return DP_OK;
}

static int on_budget(export_run *x, const rd_kafka_message_t *m, dp_codec *codec)
{
    dp_budget_event e;
    char err[256];
    if (dp_codec_decode_budget(codec, m->payload, m->len, &e, err, sizeof err) != DP_OK) {
        undecodable(x, m, "budget event", err);
        return DP_OK;
    }
    dp_jbuf_reset(&x->line);
    if (dp_update_json_format_budget(&x->line, &e) != 0)
        return DP_ENOMEM;
    x->budget_events++;
    int rc = dp_export_writer_budget_line(x->w, x->line.data, x->line.len, x->err, sizeof x->err);
    if (rc != DP_OK)
        fprintf(stderr, "dpstream export: %s\n", x->err);
    return rc;
}

static void hex(dp_jbuf *b, const void *p, size_t n)
{
    static const char H[] = "0123456789abcdef";
    const unsigned char *s = p;
    dp_jbuf_put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        char two[2] = {H[s[i] >> 4], H[s[i] & 15]};
        dp_jbuf_put(b, two, 2);
    }
    dp_jbuf_put(b, "\"", 1);
}

/* {"topic","partition","offset","reason","text","key_hex"?,"raw_hex"} */
static int on_dead_letter(export_run *x, const rd_kafka_message_t *m, dp_codec *codec)
{
    dp_codec_dead_letter d;
    char err[256];
    if (dp_codec_decode_dead_letter(codec, m->payload, m->len, &d, err, sizeof err) != DP_OK) {
        undecodable(x, m, "dead letter", err);
        return DP_OK;
    }
    dp_jbuf *b = &x->line;
    dp_jbuf_reset(b);
    dp_jbuf_puts(b, "{\"topic\":");
    if (dp_jbuf_string(b, d.topic, strlen(d.topic)) != 0)
        dp_jbuf_puts(b, "null");
    dp_jbuf_puts(b, ",\"partition\":");
    dp_jbuf_i64(b, d.partition);
    dp_jbuf_puts(b, ",\"offset\":");
    dp_jbuf_i64(b, d.offset);
    dp_jbuf_puts(b, ",\"reason\":");
    const char *reason = dp_reject_reason_name(d.reason);
    if (dp_jbuf_string(b, reason, strlen(reason)) != 0)
        dp_jbuf_puts(b, "null");
    dp_jbuf_puts(b, ",\"text\":");
    if (dp_jbuf_string(b, d.text, strlen(d.text)) != 0)
        dp_jbuf_puts(b, "null");
    if (d.key) {
        dp_jbuf_puts(b, ",\"key_hex\":");
        hex(b, d.key, d.key_len);
    }
    dp_jbuf_puts(b, ",\"raw_hex\":");
    hex(b, d.raw, d.raw_len);
    dp_jbuf_puts(b, "}\n");
    if (b->oom)
        return DP_ENOMEM;
    x->dead_letters++;
    int rc = dp_export_writer_dead_letter_line(x->w, b->data, b->len, x->err, sizeof x->err);
    if (rc != DP_OK)
        fprintf(stderr, "dpstream export: %s\n", x->err);
    return rc;
}

typedef int (*topic_handler)(export_run *, const rd_kafka_message_t *, dp_codec *);

static rd_kafka_t *new_consumer(const dp_stream_config *cfg, int follow, char *err, size_t errsz)
{
    /* offsets are never committed: every export reads from the beginning */
    const char *const kv[][2] = {{"group.id", "dpstream-export"},
                                 {"isolation.level", "read_committed"},
                                 {"enable.auto.commit", "false"},
                                 {"enable.partition.eof", "true"},
                                 {"auto.offset.reset", "earliest"}};
    /* Without --follow the end of each partition is reached by a fetch that
     * finds nothing new, which the broker holds for fetch.wait.max.ms
     * (500 ms by default) — per partition, as they are read one at a time.
     * 100 ms keeps an export of many partitions quick (the config's "kafka"
     * object may set it otherwise). */
    const char *const batch_defaults[][2] = {{"fetch.wait.max.ms", "100"}};
    rd_kafka_conf_t *conf = dp_kafka_conf_with_defaults(cfg, dp_kafka_bootstrap_env(), batch_defaults, follow ? 0 : 1,
                                                        kv, 5, err, errsz);
    if (!conf)
        return NULL;
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, errsz);
    return rk;
}

/* With `wait`, a topic that does not exist yet (the processor creates its
 * output topics when it starts) is waited for until SIGINT/SIGTERM;
 * without, it is an error that says what it means. */
static int partition_count(rd_kafka_t *rk, const char *topic, int wait, volatile sig_atomic_t *stop, int *np)
{
    for (int logged = 0;; logged = 1) {
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topic, NULL);
        rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, t, &md, 30000);
        rd_kafka_topic_destroy(t);
        rd_kafka_resp_err_t te = e ? e : md->topic_cnt != 1 ? RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC : md->topics[0].err;
        if (!te)
            *np = md->topics[0].partition_cnt;
        if (md)
            rd_kafka_metadata_destroy(md);
        if (!te)
            return DP_OK;
        int missing = te == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART || te == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
        if (!wait && missing) {
            export_fail("topic %s does not exist: nothing was released under this configuration's topics yet "
                        "(`dpstream run` creates them when it starts; --follow waits for them); nothing written",
                        topic);
            return DP_EIO;
        }
        if (!wait || !missing || (*stop)) {
            export_fail("topic %s: %s", topic, rd_kafka_err2str(te));
            return DP_EIO;
        }
        if (!logged)
            fprintf(stderr, "dpstream export: waiting for topic %s to be created\n", topic);
        for (int i = 0; i < 20 && !(*stop); i++)
            rd_kafka_poll(rk, 100);
    }
}

/* The Kafka side of an export, set up before any output file exists: a
 * broker that does not answer, or a topic that is not there, leaves no
 * empty files behind (export_kafka_open's failures). */
typedef struct kafka_src {
    rd_kafka_t *rk;
    dp_codec   *codec;
    const char *topics[3];
    int         np[3];
    int         nt;
} kafka_src;

static void export_kafka_close(kafka_src *k)
{
    dp_codec_destroy(k->codec);
    if (k->rk) {
        rd_kafka_consumer_close(k->rk);
        rd_kafka_destroy(k->rk);
    }
    memset(k, 0, sizeof *k);
}

/* Connect (within connect_timeout_ms), and learn every topic's partition
 * count (waiting for missing topics only with --follow).  DP_OK; DP_EIO or
 * DP_EINVAL (reported); with --follow, DP_ECANCELED when stopped while
 * waiting. */
static int export_kafka_open(kafka_src *k, export_run *x, const dp_stream_config *cfg, int follow,
                             int connect_timeout_ms)
{
    memset(k, 0, sizeof *k);
    k->topics[0] = cfg->topic_synthetic;
    k->topics[1] = cfg->topic_budget;
    k->topics[2] = cfg->topic_dead_letter;
    /* The dead-letter topic holds raw personal input: read only when asked. */
    k->nt = x->with_dead_letters ? 3 : 2;
    char err[1024];
    if (!(k->rk = new_consumer(cfg, follow, err, sizeof err)))
        return export_fail("%s", err), DP_EINVAL;
    dp_codec_options copts;
    dp_stream_config_codec_options(cfg, &copts);   /* what `dpstream run` writes */
    int rc = dp_codec_create(&k->codec, &copts, err, sizeof err);
    if (rc != DP_OK)
        return export_fail("%s", err), rc;
    if ((rc = dp_kafka_check_reachable(k->rk, connect_timeout_ms > 0 ? connect_timeout_ms
                                                                     : DP_KAFKA_DEFAULT_CONNECT_TIMEOUT_MS,
                                       err, sizeof err)) != DP_OK)
        return export_fail("%s", err), rc;
    for (int t = 0; t < k->nt && rc == DP_OK; t++)
        rc = partition_count(k->rk, k->topics[t], follow, x->stop, &k->np[t]);
    if (rc != DP_OK && follow && (*x->stop))
        rc = DP_ECANCELED;   /* stopped while waiting: nothing read, nothing wrong */
    return rc;
}

static int export_kafka(export_run *x, kafka_src *k, int follow, int64_t timeout_ms)
{
    const char *const *topics = k->topics;
    topic_handler handlers[3] = {on_synthetic, on_budget, on_dead_letter};
    int nt = k->nt, *np = k->np;
    rd_kafka_t *rk = k->rk;
    dp_codec *codec = k->codec;
    int rc = DP_OK;
    if (follow) {
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(np[0] + np[1] + np[2]);
        for (int t = 0; t < nt; t++)
            for (int32_t p = 0; p < np[t]; p++)
                rd_kafka_topic_partition_list_add(l, topics[t], p)->offset = RD_KAFKA_OFFSET_BEGINNING;
        rd_kafka_assign(rk, l);
        rd_kafka_topic_partition_list_destroy(l);
        while (!(*x->stop) && rc == DP_OK) {
            rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 500);
            if (!m)
                continue;
            if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                rd_kafka_message_destroy(m);
                continue;
            }
            if (m->err) {
                fprintf(stderr, "dpstream export: %s\n", rd_kafka_message_errstr(m));
                rd_kafka_message_destroy(m);
                continue;   /* librdkafka retries transient errors itself */
            }
            const char *tn = rd_kafka_topic_name(m->rkt);
            for (int t = 0; t < nt; t++)
                if (strcmp(tn, topics[t]) == 0) {
                    rc = handlers[t](x, m, codec);
                    break;
                }
            rd_kafka_message_destroy(m);
        }
        rd_kafka_assign(rk, NULL);
        goto out;
    }
    /* one topic, then one partition at a time, ascending: the output order
     * is then fixed by the log, not by fetch timing */
    for (int t = 0; t < nt && rc == DP_OK; t++) {
        for (int32_t part = 0; part < np[t] && rc == DP_OK && !(*x->stop); part++) {
            /* A partition with nothing committed in it (low watermark = last
             * stable offset, which a read_committed client is told) has
             * nothing to export: skip it rather than wait for its EOF. */
            int64_t lo = 0, hi = 0;
            if (rd_kafka_query_watermark_offsets(rk, topics[t], part, &lo, &hi, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR &&
                lo >= hi)
                continue;
            rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
            rd_kafka_topic_partition_list_add(l, topics[t], part)->offset = RD_KAFKA_OFFSET_BEGINNING;
            rd_kafka_assign(rk, l);
            rd_kafka_topic_partition_list_destroy(l);
            int64_t waited = 0;
            for (;;) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
                if (!m) {
                    if ((waited += 200) > timeout_ms) {
                        export_fail("timed out reading %s[%" PRId32 "]", topics[t], part);
                        rc = DP_EIO;
                        break;
                    }
                    continue;
                }
                waited = 0;
                if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                    rd_kafka_message_destroy(m);
                    break;
                }
                if (m->err) {
                    export_fail("%s: %s", topics[t], rd_kafka_message_errstr(m));
                    rd_kafka_message_destroy(m);
                    rc = DP_EIO;
                    break;
                }
                rc = handlers[t](x, m, codec);
                rd_kafka_message_destroy(m);
                if (rc != DP_OK)
                    break;
            }
            rd_kafka_assign(rk, NULL);
        }
    }
out:
    return rc;
}

/* --- command ------------------------------------------------------------------------------- */

int dp_export_run(const dp_export_options *o, dp_export_result *r)
{
    memset(r, 0, sizeof *r);
    char err[1024];
    export_run x;
    memset(&x, 0, sizeof x);
    dp_jbuf_init(&x.line);
    x.sink.ctx = &x;
    x.sink.release = on_release;
    x.sink.notice = on_notice;
    x.stop = o->stop;
    x.with_dead_letters = o->cfg && o->dead_letter_path;
    int rc = DP_ENOMEM;
    kafka_src k;
    memset(&k, 0, sizeof k);
    if (dp_export_asm_create(&x.as) != DP_OK) {
        export_fail("out of memory");
        goto done;
    }
    /* Kafka first: an unreachable broker or a missing topic must not leave
     * an output directory of empty files that looks like an empty export. */
    if (!o->replay_dir && (rc = export_kafka_open(&k, &x, o->cfg, o->follow, o->connect_timeout_ms)) != DP_OK) {
        if (rc == DP_ECANCELED)
            rc = DP_OK;
        goto done;
    }
    if ((rc = dp_export_writer_open(&x.w, o->out_dir, o->layout, o->format, o->cfg ? o->dead_letter_path : NULL,
                                    err, sizeof err)) != DP_OK) {
        export_fail("%s", err);
        goto done;
    }
    rc = o->replay_dir ? export_from_replay(&x, o->replay_dir) : export_kafka(&x, &k, o->follow, o->timeout_ms);
    if (rc == DP_ENOMEM)
        export_fail("out of memory");
    if (rc != DP_OK)
        goto done;
    r->pending = dp_export_asm_pending(x.as, on_pending, &x);
    r->stats = *dp_export_asm_stats(x.as);
    r->budget_events = x.budget_events;
    r->dead_letters = x.dead_letters;
    /* after --follow, incomplete releases are ones still in flight */
    r->problems = x.problems || r->stats.late_duplicates || (!o->follow && r->pending);
done:
    if (x.w && dp_export_writer_close(x.w, err, sizeof err) != DP_OK) {
        export_fail("%s", err);
        if (rc == DP_OK)
            rc = DP_EIO;
    }
    export_kafka_close(&k);
    dp_export_asm_destroy(x.as);
    dp_jbuf_free(&x.line);
    return rc;
}
