/* cmd_counter.c — `dpstream counter`: run one private continual counter
 * (docs/privacy.md §2) over integers read from stdin, one per line and one
 * line per step, printing the noisy prefix sum after each step; or, with
 * --variance, print the counter's analytic error variance for t = 1..T.
 *
 * Fails closed: a malformed line or a line past the horizon stops the run
 * with a message naming the line and a non-zero exit, after the outputs of
 * the steps already taken have been printed (and flushed). */
#include "app/cli.h"
#include "core/counter.h"
#include "core/dp_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMD "counter"

static void counter_usage(FILE *f)
{
    fprintf(f,
            "usage: dpstream counter --kind K [--horizon T] [--block B] [--buffers d]\n"
            "                        (--rho R | --epsilon E) (--key-hex H | --key-file F)\n"
            "                        (no key needed with --variance)\n"
            "                        [--label L] [--stream S] [--replace] [--variance]\n"
            "  Reads one integer per line from stdin (one per step) and prints the\n"
            "  noisy prefix sum after each step.\n"
            "  --kind K      simple, block, block_unbounded, tree, hybrid, honaker, sqrt,\n"
            "                blt, sparse, sparse_inhomogeneous\n"
            "  --horizon T   number of steps (required by bounded kinds; for unbounded\n"
            "                kinds an optional cap on the input, and the range of --variance)\n"
            "  --block B     block size of the block kind (default ceil(sqrt(T)))\n"
            "  --buffers d   number of buffers of the blt kind\n"
            "  --rho R       total zCDP budget (discrete Gaussian noise)\n"
            "  --epsilon E   total pure-DP budget (discrete Laplace noise)\n"
            "  --label L     noise label of this counter (default \"counter\")\n"
            "  --stream S    stream id mixed into the noise (default empty)\n"
            "  --replace     neighbours replace one entry (two changed entries)\n"
            "  --variance    print the analytic variance of the error at t = 1..T\n"
            "                (one per line) instead of reading stdin\n");
}

/* One input line -> integer; strips a trailing "\r\n" and surrounding
 * blanks.  0 or -1. */
static int parse_line(char *line, int64_t *v)
{
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
        line[--n] = '\0';
    char *p = line;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '+')
        return -1;
    return cli_parse_i64(p, v);
}

int cmd_counter(int argc, char **argv)
{
    const char *kind_s = NULL, *horizon_s = NULL, *block_s = NULL, *buffers_s = NULL;
    const char *rho_s = NULL, *eps_s = NULL, *key_hex = NULL, *key_file = NULL;
    const char *label = "counter", *stream = "";
    int replace = 0, variance = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            counter_usage(stdout);
            return 0;
        } else if (strcmp(a, "--replace") == 0) {
            replace = 1;
            continue;
        } else if (strcmp(a, "--variance") == 0) {
            variance = 1;
            continue;
        } else if (strcmp(a, "--kind") == 0) {
            slot = &kind_s;
        } else if (strcmp(a, "--horizon") == 0) {
            slot = &horizon_s;
        } else if (strcmp(a, "--block") == 0) {
            slot = &block_s;
        } else if (strcmp(a, "--buffers") == 0) {
            slot = &buffers_s;
        } else if (strcmp(a, "--rho") == 0) {
            slot = &rho_s;
        } else if (strcmp(a, "--epsilon") == 0) {
            slot = &eps_s;
        } else if (strcmp(a, "--key-hex") == 0) {
            slot = &key_hex;
        } else if (strcmp(a, "--key-file") == 0) {
            slot = &key_file;
        } else if (strcmp(a, "--label") == 0) {
            slot = &label;
        } else if (strcmp(a, "--stream") == 0) {
            slot = &stream;
        } else {
            counter_usage(stderr);
            return cli_fail(CMD, "unexpected argument '%s'", a);
        }
        if (i + 1 >= argc)
            return cli_fail(CMD, "%s needs a value", a);
        *slot = argv[++i];
    }

    dp_counter_config cfg;
    memset(&cfg, 0, sizeof cfg);
    if (!kind_s) {
        counter_usage(stderr);
        return cli_fail(CMD, "--kind K is required");
    }
    if (dp_counter_kind_parse(kind_s, &cfg.kind) != DP_OK)
        return cli_fail(CMD, "unknown kind '%s' (see --help for the list)", kind_s);
    uint64_t horizon = 0;
    if (horizon_s && (cli_parse_u64(horizon_s, &horizon) != 0 || horizon == 0))
        return cli_fail(CMD, "--horizon must be a positive integer, got '%s'", horizon_s);
    cfg.horizon = horizon;
    if (block_s) {
        if (cfg.kind != DP_COUNTER_BLOCK)
            return cli_fail(CMD, "--block only applies to --kind block");
        if (cli_parse_u64(block_s, &cfg.block) != 0 || cfg.block == 0)
            return cli_fail(CMD, "--block must be a positive integer, got '%s'", block_s);
    }
    if (buffers_s) {
        uint64_t d;
        if (cfg.kind != DP_COUNTER_BLT)
            return cli_fail(CMD, "--buffers only applies to --kind blt");
        if (cli_parse_u64(buffers_s, &d) != 0 || d == 0 || d > UINT32_MAX)
            return cli_fail(CMD, "--buffers must be a positive integer, got '%s'", buffers_s);
        cfg.buffers = (uint32_t)d;
    }
    if ((rho_s != NULL) == (eps_s != NULL))
        return cli_fail(CMD, "give exactly one of --rho R or --epsilon E");
    double budget;
    const char *budget_s = rho_s ? rho_s : eps_s;
    if (cli_parse_double(budget_s, &budget) != 0 || !(budget > 0))
        return cli_fail(CMD, "%s must be a positive number, got '%s'", rho_s ? "--rho" : "--epsilon", budget_s);
    cfg.budget.model = rho_s ? DP_PRIVACY_ZCDP : DP_PRIVACY_PURE;
    cfg.budget.value = budget;
    cfg.neighbor_entries = replace ? 2 : 1;
    cfg.max_abs_change = 1;

    dp_key key;
    if (variance && !key_file && !key_hex) {
        /* The variance is analytic: nothing is drawn, so no key is needed
         * (the counter is built with a placeholder that never noises an
         * output anyone sees). */
        memset(&key, 0, sizeof key);
    } else if (cli_load_key(CMD, key_file, key_hex, &key) != 0) {
        return 2;
    }
    dp_noise_source noise = {&key, stream, strlen(stream), label};
    dp_counter *c;
    char err[256];
    int rc = dp_counter_create(&c, &cfg, &noise, err, sizeof err);
    if (rc != DP_OK) {
        dp_key_wipe(&key);
        return cli_fail(CMD, "%s", err);
    }

    int exit_code = 0;
    if (variance) {
        if (!horizon) {
            exit_code = cli_fail(CMD, "--variance needs --horizon T for the unbounded kind %s", kind_s);
        } else {
            for (uint64_t t = 1; t <= horizon; t++)
                printf("%.17g\n", dp_counter_variance(c, t));
        }
    } else {
        char line[256];
        uint64_t lineno = 0;
        while (fgets(line, sizeof line, stdin)) {
            lineno++;
            if (!strchr(line, '\n') && !feof(stdin)) {
                exit_code = 1;
                fflush(stdout);
                cli_fail(CMD, "line %llu: too long to be an integer", (unsigned long long)lineno);
                break;
            }
            int64_t x, out;
            if (parse_line(line, &x) != 0) {
                exit_code = 1;
                fflush(stdout);
                cli_fail(CMD, "line %llu: not an integer: '%s'", (unsigned long long)lineno, line);
                break;
            }
            if (horizon && lineno > horizon) {
                exit_code = 1;
                fflush(stdout);
                cli_fail(CMD, "line %llu: input is longer than the horizon T=%llu; refusing further steps",
                         (unsigned long long)lineno, (unsigned long long)horizon);
                break;
            }
            rc = dp_counter_add(c, x, &out);
            if (rc != DP_OK) {
                exit_code = 1;
                fflush(stdout);
                cli_fail(CMD, "line %llu: %s", (unsigned long long)lineno, dp_status_str(rc));
                break;
            }
            printf("%lld\n", (long long)out);
        }
        if (exit_code == 0 && ferror(stdin)) {
            exit_code = 1;
            cli_fail(CMD, "error reading stdin");
        }
    }
    if (fflush(stdout) != 0 && exit_code == 0) {
        cli_fail(CMD, "error writing stdout");
        exit_code = 1;
    }
    dp_counter_destroy(c);
    dp_key_wipe(&key);
    return exit_code;
}
