/* test_update_json.c — update JSON lines: parse/format round trips, the
 * refusal of malformed lines, and the exact bytes of the output formats. */
#include <math.h>
#include <stdio.h>
#include <string.h>

/* processor/app is built only into the dpstream binary, not a library:
 * compile the module under test into this executable. */
#include "connectors/jsonl/update_json.h"
#include "core/dp_error.h"
#include "dptest.h"

static int parse(dp_update_owned *o, const char *line, char *err, size_t n)
{
    return dp_update_json_parse(line, strlen(line), o, err, n);
}

/* parse → format must reproduce a canonical line byte for byte. */
static void check_round_trip(const char *canonical)
{
    dp_update_owned o;
    dp_update_owned_init(&o);
    char err[256] = "";
    int rc = parse(&o, canonical, err, sizeof err);
    if (rc != DP_OK)
        fprintf(stderr, "parse failed: %s (%s)\n", err, canonical);
    CU_ASSERT_EQUAL_FATAL(rc, DP_OK);
    dp_jbuf b;
    dp_jbuf_init(&b);
    CU_ASSERT_EQUAL(dp_update_json_format(&b, &o.u), 0);
    int ok = b.len == strlen(canonical) + 1 && b.data[b.len - 1] == '\n' &&
             memcmp(b.data, canonical, b.len - 1) == 0;
    CU_ASSERT(ok);
    if (!ok)
        fprintf(stderr, "\n  want %s\n  got  %.*s", canonical, (int)b.len, b.data);
    dp_jbuf_free(&b);
    dp_update_owned_free(&o);
}

static void test_round_trips(void)
{
    check_round_trip("{\"stream\":\"s1\",\"step\":1,\"kind\":\"REPORT\",\"entity\":\"u17\",\"value\":1}");
    check_round_trip("{\"stream\":\"s1\",\"step\":12,\"kind\":\"REPORT\",\"entity\":\"u17\",\"value\":-3,\"event_time\":1700000000123}");
    check_round_trip("{\"stream\":\"survey/x\",\"step\":3,\"kind\":\"INSERT\",\"row\":[0,2,-1,2147483647]}");
    check_round_trip("{\"stream\":\"geo\",\"step\":2,\"kind\":\"DELETE\",\"entity\":\"p\",\"point\":[0.25,0.1,-3,1e+300,0.30000000000000004]}");
    check_round_trip("{\"stream\":\"s1\",\"step\":9223372036854775807,\"kind\":\"CLOSE_STEP\"}");
    /* escapes and non-ASCII UTF-8 survive */
    check_round_trip("{\"stream\":\"a\\\"b\\\\c\\n\\u0001\",\"step\":1,\"kind\":\"REPORT\",\"entity\":\"caf\xc3\xa9\",\"value\":0}");
}

static void test_fields_parsed(void)
{
    dp_update_owned o;
    dp_update_owned_init(&o);
    char err[256];
    /* key order in the input does not matter; whitespace is fine */
    CU_ASSERT_EQUAL_FATAL(parse(&o, " { \"value\" : 7 , \"entity\":\"e\", \"kind\":\"REPORT\",\"step\":4,\"stream\":\"x\"}\r",
                                err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(o.u.stream_id_len, 1);
    CU_ASSERT_EQUAL(memcmp(o.u.stream_id, "x", 1), 0);
    CU_ASSERT_EQUAL(o.u.step, 4);
    CU_ASSERT_EQUAL(o.u.kind, DP_UPDATE_REPORT);
    CU_ASSERT_EQUAL(o.u.entity_id_len, 1);
    CU_ASSERT_EQUAL(o.u.payload.kind, DP_PAYLOAD_CATEGORY);
    CU_ASSERT_EQUAL(o.u.payload.category, 7);
    CU_ASSERT_EQUAL(o.u.has_event_time, 0);
    /* reusing the object: fields of the previous line must not leak */
    CU_ASSERT_EQUAL_FATAL(parse(&o, "{\"stream\":\"y\",\"step\":1,\"kind\":\"CLOSE_STEP\"}", err, sizeof err), DP_OK);
    CU_ASSERT_PTR_NULL(o.u.entity_id);
    CU_ASSERT_EQUAL(o.u.payload.kind, DP_PAYLOAD_NONE);
    CU_ASSERT_EQUAL(o.u.kind, DP_UPDATE_CLOSE_STEP);
    /* an integer-valued point coordinate is a number like any other */
    CU_ASSERT_EQUAL_FATAL(parse(&o, "{\"stream\":\"y\",\"step\":1,\"kind\":\"INSERT\",\"point\":[1,0.5]}", err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(o.u.payload.point_len, 2);
    CU_ASSERT_DOUBLE_EQUAL(o.u.payload.point[0], 1.0, 0.0);
    CU_ASSERT_DOUBLE_EQUAL(o.u.payload.point[1], 0.5, 0.0);
    dp_update_owned_free(&o);
}

static void test_malformed(void)
{
    static const struct { const char *line; const char *needle; } BAD[] = {
        {"", "not valid JSON"},
        {"{\"stream\":\"s\",\"step\":1,\"kind\":\"REPORT\"", "not valid JSON"},
        {"{\"stream\":\"s\",\"step\":1,\"kind\":\"REPORT\"} trailing", "not valid JSON"},
        {"[1,2]", "JSON object"},
        {"{\"stream\":\"s\",\"stream\":\"t\",\"step\":1,\"kind\":\"REPORT\"}", "not valid JSON"},
        {"{\"step\":1,\"kind\":\"REPORT\"}", "\"stream\""},
        {"{\"stream\":\"\",\"step\":1,\"kind\":\"REPORT\"}", "\"stream\""},
        {"{\"stream\":5,\"step\":1,\"kind\":\"REPORT\"}", "\"stream\""},
        {"{\"stream\":\"s\",\"kind\":\"REPORT\"}", "\"step\""},
        {"{\"stream\":\"s\",\"step\":0,\"kind\":\"REPORT\"}", "\"step\""},
        {"{\"stream\":\"s\",\"step\":-2,\"kind\":\"REPORT\"}", "\"step\""},
        {"{\"stream\":\"s\",\"step\":1.5,\"kind\":\"REPORT\"}", "\"step\""},
        {"{\"stream\":\"s\",\"step\":\"1\",\"kind\":\"REPORT\"}", "\"step\""},
        {"{\"stream\":\"s\",\"step\":99999999999999999999999,\"kind\":\"REPORT\"}", "not valid JSON"},
        {"{\"stream\":\"s\",\"step\":1}", "\"kind\""},
        {"{\"stream\":\"s\",\"step\":1,\"kind\":\"report\"}", "\"kind\""},
        {"{\"stream\":\"s\",\"step\":1,\"kind\":\"REPORT\",\"entity\":3}", "\"entity\""},
        {"{\"stream\":\"s\",\"step\":1,\"kind\":\"REPORT\",\"entity\":\"\"}", "\"entity\""},
        {"{\"stream\":\"s\",\"step\":1,\"kind\":\"REPORT\",\"value\":1.5}", "\"value\""},
        {"{\"stream\":\"s\",\"step\":1,\"kind\":\"REPORT\",\"value\":true}", "\"value\""},
        {"{\"stream\":\"s\",\"step\":1,\"kind\":\"REPORT\",\"value\":1,\"row\":[1]}", "at most one"},
        {"{\"stream\":\"s\",\"step\":1,\"kind\":\"INSERT\",\"row\":[]}", "\"row\""},
        {"{\"stream\":\"s\",\"step\":1,\"kind\":\"INSERT\",\"row\":[1,\"a\"]}", "\"row\"[1]"},
        {"{\"stream\":\"s\",\"step\":1,\"kind\":\"INSERT\",\"row\":[2147483648]}", "\"row\"[0]"},
        {"{\"stream\":\"s\",\"step\":1,\"kind\":\"INSERT\",\"point\":[0.5,null]}", "\"point\"[1]"},
        {"{\"stream\":\"s\",\"step\":1,\"kind\":\"INSERT\",\"point\":{}}", "\"point\""},
        {"{\"stream\":\"s\",\"step\":1,\"kind\":\"CLOSE_STEP\",\"value\":1}", "CLOSE_STEP"},
        {"{\"stream\":\"s\",\"step\":1,\"kind\":\"CLOSE_STEP\",\"entity\":\"u1\"}", "CLOSE_STEP"},
        {"{\"stream\":\"s\",\"step\":1,\"kind\":\"REPORT\",\"event_time\":\"noon\"}", "\"event_time\""},
        {"{\"stream\":\"s\",\"step\":1,\"kind\":\"REPORT\",\"vlaue\":1}", "unknown field \"vlaue\""},
        {"{\"stream\":\"s\\u0000x\",\"step\":1,\"kind\":\"REPORT\"}", "not valid JSON"},
        {"{\"stream\":\"\xff\",\"step\":1,\"kind\":\"REPORT\"}", "not valid JSON"},
    };
    dp_update_owned o;
    dp_update_owned_init(&o);
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        char err[256] = "";
        int rc = parse(&o, BAD[i].line, err, sizeof err);
        CU_ASSERT_EQUAL(rc, DP_EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, BAD[i].needle));
        if (rc != DP_EINVAL || !strstr(err, BAD[i].needle))
            fprintf(stderr, "\n  case %zu (%s): rc=%d err=%s", i, BAD[i].line, rc, err);
    }
    dp_update_owned_free(&o);
}

static void expect_line(const dp_jbuf *b, const char *want)
{
    int ok = b->len == strlen(want) && memcmp(b->data, want, b->len) == 0;
    CU_ASSERT(ok);
    if (!ok)
        fprintf(stderr, "\n  want %s  got  %.*s", want, (int)b->len, b->data);
}

static void test_release_lines(void)
{
    dp_jbuf b;
    dp_jbuf_init(&b);
    dp_synth_record r = {.synthetic_id = 42, .value = {.kind = DP_PAYLOAD_CATEGORY, .category = 1}};
    CU_ASSERT_EQUAL(dp_update_json_format_record(&b, "panel-a", 7, 3, &r), 0);
    expect_line(&b, "{\"type\":\"record\",\"stream\":\"panel-a\",\"step\":3,\"synthetic_id\":42,\"value\":1}\n");

    dp_jbuf_reset(&b);
    dp_kv debias[] = {{"n_pad", 41}, {"sigma2", 2000.5}, {"bins", 8}};
    dp_release_manifest m = {.stream_id = "panel-a", .stream_id_len = 7, .step = 3, .synthesizer = "window",
                             .mode = DP_RELEASE_FULL, .record_count = 25123, .clamped = 1,
                             .debias = debias, .n_debias = 3};
    CU_ASSERT_EQUAL(dp_update_json_format_manifest(&b, &m), 0);
    expect_line(&b, "{\"type\":\"manifest\",\"stream\":\"panel-a\",\"step\":3,\"synthesizer\":\"window\",\"mode\":\"FULL\","
                    "\"record_count\":25123,\"clamped\":true,"
                    "\"debias\":{\"n_pad\":41,\"sigma2\":2000.5,\"bins\":8}}\n");

    dp_jbuf_reset(&b);
    dp_kv noise[] = {{"sigma2", 2000}};
    dp_kv acc[] = {{"beta", 0.05}, {"max_error", 0.1}};
    dp_budget_event e = {.stream_id = "s", .stream_id_len = 1, .step = 12, .status = DP_BUDGET_EXHAUSTED,
                         .mechanism = "window/discrete_gaussian", .unit = "user-level over horizon T",
                         .neighbors = "replace", .model = DP_PRIVACY_ZCDP, .spent_step = 0.0005,
                         .spent_total = 0.005, .budget_total = 0.005, .delta = 1e-6, .eps_simple = NAN,
                         .eps_cks = 0.3, .noise = noise, .n_noise = 1, .accuracy = acc, .n_accuracy = 2,
                         .public_inputs = "n is public", .key_fingerprint = "00ff"};
    CU_ASSERT_EQUAL(dp_update_json_format_budget(&b, &e), 0);
    expect_line(&b, "{\"type\":\"budget\",\"stream\":\"s\",\"step\":12,\"status\":\"EXHAUSTED\","
                    "\"mechanism\":\"window/discrete_gaussian\",\"unit\":\"user-level over horizon T\","
                    "\"neighbors\":\"replace\",\"model\":\"zcdp\",\"spent_step\":0.0005,"
                    "\"spent_total\":0.005,\"budget_total\":0.005,"
                    "\"delta\":1e-06,\"eps_simple\":null,\"eps_cks\":0.3,"
                    "\"noise\":{\"sigma2\":2000},\"accuracy\":{\"beta\":0.05,\"max_error\":0.1},"
                    "\"spent_units_step\":0,\"spent_units_total\":0,\"budget_units\":0,\"public_inputs\":\"n is public\",\"key_fingerprint\":\"00ff\"}\n");
    dp_jbuf_free(&b);
}

static void test_rejected_lines(void)
{
    dp_jbuf b;
    dp_jbuf_init(&b);
    const char raw[] = "{\"a\":\"x\ty\"";
    CU_ASSERT_EQUAL(dp_update_json_format_rejected(&b, 17, DP_REJECT_MALFORMED, "not valid JSON", raw,
                                                   strlen(raw), 0), 0);
    expect_line(&b, "{\"line\":17,\"reason\":\"MALFORMED\",\"text\":\"not valid JSON\","
                    "\"raw\":\"{\\\"a\\\":\\\"x\\ty\\\"\"}\n");
    /* invalid UTF-8 cannot be a JSON string: the raw bytes go out as hex */
    dp_jbuf_reset(&b);
    const char bad[] = {'{', (char)0xff, (char)0xc3, '}'};
    CU_ASSERT_EQUAL(dp_update_json_format_rejected(&b, 2, DP_REJECT_MALFORMED, "x", bad, sizeof bad, 1), 0);
    expect_line(&b, "{\"line\":2,\"reason\":\"MALFORMED\",\"text\":\"x\",\"raw_hex\":\"7bffc37d\",\"raw_truncated\":true}\n");
    dp_jbuf_free(&b);
}

static void test_utf8_and_numbers(void)
{
    CU_ASSERT_TRUE(dp_utf8_valid("abc\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 12));
    CU_ASSERT_FALSE(dp_utf8_valid("\xc0\xaf", 2));          /* overlong '/' */
    CU_ASSERT_FALSE(dp_utf8_valid("\xed\xa0\x80", 3));      /* surrogate */
    CU_ASSERT_FALSE(dp_utf8_valid("\xf4\x90\x80\x80", 4));  /* > U+10FFFF */
    CU_ASSERT_FALSE(dp_utf8_valid("\xe2\x82", 2));          /* truncated */
    dp_jbuf b;
    dp_jbuf_init(&b);
    dp_jbuf_i64(&b, INT64_MIN);
    dp_jbuf_put(&b, " ", 1);
    dp_jbuf_u64(&b, UINT64_MAX);
    dp_jbuf_put(&b, " ", 1);
    dp_jbuf_double(&b, INFINITY);
    dp_jbuf_put(&b, " ", 1);
    dp_jbuf_double(&b, 0.1);
    expect_line(&b, "-9223372036854775808 18446744073709551615 null 0.1");
    /* the shortest form people wrote, not %.17g's expansion ... */
    static const struct { double v; const char *text; } SHORT[] = {
        {1e-6, "1e-06"}, {0.05, "0.05"}, {0.5, "0.5"}, {2000, "2000"}, {-2.5e-10, "-2.5e-10"},
        {0.1 + 0.2, "0.30000000000000004"}, {1.0 / 3.0, "0.3333333333333333"}, {123456789012345680, "1.2345678901234568e+17"},
        {5e-324, "5e-324"}, {2.5e-320, "2.5e-320"}, {1.7976931348623157e308, "1.7976931348623157e+308"}, {-0.0, "-0"},
    };
    for (size_t i = 0; i < sizeof SHORT / sizeof SHORT[0]; i++) {
        dp_jbuf_reset(&b);
        dp_jbuf_double(&b, SHORT[i].v);
        int same = b.len == strlen(SHORT[i].text) && memcmp(b.data, SHORT[i].text, b.len) == 0;
        CU_ASSERT(same);
        if (!same)
            fprintf(stderr, "\n  %s printed as %.*s", SHORT[i].text, (int)b.len, b.data);
    }
    /* ... which still reads back as exactly the same double, for any double */
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double v;
        memcpy(&v, &x, sizeof v);
        if (!isfinite(v))
            continue;
        dp_jbuf_reset(&b);
        dp_jbuf_double(&b, v);
        dp_jbuf_put(&b, "", 1);   /* NUL for strtod */
        CU_ASSERT_FATAL(strtod(b.data, NULL) == v);
        /* and no shorter %g form would have: one digit fewer does not round-trip */
        char sig[40], shorter[400];
        size_t digits = 0;   /* significant digits: no leading or trailing zeros */
        for (const char *c = b.data; *c && *c != 'e'; c++)
            if (*c >= '0' && *c <= '9' && (digits || *c != '0'))
                sig[digits++] = *c;
        while (digits && sig[digits - 1] == '0')
            digits--;
        if (digits > 1) {
            snprintf(shorter, sizeof shorter, "%.*g", (int)digits - 1, v);
            CU_ASSERT_FATAL(strtod(shorter, NULL) != v);
        }
    }
    dp_jbuf_free(&b);
}

static const dptest_case CASES[] = {
    {"parse then format reproduces canonical lines", test_round_trips},
    {"fields are parsed; reused object is reset", test_fields_parsed},
    {"malformed lines are refused with a message naming the field", test_malformed},
    {"record, manifest and budget lines are byte-exact", test_release_lines},
    {"rejected lines: raw as string or hex", test_rejected_lines},
    {"UTF-8 validation and exact numbers", test_utf8_and_numbers},
    {NULL, NULL},
};

int main(void) { return dptest_run("update_json", CASES); }
