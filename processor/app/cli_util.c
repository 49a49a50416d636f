#include "app/cli.h"
#include "codec/codec.h"
#include "core/dp_error.h"
#include "stream/log.h"
#include "stream/registry_subjects.h"

#include <errno.h>
#include <math.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_fail(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (dp_log_get_format() == DP_LOG_FORMAT_JSON) {
        char msg[2048];
        vsnprintf(msg, sizeof msg, fmt, ap);
        dp_log_event(DP_LOG_ERROR, "cli_error", NULL, 0, 0, "%s: %s", cmd, msg);
    } else {
        fprintf(stderr, "dpstream %s: ", cmd);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
    }
    va_end(ap);
    return 2;
}

int cli_log_format_option(const char *cmd, int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--log-format") != 0)
            continue;
        dp_log_format f;
        if (dp_log_format_parse(argv[i + 1], &f) != 0) {
            cli_fail(cmd, "--log-format must be text or json");
            return -1;
        }
        dp_log_set_format(f);
    }
    return 0;
}

int cli_registry_ids(const char *cmd, dp_stream_config *cfg, int read_only)
{
    char err[1024];
    dp_registry *r = NULL;
    if (dp_registry_setup(cfg, read_only ? DP_REGISTRY_LOOKUP : DP_REGISTRY_REGISTER, &r, err, sizeof err) != DP_OK) {
        cli_fail(cmd, "%s", err);
        return -1;
    }
    dp_registry_free(r);
    return 0;
}

int cli_reader_codec(const char *cmd, dp_stream_config *cfg, struct dp_codec **out)
{
    char err[1024];
    if (cli_registry_ids(cmd, cfg, 1) != 0)
        return CLI_EXIT_KAFKA;
    dp_codec_options copts;
    dp_stream_config_codec_options(cfg, &copts);
    if (dp_codec_create(out, &copts, err, sizeof err) != DP_OK) {
        cli_fail(cmd, "%s", err);
        return CLI_EXIT_FAILED;
    }
    return CLI_EXIT_OK;
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

int cli_path_inside(const char *path, const char *dir)
{
    char parent[4096], rp[PATH_MAX], rd[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", path);
    char *slash = strrchr(parent, '/');
    if (!slash)
        snprintf(parent, sizeof parent, ".");
    else if (slash == parent)
        parent[1] = '\0';   /* "/x": the root */
    else
        *slash = '\0';
    if (!realpath(parent, rp) || !realpath(dir, rd))
        return 0;   /* a directory that does not exist yet holds nothing */
    size_t n = strlen(rd);
    return strncmp(rp, rd, n) == 0 && (rp[n] == '\0' || rp[n] == '/' || strcmp(rd, "/") == 0);
}
