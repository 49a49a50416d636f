/* test_log.c — the log formats (stream/log.h): text lines are the
 * historical "dpstream <level>: <message>"; JSON lines parse (jansson)
 * whatever bytes a message or stream id holds — quotes, backslashes,
 * control characters, ill-formed or cut UTF-8, over-long messages — carry
 * ts/level/event and, only where given, stream/step/partition, and say the
 * same sentence as the text line. */
#include "dptest.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stream/log.h"

/* stderr goes to a temporary file while `fn` runs; its lines are returned
 * (one malloc'd buffer, NUL-terminated). */
static char *capture(void (*fn)(void))
{
    char path[] = "/tmp/dpstream-test-log-XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    fn();
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    FILE *f = fdopen(fd, "rb");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *out = calloc((size_t)n + 1, 1);
    CU_ASSERT_FATAL(out != NULL);
    CU_ASSERT_EQUAL((long)fread(out, 1, (size_t)n, f), n);
    fclose(f);
    unlink(path);
    return out;
}

static void emit_text(void)
{
    dp_log_set_format(DP_LOG_FORMAT_TEXT);
    dp_log_set_level(DP_LOG_INFO);
    dp_log(DP_LOG_INFO, "hello %d", 7);
    dp_log_event(DP_LOG_WARN, "step_released", "s/1", 3, 4, "released step %d", 4);
    dp_log(DP_LOG_DEBUG, "dropped: above the level");
}

static void test_text_unchanged(void)
{
    char *out = capture(emit_text);
    CU_ASSERT_STRING_EQUAL(out, "dpstream info: hello 7\ndpstream warn: released step 4\n");
    free(out);
}

/* A stream id with a quote, a backslash, a control byte, a NUL and an
 * ill-formed byte; a message with every kind of byte; a cut UTF-8
 * sequence at the very end of a message. */
static const char NASTY_ID[] = {'a', '"', '\\', '\x01', '\0', '\xff', 'z'};

static void emit_json(void)
{
    dp_log_set_format(DP_LOG_FORMAT_JSON);
    dp_log_set_level(DP_LOG_DEBUG);
    dp_log(DP_LOG_ERROR, "plain \"quoted\" back\\slash tab\there nl\nthere bell\x07 del\x7f");
    dp_log_event(DP_LOG_INFO, "step_released", NASTY_ID, sizeof NASTY_ID, 12, "caf\xc3\xa9 \xe2\x82");
    dp_log_partition_event(DP_LOG_DEBUG, "dead_letter", 3, "bad \xc0\xaf overlong, \xed\xa0\x80 surrogate");
    char big[5000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    memcpy(big + 2046, "\xe2\x82\xac", 3);   /* a euro sign across the message limit */
    dp_log_event(DP_LOG_WARN, "log", "s", 1, 0, "%s", big);
    dp_log_set_format(DP_LOG_FORMAT_TEXT);
    dp_log_set_level(DP_LOG_INFO);
}

static json_t *line_json(char **cursor)
{
    char *nl = strchr(*cursor, '\n');
    CU_ASSERT_FATAL(nl != NULL);
    *nl = '\0';
    json_error_t e;
    json_t *j = json_loads(*cursor, 0, &e);
    if (!j)
        fprintf(stderr, "not JSON (%s): %s\n", e.text, *cursor);
    CU_ASSERT_FATAL(j != NULL);
    *cursor = nl + 1;
    return j;
}

static const char *str_field(json_t *j, const char *k)
{
    json_t *v = json_object_get(j, k);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static void test_json_lines_parse(void)
{
    char *out = capture(emit_json);
    char *cur = out;

    json_t *a = line_json(&cur);
    CU_ASSERT_STRING_EQUAL(str_field(a, "level"), "error");
    CU_ASSERT_STRING_EQUAL(str_field(a, "event"), "log");
    CU_ASSERT_STRING_EQUAL(str_field(a, "msg"),
                           "plain \"quoted\" back\\slash tab\there nl\nthere bell\x07 del\x7f");
    CU_ASSERT_PTR_NULL(json_object_get(a, "stream"));
    CU_ASSERT_PTR_NULL(json_object_get(a, "step"));
    CU_ASSERT_PTR_NULL(json_object_get(a, "partition"));
    /* ts: RFC 3339, UTC, milliseconds */
    const char *ts = str_field(a, "ts");
    CU_ASSERT_FATAL(ts != NULL);
    CU_ASSERT_EQUAL(strlen(ts), 24);
    CU_ASSERT(ts[4] == '-' && ts[10] == 'T' && ts[19] == '.' && ts[23] == 'Z');
    /* the key order is the documented one */
    const char *order[] = {"ts", "level", "event", "msg"};
    size_t k = 0;
    for (void *it = json_object_iter(a); it; it = json_object_iter_next(a, it), k++)
        CU_ASSERT_STRING_EQUAL(json_object_iter_key(it), order[k]);
    json_decref(a);

    json_t *b = line_json(&cur);
    CU_ASSERT_STRING_EQUAL(str_field(b, "event"), "step_released");
    /* the NUL and the ill-formed byte are U+FFFD, the rest is kept */
    CU_ASSERT_STRING_EQUAL(str_field(b, "stream"), "a\"\\\x01\xef\xbf\xbd\xef\xbf\xbdz");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(b, "step")), 12);
    CU_ASSERT_STRING_EQUAL(str_field(b, "msg"), "caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd");
    json_decref(b);

    json_t *c = line_json(&cur);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(c, "partition")), 3);
    CU_ASSERT_PTR_NULL(json_object_get(c, "stream"));
    CU_ASSERT_STRING_EQUAL(str_field(c, "level"), "debug");
    const char *cm = str_field(c, "msg");
    CU_ASSERT(cm && strstr(cm, "\xc0") == NULL && strstr(cm, "\xed\xa0") == NULL);
    json_decref(c);

    json_t *d = line_json(&cur);   /* cut at the limit, still one valid line */
    const char *dm = str_field(d, "msg");
    CU_ASSERT(dm && strlen(dm) >= 2040 && strlen(dm) < 2060);
    CU_ASSERT_PTR_NULL(json_object_get(d, "step"));   /* step 0 means none */
    json_decref(d);

    CU_ASSERT_STRING_EQUAL(cur, "");   /* nothing else, one object per line */
    free(out);
}

static void test_parse_names(void)
{
    dp_log_format f;
    CU_ASSERT_EQUAL(dp_log_format_parse("json", &f), 0);
    CU_ASSERT_EQUAL(f, DP_LOG_FORMAT_JSON);
    CU_ASSERT_EQUAL(dp_log_format_parse("text", &f), 0);
    CU_ASSERT_EQUAL(f, DP_LOG_FORMAT_TEXT);
    CU_ASSERT_EQUAL(dp_log_format_parse("JSON", &f), -1);
    CU_ASSERT_EQUAL(dp_log_format_parse("", &f), -1);
}

int main(void)
{
    static const dptest_case cases[] = {
        {"text lines are the historical format", test_text_unchanged},
        {"JSON lines parse whatever the message and stream hold", test_json_lines_parse},
        {"--log-format names", test_parse_names},
        {NULL, NULL},
    };
    return dptest_run("log", cases);
}
