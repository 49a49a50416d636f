/* log.c — see log.h. */
#include "stream/log.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/utf8.h"

static dp_log_level log_level = DP_LOG_INFO;
static dp_log_format log_format = DP_LOG_FORMAT_TEXT;

static const char *const LEVEL_NAMES[] = {"error", "warn", "info", "debug"};
static const char *const FORMAT_NAMES[] = {"text", "json"};

/* A message longer than this is cut (at a character boundary in JSON). */
#define MSG_MAX 2048
/* Input bytes of a stream id that are logged; longer ids are cut. */
#define STREAM_MAX 512
/* Room for the escaped fields: at most 6 output bytes per input byte. */
#define LINE_MAX (6 * (MSG_MAX + STREAM_MAX) + 512)

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

void dp_log_set_format(dp_log_format format) { log_format = format; }
dp_log_format dp_log_get_format(void) { return log_format; }

int dp_log_format_parse(const char *s, dp_log_format *out)
{
    for (int i = 0; i < 2; i++)
        if (strcmp(s, FORMAT_NAMES[i]) == 0) {
            *out = (dp_log_format)i;
            return 0;
        }
    return -1;
}

/* --- the JSON line ------------------------------------------------------------------ */

typedef struct line {
    char   buf[LINE_MAX];
    size_t len;
} line;

/* Appends never overflow: LINE_MAX covers the worst case of every field,
 * and a write that would not fit is dropped rather than cut mid-escape. */
static void put(line *l, const char *s, size_t n)
{
    if (n > sizeof l->buf - 2 - l->len)   /* keep room for '\n' */
        return;
    memcpy(l->buf + l->len, s, n);
    l->len += n;
}

static void put_s(line *l, const char *s) { put(l, s, strlen(s)); }

/* The length of the well-formed UTF-8 sequence at s[0, n), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    size_t k = s[0] < 0x80 ? 1 : s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : 2;
    return k <= n && dp_utf8_valid((const char *)s, k) ? k : 0;
}

/* s[0, n) as a JSON string (RFC 8259 §7): quotes, backslashes and control
 * characters escaped; ill-formed UTF-8 and NUL (valid JSON as \u0000, but
 * it cuts the string short in C readers such as jansson's) replaced by
 * U+FFFD, as dp_utf8_sanitize does for the codec. */
static void put_json_string(line *l, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    put(l, "\"", 1);
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            put(l, esc, 2);
            i++;
        } else if (c == 0) {
            put_s(l, "\\ufffd");
            i++;
        } else if (c < 0x20) {
            const char *named = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
            if (named)
                put_s(l, named);
            else {
                snprintf(esc, sizeof esc, "\\u%04x", c);
                put_s(l, esc);
            }
            i++;
        } else {
            size_t k = utf8_len(p + i, n - i);
            if (k) {
                put(l, s + i, k);
                i += k;
            } else {
                put_s(l, "\\ufffd");
                i++;
            }
        }
    }
    put(l, "\"", 1);
}

static void put_timestamp(line *l)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    char b[40];
    size_t n = strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(b + n, sizeof b - n, ".%03ldZ", ts.tv_nsec / 1000000L);
    put(l, "\"", 1);
    put_s(l, b);
    put(l, "\"", 1);
}

typedef struct fields {
    const char *event;
    const char *stream;       /* NULL: none */
    size_t      stream_len;
    uint64_t    step;         /* 0: none */
    int32_t     partition;
    int         has_partition;
} fields;

static void emit(dp_log_level level, const fields *f, const char *fmt, va_list ap)
{
    if (level > log_level)
        return;
    char msg[MSG_MAX];
    int m = vsnprintf(msg, sizeof msg, fmt, ap);
    size_t mlen = m < 0 ? 0 : (size_t)m < sizeof msg ? (size_t)m : sizeof msg - 1;
    line l;   /* ~16 KB: fine on any thread's stack, librdkafka's included */
    l.len = 0;
    if (log_format == DP_LOG_FORMAT_TEXT) {
        /* The historical format, byte for byte. */
        put_s(&l, "dpstream ");
        put_s(&l, LEVEL_NAMES[level]);
        put_s(&l, ": ");
        put(&l, msg, mlen);
    } else {
        char num[32];
        put_s(&l, "{\"ts\":");
        put_timestamp(&l);
        put_s(&l, ",\"level\":\"");
        put_s(&l, LEVEL_NAMES[level]);
        put_s(&l, "\",\"event\":");
        put_json_string(&l, f->event, strlen(f->event));
        if (f->stream && f->stream_len) {
            put_s(&l, ",\"stream\":");
            put_json_string(&l, f->stream, f->stream_len < STREAM_MAX ? f->stream_len : STREAM_MAX);
        }
        if (f->step) {
            snprintf(num, sizeof num, ",\"step\":%" PRIu64, f->step);
            put_s(&l, num);
        }
        if (f->has_partition) {
            snprintf(num, sizeof num, ",\"partition\":%" PRId32, f->partition);
            put_s(&l, num);
        }
        put_s(&l, ",\"msg\":");
        put_json_string(&l, msg, mlen);
        put_s(&l, "}");
    }
    l.buf[l.len++] = '\n';
    fwrite(l.buf, 1, l.len, stderr);
}

void dp_log(dp_log_level level, const char *fmt, ...)
{
    fields f = {.event = "log"};
    va_list ap;
    va_start(ap, fmt);
    emit(level, &f, fmt, ap);
    va_end(ap);
}

void dp_log_event(dp_log_level level, const char *event, const char *stream, size_t stream_len, uint64_t step,
                  const char *fmt, ...)
{
    fields f = {.event = event, .stream = stream, .stream_len = stream ? stream_len : 0, .step = step};
    va_list ap;
    va_start(ap, fmt);
    emit(level, &f, fmt, ap);
    va_end(ap);
}

void dp_log_partition_event(dp_log_level level, const char *event, int32_t partition, const char *fmt, ...)
{
    fields f = {.event = event, .partition = partition, .has_partition = 1};
    va_list ap;
    va_start(ap, fmt);
    emit(level, &f, fmt, ap);
    va_end(ap);
}
