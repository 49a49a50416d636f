/* cmd_run.c — `dpstream run`: the Kafka processor (processor/stream/processor.h).
 *
 *   dpstream run --config CONFIG.json (--key-file F | --key-hex H)
 *                [--state-key-file F] [--instance-id ID] [--chunk-records N]
 *                [--idle-timeout-ms MS] [--progress-ms MS] [--dlq-commit-ms MS]
 *                [--snapshot-chunk-bytes N] [--log-level error|warn|info|debug]
 *                [--http HOST:PORT [--http-input-metrics]]
 *                [--log-format text|json]
 *
 * Environment: DPSTREAM_BOOTSTRAP_SERVERS overrides bootstrap.servers of the
 * config; DPSTREAM_INSTANCE_ID is the default of --instance-id, and the
 * host name theirs.  The instance id must be stable across restarts of one
 * instance and distinct between instances: the transactional.id is derived
 * from it, so a restarted instance fences its zombie predecessor.
 *
 * SIGTERM / SIGINT shut down cleanly (the open transaction is committed or
 * aborted, the group is left) and exit 0.  Exit 1 on a runtime failure, 2
 * on a usage or configuration error.
 *
 * Owns: the parsed options and what a run holds (keys, configuration,
 * registry, metrics, HTTP server).  Calls: processor (the run),
 * registry_subjects (schema ids), http_server and metrics (--http). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "app/cli_plan.h"
#include "app/http_server.h"
#include "core/dp_error.h"
#include "stream/kafka_util.h"
#include "stream/log.h"
#include "stream/processor.h"
#include "stream/registry_subjects.h"
#include "stream/stream_config.h"

static volatile sig_atomic_t run_stop = 0;

static void on_signal(int sig)
{
    (void)sig;
    run_stop = 1;
}

static void run_usage(FILE *f)
{
    if (f == stderr && dp_log_get_format() == DP_LOG_FORMAT_JSON)
        return;   /* stderr carries JSON lines only; the error line says what was wrong */
    fprintf(f,
            "usage: dpstream run --config CONFIG.json (--key-file F | --key-hex H)\n"
            "                    [--state-key-file F] [--instance-id ID] [--chunk-records N]\n"
            "                    [--idle-timeout-ms MS] [--progress-ms MS] [--dlq-commit-ms MS]\n"
            "                    [--snapshot-chunk-bytes N] [--log-level error|warn|info|debug]\n"
            "                    [--http HOST:PORT [--http-input-metrics]]\n"
            "                    [--log-format text|json] [--role all|ingest|release]\n"
            "\n"
            "Consumes the config's updates topic in a consumer group and, for every\n"
            "closed step of every stream, commits one Kafka transaction with the\n"
            "release, the budget event, the stream's snapshot and the input offsets.\n"
            "  --key-file/--key-hex  the secret noise key (32 bytes)\n"
            "  --state-key-file F    encrypt snapshots with this 32-byte key (libsodium AEAD)\n"
            "  --role R              all (default): the single process (no sharded routes);\n"
            "                        ingest: unsharded routes as with all, and each sharded stream's\n"
            "                        shards, publishing their statistics to <prefix>.stats;\n"
            "                        release: merge <prefix>.stats and release the sharded streams\n"
            "                        (group <group>.release; docs/kafka.md section 10)\n"
            "  --instance-id ID      stable per instance, distinct between instances (default\n"
            "                        $DPSTREAM_INSTANCE_ID, else the host name)\n"
            "  --chunk-records N     synthetic records per Kafka message (default 1000)\n"
            "  --idle-timeout-ms MS  the step timer: append a CLOSE_STEP marker for a step open\n"
            "                        this long, whether or not anyone reported (default 60000;\n"
            "                        0: only markers in the input close steps)\n"
            "  --connect-timeout-ms MS  give up (exit 4) when no broker answers this long (default 10000)\n"
            "  --progress-ms MS      info-level progress line period (default 10000)\n"
            "  --dlq-commit-ms MS    commit pending dead letters at least this often (default 1000)\n"
            "  --snapshot-chunk-bytes N  cut a snapshot's state into content chunks of at most N\n"
            "                        bytes (about N/5 on average; only changed chunks are written\n"
            "                        again) and its manifest into messages of at most N bytes\n"
            "                        (default 524288; 64..786432, under the broker's ~1 MiB\n"
            "                        message.max.bytes)\n"
            "  --http HOST:PORT      serve /metrics, /healthz, /readyz, /api/streams and the live\n"
            "                        page on this address (off unless given; the host is bound as\n"
            "                        given, e.g. 127.0.0.1:9464; port 0 picks a free one)\n"
            "  --http-input-metrics  also serve exact counts about the input (updates, dead letters\n"
            "                        by reason, lag, latencies): private data, for operators only\n"
            "  --log-format F       text (default: \"dpstream info: ...\") or json (one object per\n"
            "                        line: ts, level, event, stream, step, partition, msg)\n"
            "  --debug-commit-delay-ms MS  testing aid: pause inside each transaction before its\n"
            "                        commit (crash tests use it to kill mid-transaction)\n"
            "  --debug-restore-delay-ms MS  testing aid: pause inside every restore\n"
            "DPSTREAM_BOOTSTRAP_SERVERS overrides bootstrap.servers.  SIGTERM/SIGINT stop cleanly.\n");
}

/* The command line, as parsed. */
typedef struct run_args {
    const char *config_path, *key_file, *key_hex, *state_key_file, *instance_id, *log_level, *http, *role;
    uint64_t chunk, idle, progress, dlq_ms, debug_delay, snap_chunk, restore_delay, connect_ms;
    int http_input;
} run_args;

/* Parse argv into a; -1 to go on, else the exit status (--help: 0). */
static int parse_run_args(const char *cmd, int argc, char **argv, run_args *a)
{
    *a = (run_args){.instance_id = getenv("DPSTREAM_INSTANCE_ID"), .log_level = "info", .chunk = 1000,
                    .idle = 60000, .progress = 10000, .dlq_ms = 1000,
                    .snap_chunk = DP_PROCESSOR_DEFAULT_SNAPSHOT_CHUNK_BYTES,
                    .connect_ms = DP_KAFKA_DEFAULT_CONNECT_TIMEOUT_MS};
    if (cli_log_format_option(cmd, argc, argv) != 0)
        return CLI_EXIT_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
            run_usage(stdout);
            return 0;
        }
        if (strcmp(o, "--http-input-metrics") == 0) {   /* the one flag without a value */
            a->http_input = 1;
            continue;
        }
        if (i + 1 >= argc) {
            run_usage(stderr);
            return cli_fail(cmd, "option %s needs a value (or is unknown)", o);
        }
        const char *v = argv[++i];
        uint64_t *num = NULL;
        if (strcmp(o, "--config") == 0) a->config_path = v;
        else if (strcmp(o, "--key-file") == 0) a->key_file = v;
        else if (strcmp(o, "--key-hex") == 0) a->key_hex = v;
        else if (strcmp(o, "--state-key-file") == 0) a->state_key_file = v;
        else if (strcmp(o, "--instance-id") == 0) a->instance_id = v;
        else if (strcmp(o, "--log-level") == 0) a->log_level = v;
        else if (strcmp(o, "--log-format") == 0) continue;   /* cli_log_format_option took it */
        else if (strcmp(o, "--chunk-records") == 0) num = &a->chunk;
        else if (strcmp(o, "--idle-timeout-ms") == 0) num = &a->idle;
        else if (strcmp(o, "--progress-ms") == 0) num = &a->progress;
        else if (strcmp(o, "--dlq-commit-ms") == 0) num = &a->dlq_ms;
        else if (strcmp(o, "--debug-commit-delay-ms") == 0) num = &a->debug_delay;
        else if (strcmp(o, "--snapshot-chunk-bytes") == 0) num = &a->snap_chunk;
        else if (strcmp(o, "--debug-restore-delay-ms") == 0) num = &a->restore_delay;
        else if (strcmp(o, "--connect-timeout-ms") == 0) num = &a->connect_ms;
        else if (strcmp(o, "--http") == 0) a->http = v;
        else if (strcmp(o, "--role") == 0) a->role = v;
        else {
            run_usage(stderr);
            return cli_fail(cmd, "unknown option '%s'", o);
        }
        if (num && (cli_parse_u64(v, num) != 0 || *num > (1ull << 40)))
            return cli_fail(cmd, "%s: not a non-negative integer: '%s'", o, v);
    }
    return -1;
}

/* The options' ranges (and the log level, set); -1 to go on, else the exit status. */
static int check_run_args(const char *cmd, const run_args *a)
{
    if (!a->config_path) {
        run_usage(stderr);
        return cli_fail(cmd, "--config is required");
    }
    if (a->connect_ms == 0 || a->connect_ms > 3600000)
        return cli_fail(cmd, "--connect-timeout-ms must be in 1..3600000");
    if (a->chunk == 0 || a->chunk > (1u << 24))
        return cli_fail(cmd, "--chunk-records must be in 1..16777216");
    if (a->snap_chunk < DP_PROCESSOR_MIN_SNAPSHOT_CHUNK_BYTES || a->snap_chunk > DP_PROCESSOR_MAX_SNAPSHOT_CHUNK_BYTES)
        return cli_fail(cmd, "--snapshot-chunk-bytes must be in %d..%d", DP_PROCESSOR_MIN_SNAPSHOT_CHUNK_BYTES,
                        DP_PROCESSOR_MAX_SNAPSHOT_CHUNK_BYTES);
    dp_log_level lvl;
    if (dp_log_level_parse(a->log_level, &lvl) != 0)
        return cli_fail(cmd, "--log-level must be error, warn, info or debug");
    dp_log_set_level(lvl);
    if (a->http_input && !a->http)
        return cli_fail(cmd, "--http-input-metrics needs --http");
    if (a->role && strcmp(a->role, "all") != 0 && strcmp(a->role, "ingest") != 0 && strcmp(a->role, "release") != 0)
        return cli_fail(cmd, "--role must be all, ingest or release");
    return -1;
}

/* What a run holds from setup to shutdown. */
typedef struct run_env {
    dp_key            key, state_key;
    int               has_state_key;
    dp_stream_config *cfg;
    dp_registry      *registry;
    dp_metrics       *metrics;
    dp_http_server   *server;
} run_env;

static void run_env_free(run_env *e)
{
    dp_http_stop(e->server);
    dp_metrics_destroy(e->metrics);
    dp_registry_free(e->registry);
    dp_stream_config_free(e->cfg);
    dp_key_wipe(&e->key);
    if (e->has_state_key)
        dp_key_wipe(&e->state_key);
}

/* Keys, configuration, the registry's ids and the HTTP server; -1 to go
 * on, else the exit status (e holds only what needs run_env_free). */
static dp_processor_role role_of(const run_args *a)
{
    if (a->role && strcmp(a->role, "ingest") == 0)
        return DP_PROCESSOR_ROLE_INGEST;
    return a->role && strcmp(a->role, "release") == 0 ? DP_PROCESSOR_ROLE_RELEASE : DP_PROCESSOR_ROLE_ALL;
}

static int run_setup(const char *cmd, const run_args *a, run_env *e, char *err, size_t errsz)
{
    if (cli_load_key(cmd, a->key_file, a->key_hex, &e->key) != 0)
        return 2;
    if (a->state_key_file && dp_key_load_file(&e->state_key, a->state_key_file, err, errsz) != DP_OK) {
        dp_key_wipe(&e->key);
        return cli_fail(cmd, "state key: %s", err);
    }
    e->has_state_key = a->state_key_file != NULL;
    if (dp_stream_config_load_file(&e->cfg, a->config_path, err, errsz) != DP_OK ||
        dp_stream_config_require_ids(e->cfg, DP_STREAM_IDS_ALL, "run", err, errsz) != DP_OK) {
        run_env_free(e);
        return cli_fail(cmd, "%s", err);
    }
    /* A sharded stream is on every partition: one consumer of a partition
     * holds only a shard of it, whose statistics a release instance merges
     * (docs/kafka.md §10); the single process refuses it. */
    for (size_t i = 0; i < e->cfg->n_routes && role_of(a) == DP_PROCESSOR_ROLE_ALL; i++)
        if (e->cfg->routes[i].sharded) {
            run_env_free(e);
            return cli_fail(cmd, "streams[%zu] is sharded: the single process (--role all) does not serve sharded "
                            "routes; run --role ingest instances and --role release instances (docs/kafka.md §10)",
                            i);
        }
    if (cli_warn_not_dp_routes(e->cfg, 1, err, errsz) != DP_OK) {
        run_env_free(e);
        return cli_fail(cmd, "%s", err);
    }
    /* Before anything is consumed or written: every frame carries an id
     * the registry gave, or the run does not start. */
    if (dp_registry_setup(e->cfg, DP_REGISTRY_REGISTER, &e->registry, err, errsz) != DP_OK) {
        run_env_free(e);
        cli_fail(cmd, "%s", err);
        return CLI_EXIT_KAFKA;
    }
    return -1;
}

/* The metrics and the HTTP server of --http; -1 to go on, else the exit status. */
static int run_http(const char *cmd, const run_args *a, run_env *e, char *err, size_t errsz)
{
    if (!a->http)
        return -1;
    dp_metrics_options mo = {.input_metrics = a->http_input, .version = DPSTREAM_VERSION};
    if (dp_metrics_create(&e->metrics, &mo) != DP_OK ||
        dp_http_start(&e->server, &(dp_http_options){.address = a->http}, e->metrics, err, errsz) != DP_OK) {
        if (!e->metrics)
            snprintf(err, errsz, "out of memory");
        run_env_free(e);
        return cli_fail(cmd, "%s", err);
    }
    dp_log(DP_LOG_INFO, "serving /metrics, /healthz, /readyz and the live page on %s (port %u)%s", a->http,
           dp_http_port(e->server), a->http_input ? ", with the input-class metrics" : "");
    return -1;
}

int cmd_run(int argc, char **argv)
{
    const char *cmd = "run";
    run_args a;
    int status = parse_run_args(cmd, argc, argv, &a);
    if (status < 0)
        status = check_run_args(cmd, &a);
    if (status >= 0)
        return status;
    run_env e;
    memset(&e, 0, sizeof e);
    char err[1400];
    if ((status = run_setup(cmd, &a, &e, err, sizeof err)) >= 0)
        return status;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    if ((status = run_http(cmd, &a, &e, err, sizeof err)) >= 0)
        return status;
    const char *bs = getenv("DPSTREAM_BOOTSTRAP_SERVERS");
    dp_processor_options o = {.config = e.cfg,
                              .noise_key = &e.key,
                              .state_key = e.has_state_key ? &e.state_key : NULL,
                              .instance_id = a.instance_id,
                              .bootstrap_override = bs && *bs ? bs : NULL,
                              .chunk_records = (uint32_t)a.chunk,
                              .idle_timeout_ms = (int64_t)a.idle,
                              .progress_interval_ms = (int64_t)a.progress,
                              .dlq_commit_ms = (int64_t)a.dlq_ms,
                              .debug_commit_delay_ms = (int64_t)a.debug_delay,
                              .snapshot_chunk_bytes = (size_t)a.snap_chunk,
                              .metrics = e.metrics,
                              .debug_restore_delay_ms = (int64_t)a.restore_delay,
                              .connect_timeout_ms = (int64_t)a.connect_ms,
                              .registry = e.registry,
                              .role = role_of(&a),
                              .stop = &run_stop};
    err[0] = '\0';
    int rc = dp_processor_run(&o, err, sizeof err);
    run_env_free(&e);
    if (rc != DP_OK) {
        dp_log_event(DP_LOG_ERROR, "fatal", NULL, 0, 0, "%s", err[0] ? err : dp_status_str(rc));
        return rc == DP_EKEY ? CLI_EXIT_REFUSED : rc == DP_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_KAFKA;
    }
    dp_log_event(DP_LOG_INFO, "shutdown", NULL, 0, 0, "stopped cleanly");
    return 0;
}
