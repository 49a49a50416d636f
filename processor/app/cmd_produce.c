/* cmd_produce.c — `dpstream produce`: load update JSON lines into the
 * updates topic as Avro `Update` messages keyed by stream id.  An alias of
 * `dpstream load --format updates --config CONFIG.json` (cmd_load.c):
 *
 *   dpstream produce --config CONFIG.json --input UPDATES.jsonl
 *                    [--partitions N] [--raw-invalid] [--connect-timeout-ms MS] [--log-format text|json]
 *
 * maps onto
 *
 *   dpstream load --format updates --input UPDATES.jsonl --config CONFIG.json
 *                 --connect-timeout-ms MS [--partitions N] [--raw-invalid] [--log-format F]
 *
 * with messages as `dpstream produce`.  The updates topic of the config is
 * created if it does not exist, with the config's "topics.partitions"
 * (default 4; --partitions N overrides) and "topics.replication_factor".
 * A broker that does not answer within the connect timeout (default 10 s)
 * is reported at once (exit 4).  Lines are produced in file order by one
 * idempotent producer (acks=all), so each partition holds its streams'
 * lines in file order — the order `dpstream replay` reads them in.  A line
 * that is not a valid update is refused (exit 1) unless --raw-invalid,
 * which produces its bytes unchanged with no key: a way to put malformed
 * input on the topic for dead-letter tests.
 *
 * Before handing over, the config is read and checked for the Update
 * schema id here, so that a config error stays a usage error (exit 2), as
 * it always was for produce.
 *
 * Owns: the parsed options.  Calls: stream_config (the config check),
 * cli_load_as (the load). */
#include <stdio.h>
#include <string.h>

#include "app/cli.h"
#include "codec/codec.h"
#include "core/dp_error.h"
#include "stream/log.h"
#include "stream/stream_config.h"

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
            "(default 10000).  --log-format json writes stderr as JSON lines (as `dpstream run`).\n"
            "The same as `dpstream load --format updates --config CONFIG.json ...`.\n");
}

/* The command line, as parsed (values as given, checked). */
typedef struct produce_args {
    const char *config_path, *input_path, *partitions, *connect_ms, *log_format;
    int         raw_invalid;
} produce_args;

/* Parse argv into a; -1 to go on, else the exit status (--help: 0). */
static int parse_produce_args(const char *cmd, int argc, char **argv, produce_args *a)
{
    *a = (produce_args){.connect_ms = NULL};
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
        uint64_t n;
        if (strcmp(o, "--config") == 0) a->config_path = v;
        else if (strcmp(o, "--input") == 0) a->input_path = v;
        else if (strcmp(o, "--log-format") == 0) a->log_format = v;   /* cli_log_format_option took it */
        else if (strcmp(o, "--partitions") == 0) {
            if (cli_parse_u64(v, &n) != 0 || n < 1 || n > 10000)
                return cli_fail(cmd, "--partitions must be in 1..10000");
            a->partitions = v;
        } else if (strcmp(o, "--connect-timeout-ms") == 0) {
            if (cli_parse_u64(v, &n) != 0 || n < 1 || n > 3600000)
                return cli_fail(cmd, "--connect-timeout-ms must be in 1..3600000");
            a->connect_ms = v;
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
    int rc = dp_stream_config_require_ids(cfg, DP_STREAM_IDS_OF(DP_CODEC_UPDATE), "produce", err, sizeof err);
    dp_stream_config_free(cfg);
    if (rc != DP_OK)
        return cli_fail(cmd, "%s", err);

    char *av[16];
    int n = 0;
    av[n++] = "load";
    av[n++] = "--format";
    av[n++] = "updates";
    av[n++] = "--input";
    av[n++] = (char *)a.input_path;
    av[n++] = "--config";
    av[n++] = (char *)a.config_path;
    if (a.connect_ms) {
        av[n++] = "--connect-timeout-ms";
        av[n++] = (char *)a.connect_ms;
    }
    if (a.partitions) {
        av[n++] = "--partitions";
        av[n++] = (char *)a.partitions;
    }
    if (a.raw_invalid)
        av[n++] = "--raw-invalid";
    if (a.log_format) {
        av[n++] = "--log-format";
        av[n++] = (char *)a.log_format;
    }
    av[n] = NULL;
    return cli_load_as(cmd, n, av);
}
