/* cmd_produce.c — `dpstream produce`: load update JSON lines into the
 * updates topic as Avro `Update` messages keyed by stream id (the seed of
 * the JSONL -> Kafka loader).
 *
 *   dpstream produce --config CONFIG.json --input UPDATES.jsonl
 *                    [--partitions N] [--raw-invalid] [--connect-timeout-ms MS] [--log-format text|json]
 *
 * The updates topic of the config is created if it does not exist, with
 * the config's "topics.partitions" (default 4; --partitions N overrides)
 * and "topics.replication_factor", as every command creates topics
 * (kafka_util.h).  A broker that does not answer within the connect
 * timeout (default 10 s) is reported at once (exit 4), and while the last
 * messages wait for their acknowledgements the wait is shown on stderr.
 * Lines are produced in file order by one
 * idempotent producer (acks=all), so each partition holds its streams'
 * lines in file order — the order `dpstream replay` reads them in.  A line
 * that is not a valid update is refused (exit 1) unless --raw-invalid,
 * which produces its bytes unchanged with no key: a way to put malformed
 * input on the topic for dead-letter tests.
 * DPSTREAM_BOOTSTRAP_SERVERS overrides bootstrap.servers.
 *
 * Owns: the parsed options, the producer, the codec.  Calls: update_json
 * (parsing lines), codec (encoding), kafka_util (configuration, topics). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "connectors/jsonl/update_json.h"
#include "core/buf.h"
#include "core/dp_error.h"
#include "stream/kafka_util.h"
#include "stream/log.h"
#include "stream/stream_config.h"
#include "codec/codec.h"

static void produce_usage(FILE *f)
{
    if (f == stderr && dp_log_get_format() == DP_LOG_FORMAT_JSON)
        return;   /* stderr carries JSON lines only */
    fprintf(f,
            "usage: dpstream produce --config CONFIG.json --input UPDATES.jsonl\n"
            "                        [--partitions N] [--raw-invalid] [--connect-timeout-ms MS]\n"
            "                        [--log-format text|json]\n"
            "\n"
            "Encodes update JSON lines (\"-\" reads stdin) as Avro and produces them to the\n"
            "config's updates topic, keyed by stream id, in file order.  Creates the topic\n"
            "if missing, with the config's topics.partitions (default 4; --partitions N\n"
            "overrides) and topics.replication_factor.  --raw-invalid sends lines that are\n"
            "not valid updates as raw bytes (for dead-letter tests) instead of failing.\n"
            "--connect-timeout-ms: give up (exit 4) when no broker answers this long\n"
            "(default 10000).  --log-format json writes stderr as JSON lines (as `dpstream run`).\n");
}

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    if (m->err) {
        int *failed = opaque;
        *failed = 1;
        dp_log(DP_LOG_ERROR, "delivery failed: %s", rd_kafka_err2str(m->err));
    }
}

static int send_one(rd_kafka_t *rk, const char *topic, const void *key, size_t key_len, const void *val,
                    size_t len)
{
    for (;;) {
        rd_kafka_resp_err_t e = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY((void *)key, key_len),
                                                  RD_KAFKA_V_HEADER("dpstream.type", "Update", -1),
                                                  RD_KAFKA_V_VALUE((void *)val, len),
                                                  RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (!e)
            return 0;
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            dp_log(DP_LOG_ERROR, "produce: %s", rd_kafka_err2str(e));
            return -1;
        }
        rd_kafka_poll(rk, 50);
    }
}

/* The command line, as parsed. */
typedef struct produce_args {
    const char *config_path, *input_path;
    uint64_t    partitions, connect_ms;   /* partitions 0: the config's */
    int         raw_invalid;
} produce_args;

/* Parse argv into a; -1 to go on, else the exit status (--help: 0). */
static int parse_produce_args(const char *cmd, int argc, char **argv, produce_args *a)
{
    *a = (produce_args){.connect_ms = DP_KAFKA_DEFAULT_CONNECT_TIMEOUT_MS};
    if (cli_log_format_option(cmd, argc, argv) != 0)
        return CLI_EXIT_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
            produce_usage(stdout);
            return 0;
        }
        if (strcmp(o, "--raw-invalid") == 0) {
            a->raw_invalid = 1;
            continue;
        }
        if (i + 1 >= argc) {
            produce_usage(stderr);
            return cli_fail(cmd, "option %s needs a value (or is unknown)", o);
        }
        const char *v = argv[++i];
        if (strcmp(o, "--config") == 0) a->config_path = v;
        else if (strcmp(o, "--input") == 0) a->input_path = v;
        else if (strcmp(o, "--log-format") == 0) continue;   /* cli_log_format_option took it */
        else if (strcmp(o, "--partitions") == 0) {
            if (cli_parse_u64(v, &a->partitions) != 0 || a->partitions < 1 || a->partitions > 10000)
                return cli_fail(cmd, "--partitions must be in 1..10000");
        } else if (strcmp(o, "--connect-timeout-ms") == 0) {
            if (cli_parse_u64(v, &a->connect_ms) != 0 || a->connect_ms < 1 || a->connect_ms > 3600000)
                return cli_fail(cmd, "--connect-timeout-ms must be in 1..3600000");
        } else {
            produce_usage(stderr);
            return cli_fail(cmd, "unknown option '%s'", o);
        }
    }
    if (!a->config_path || !a->input_path) {
        produce_usage(stderr);
        return cli_fail(cmd, "--config and --input are required");
    }
    return -1;
}

/* An idempotent producer (deliveries that fail set *failed), the codec,
 * and the updates topic; -1 to go on, else the exit status. */
static int open_producer(const char *cmd, const dp_stream_config *cfg, const produce_args *a, int *failed,
                         rd_kafka_t **rk, dp_codec **codec)
{
    char err[1024];
    /* no auto-creation: the topic is created below with the configured
     * partitions, or the produce fails rather than make a 1-partition one */
    const char *const kv[][2] = {{"enable.idempotence", "true"}, {"acks", "all"}, {"linger.ms", "5"},
                                 {"allow.auto.create.topics", "false"}};
    rd_kafka_conf_t *conf = dp_kafka_conf(cfg, dp_kafka_bootstrap_env(), kv, 4, err, sizeof err);
    if (!conf)
        return cli_fail(cmd, "%s", err);
    rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
    rd_kafka_conf_set_opaque(conf, failed);
    if (!(*rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err)))
        return cli_fail(cmd, "%s", err);
    dp_codec_options copts;
    dp_stream_config_codec_options(cfg, &copts);
    if (dp_codec_create(codec, &copts, err, sizeof err) != DP_OK ||
        dp_kafka_check_reachable(*rk, (int)a->connect_ms, err, sizeof err) != DP_OK) {
        cli_fail(cmd, "%s", err);
        return CLI_EXIT_KAFKA;
    }
    dp_topic_spec spec = dp_kafka_topic_spec(cfg, cfg->topic_updates, 0);
    if (a->partitions)
        spec.partitions = (int)a->partitions;
    if (dp_kafka_create_topics(*rk, &spec, 1, 30000, err, sizeof err) != DP_OK) {
        cli_fail(cmd, "%s", err);
        return CLI_EXIT_KAFKA;
    }
    return -1;
}

/* Every line of `in`, in file order; -1 when all were handed to the
 * producer, else the exit status. */
static int produce_lines(const char *cmd, const dp_stream_config *cfg, const produce_args *a, rd_kafka_t *rk,
                         dp_codec *codec, FILE *in, uint64_t *n_sent, uint64_t *n_raw)
{
    int status = CLI_EXIT_KAFKA;
    char err[1024];
    dp_update_owned upd;
    dp_update_owned_init(&upd);
    dp_buf enc;
    dp_buf_init(&enc);
    char *line = NULL;
    size_t cap = 0;
    uint64_t line_no = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, in)) >= 0) {
        line_no++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (len == 0)
            continue;
        int rc = dp_update_json_parse(line, (size_t)len, &upd, err, sizeof err);
        if (rc == DP_ENOMEM) {
            cli_fail(cmd, "out of memory");
            goto done;
        }
        if (rc != DP_OK) {
            if (!a->raw_invalid) {
                cli_fail(cmd, "line %" PRIu64 ": %s", line_no, err);
                status = CLI_EXIT_FAILED;
                goto done;
            }
            if (send_one(rk, cfg->topic_updates, NULL, 0, line, (size_t)len) != 0)
                goto done;
            (*n_raw)++;
            continue;
        }
        enc.len = 0;
        if (dp_codec_encode_update_buf(codec, &upd.u, &enc, err, sizeof err) != DP_OK) {
            cli_fail(cmd, "line %" PRIu64 ": cannot encode the update: %s", line_no, err);
            goto done;
        }
        if (send_one(rk, cfg->topic_updates, upd.u.stream_id, upd.u.stream_id_len, enc.data, enc.len) != 0)
            goto done;
        (*n_sent)++;
        rd_kafka_poll(rk, 0);
    }
    status = -1;
    if (ferror(in)) {
        cli_fail(cmd, "read error on %s", a->input_path);
        status = CLI_EXIT_IO;
    }
done:
    free(line);
    dp_buf_free(&enc);
    dp_update_owned_free(&upd);
    return status;
}

int cmd_produce(int argc, char **argv)
{
    const char *cmd = "produce";
    produce_args a;
    int status = parse_produce_args(cmd, argc, argv, &a);
    if (status >= 0)
        return status;
    char err[1024];
    dp_stream_config *cfg = NULL;
    if (dp_stream_config_load_file(&cfg, a.config_path, err, sizeof err) != DP_OK)
        return cli_fail(cmd, "%s", err);
    if (dp_stream_config_require_ids(cfg, DP_STREAM_IDS_OF(DP_CODEC_UPDATE), "produce", err, sizeof err) != DP_OK) {
        dp_stream_config_free(cfg);
        return cli_fail(cmd, "%s", err);
    }
    if (cli_registry_ids(cmd, cfg, 0) != 0) {
        dp_stream_config_free(cfg);
        return CLI_EXIT_KAFKA;
    }
    FILE *in = strcmp(a.input_path, "-") == 0 ? stdin : fopen(a.input_path, "rb");
    if (!in) {
        dp_stream_config_free(cfg);
        cli_fail(cmd, "cannot open %s: %s", a.input_path, strerror(errno));
        return CLI_EXIT_IO;
    }
    int failed = 0;
    rd_kafka_t *rk = NULL;
    dp_codec *codec = NULL;
    uint64_t n_sent = 0, n_raw = 0;
    if ((status = open_producer(cmd, cfg, &a, &failed, &rk, &codec)) < 0 &&
        (status = produce_lines(cmd, cfg, &a, rk, codec, in, &n_sent, &n_raw)) < 0) {
        if (dp_kafka_flush_progress(rk, cmd, &failed, 0) != DP_OK) {
            cli_fail(cmd, "not every message was delivered (see the delivery errors above)");
            status = CLI_EXIT_KAFKA;
        } else {
            printf("produce: %" PRIu64 " updates and %" PRIu64 " raw lines to %s\n", n_sent, n_raw,
                   cfg->topic_updates);
            status = 0;
        }
    }
    dp_codec_destroy(codec);
    if (rk)
        rd_kafka_destroy(rk);
    if (in != stdin)
        fclose(in);
    dp_stream_config_free(cfg);
    return status;
}
