/* cmd_migrate_state.c — `dpstream migrate-state`: copy a state topic into
 * a new one of the co-partitioned layout (stream/state_layout.h).
 *
 *   dpstream migrate-state --config CONFIG.json --to NEW_TOPIC [--bootstrap HOST:PORT]
 *                          [--timeout-ms MS] [--log-format text|json]
 *
 * For a deployment whose state topic was written by a dpstream that placed
 * state records by key hash (`run` refuses it), or whose state topic has
 * another partition count than its updates topic.  With every instance
 * stopped: reads the config's state topic (read_committed, to its end,
 * newest value per key, tombstones deleting), creates NEW_TOPIC compacted
 * with the updates topic's partition count (or takes it if it exists with
 * that count and is empty), writes the layout marker into its partition 0
 * and then every record into the partition of the updates partition it
 * belongs to (its public fields say which; nothing is opened or
 * re-encoded, so seals and MACs still verify), and waits until all are
 * acknowledged.  Then set "topics": {"state": NEW_TOPIC} in the config and
 * start the instances.  The old topic is left as it was.
 *
 * Nothing is opened, so nothing about a stream's method changes here: a
 * `marginal` state written while the default method was select_measure_fit
 * (before 2026-11-28) is copied as it is and refused by `run`'s restore
 * unless the config names "method": "select_measure_fit" (README, the
 * `method` row of marginal's keys); a config that names no method but sets
 * one of Alg. 3's keys is refused here already, at load (exit 2).
 *
 * Records of another updates topic (a state topic shared by several
 * deployments) are not copied; each deployment migrates with its own
 * config.  A record whose owner cannot be read, or whose partition the
 * updates topic does not have, stops the migration before anything is
 * written.
 *
 * Exit status: 0 copied; 1 a record cannot be placed; 2 usage or
 * configuration; 4 Kafka (unreachable, no state topic, timed out, NEW_TOPIC
 * exists with other partitions or is not empty, a delivery failed). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "codec/codec.h"
#include "core/bytes_map.h"
#include "core/dp_error.h"
#include "stream/kafka_util.h"
#include "stream/log.h"
#include "stream/state_cas.h"
#include "stream/state_layout.h"
#include "stream/state_read.h"
#include "stream/state_record.h"
#include "stream/stream_config.h"

static void migrate_usage(FILE *f)
{
    if (f == stderr && dp_log_get_format() == DP_LOG_FORMAT_JSON)
        return;   /* stderr carries JSON lines only */
    fprintf(f,
            "usage: dpstream migrate-state --config CONFIG.json --to NEW_TOPIC [--bootstrap HOST:PORT]\n"
            "                              [--timeout-ms MS] [--log-format text|json]\n"
            "\n"
            "Copies the committed contents of the config's state topic into NEW_TOPIC, created\n"
            "with the updates topic's partition count, each record in the partition of the\n"
            "updates partition it belongs to (the layout `run` needs).  Stop every instance\n"
            "first; afterwards set \"topics\": {\"state\": NEW_TOPIC} in the config.\n"
            "  --bootstrap B        brokers (default $DPSTREAM_BOOTSTRAP_SERVERS, else the config's)\n"
            "  --timeout-ms MS      bound on reading the old topic (default 60000)\n");
}

/* One record to copy: its partition in the new topic and its type header. */
typedef struct placed {
    const dp_bytes_map_slot *slot;
    int32_t                  partition;
    const char              *type;
} placed;

/* Where the record under slot goes, or why it cannot be placed: DP_OK, 1
 * (skip: another updates topic's), or DP_ECORRUPT / DP_ERANGE (message). */
static int place(dp_codec *codec, const dp_stream_config *cfg, int32_t n_parts, const dp_bytes_map_slot *slot,
                 placed *out, char *err, size_t errn)
{
    const dp_state_piece *v = slot->value;
    const char *topic;
    size_t topic_len;
    int32_t part;
    if (dp_state_owner(codec, v->data, v->len, &topic, &topic_len, &part) != DP_OK)
        return dp_err(err, errn, DP_ECORRUPT, "the record under key '%.*s' is not a state record this dpstream "
                      "can place", (int)(slot->key_len < 100 ? slot->key_len : 100), (const char *)slot->key);
    if (topic_len != strlen(cfg->topic_updates) || memcmp(topic, cfg->topic_updates, topic_len) != 0)
        return 1;
    if (part < 0 || part >= n_parts)
        return dp_err(err, errn, DP_ERANGE, "the record under key '%.*s' belongs to partition %" PRId32 " of %s, "
                      "which has %" PRId32 " partitions", (int)(slot->key_len < 100 ? slot->key_len : 100),
                      (const char *)slot->key, part, cfg->topic_updates, n_parts);
    out->slot = slot;
    out->partition = part;
    if (v->len >= 4 && memcmp(v->data, "DPC1", 4) == 0)
        out->type = DP_STATE_CHUNK_TYPE;
    else if (v->len >= 3 && memcmp(v->data, "DPP", 3) == 0)
        out->type = "Progress";
    else
        out->type = dp_codec_type_name(DP_CODEC_SNAPSHOT);
    return DP_OK;
}

static volatile int delivery_failed;

static void delivered(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    (void)opaque;
    if (m->err) {
        dp_log(DP_LOG_ERROR, "delivery to %s failed: %s", rd_kafka_topic_name(m->rkt), rd_kafka_err2str(m->err));
        delivery_failed = 1;
    }
}

/* The new topic: created with n partitions, or existing with n and empty. */
static int prepare_target(rd_kafka_t *rk, const dp_stream_config *cfg, const char *to, int32_t n, char *err,
                          size_t errn)
{
    dp_topic_spec spec = dp_kafka_topic_spec(cfg, to, 1);
    spec.partitions = (int)n;
    int32_t have = 0;
    int rc = dp_kafka_create_topics(rk, &spec, 1, 30000, err, errn);
    if (rc == DP_OK)
        rc = dp_kafka_topic_partitions(rk, to, 30000, &have, err, errn);
    if (rc != DP_OK)
        return rc;
    if (have != n)
        return dp_err(err, errn, DP_EIO, "%s exists with %" PRId32 " partitions; it needs %" PRId32 " (those of %s)",
                      to, have, n, cfg->topic_updates);
    for (int32_t i = 0; i < n; i++) {
        int64_t lo = 0, hi = 0;
        rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR__TRANSPORT;
        for (int tries = 0; tries < 100 && e; tries++) {   /* a new topic's leaders take a moment */
            e = rd_kafka_query_watermark_offsets(rk, to, i, &lo, &hi, 10000);
            if (e)
                rd_kafka_poll(rk, 100);
        }
        if (e)
            return dp_err(err, errn, DP_EIO, "watermarks of %s[%" PRId32 "]: %s", to, i, rd_kafka_err2str(e));
        if (hi > lo)
            return dp_err(err, errn, DP_EIO, "%s is not empty (partition %" PRId32 " holds records): migrate into "
                          "a new topic", to, i);
    }
    return DP_OK;
}

/* Copy the placed records into `to`, after the layout marker. */
static int copy_records(rd_kafka_t *rk, const char *to, const placed *recs, size_t n, char *err, size_t errn)
{
    int rc = dp_state_layout_mark(rk, to, "migrate-state", err, errn);
    for (size_t i = 0; rc == DP_OK && i < n && !delivery_failed; i++) {
        const dp_state_piece *v = recs[i].slot->value;
        for (;;) {
            rd_kafka_resp_err_t e = rd_kafka_producev(
                rk, RD_KAFKA_V_TOPIC(to), RD_KAFKA_V_PARTITION(recs[i].partition),
                RD_KAFKA_V_HEADER("dpstream.type", recs[i].type, -1),
                RD_KAFKA_V_KEY((void *)recs[i].slot->key, recs[i].slot->key_len),
                RD_KAFKA_V_VALUE((void *)v->data, v->len), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
            if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                rd_kafka_poll(rk, 50);
                continue;
            }
            if (e)
                rc = dp_err(err, errn, DP_EIO, "produce to %s: %s", to, rd_kafka_err2str(e));
            break;
        }
    }
    if (rc == DP_OK && dp_kafka_flush_progress(rk, "migrate-state", &delivery_failed, 0) != DP_OK)
        rc = dp_err(err, errn, DP_EIO, "not every record was acknowledged by %s", to);
    return rc;
}

/* Read, place every record, create the target, copy.  *n_copied,
 * *n_skipped: what was done. */
static int migrate(const dp_stream_config *cfg, dp_codec *codec, const char *bootstrap, const char *to,
                   int timeout_ms, size_t *n_copied, size_t *n_skipped, char *err, size_t errn)
{
    dp_bytes_map latest;
    dp_bytes_map_init(&latest);
    placed *recs = NULL;
    rd_kafka_t *rk = NULL;
    const char *const kv[][2] = {{"enable.idempotence", "true"}, {"acks", "all"}};
    rd_kafka_conf_t *conf = dp_kafka_conf(cfg, bootstrap, kv, 2, err, errn);
    char kerr[512];
    int rc = conf ? DP_OK : DP_EINVAL;
    if (rc == DP_OK) {
        rd_kafka_conf_set_dr_msg_cb(conf, delivered);
        if (!(rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, kerr, sizeof kerr)))
            rc = dp_err(err, errn, DP_EINVAL, "producer: %s", kerr);
    }
    if (rc == DP_OK)
        rc = dp_kafka_check_reachable(rk, DP_KAFKA_DEFAULT_CONNECT_TIMEOUT_MS, err, errn);
    int32_t n_parts = 0;
    if (rc == DP_OK)
        rc = dp_kafka_topic_partitions(rk, cfg->topic_updates, 30000, &n_parts, err, errn);
    if (rc == DP_OK)
        rc = dp_state_read_topic(cfg, bootstrap, NULL, NULL, timeout_ms, &latest, err, errn);
    size_t n = 0;
    if (rc == DP_OK && !(recs = calloc(latest.count ? latest.count : 1, sizeof *recs)))
        rc = DP_ENOMEM;
    for (size_t k = 0; rc == DP_OK && k < latest.cap; k++) {
        const dp_bytes_map_slot *s = &latest.slots[k];
        if (!s->key || !s->value || dp_state_key_is_layout(s->key, s->key_len))
            continue;
        int r = place(codec, cfg, n_parts, s, &recs[n], err, errn);
        if (r == 1)
            (*n_skipped)++;
        else if (r == DP_OK)
            n++;
        else
            rc = r;
    }
    if (rc == DP_OK)
        rc = prepare_target(rk, cfg, to, n_parts, err, errn);
    if (rc == DP_OK)
        rc = copy_records(rk, to, recs, n, err, errn);
    if (rc == DP_OK)
        *n_copied = n;
    free(recs);
    dp_state_read_free(&latest);
    if (rk)
        rd_kafka_destroy(rk);
    return rc;
}

int cmd_migrate_state(int argc, char **argv)
{
    const char *cmd = "migrate-state";
    const char *config_path = NULL, *bootstrap = NULL, *to = NULL;
    uint64_t timeout_ms = 60000;
    if (cli_log_format_option(cmd, argc, argv) != 0)
        return CLI_EXIT_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            migrate_usage(stdout);
            return CLI_EXIT_OK;
        }
        if (i + 1 >= argc) {
            migrate_usage(stderr);
            return cli_fail(cmd, "option %s needs a value (or is unknown)", a);
        }
        const char *v = argv[++i];
        if (strcmp(a, "--config") == 0) config_path = v;
        else if (strcmp(a, "--bootstrap") == 0) bootstrap = v;
        else if (strcmp(a, "--to") == 0) to = v;
        else if (strcmp(a, "--log-format") == 0) continue;   /* cli_log_format_option took it */
        else if (strcmp(a, "--timeout-ms") == 0) {
            if (cli_parse_u64(v, &timeout_ms) != 0 || timeout_ms < 1 || timeout_ms > 3600000)
                return cli_fail(cmd, "--timeout-ms must be in 1..3600000");
        } else {
            migrate_usage(stderr);
            return cli_fail(cmd, "unknown option '%s'", a);
        }
    }
    if (!config_path || !to || !*to) {
        migrate_usage(stderr);
        return cli_fail(cmd, "--config and --to are required");
    }
    char err[1400];
    dp_stream_config *cfg = NULL;
    dp_codec *codec = NULL;
    int status = CLI_EXIT_OK;
    int rc = dp_stream_config_load_file(&cfg, config_path, err, sizeof err);
    if (rc != DP_OK) {
        cli_fail(cmd, "%s", err);
        return rc == DP_EIO ? CLI_EXIT_IO : CLI_EXIT_USAGE;
    }
    if (strcmp(to, cfg->topic_state) == 0) {
        status = cli_fail(cmd, "--to names the config's state topic %s: migrate into a new topic", to);
        goto out;
    }
    if ((status = cli_reader_codec(cmd, cfg, &codec)) != CLI_EXIT_OK)
        goto out;
    if (!bootstrap)
        bootstrap = dp_kafka_bootstrap_env();
    size_t copied = 0, skipped = 0;
    rc = migrate(cfg, codec, bootstrap, to, (int)timeout_ms, &copied, &skipped, err, sizeof err);
    if (rc != DP_OK) {
        cli_fail(cmd, "%s", err);
        status = rc == DP_EINVAL ? CLI_EXIT_USAGE : rc == DP_EIO ? CLI_EXIT_KAFKA : CLI_EXIT_FAILED;
        goto out;
    }
    printf("copied %zu state records of %s from %s into %s (%zu of other updates topics left out); now set "
           "\"topics\": {\"state\": \"%s\"} in the config\n", copied, cfg->topic_updates, cfg->topic_state, to,
           skipped, to);
out:
    dp_codec_destroy(codec);
    dp_stream_config_free(cfg);
    return status;
}
