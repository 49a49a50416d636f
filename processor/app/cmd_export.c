/* cmd_export.c — `dpstream export`: complete releases (and budget events,
 * dead letters) out of the output topics, or out of `dpstream replay`'s
 * files, into files downstream tools read.
 *
 *   dpstream export (--config CONFIG.json | --from-replay DIR) --out OUT
 *                   [--layout releases|per-step|single] [--format csv|jsonl]
 *                   [--follow] [--timeout-ms MS] [--dead-letters FILE] [--connect-timeout-ms MS]
 *
 * Dead letters hold the raw bytes of every rejected update (entity ids and
 * values): they are read only with --dead-letters, and written to that
 * file alone (mode 0600), never into OUT, which downstream readers of the
 * synthetic data share.
 *
 * The work is connectors/export/export_run.c (what is read, in which
 * order, and when a release is written).
 *
 * Kafka trouble before anything is read — no broker answers within
 * --connect-timeout-ms (default 10 s), a topic that does not exist (without
 * --follow) — is exit 4, and no output file is created.
 *
 * Exit status: 0; 1 when something did not add up — an undecodable
 * message or line, a release whose chunks contradict its manifest, data
 * for a release already written, or (without --follow) releases still
 * incomplete at the end — each reported on stderr; 2 for usage errors.
 * A read_committed export of a healthy pipeline never sees any of these,
 * so a 1 is worth investigating. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "connectors/export/export_run.h"
#include "core/dp_error.h"
#include "stream/kafka_util.h"
#include "stream/stream_config.h"

static volatile sig_atomic_t export_stop = 0;

static void on_signal(int sig)
{
    (void)sig;
    export_stop = 1;
}

static void export_usage(FILE *f)
{
    fprintf(f,
            "usage: dpstream export (--config CONFIG.json | --from-replay DIR) --out OUT\n"
            "                       [--layout releases|per-step|single] [--format csv|jsonl]\n"
            "                       [--follow] [--timeout-ms MS] [--dead-letters FILE]\n"
            "                       [--connect-timeout-ms MS]\n"
            "\n"
            "Writes complete releases only: a release is written once its manifest has\n"
            "arrived and its chunks match the manifest's counts and checksum.\n"
            "  --config C         read the config's synthetic, budget and dead-letter topics\n"
            "                     (read_committed; $DPSTREAM_BOOTSTRAP_SERVERS overrides the brokers)\n"
            "  --from-replay DIR  read DIR/releases.jsonl and DIR/budget.jsonl of `dpstream replay`\n"
            "  --layout L         releases: OUT/releases.jsonl in replay's format (default);\n"
            "                     per-step: OUT/<stream>/step-0001.csv per release;\n"
            "                     single:   OUT/<stream>.csv with a step column\n"
            "                     (plus OUT/budget.jsonl; OUT/manifests.jsonl for per-step/single)\n"
            "  --dead-letters F   Kafka: also export the dead-letter topic to F (mode 0600; it holds\n"
            "                     raw rejected input — personal data; F must not be inside OUT)\n"
            "  --format F         csv (default) or jsonl, for per-step and single\n"
            "  --follow           keep reading until SIGINT/SIGTERM (Kafka only)\n"
            "  --timeout-ms MS    without --follow: give up if a partition is silent this long\n"
            "                     before its end (default 60000)\n"
            "  --connect-timeout-ms MS  Kafka: give up (exit 4) when no broker answers this long\n"
            "                     (default 10000); a missing topic is exit 4 too (without --follow,\n"
            "                     which waits for it), and either leaves no file behind\n"
            "Exit 1 if anything did not add up (see stderr), 4 for Kafka (unreachable, a missing\n"
            "topic), 0 otherwise.\n");
}

int cmd_export(int argc, char **argv)
{
    const char *cmd = "export";
    const char *config_path = NULL, *replay_dir = NULL, *out_dir = NULL, *layout_s = "releases", *format_s = "csv";
    const char *dead_path = NULL;
    uint64_t timeout_ms = 60000, connect_ms = DP_KAFKA_DEFAULT_CONNECT_TIMEOUT_MS;
    int follow = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            export_usage(stdout);
            return 0;
        }
        if (strcmp(a, "--follow") == 0) {
            follow = 1;
            continue;
        }
        if (strcmp(a, "--config") == 0) slot = &config_path;
        else if (strcmp(a, "--from-replay") == 0) slot = &replay_dir;
        else if (strcmp(a, "--out") == 0) slot = &out_dir;
        else if (strcmp(a, "--layout") == 0) slot = &layout_s;
        else if (strcmp(a, "--format") == 0) slot = &format_s;
        else if (strcmp(a, "--dead-letters") == 0) slot = &dead_path;
        else if (strcmp(a, "--connect-timeout-ms") == 0) {
            if (i + 1 >= argc || cli_parse_u64(argv[i + 1], &connect_ms) != 0 || connect_ms < 1 ||
                connect_ms > 3600000)
                return cli_fail(cmd, "--connect-timeout-ms must be in 1..3600000");
            i++;
            continue;
        } else if (strcmp(a, "--timeout-ms") == 0) {
            if (i + 1 >= argc || cli_parse_u64(argv[i + 1], &timeout_ms) != 0 || timeout_ms > (1ull << 40))
                return cli_fail(cmd, "--timeout-ms needs a non-negative integer");
            i++;
            continue;
        } else {
            export_usage(stderr);
            return cli_fail(cmd, "unknown option '%s'", a);
        }
        if (i + 1 >= argc)
            return cli_fail(cmd, "option %s needs a value", a);
        *slot = argv[++i];
    }
    if ((config_path != NULL) == (replay_dir != NULL) || !out_dir) {
        export_usage(stderr);
        return cli_fail(cmd, "give --out and exactly one of --config and --from-replay");
    }
    if (follow && replay_dir)
        return cli_fail(cmd, "--follow reads Kafka; it does not apply to --from-replay");
    if (dead_path && replay_dir)
        return cli_fail(cmd, "--dead-letters reads Kafka; replay's rejects are already in its rejected.jsonl");
    if (dead_path && cli_path_inside(dead_path, out_dir))
        return cli_fail(cmd, "--dead-letters %s is inside --out %s: keep raw rejected input apart from the "
                        "releases downstream services read", dead_path, out_dir);
    dp_export_layout layout;
    if (strcmp(layout_s, "releases") == 0) layout = DP_EXPORT_LAYOUT_RELEASES;
    else if (strcmp(layout_s, "per-step") == 0) layout = DP_EXPORT_LAYOUT_PER_STEP;
    else if (strcmp(layout_s, "single") == 0) layout = DP_EXPORT_LAYOUT_SINGLE;
    else return cli_fail(cmd, "--layout must be releases, per-step or single");
    dp_export_format format;
    if (strcmp(format_s, "csv") == 0) format = DP_EXPORT_CSV;
    else if (strcmp(format_s, "jsonl") == 0) format = DP_EXPORT_JSONL;
    else return cli_fail(cmd, "--format must be csv or jsonl");

    char err[1024];
    dp_stream_config *cfg = NULL;
    if (config_path && dp_stream_config_load_file(&cfg, config_path, err, sizeof err) != DP_OK)
        return cli_fail(cmd, "%s", err);
    if (cfg && dp_stream_config_require_ids(cfg,
                                            DP_STREAM_IDS_OF(DP_CODEC_SYNTHETIC_RECORD) |
                                                DP_STREAM_IDS_OF(DP_CODEC_RELEASE_MANIFEST) |
                                                DP_STREAM_IDS_OF(DP_CODEC_BUDGET_EVENT),
                                            "export", err, sizeof err) != DP_OK) {
        dp_stream_config_free(cfg);
        return cli_fail(cmd, "%s", err);
    }
    if (cfg && cli_registry_ids(cmd, cfg, 1) != 0) {
        dp_stream_config_free(cfg);
        return CLI_EXIT_KAFKA;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    dp_export_options eo = {.cfg = cfg, .replay_dir = replay_dir, .out_dir = out_dir, .layout = layout,
                            .format = format, .follow = follow, .timeout_ms = (int64_t)timeout_ms,
                            .stop = &export_stop, .dead_letter_path = dead_path,
                            .connect_timeout_ms = (int)connect_ms};
    dp_export_result r;
    int erc = dp_export_run(&eo, &r);
    /* reading Kafka, or reading replay files / writing the output */
    int status = erc == DP_OK ? CLI_EXIT_OK : cfg ? CLI_EXIT_KAFKA : CLI_EXIT_IO;
    if (erc == DP_OK) {
        printf("export: %" PRIu64 " releases (%" PRIu64 " records), %" PRIu64 " budget events, %" PRIu64
               " dead letters; %zu incomplete, %" PRIu64 " refused by their manifest, %" PRIu64
               " duplicates of written releases, %" PRIu64 " replaced chunks\n",
               r.stats.released, r.stats.records_released, r.budget_events, r.dead_letters, r.pending,
               r.stats.failed_checks, r.stats.late_duplicates, r.stats.replaced_chunks);
        status = r.problems ? CLI_EXIT_FAILED : CLI_EXIT_OK;
    }
    dp_stream_config_free(cfg);
    return status;
}
