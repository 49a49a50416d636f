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
 * on a usage or configuration error. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
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
            "                    [--log-format text|json]\n"
            "\n"
            "Consumes the config's updates topic in a consumer group and, for every\n"
            "closed step of every stream, commits one Kafka transaction with the\n"
            "release, the budget event, the stream's snapshot and the input offsets.\n"
            "  --key-file/--key-hex  the secret noise key (32 bytes)\n"
            "  --state-key-file F    encrypt snapshots with this 32-byte key (libsodium AEAD)\n"
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

int cmd_run(int argc, char **argv)
{
    const char *cmd = "run";
    const char *config_path = NULL, *key_file = NULL, *key_hex = NULL, *state_key_file = NULL;
    const char *instance_id = getenv("DPSTREAM_INSTANCE_ID");
    const char *log_level = "info";
    uint64_t chunk = 1000, idle = 60000, progress = 10000, dlq_ms = 1000, debug_delay = 0;
    uint64_t snap_chunk = DP_PROCESSOR_DEFAULT_SNAPSHOT_CHUNK_BYTES, restore_delay = 0;
    uint64_t connect_ms = DP_KAFKA_DEFAULT_CONNECT_TIMEOUT_MS;
    const char *http = NULL;
    int http_input = 0;
    if (cli_log_format_option(cmd, argc, argv) != 0)
        return CLI_EXIT_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            run_usage(stdout);
            return 0;
        }
        if (strcmp(a, "--http-input-metrics") == 0) {   /* the one flag without a value */
            http_input = 1;
            continue;
        }
        if (i + 1 >= argc) {
            run_usage(stderr);
            return cli_fail(cmd, "option %s needs a value (or is unknown)", a);
        }
        const char *v = argv[++i];
        uint64_t *num = NULL;
        if (strcmp(a, "--config") == 0) config_path = v;
        else if (strcmp(a, "--key-file") == 0) key_file = v;
        else if (strcmp(a, "--key-hex") == 0) key_hex = v;
        else if (strcmp(a, "--state-key-file") == 0) state_key_file = v;
        else if (strcmp(a, "--instance-id") == 0) instance_id = v;
        else if (strcmp(a, "--log-level") == 0) log_level = v;
        else if (strcmp(a, "--log-format") == 0) continue;   /* cli_log_format_option took it */
        else if (strcmp(a, "--chunk-records") == 0) num = &chunk;
        else if (strcmp(a, "--idle-timeout-ms") == 0) num = &idle;
        else if (strcmp(a, "--progress-ms") == 0) num = &progress;
        else if (strcmp(a, "--dlq-commit-ms") == 0) num = &dlq_ms;
        else if (strcmp(a, "--debug-commit-delay-ms") == 0) num = &debug_delay;
        else if (strcmp(a, "--snapshot-chunk-bytes") == 0) num = &snap_chunk;
        else if (strcmp(a, "--debug-restore-delay-ms") == 0) num = &restore_delay;
        else if (strcmp(a, "--connect-timeout-ms") == 0) num = &connect_ms;
        else if (strcmp(a, "--http") == 0) http = v;
        else {
            run_usage(stderr);
            return cli_fail(cmd, "unknown option '%s'", a);
        }
        if (num && (cli_parse_u64(v, num) != 0 || *num > (1ull << 40)))
            return cli_fail(cmd, "%s: not a non-negative integer: '%s'", a, v);
    }
    if (!config_path) {
        run_usage(stderr);
        return cli_fail(cmd, "--config is required");
    }
    if (connect_ms == 0 || connect_ms > 3600000)
        return cli_fail(cmd, "--connect-timeout-ms must be in 1..3600000");
    if (chunk == 0 || chunk > (1u << 24))
        return cli_fail(cmd, "--chunk-records must be in 1..16777216");
    if (snap_chunk < DP_PROCESSOR_MIN_SNAPSHOT_CHUNK_BYTES || snap_chunk > DP_PROCESSOR_MAX_SNAPSHOT_CHUNK_BYTES)
        return cli_fail(cmd, "--snapshot-chunk-bytes must be in %d..%d", DP_PROCESSOR_MIN_SNAPSHOT_CHUNK_BYTES,
                        DP_PROCESSOR_MAX_SNAPSHOT_CHUNK_BYTES);
    dp_log_level lvl;
    if (dp_log_level_parse(log_level, &lvl) != 0)
        return cli_fail(cmd, "--log-level must be error, warn, info or debug");
    dp_log_set_level(lvl);
    if (http_input && !http)
        return cli_fail(cmd, "--http-input-metrics needs --http");

    dp_key key, state_key;
    if (cli_load_key(cmd, key_file, key_hex, &key) != 0)
        return 2;
    char err[1400];
    if (state_key_file && dp_key_load_file(&state_key, state_key_file, err, sizeof err) != DP_OK) {
        dp_key_wipe(&key);
        return cli_fail(cmd, "state key: %s", err);
    }
    dp_stream_config *cfg = NULL;
    if (dp_stream_config_load_file(&cfg, config_path, err, sizeof err) != DP_OK) {
        dp_key_wipe(&key);
        if (state_key_file)
            dp_key_wipe(&state_key);
        return cli_fail(cmd, "%s", err);
    }
    if (dp_stream_config_require_ids(cfg, DP_STREAM_IDS_ALL, "run", err, sizeof err) != DP_OK) {
        dp_stream_config_free(cfg);
        dp_key_wipe(&key);
        if (state_key_file)
            dp_key_wipe(&state_key);
        return cli_fail(cmd, "%s", err);
    }
    /* Before anything is consumed or written: every frame carries an id
     * the registry gave, or the run does not start. */
    dp_registry *registry = NULL;
    if (dp_registry_setup(cfg, DP_REGISTRY_REGISTER, &registry, err, sizeof err) != DP_OK) {
        dp_stream_config_free(cfg);
        dp_key_wipe(&key);
        if (state_key_file)
            dp_key_wipe(&state_key);
        cli_fail(cmd, "%s", err);
        return CLI_EXIT_KAFKA;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    dp_metrics *metrics = NULL;
    dp_http_server *server = NULL;
    if (http) {
        dp_metrics_options mo = {.input_metrics = http_input, .version = DPSTREAM_VERSION};
        if (dp_metrics_create(&metrics, &mo) != DP_OK || dp_http_start(&server, &(dp_http_options){.address = http},
                                                                        metrics, err, sizeof err) != DP_OK) {
            if (!metrics)
                snprintf(err, sizeof err, "out of memory");
            dp_metrics_destroy(metrics);
            dp_registry_free(registry);
            dp_stream_config_free(cfg);
            dp_key_wipe(&key);
            if (state_key_file)
                dp_key_wipe(&state_key);
            return cli_fail(cmd, "%s", err);
        }
        dp_log(DP_LOG_INFO, "serving /metrics, /healthz, /readyz and the live page on %s (port %u)%s", http,
               dp_http_port(server), http_input ? ", with the input-class metrics" : "");
    }
    const char *bs = getenv("DPSTREAM_BOOTSTRAP_SERVERS");
    dp_processor_options o = {.config = cfg,
                              .noise_key = &key,
                              .state_key = state_key_file ? &state_key : NULL,
                              .instance_id = instance_id,
                              .bootstrap_override = bs && *bs ? bs : NULL,
                              .chunk_records = (uint32_t)chunk,
                              .idle_timeout_ms = (int64_t)idle,
                              .progress_interval_ms = (int64_t)progress,
                              .dlq_commit_ms = (int64_t)dlq_ms,
                              .debug_commit_delay_ms = (int64_t)debug_delay,
                              .snapshot_chunk_bytes = (size_t)snap_chunk,
                              .metrics = metrics,
                              .debug_restore_delay_ms = (int64_t)restore_delay,
                              .connect_timeout_ms = (int64_t)connect_ms,
                              .registry = registry,
                              .stop = &run_stop};
    err[0] = '\0';
    int rc = dp_processor_run(&o, err, sizeof err);
    dp_http_stop(server);
    dp_metrics_destroy(metrics);
    dp_registry_free(registry);
    dp_stream_config_free(cfg);
    dp_key_wipe(&key);
    if (state_key_file)
        dp_key_wipe(&state_key);
    if (rc != DP_OK) {
        dp_log_event(DP_LOG_ERROR, "fatal", NULL, 0, 0, "%s", err[0] ? err : dp_status_str(rc));
        return rc == DP_EKEY ? CLI_EXIT_REFUSED : rc == DP_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_KAFKA;
    }
    dp_log_event(DP_LOG_INFO, "shutdown", NULL, 0, 0, "stopped cleanly");
    return 0;
}
