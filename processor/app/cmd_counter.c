/* cmd_counter.c — `dpstream counter`: run one private continual counter
 * (docs/privacy.md §2) over integers read from stdin, one per line and one
 * line per step, printing the noisy prefix sum after each step; or, with
 * --variance, print the counter's analytic error variance for t = 1..T.
 *
 * Fails closed: a malformed line or a line past the horizon stops the run
 * with a message naming the line and a non-zero exit, after the outputs of
 * the steps already taken have been printed (and flushed).
 *
 * Owns: the parsed options, the key, the counter.  Calls: core/counter.h. */
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

/* The command line, as parsed. */
typedef struct counter_args {
    const char *kind_s, *horizon_s, *block_s, *buffers_s, *rho_s, *eps_s, *key_hex, *key_file, *label, *stream;
    int replace, variance;
} counter_args;

/* Parse argv into a; -1 to go on, else the exit status (--help: 0). */
static int parse_counter_args(int argc, char **argv, counter_args *a)
{
    *a = (counter_args){.label = "counter", .stream = ""};
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char **slot = NULL;
        if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
            counter_usage(stdout);
            return 0;
        } else if (strcmp(o, "--replace") == 0) {
            a->replace = 1;
            continue;
        } else if (strcmp(o, "--variance") == 0) {
            a->variance = 1;
            continue;
        } else if (strcmp(o, "--kind") == 0) {
            slot = &a->kind_s;
        } else if (strcmp(o, "--horizon") == 0) {
            slot = &a->horizon_s;
        } else if (strcmp(o, "--block") == 0) {
            slot = &a->block_s;
        } else if (strcmp(o, "--buffers") == 0) {
            slot = &a->buffers_s;
        } else if (strcmp(o, "--rho") == 0) {
            slot = &a->rho_s;
        } else if (strcmp(o, "--epsilon") == 0) {
            slot = &a->eps_s;
        } else if (strcmp(o, "--key-hex") == 0) {
            slot = &a->key_hex;
        } else if (strcmp(o, "--key-file") == 0) {
            slot = &a->key_file;
        } else if (strcmp(o, "--label") == 0) {
            slot = &a->label;
        } else if (strcmp(o, "--stream") == 0) {
            slot = &a->stream;
        } else {
            counter_usage(stderr);
            return cli_fail(CMD, "unexpected argument '%s'", o);
        }
        if (i + 1 >= argc)
            return cli_fail(CMD, "%s needs a value", o);
        *slot = argv[++i];
    }
    return -1;
}

/* The counter's configuration from the options; -1 to go on, else the exit status. */
static int counter_config_of(const counter_args *a, dp_counter_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    if (!a->kind_s) {
        counter_usage(stderr);
        return cli_fail(CMD, "--kind K is required");
    }
    if (dp_counter_kind_parse(a->kind_s, &cfg->kind) != DP_OK)
        return cli_fail(CMD, "unknown kind '%s' (see --help for the list)", a->kind_s);
    uint64_t horizon = 0;
    if (a->horizon_s && (cli_parse_u64(a->horizon_s, &horizon) != 0 || horizon == 0))
        return cli_fail(CMD, "--horizon must be a positive integer, got '%s'", a->horizon_s);
    cfg->horizon = horizon;
    if (a->block_s) {
        if (cfg->kind != DP_COUNTER_BLOCK)
            return cli_fail(CMD, "--block only applies to --kind block");
        if (cli_parse_u64(a->block_s, &cfg->block) != 0 || cfg->block == 0)
            return cli_fail(CMD, "--block must be a positive integer, got '%s'", a->block_s);
    }
    if (a->buffers_s) {
        uint64_t d;
        if (cfg->kind != DP_COUNTER_BLT)
            return cli_fail(CMD, "--buffers only applies to --kind blt");
        if (cli_parse_u64(a->buffers_s, &d) != 0 || d == 0 || d > UINT32_MAX)
            return cli_fail(CMD, "--buffers must be a positive integer, got '%s'", a->buffers_s);
        cfg->buffers = (uint32_t)d;
    }
    if ((a->rho_s != NULL) == (a->eps_s != NULL))
        return cli_fail(CMD, "give exactly one of --rho R or --epsilon E");
    double budget;
    const char *budget_s = a->rho_s ? a->rho_s : a->eps_s;
    if (cli_parse_double(budget_s, &budget) != 0 || !(budget > 0))
        return cli_fail(CMD, "%s must be a positive number, got '%s'", a->rho_s ? "--rho" : "--epsilon", budget_s);
    cfg->budget.model = a->rho_s ? DP_PRIVACY_ZCDP : DP_PRIVACY_PURE;
    cfg->budget.value = budget;
    cfg->neighbor_entries = a->replace ? 2 : 1;
    cfg->max_abs_change = 1;
    return -1;
}

/* Stop a run at line `lineno` (the outputs so far flushed first); 1. */
#define STOP_AT(...) (fflush(stdout), cli_fail(CMD, __VA_ARGS__), 1)

/* One integer a line from stdin, one step each, the noisy sum printed; the exit status. */
static int count_stdin(dp_counter *c, uint64_t horizon)
{
    char line[256];
    uint64_t lineno = 0;
    while (fgets(line, sizeof line, stdin)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(stdin))
            return STOP_AT("line %llu: too long to be an integer", (unsigned long long)lineno);
        int64_t x, out;
        if (parse_line(line, &x) != 0)
            return STOP_AT("line %llu: not an integer: '%s'", (unsigned long long)lineno, line);
        if (horizon && lineno > horizon)
            return STOP_AT("line %llu: input is longer than the horizon T=%llu; refusing further steps",
                           (unsigned long long)lineno, (unsigned long long)horizon);
        int rc = dp_counter_add(c, x, &out);
        if (rc != DP_OK)
            return STOP_AT("line %llu: %s", (unsigned long long)lineno, dp_status_str(rc));
        printf("%lld\n", (long long)out);
    }
    if (ferror(stdin)) {
        cli_fail(CMD, "error reading stdin");
        return 1;
    }
    return 0;
}

int cmd_counter(int argc, char **argv)
{
    counter_args a;
    dp_counter_config cfg;
    int status = parse_counter_args(argc, argv, &a);
    if (status < 0)
        status = counter_config_of(&a, &cfg);
    if (status >= 0)
        return status;
    dp_key key;
    if (a.variance && !a.key_file && !a.key_hex) {
        /* The variance is analytic: nothing is drawn, so no key is needed
         * (the counter is built with a placeholder that never noises an
         * output anyone sees). */
        memset(&key, 0, sizeof key);
    } else if (cli_load_key(CMD, a.key_file, a.key_hex, &key) != 0) {
        return 2;
    }
    dp_noise_source noise = {&key, a.stream, strlen(a.stream), a.label};
    dp_counter *c;
    char err[256];
    int rc = dp_counter_create(&c, &cfg, &noise, err, sizeof err);
    if (rc != DP_OK) {
        dp_key_wipe(&key);
        return cli_fail(CMD, "%s", err);
    }

    int exit_code = 0;
    if (!a.variance) {
        exit_code = count_stdin(c, cfg.horizon);
    } else if (!cfg.horizon) {
        exit_code = cli_fail(CMD, "--variance needs --horizon T for the unbounded kind %s", a.kind_s);
    } else {
        for (uint64_t t = 1; t <= cfg.horizon; t++)
            printf("%.17g\n", dp_counter_variance(c, t));
    }
    if (fflush(stdout) != 0 && exit_code == 0) {
        cli_fail(CMD, "error writing stdout");
        exit_code = 1;
    }
    dp_counter_destroy(c);
    dp_key_wipe(&key);
    return exit_code;
}
