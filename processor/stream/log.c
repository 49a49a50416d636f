/* log.c — see log.h. */
#include "stream/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static dp_log_level log_level = DP_LOG_INFO;

static const char *const LEVEL_NAMES[] = {"error", "warn", "info", "debug"};

void dp_log_set_level(dp_log_level level) { log_level = level; }
dp_log_level dp_log_get_level(void) { return log_level; }

int dp_log_level_parse(const char *s, dp_log_level *out)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(s, LEVEL_NAMES[i]) == 0) {
            *out = (dp_log_level)i;
            return 0;
        }
    return -1;
}

void dp_log(dp_log_level level, const char *fmt, ...)
{
    if (level > log_level)
        return;
    /* Format into one buffer and write it with one call so lines from the
     * librdkafka threads' log callback do not interleave mid-line. */
    char line[2048];
    int n = snprintf(line, sizeof line, "dpstream %s: ", LEVEL_NAMES[level]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    fwrite(line, 1, len, stderr);
}
