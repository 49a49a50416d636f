/* cmd_export.c — `dpstream export`: read the committed contents of the
 * output topics and write them as JSON lines (the seed of the Kafka ->
 * JSONL exporter).
 *
 *   dpstream export --config CONFIG.json --out DIR [--timeout-ms MS]
 *
 * Reads the synthetic, budget and dead-letter topics of the config from
 * the beginning to their end with isolation.level=read_committed (whole
 * transactions only) and writes, per topic partition in ascending
 * partition order and log order within a partition:
 *   DIR/releases.jsonl    record lines then the manifest line of each step,
 *                         in the exact format of `dpstream replay`
 *   DIR/budget.jsonl      budget events, format of `dpstream replay`
 *   DIR/deadletter.jsonl  {"topic","partition","offset","reason","text",
 *                          "key_hex"?, "raw_hex"} per dead letter
 * Since all messages of one stream share a partition, each stream's lines
 * appear in the order the processor released them, so they can be
 * compared with replay's output stream by stream.
 *
 * Consistency checks (exit 1 if any fails): every release's chunks are
 * numbered 0..chunk_count-1 in order before its manifest, the manifest's
 * record_count equals the records received, and no (stream, step) is
 * released twice. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app/cli.h"
#include "app/update_json.h"
#include "core/dp_error.h"
#include "stream/bytes_map.h"
#include "stream/kafka_util.h"
#include "stream/log.h"
#include "stream/stream_config.h"
#include "stream/wire.h"

static void export_usage(FILE *f)
{
    fprintf(f,
            "usage: dpstream export --config CONFIG.json --out DIR [--timeout-ms MS]\n"
            "\n"
            "Reads the committed synthetic, budget and dead-letter topics to their end\n"
            "and writes DIR/releases.jsonl, DIR/budget.jsonl and DIR/deadletter.jsonl\n"
            "(the format of `dpstream replay`).  Checks every release against its\n"
            "manifest; exit 1 if one does not match.\n");
}

/* Per (stream) progress of the release being read. */
typedef struct release_track {
    uint64_t step;            /* step of the chunks seen since the last manifest */
    uint32_t chunks;
    uint64_t records;
    uint64_t last_released;   /* last manifest step (0: none) */
} release_track;

typedef struct export_ctx {
    dp_jbuf       out;
    dp_bytes_map  track;
    int           inconsistent;
    uint64_t      n;
} export_ctx;

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

static release_track *track_of(export_ctx *x, const char *id, size_t len)
{
    dp_bytes_map_slot *s = dp_bytes_map_upsert(&x->track, id, len);
    if (!s)
        return NULL;
    if (!s->value)
        s->value = calloc(1, sizeof(release_track));
    return s->value;
}

static void inconsistent(export_ctx *x, const char *stream, uint64_t step, const char *what)
{
    fprintf(stderr, "dpstream export: stream '%s' step %" PRIu64 ": %s\n", stream, step, what);
    x->inconsistent = 1;
}

static int on_synthetic(export_ctx *x, const rd_kafka_message_t *m, dp_wire_arena *a)
{
    dp_wire_output_kind kind;
    dp_wire_chunk c;
    dp_release_manifest man;
    uint32_t chunk_count = 0;
    char err[256];
    if (dp_wire_decode_synthetic(m->payload, m->len, a, &kind, &c, &man, &chunk_count, err, sizeof err) != DP_OK) {
        fprintf(stderr, "dpstream export: undecodable synthetic message at partition %" PRId32 " offset %" PRId64
                        ": %s\n", m->partition, m->offset, err);
        x->inconsistent = 1;
        return DP_OK;
    }
    if (kind == DP_WIRE_CHUNK) {
        release_track *t = track_of(x, c.stream_id, c.stream_id_len);
        if (!t)
            return DP_ENOMEM;
        if (t->chunks == 0)
            t->step = c.step;
        if (c.step != t->step || c.index != t->chunks)
            inconsistent(x, c.stream_id, c.step, "chunk out of order");
        t->chunks++;
        t->records += c.n;
        for (size_t i = 0; i < c.n; i++)
            if (dp_update_json_format_record(&x->out, c.stream_id, c.stream_id_len, c.step, &c.records[i]) != 0)
                return DP_ENOMEM;
        return DP_OK;
    }
    release_track *t = track_of(x, man.stream_id, man.stream_id_len);
    if (!t)
        return DP_ENOMEM;
    if (t->chunks && t->step != man.step)
        inconsistent(x, man.stream_id, man.step, "manifest for another step than its chunks");
    if (t->chunks != chunk_count)
        inconsistent(x, man.stream_id, man.step, "chunk count differs from the manifest");
    if (t->records != man.record_count)
        inconsistent(x, man.stream_id, man.step, "record count differs from the manifest");
    if (man.step <= t->last_released)
        inconsistent(x, man.stream_id, man.step, "step released twice or out of order");
    t->last_released = man.step;
    t->chunks = 0;
    t->records = 0;
    if (dp_update_json_format_manifest(&x->out, &man) != 0)
        return DP_ENOMEM;
    x->n++;
    return DP_OK;
}

static int on_budget(export_ctx *x, const rd_kafka_message_t *m, dp_wire_arena *a)
{
    dp_budget_event e;
    char err[256];
    if (dp_wire_decode_budget(m->payload, m->len, a, &e, err, sizeof err) != DP_OK) {
        fprintf(stderr, "dpstream export: undecodable budget event at offset %" PRId64 ": %s\n", m->offset, err);
        x->inconsistent = 1;
        return DP_OK;
    }
    x->n++;
    return dp_update_json_format_budget(&x->out, &e) == 0 ? DP_OK : DP_ENOMEM;
}

static int on_dead_letter(export_ctx *x, const rd_kafka_message_t *m, dp_wire_arena *a)
{
    dp_dead_letter d;
    char err[256];
    if (dp_wire_decode_dead_letter(m->payload, m->len, a, &d, err, sizeof err) != DP_OK) {
        fprintf(stderr, "dpstream export: undecodable dead letter at offset %" PRId64 ": %s\n", m->offset, err);
        x->inconsistent = 1;
        return DP_OK;
    }
    dp_jbuf *b = &x->out;
    dp_jbuf_puts(b, "{\"topic\":");
    if (dp_jbuf_string(b, d.topic, strlen(d.topic)) != 0)
        dp_jbuf_puts(b, "null");
    dp_jbuf_puts(b, ",\"partition\":");
    dp_jbuf_i64(b, d.partition);
    dp_jbuf_puts(b, ",\"offset\":");
    dp_jbuf_i64(b, d.offset);
    dp_jbuf_puts(b, ",\"reason\":");
    if (dp_jbuf_string(b, d.reason, strlen(d.reason)) != 0)
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
    x->n++;
    return b->oom ? DP_ENOMEM : DP_OK;
}

/* Read one topic to its (read_committed) end. */
static int export_topic(const dp_stream_config *cfg, const char *topic, int64_t timeout_ms, export_ctx *x,
                        int (*on)(export_ctx *, const rd_kafka_message_t *, dp_wire_arena *))
{
    char err[512];
    const char *const kv[][2] = {{"group.id", "dpstream-export"},
                                 {"isolation.level", "read_committed"},
                                 {"enable.auto.commit", "false"},
                                 {"enable.partition.eof", "true"},
                                 {"auto.offset.reset", "earliest"}};
    rd_kafka_conf_t *conf = dp_kafka_conf(cfg, dp_kafka_bootstrap_env(), kv, 5, err, sizeof err);
    if (!conf)
        return cli_fail("export", "%s", err), DP_EINVAL;
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk)
        return cli_fail("export", "%s", err), DP_EINVAL;
    int rc = DP_OK;
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topic, NULL);
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, t, &md, 30000);
    rd_kafka_topic_destroy(t);
    if (e || md->topic_cnt != 1 || md->topics[0].err) {
        cli_fail("export", "topic %s: %s", topic, rd_kafka_err2str(e ? e : md->topics[0].err));
        rc = DP_EIO;
        goto out;
    }
    int np = md->topics[0].partition_cnt;
    dp_wire_arena a;
    dp_wire_arena_init(&a);
    /* one partition at a time, ascending, so the output order is fixed */
    for (int32_t part = 0; part < np && rc == DP_OK; part++) {
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, topic, part)->offset = RD_KAFKA_OFFSET_BEGINNING;
        rd_kafka_assign(rk, l);
        rd_kafka_topic_partition_list_destroy(l);
        int64_t waited = 0;
        for (;;) {
            rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
            if (!m) {
                if ((waited += 200) > timeout_ms) {
                    cli_fail("export", "timed out reading %s[%" PRId32 "]", topic, part);
                    rc = DP_EIO;
                    break;
                }
                continue;
            }
            if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                rd_kafka_message_destroy(m);
                break;
            }
            if (m->err) {
                cli_fail("export", "%s: %s", topic, rd_kafka_message_errstr(m));
                rd_kafka_message_destroy(m);
                rc = DP_EIO;
                break;
            }
            dp_wire_arena_clear(&a);
            rc = on(x, m, &a);
            rd_kafka_message_destroy(m);
            if (rc != DP_OK)
                break;
        }
        rd_kafka_assign(rk, NULL);
    }
    dp_wire_arena_free(&a);
out:
    if (md)
        rd_kafka_metadata_destroy(md);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return rc;
}

static int write_file(const char *dir, const char *name, const dp_jbuf *b)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return cli_fail("export", "cannot create %s: %s", path, strerror(errno)), -1;
    size_t w = b->len ? fwrite(b->data, 1, b->len, f) : 0;
    if (fclose(f) != 0 || w != b->len)
        return cli_fail("export", "write failed: %s", path), -1;
    return 0;
}

static void free_track(void *v, void *ctx) { (void)ctx; free(v); }
static int keep_none(void *v, void *ctx) { (void)v; (void)ctx; return 0; }

int cmd_export(int argc, char **argv)
{
    const char *cmd = "export";
    const char *config_path = NULL, *out_dir = NULL;
    uint64_t timeout_ms = 60000;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            export_usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            export_usage(stderr);
            return cli_fail(cmd, "option %s needs a value (or is unknown)", a);
        }
        const char *v = argv[++i];
        if (strcmp(a, "--config") == 0) config_path = v;
        else if (strcmp(a, "--out") == 0) out_dir = v;
        else if (strcmp(a, "--timeout-ms") == 0) {
            if (cli_parse_u64(v, &timeout_ms) != 0 || timeout_ms > (1ull << 40))
                return cli_fail(cmd, "--timeout-ms: not a non-negative integer");
        } else {
            export_usage(stderr);
            return cli_fail(cmd, "unknown option '%s'", a);
        }
    }
    if (!config_path || !out_dir) {
        export_usage(stderr);
        return cli_fail(cmd, "--config and --out are required");
    }
    char err[1024];
    dp_stream_config *cfg = NULL;
    if (dp_stream_config_load_file(&cfg, config_path, err, sizeof err) != DP_OK)
        return cli_fail(cmd, "%s", err);
    if (mkdir(out_dir, 0755) != 0 && errno != EEXIST) {
        dp_stream_config_free(cfg);
        return cli_fail(cmd, "cannot create directory %s: %s", out_dir, strerror(errno));
    }
    int status = 1;
    export_ctx x;
    memset(&x, 0, sizeof x);
    dp_jbuf_init(&x.out);
    dp_bytes_map_init(&x.track);
    uint64_t n_rel = 0, n_bud = 0, n_dlq = 0;
    if (export_topic(cfg, cfg->topic_synthetic, (int64_t)timeout_ms, &x, on_synthetic) != DP_OK ||
        write_file(out_dir, "releases.jsonl", &x.out) != 0)
        goto done;
    n_rel = x.n;
    x.n = 0;
    for (size_t i = 0; i < x.track.cap; i++) {
        release_track *t = x.track.slots[i].key ? x.track.slots[i].value : NULL;
        if (t && t->chunks)
            inconsistent(&x, x.track.slots[i].key, t->step, "chunks without a manifest");
    }
    dp_jbuf_reset(&x.out);
    if (export_topic(cfg, cfg->topic_budget, (int64_t)timeout_ms, &x, on_budget) != DP_OK ||
        write_file(out_dir, "budget.jsonl", &x.out) != 0)
        goto done;
    n_bud = x.n;
    x.n = 0;
    dp_jbuf_reset(&x.out);
    if (export_topic(cfg, cfg->topic_dead_letter, (int64_t)timeout_ms, &x, on_dead_letter) != DP_OK ||
        write_file(out_dir, "deadletter.jsonl", &x.out) != 0)
        goto done;
    n_dlq = x.n;
    if (x.out.oom) {
        cli_fail(cmd, "out of memory");
        goto done;
    }
    printf("export: %" PRIu64 " releases, %" PRIu64 " budget events, %" PRIu64 " dead letters\n", n_rel, n_bud,
           n_dlq);
    status = x.inconsistent ? 1 : 0;
done:
    dp_bytes_map_filter(&x.track, keep_none, free_track, NULL);
    dp_bytes_map_free(&x.track);
    dp_jbuf_free(&x.out);
    dp_stream_config_free(cfg);
    return status;
}
