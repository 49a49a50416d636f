#include "app/cli.h"
#include "core/dp_error.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int cli_fail(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "dpstream %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 2;
}

int cli_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!s || !*s || *s == '-')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

int cli_parse_i64(const char *s, int64_t *out)
{
    char *end;
    if (!s || !*s)
        return -1;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

int cli_parse_double(const char *s, double *out)
{
    char *end;
    if (!s || !*s)
        return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

int cli_load_key(const char *cmd, const char *key_file, const char *key_hex, dp_key *key)
{
    char err[256];
    if ((key_file != NULL) == (key_hex != NULL)) {
        cli_fail(cmd, "give exactly one of --key-file F or --key-hex H");
        return -1;
    }
    int rc = key_file ? dp_key_load_file(key, key_file, err, sizeof err)
                      : dp_key_from_hex(key, key_hex, err, sizeof err);
    if (rc != DP_OK) {
        cli_fail(cmd, "%s", err);
        return -1;
    }
    return 0;
}
