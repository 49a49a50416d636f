/* cmd_sample.c — `dpstream sample`: print exact discrete Laplace or
 * Gaussian draws from the keyed DRBG, one integer per line.
 *
 * The draws are a pure function of (key, stream, step, label, dist,
 * parameter, count): the same arguments always print the same numbers, so
 * the command doubles as a reproducibility check of the noise layer. */
#include "app/cli.h"
#include "core/dp_error.h"
#include "core/drbg.h"
#include "core/rational.h"
#include "core/sample.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define SAMPLE_DEFAULT_STREAM "sample"
#define SAMPLE_DEFAULT_STEP   0
#define SAMPLE_DEFAULT_LABEL  "cli.sample"

static void sample_usage(FILE *f)
{
    fprintf(f,
        "usage: dpstream sample --dist dlap|dgauss (--scale S | --sigma2 V) --count N\n"
        "                       (--key-file F | --key-hex H)\n"
        "                       [--stream ID] [--step T] [--label L]\n"
        "\n"
        "Prints N exact draws (Canonne-Kamath-Steinke 2020 samplers), one integer\n"
        "per line, from the ChaCha20 DRBG keyed by BLAKE2b(key; stream, step, label).\n"
        "\n"
        "  --dist dlap     discrete Laplace, P[x] ~ exp(-|x|/S); needs --scale S\n"
        "                  (supported: 2^-20 <= S <= 2^40, numerator/denominator <= 2^62)\n"
        "  --dist dgauss   discrete Gaussian, P[x] ~ exp(-x^2/(2V)); needs --sigma2 V\n"
        "                  (supported: 2^-10 <= V <= 2^40, denominator <= 2^30)\n"
        "  S, V            exact rationals: a/b, an integer, or a decimal such as\n"
        "                  2.5 or 1e-3 (converted exactly, 0.1 = 1/10)\n"
        "  --count N       number of draws (0 prints nothing)\n"
        "  --key-file F    32 raw bytes or 64 hex digits (see 'dpstream keygen')\n"
        "  --key-hex H     the key as 64 hex digits\n"
        "  --stream ID     stream id bytes       (default \"" SAMPLE_DEFAULT_STREAM "\")\n"
        "  --step T        step, unsigned 64-bit (default %d)\n"
        "  --label L       purpose label         (default \"" SAMPLE_DEFAULT_LABEL "\")\n"
        "\n"
        "Identical arguments print identical output; a different key, stream,\n"
        "step or label gives an independent stream.  Exit status 0 on success,\n"
        "2 on a usage or parameter error, 1 if the output cannot be written.\n",
        SAMPLE_DEFAULT_STEP);
}

/* Buffered integer writer: 10^6 lines must print fast, so format by hand
 * into a large buffer and hand it to stdio in big chunks. */
typedef struct out_buf {
    char   data[1 << 16];
    size_t len;
    int    failed;
} out_buf;

static void out_flush(out_buf *o)
{
    if (o->len && !o->failed && fwrite(o->data, 1, o->len, stdout) != o->len)
        o->failed = 1;
    o->len = 0;
}

static void out_int(out_buf *o, int64_t v)
{
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (o->len + 22 > sizeof o->data)
        out_flush(o);
    if (v < 0)
        o->data[o->len++] = '-';
    while (n)
        o->data[o->len++] = tmp[--n];
    o->data[o->len++] = '\n';
}

/* Take the value of flag argv[*i]; NULL (after reporting) if missing or
 * given twice. */
static const char *flag_value(int argc, char **argv, int *i, const char *prev)
{
    const char *flag = argv[*i];
    if (*i + 1 >= argc) {
        cli_fail("sample", "%s needs a value", flag);
        return NULL;
    }
    if (prev) {
        cli_fail("sample", "%s given more than once", flag);
        return NULL;
    }
    return argv[++*i];
}

int cmd_sample(int argc, char **argv)
{
    const char *dist = NULL, *scale = NULL, *sigma2 = NULL, *count_s = NULL;
    const char *key_file = NULL, *key_hex = NULL;
    const char *stream = NULL, *step_s = NULL, *label = NULL;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            sample_usage(stdout);
            return 0;
        }
        if (strcmp(a, "--dist") == 0)          slot = &dist;
        else if (strcmp(a, "--scale") == 0)    slot = &scale;
        else if (strcmp(a, "--sigma2") == 0)   slot = &sigma2;
        else if (strcmp(a, "--count") == 0)    slot = &count_s;
        else if (strcmp(a, "--key-file") == 0) slot = &key_file;
        else if (strcmp(a, "--key-hex") == 0)  slot = &key_hex;
        else if (strcmp(a, "--stream") == 0)   slot = &stream;
        else if (strcmp(a, "--step") == 0)     slot = &step_s;
        else if (strcmp(a, "--label") == 0)    slot = &label;
        else {
            sample_usage(stderr);
            return cli_fail("sample", "unknown argument '%s'", a);
        }
        const char *v = flag_value(argc, argv, &i, *slot);
        if (!v)
            return 2;
        *slot = v;
    }

    if (!dist)
        return cli_fail("sample", "--dist dlap|dgauss is required (see --help)");
    int is_dlap = strcmp(dist, "dlap") == 0, is_dgauss = strcmp(dist, "dgauss") == 0;
    if (!is_dlap && !is_dgauss)
        return cli_fail("sample", "unknown --dist '%s' (expected dlap or dgauss)", dist);
    if (is_dlap && sigma2)
        return cli_fail("sample", "--sigma2 applies to --dist dgauss; use --scale S with dlap");
    if (is_dgauss && scale)
        return cli_fail("sample", "--scale applies to --dist dlap; use --sigma2 V with dgauss");
    const char *param = is_dlap ? scale : sigma2;
    if (!param)
        return cli_fail("sample", "--dist %s needs %s", dist, is_dlap ? "--scale S" : "--sigma2 V");
    if (!count_s)
        return cli_fail("sample", "--count N is required");

    uint64_t count, step = SAMPLE_DEFAULT_STEP;
    if (cli_parse_u64(count_s, &count) != 0)
        return cli_fail("sample", "--count '%s' is not a non-negative integer", count_s);
    if (step_s && cli_parse_u64(step_s, &step) != 0)
        return cli_fail("sample", "--step '%s' is not an unsigned 64-bit integer", step_s);

    char err[256];
    dp_rational r;
    if (dp_rational_parse(param, &r, err, sizeof err) != DP_OK)
        return cli_fail("sample", "%s: %s", is_dlap ? "--scale" : "--sigma2", err);
    dp_dlap dl;
    dp_dgauss dg;
    int rc = is_dlap ? dp_dlap_prepare(&dl, r, err, sizeof err)
                     : dp_dgauss_prepare(&dg, r, err, sizeof err);
    if (rc != DP_OK)
        return cli_fail("sample", "%s", err);

    dp_key key;
    if (cli_load_key("sample", key_file, key_hex, &key) != 0)
        return 2;
    if (!stream)
        stream = SAMPLE_DEFAULT_STREAM;
    if (!label)
        label = SAMPLE_DEFAULT_LABEL;
    dp_drbg g;
    dp_drbg_init(&g, &key, stream, strlen(stream), step, label);
    dp_key_wipe(&key);

    static out_buf out;
    out.len = 0;
    out.failed = 0;
    for (uint64_t k = 0; k < count && !out.failed; k++)
        out_int(&out, is_dlap ? dp_dlap_sample(&dl, &g) : dp_dgauss_sample(&dg, &g));
    out_flush(&out);
    dp_drbg_wipe(&g);
    if (out.failed || fflush(stdout) != 0 || ferror(stdout)) {
        cli_fail("sample", "cannot write output: %s", strerror(errno));
        return 1;
    }
    return 0;
}
