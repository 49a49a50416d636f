/* cmd_demo.c — `dpstream demo`, the embedded default: the built-in
 * sample panel through `window` and `cumulative` (and a table through
 * `marginal`), truth vs synthetic per
 * month, and the budget ledger.  By default the panel is streamed through
 * the real Kafka processor on librdkafka's in-process mock cluster
 * (demo_kafka.c); --offline drives the synthesizers directly
 * (demo_longitudinal.c).  Same key => same printed numbers either way. */
#include <stdio.h>
#include <string.h>

#include "app/cli.h"
#include "demo/demo_kafka.h"
#include "demo/demo_longitudinal.h"
#include "core/dp_error.h"
#include "stream/log.h"

/* A fixed, PUBLIC key so the demo is reproducible.  It protects nothing:
 * never use it for real data (see `dpstream keygen`). */
static const char DEMO_KEY[DP_KEY_BYTES + 1] = "dpstream-DEMO-KEY-not-for-prod!!";

static void demo_usage(FILE *f)
{
    if (f == stderr && dp_log_get_format() == DP_LOG_FORMAT_JSON)
        return;   /* stderr carries JSON lines only */
    fprintf(f,
            "usage: dpstream demo [--offline] [--n N] [--counter KIND] [--key-hex H | --key-file F]\n"
            "                     [--log-level error|warn|info|debug] [--log-format text|json]\n"
            "\n"
            "Runs the built-in sample panel (3000 people x 12 months, employed/unemployed)\n"
            "through the window (k = 3) and cumulative synthesizers, and a streaming table\n"
            "(200 rows in, 40 out a month) through marginal, and prints true vs synthetic\n"
            "statistics per month and the privacy budget ledgers. No broker needed:\n"
            "the panel is streamed month by month through the real Kafka processor on\n"
            "librdkafka's in-process mock cluster and the releases are read back from the\n"
            "output topics.  --offline skips Kafka and drives the synthesizers directly\n"
            "(the printed numbers are identical for the same key).\n"
            "--n is at most 20000 on the mock cluster (it keeps ~5 MiB per partition).\n"
            "By default the noise comes from a fixed public DEMO key.  The processor's log\n"
            "(stderr) is text or, with --log-format json, JSON lines as `dpstream run` writes.\n");
}

int cmd_demo(int argc, char **argv)
{
    const char *cmd = "demo";
    dp_demo_params p;
    dp_demo_default_params(&p);
    const char *key_hex = NULL, *key_file = NULL, *log_level = "warn";
    int offline = 0;
    if (cli_log_format_option(cmd, argc, argv) != 0)
        return CLI_EXIT_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            demo_usage(stdout);
            return 0;
        }
        if (strcmp(a, "--offline") == 0) {
            offline = 1;
            continue;
        }
        if (i + 1 >= argc) {
            demo_usage(stderr);
            return cli_fail(cmd, "unknown option or missing value: '%s'", a);
        }
        const char *v = argv[++i];
        if (strcmp(a, "--n") == 0) {
            if (cli_parse_u64(v, &p.n) != 0 || p.n < 1 || p.n > 10000000)
                return cli_fail(cmd, "--n must be in 1..10000000");
        } else if (strcmp(a, "--counter") == 0) {
            p.counter = v;
        } else if (strcmp(a, "--key-hex") == 0) {
            key_hex = v;
        } else if (strcmp(a, "--key-file") == 0) {
            key_file = v;
        } else if (strcmp(a, "--log-level") == 0) {
            log_level = v;
        } else if (strcmp(a, "--log-format") == 0) {
            continue;   /* cli_log_format_option took it */
        } else {
            demo_usage(stderr);
            return cli_fail(cmd, "unknown option '%s'", a);
        }
    }
    dp_log_level lvl;
    if (dp_log_level_parse(log_level, &lvl) != 0)
        return cli_fail(cmd, "--log-level must be error, warn, info or debug");
    dp_log_set_level(lvl);
    /* The mock cluster keeps only the newest ~5 MiB per partition
     * (docs/kafka.md §6); one month of 2 x n updates (~60 bytes each) must fit. */
    if (!offline && p.n > 20000)
        return cli_fail(cmd, "--n above 20000 needs --offline (the in-process mock cluster keeps only ~5 MiB "
                             "per partition)");
    dp_key key;
    if (key_hex || key_file) {
        if (cli_load_key(cmd, key_file, key_hex, &key) != 0)
            return 2;
    } else {
        memcpy(key.bytes, DEMO_KEY, DP_KEY_BYTES);
    }
    char err[1600];
    /* 20 s per month is far above what a month takes (well under a second);
     * it only bounds a hang. */
    int rc = offline ? dp_demo_run_offline(&p, &key, stdout, err, sizeof err)
                     : dp_demo_run_kafka(&p, &key, 20000, stdout, err, sizeof err);
    dp_key_wipe(&key);
    if (rc != DP_OK) {
        cli_fail(cmd, "%s", err);
        return 1;
    }
    return fflush(stdout) == 0 ? 0 : 1;
}
