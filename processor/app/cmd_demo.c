/* cmd_demo.c — `dpstream demo`, the embedded default.  Until the Kafka
 * processor exists this is the offline demo: the built-in sample panel
 * through `window` and `cumulative`, truth vs synthetic per month, and the
 * budget ledger (demo_longitudinal.c does the work). */
#include <stdio.h>
#include <string.h>

#include "app/cli.h"
#include "app/demo_longitudinal.h"
#include "core/dp_error.h"

/* A fixed, PUBLIC key so the demo is reproducible.  It protects nothing:
 * never use it for real data (see `dpstream keygen`). */
static const char DEMO_KEY[DP_KEY_BYTES + 1] = "dpstream-DEMO-KEY-not-for-prod!!";

static void demo_usage(FILE *f)
{
    fprintf(f,
            "usage: dpstream demo [--n N] [--counter KIND] [--key-hex H | --key-file F]\n"
            "\n"
            "Runs the built-in sample panel (3000 people x 12 months, employed/unemployed)\n"
            "through the window (k = 3) and cumulative synthesizers and prints true vs\n"
            "synthetic statistics per month and the privacy budget ledger. No broker needed.\n"
            "By default the noise comes from a fixed public DEMO key.\n");
}

int cmd_demo(int argc, char **argv)
{
    const char *cmd = "demo";
    dp_demo_params p;
    dp_demo_default_params(&p);
    const char *key_hex = NULL, *key_file = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            demo_usage(stdout);
            return 0;
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
        } else {
            demo_usage(stderr);
            return cli_fail(cmd, "unknown option '%s'", a);
        }
    }
    dp_key key;
    if (key_hex || key_file) {
        if (cli_load_key(cmd, key_file, key_hex, &key) != 0)
            return 2;
    } else {
        memcpy(key.bytes, DEMO_KEY, DP_KEY_BYTES);
    }
    char err[512];
    int rc = dp_demo_run_offline(&p, &key, stdout, err, sizeof err);
    dp_key_wipe(&key);
    if (rc != DP_OK) {
        cli_fail(cmd, "%s", err);
        return 1;
    }
    return fflush(stdout) == 0 ? 0 : 1;
}
