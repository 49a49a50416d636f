/* test_load_mapping.c — `dpstream load`'s pieces: the RFC 4180 reader,
 * timestamp / duration / step arithmetic (cross-checked against libc's
 * timegm over two centuries of dates), mapping validation and the row →
 * Update conversion with every reject reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "connectors/load/csv_reader.h"
#include "connectors/load/load_mapping.h"
#include "core/dp_error.h"
#include "dptest.h"

/* --- CSV ------------------------------------------------------------------------- */

typedef struct csv_fixture {
    FILE *f;
    dp_csv_reader r;
} csv_fixture;

static void csv_open(csv_fixture *x, const char *text, size_t max_record)
{
    x->f = fmemopen((void *)text, strlen(text), "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(x->f);
    dp_csv_reader_init(&x->r, x->f, max_record);
}

static void csv_close(csv_fixture *x)
{
    dp_csv_reader_free(&x->r);
    fclose(x->f);
}

/* Next record must be OK, start on `line`, and have exactly the fields. */
static void expect_record(csv_fixture *x, uint64_t line, size_t n, const char *const *fields)
{
    dp_csv_status st;
    uint64_t ln = 0;
    CU_ASSERT_EQUAL_FATAL(dp_csv_next(&x->r, &st, &ln), 1);
    CU_ASSERT_EQUAL(st, DP_CSV_OK);
    CU_ASSERT_EQUAL(ln, line);
    CU_ASSERT_EQUAL_FATAL(x->r.n_fields, n);
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *f = dp_csv_field(&x->r, i, &len);
        int ok = len == strlen(fields[i]) && memcmp(f, fields[i], len) == 0;
        CU_ASSERT(ok);
        if (!ok)
            fprintf(stderr, "\n  field %zu: want [%s] got [%.*s]", i, fields[i], (int)len, f);
    }
}

static void expect_status(csv_fixture *x, uint64_t line, dp_csv_status want)
{
    dp_csv_status st;
    uint64_t ln = 0;
    CU_ASSERT_EQUAL_FATAL(dp_csv_next(&x->r, &st, &ln), 1);
    CU_ASSERT_EQUAL(st, want);
    CU_ASSERT_EQUAL(ln, line);
}

static void expect_end(csv_fixture *x)
{
    dp_csv_status st;
    uint64_t ln;
    CU_ASSERT_EQUAL(dp_csv_next(&x->r, &st, &ln), 0);
}

static void test_csv_rfc4180(void)
{
    csv_fixture x;
    /* BOM, CRLF, quoted separators, doubled quotes, a line break inside a
     * quoted field, empty fields, a blank line, no final line break */
    csv_open(&x, "\xEF\xBB\xBFid,name,note\r\n"
                 "1,\"Smith, J\",\"he said \"\"hi\"\"\"\r\n"
                 "2,,\"two\r\nlines\"\n"
                 "\n"
                 "3,x,\"\"\r\n"
                 "4,\"a\"\"b\",end",
             1 << 20);
    expect_record(&x, 1, 3, (const char *const[]){"id", "name", "note"});
    expect_record(&x, 2, 3, (const char *const[]){"1", "Smith, J", "he said \"hi\""});
    expect_record(&x, 3, 3, (const char *const[]){"2", "", "two\r\nlines"});
    expect_record(&x, 6, 3, (const char *const[]){"3", "x", ""});
    expect_record(&x, 7, 3, (const char *const[]){"4", "a\"b", "end"});
    expect_end(&x);
    csv_close(&x);
}

static void test_csv_errors_recover(void)
{
    csv_fixture x;
    csv_open(&x, "a,b\n"
                 "1,x\"y\n"          /* quote inside an unquoted field */
                 "2,\"ok\"junk\n"    /* text after a closing quote */
                 "3,fine\n"
                 "4,\"0123456789012345678901234567890123456789\"\n"   /* over the cap */
                 "5,\"never closed\n6,z\n",
             32);
    expect_record(&x, 1, 2, (const char *const[]){"a", "b"});
    expect_status(&x, 2, DP_CSV_BAD_QUOTE);
    expect_status(&x, 3, DP_CSV_BAD_QUOTE);
    expect_record(&x, 4, 2, (const char *const[]){"3", "fine"});
    expect_status(&x, 5, DP_CSV_TOO_LONG);
    expect_status(&x, 6, DP_CSV_UNTERMINATED);
    expect_end(&x);
    csv_close(&x);
}

/* --- timestamps ---------------------------------------------------------------------- */

static int64_t ts(const char *s, dp_ts_format f, int *ok)
{
    int64_t ms = 0;
    *ok = dp_load_parse_timestamp(s, strlen(s), f, &ms) == 0;
    return ms;
}

static void check_ts(const char *s, dp_ts_format f, int64_t want)
{
    int ok;
    int64_t got = ts(s, f, &ok);
    CU_ASSERT(ok && got == want);
    if (!ok || got != want)
        fprintf(stderr, "\n  %s: ok=%d got %lld want %lld", s, ok, (long long)got, (long long)want);
}

static void check_ts_bad(const char *s, dp_ts_format f)
{
    int ok;
    ts(s, f, &ok);
    CU_ASSERT(!ok);
    if (ok)
        fprintf(stderr, "\n  accepted bad timestamp %s", s);
}

static void test_iso8601(void)
{
    check_ts("1970-01-01T00:00:00Z", DP_TS_ISO8601, 0);
    check_ts("1970-01-01", DP_TS_ISO8601, 0);
    check_ts("2024-01-01T00:00:00Z", DP_TS_ISO8601, 1704067200000);
    check_ts("2024-01-01 00:00Z", DP_TS_ISO8601, 1704067200000);
    check_ts("2024-02-29T12:34:56.789+02:00", DP_TS_ISO8601, 1709210096789 - 2 * 3600000);
    check_ts("2024-02-29T12:34:56.7891999-0130", DP_TS_ISO8601, 1709210096789 + 90 * 60000);
    check_ts("1969-12-31T23:59:59.999Z", DP_TS_ISO8601, -1);
    check_ts("2000-03-01", DP_TS_ISO8601, 951868800000);
    check_ts_bad("2023-02-29", DP_TS_ISO8601);               /* not a leap year */
    check_ts_bad("1900-02-29", DP_TS_ISO8601);               /* century rule */
    check_ts_bad("2024-01-01T00:00:00", DP_TS_ISO8601);      /* no zone: refused */
    check_ts_bad("2024-13-01", DP_TS_ISO8601);
    check_ts_bad("2024-01-01T24:00:00Z", DP_TS_ISO8601);
    check_ts_bad("2024-01-01T00:00:00Zjunk", DP_TS_ISO8601);
    check_ts_bad("2024-1-01", DP_TS_ISO8601);
    check_ts_bad("", DP_TS_ISO8601);
    /* 2000-02-29 is a leap day (400 rule) */
    check_ts("2000-02-29T00:00:00Z", DP_TS_ISO8601, 951782400000);
}

/* Every 7th day from 1900 to 2100 at a varying time of day, against the
 * C library's timegm (an independent implementation of the same calendar). */
static void test_iso8601_vs_timegm(void)
{
    int mismatches = 0, n = 0;
    for (int64_t day = -25567; day < 47482; day += 7) {
        time_t t = (time_t)(day * 86400 + (day * 7919) % 86400);
        struct tm tmv;
        gmtime_r(&t, &tmv);
        char s[64];
        snprintf(s, sizeof s, "%04d-%02d-%02dT%02d:%02d:%02dZ", tmv.tm_year + 1900, tmv.tm_mon + 1, tmv.tm_mday,
                 tmv.tm_hour, tmv.tm_min, tmv.tm_sec);
        int ok;
        int64_t ms = ts(s, DP_TS_ISO8601, &ok);
        int64_t want = (int64_t)timegm(&tmv) * 1000;
        if (!ok || ms != want) {
            if (mismatches++ < 5)
                fprintf(stderr, "\n  %s: got %lld want %lld", s, (long long)ms, (long long)want);
        }
        n++;
    }
    CU_ASSERT_EQUAL(mismatches, 0);
    CU_ASSERT(n > 10000);
}

static void test_epoch_and_duration(void)
{
    check_ts("1700000000", DP_TS_EPOCH_S, 1700000000000);
    check_ts("1700000000.5", DP_TS_EPOCH_S, 1700000000500);
    check_ts("1.2345", DP_TS_EPOCH_S, 1234);
    check_ts("-1.5", DP_TS_EPOCH_S, -1500);
    check_ts("-1.0005", DP_TS_EPOCH_S, -1001);   /* floor, not truncation */
    check_ts("1700000000123", DP_TS_EPOCH_MS, 1700000000123);
    check_ts("-5", DP_TS_EPOCH_MS, -5);
    check_ts_bad("1e3", DP_TS_EPOCH_S);
    check_ts_bad("1.", DP_TS_EPOCH_S);
    check_ts_bad("", DP_TS_EPOCH_S);
    check_ts_bad("12.5", DP_TS_EPOCH_MS);
    check_ts_bad("99999999999999999999", DP_TS_EPOCH_MS);

    int64_t ms;
    CU_ASSERT(dp_load_parse_duration("15m", &ms) == 0 && ms == 900000);
    CU_ASSERT(dp_load_parse_duration("1d", &ms) == 0 && ms == 86400000);
    CU_ASSERT(dp_load_parse_duration("2w", &ms) == 0 && ms == 1209600000);
    CU_ASSERT(dp_load_parse_duration("250ms", &ms) == 0 && ms == 250);
    CU_ASSERT(dp_load_parse_duration("0s", &ms) != 0);
    CU_ASSERT(dp_load_parse_duration("1x", &ms) != 0);
    CU_ASSERT(dp_load_parse_duration("ms", &ms) != 0);
    CU_ASSERT(dp_load_parse_duration("-1s", &ms) != 0);
    CU_ASSERT(dp_load_parse_duration("99999999999999999w", &ms) != 0);
}

static void test_step_of(void)
{
    uint64_t s;
    /* step = floor((v - origin) / length) + 1 at and around boundaries */
    CU_ASSERT(dp_load_step_of(100, 100, 10, &s) == 0 && s == 1);
    CU_ASSERT(dp_load_step_of(109, 100, 10, &s) == 0 && s == 1);
    CU_ASSERT(dp_load_step_of(110, 100, 10, &s) == 0 && s == 2);
    CU_ASSERT(dp_load_step_of(-5, -10, 3, &s) == 0 && s == 2);
    CU_ASSERT(dp_load_step_of(99, 100, 10, &s) != 0);
    /* no overflow at the extremes */
    CU_ASSERT(dp_load_step_of(INT64_MAX, INT64_MIN, INT64_MAX, &s) == 0 && s == 3);
    CU_ASSERT(dp_load_step_of(INT64_MAX, INT64_MIN, 1, &s) != 0);   /* step beyond 2^63-1 */
    /* exhaustive small check against the definition */
    int bad = 0;
    for (int64_t origin = -7; origin <= 7; origin++)
        for (int64_t len = 1; len <= 5; len++)
            for (int64_t v = origin; v < origin + 40; v++) {
                int64_t want = (v - origin) / len + 1;   /* v >= origin: C division is floor */
                if (dp_load_step_of(v, origin, len, &s) != 0 || (int64_t)s != want)
                    bad++;
            }
    CU_ASSERT_EQUAL(bad, 0);
}

/* --- mappings ------------------------------------------------------------------------------ */

static int mapping(dp_load_mapping *m, const char *json, char *err, size_t n)
{
    json_error_t jerr;
    json_t *j = json_loads(json, 0, &jerr);
    if (!j) {
        fprintf(stderr, "\n  bad test JSON: %s", jerr.text);
        return -99;
    }
    int rc = dp_load_mapping_from_json(m, j, err, n);
    json_decref(j);
    return rc;
}

static void expect_mapping_error(const char *json, const char *needle)
{
    dp_load_mapping m;
    char err[512] = "";
    int rc = mapping(&m, json, err, sizeof err);
    CU_ASSERT_EQUAL(rc, DP_EINVAL);
    int has = strstr(err, needle) != NULL;
    CU_ASSERT(has);
    if (rc != DP_EINVAL || !has)
        fprintf(stderr, "\n  %s -> rc %d '%s' (want '%s')", json, rc, err, needle);
    if (rc == DP_OK)
        dp_load_mapping_free(&m);
}

static void test_mapping_validation(void)
{
    expect_mapping_error("{\"step\":{\"column\":\"t\"},\"payload\":{\"type\":\"category\",\"column\":\"v\"}}", "stream");
    expect_mapping_error("{\"stream\":\"s\",\"payload\":{\"type\":\"category\",\"column\":\"v\"}}", "step");
    expect_mapping_error("{\"stream\":\"s\",\"step\":{\"column\":\"t\"}}", "payload");
    expect_mapping_error("{\"stream\":\"s\",\"step\":{\"column\":\"t\"},\"payload\":{\"type\":\"category\",\"column\":\"v\"},\"extra\":1}",
                         "unknown key \"extra\"");
    expect_mapping_error("{\"stream\":\"s\",\"step\":{\"column\":\"t\",\"time_column\":\"u\"},\"payload\":{\"type\":\"category\",\"column\":\"v\"}}",
                         "exactly one");
    expect_mapping_error("{\"stream\":\"s\",\"step\":{\"time_column\":\"t\",\"origin\":\"2024-01-01T00:00:00\",\"length\":\"1d\"},"
                         "\"payload\":{\"type\":\"category\",\"column\":\"v\"}}", "step.origin");
    expect_mapping_error("{\"stream\":\"s\",\"step\":{\"time_column\":\"t\",\"origin\":0,\"length\":\"1y\"},"
                         "\"payload\":{\"type\":\"category\",\"column\":\"v\"}}", "step.length");
    expect_mapping_error("{\"stream\":\"s\",\"step\":{\"time_column\":\"t\",\"length\":60},"
                         "\"payload\":{\"type\":\"category\",\"column\":\"v\"}}", "origin");
    expect_mapping_error("{\"stream\":\"s\",\"step\":{\"column\":\"t\",\"length\":0},\"payload\":{\"type\":\"category\",\"column\":\"v\"}}",
                         "step.length");
    expect_mapping_error("{\"stream\":\"s\",\"step\":{\"column\":\"t\"},\"payload\":{\"type\":\"point\",\"columns\":[\"x\"],\"labels\":{\"x\":{\"a\":1}}}}",
                         "labels");
    expect_mapping_error("{\"stream\":\"s\",\"step\":{\"column\":\"t\"},\"payload\":{\"type\":\"row\",\"columns\":[\"a\",\"a\"]}}",
                         "twice");
    expect_mapping_error("{\"stream\":\"s\",\"step\":{\"column\":\"t\"},\"payload\":{\"type\":\"row\",\"columns\":[\"a\"],\"labels\":{\"b\":{\"x\":0}}}}",
                         "not in payload.columns");
    expect_mapping_error("{\"stream\":\"s\",\"step\":{\"column\":\"t\"},\"kind\":\"CLOSE_STEP\",\"payload\":{\"type\":\"category\",\"column\":\"v\"}}",
                         "kind");
    expect_mapping_error("{\"stream\":\"s\",\"step\":{\"column\":\"t\"},\"kind\":{\"column\":\"op\",\"labels\":{\"x\":\"CLOSE_STEP\"}},"
                         "\"payload\":{\"type\":\"category\",\"column\":\"v\"}}", "kind.labels");
    expect_mapping_error("{\"stream\":\"s\",\"step\":{\"column\":\"t\"},\"payload\":{\"type\":\"category\",\"column\":\"v\",\"labels\":{\"a\":\"x\"}}}",
                         "integer");
    expect_mapping_error("{\"stream\":\"s\",\"step\":{\"column\":\"t\"},\"payload\":{\"type\":\"bitmap\",\"column\":\"v\"}}",
                         "payload.type");
}

/* Convert one row given as parallel name/value arrays in the mapping's
 * column order (looked up by name so tests read naturally). */
static dp_load_reject convert(const dp_load_mapping *m, dp_load_row *row, const char *const *names,
                              const char *const *values, size_t n, char *err, size_t errn)
{
    const char *vals[16] = {0};
    size_t lens[16] = {0};
    CU_ASSERT_FATAL(m->n_columns <= 16);
    for (size_t c = 0; c < m->n_columns; c++)
        for (size_t i = 0; i < n; i++)
            if (strcmp(m->columns[c], names[i]) == 0 && values[i]) {
                vals[c] = values[i];
                lens[c] = strlen(values[i]);
            }
    int oom = 0;
    dp_load_reject r = dp_load_row_convert(m, vals, lens, row, &oom, err, errn);
    CU_ASSERT_EQUAL(oom, 0);
    return r;
}

static void test_convert_category(void)
{
    dp_load_mapping m;
    char err[512];
    CU_ASSERT_EQUAL_FATAL(mapping(&m, "{\"stream\":{\"column\":\"region\"},\"step\":{\"column\":\"year\",\"origin\":1980},"
                                      "\"entity\":{\"column\":\"id\"},"
                                      "\"payload\":{\"type\":\"category\",\"column\":\"status\","
                                      "\"labels\":{\"employed\":0,\"unemployed\":1,\"out\":2}}}",
                                  err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(m.n_columns, 4);
    dp_load_row row;
    dp_load_row_init(&row);
    const char *names[] = {"region", "year", "id", "status"};
    CU_ASSERT_EQUAL(convert(&m, &row, names, (const char *const[]){"north", "1982", "p7", "unemployed"}, 4, err, sizeof err),
                    DP_LOAD_OK);
    CU_ASSERT_EQUAL(row.u.stream_id_len, 5);
    CU_ASSERT_EQUAL(memcmp(row.u.stream_id, "north", 5), 0);
    CU_ASSERT_EQUAL(row.u.step, 3);
    CU_ASSERT_EQUAL(row.u.kind, DP_UPDATE_REPORT);
    CU_ASSERT_EQUAL(row.u.entity_id_len, 2);
    CU_ASSERT_EQUAL(row.u.payload.kind, DP_PAYLOAD_CATEGORY);
    CU_ASSERT_EQUAL(row.u.payload.category, 1);
    CU_ASSERT_EQUAL(row.u.has_event_time, 0);

    CU_ASSERT_EQUAL(convert(&m, &row, names, (const char *const[]){"north", "1982", "p7", "retired"}, 4, err, sizeof err),
                    DP_LOAD_UNKNOWN_LABEL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "retired"));
    /* labels are exact: an integer is not a label */
    CU_ASSERT_EQUAL(convert(&m, &row, names, (const char *const[]){"north", "1982", "p7", "1"}, 4, err, sizeof err),
                    DP_LOAD_UNKNOWN_LABEL);
    CU_ASSERT_EQUAL(convert(&m, &row, names, (const char *const[]){"north", "1979", "p7", "out"}, 4, err, sizeof err),
                    DP_LOAD_BEFORE_ORIGIN);
    CU_ASSERT_EQUAL(convert(&m, &row, names, (const char *const[]){"north", "82a", "p7", "out"}, 4, err, sizeof err),
                    DP_LOAD_BAD_NUMBER);
    CU_ASSERT_EQUAL(convert(&m, &row, names, (const char *const[]){"north", "1982", "", "out"}, 4, err, sizeof err),
                    DP_LOAD_MISSING_VALUE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "\"id\""));
    CU_ASSERT_EQUAL(convert(&m, &row, names, (const char *const[]){"north", "1982", NULL, "out"}, 4, err, sizeof err),
                    DP_LOAD_MISSING_VALUE);
    CU_ASSERT_EQUAL(convert(&m, &row, names, (const char *const[]){"north", "1982", "p\xff", "out"}, 4, err, sizeof err),
                    DP_LOAD_BAD_STRING);
    CU_ASSERT_EQUAL(convert(&m, &row, names, (const char *const[]){"n\xc3", "1982", "p", "out"}, 4, err, sizeof err),
                    DP_LOAD_BAD_STRING);
    dp_load_row_free(&row);
    dp_load_mapping_free(&m);
}

static void test_convert_row_point_kind_time(void)
{
    dp_load_mapping m;
    char err[512];
    /* rows of ints with labels on one column; kind from a column with labels */
    CU_ASSERT_EQUAL_FATAL(mapping(&m, "{\"stream\":\"tab\",\"step\":{\"time_column\":\"ts\",\"origin\":\"2024-01-01T00:00:00Z\",\"length\":\"1h\"},"
                                      "\"kind\":{\"column\":\"op\",\"labels\":{\"+\":\"INSERT\",\"-\":\"DELETE\"}},"
                                      "\"payload\":{\"type\":\"row\",\"columns\":[\"age\",\"sex\"],\"labels\":{\"sex\":{\"f\":0,\"m\":1}}}}",
                                  err, sizeof err), DP_OK);
    dp_load_row row;
    dp_load_row_init(&row);
    const char *names[] = {"ts", "op", "age", "sex"};
    CU_ASSERT_EQUAL(convert(&m, &row, names, (const char *const[]){"2024-01-01T02:59:59.999Z", "-", "3", "m"}, 4, err, sizeof err),
                    DP_LOAD_OK);
    CU_ASSERT_EQUAL(row.u.step, 3);
    CU_ASSERT_EQUAL(row.u.kind, DP_UPDATE_DELETE);
    CU_ASSERT_EQUAL(row.u.has_event_time, 1);
    CU_ASSERT_EQUAL(row.u.event_time_ms, 1704067200000 + 3 * 3600000 - 1);
    CU_ASSERT_EQUAL_FATAL(row.u.payload.kind, DP_PAYLOAD_ROW);
    CU_ASSERT_EQUAL_FATAL(row.u.payload.row_len, 2);
    CU_ASSERT_EQUAL(row.u.payload.row[0], 3);
    CU_ASSERT_EQUAL(row.u.payload.row[1], 1);
    CU_ASSERT_PTR_NULL(row.u.entity_id);
    /* a kind name works too; anything else is BAD_KIND */
    CU_ASSERT_EQUAL(convert(&m, &row, names, (const char *const[]){"2024-01-01T03:00:00Z", "INSERT", "3", "f"}, 4, err, sizeof err),
                    DP_LOAD_OK);
    CU_ASSERT_EQUAL(row.u.kind, DP_UPDATE_INSERT);
    CU_ASSERT_EQUAL(row.u.step, 4);
    CU_ASSERT_EQUAL(convert(&m, &row, names, (const char *const[]){"2024-01-01T03:00:00Z", "CLOSE_STEP", "3", "f"}, 4, err, sizeof err),
                    DP_LOAD_BAD_KIND);
    CU_ASSERT_EQUAL(convert(&m, &row, names, (const char *const[]){"2024-01-01T03:00:00", "+", "3", "f"}, 4, err, sizeof err),
                    DP_LOAD_BAD_TIMESTAMP);
    CU_ASSERT_EQUAL(convert(&m, &row, names, (const char *const[]){"2023-12-31T23:59:59Z", "+", "3", "f"}, 4, err, sizeof err),
                    DP_LOAD_BEFORE_ORIGIN);
    CU_ASSERT_EQUAL(convert(&m, &row, names, (const char *const[]){"2024-01-01T03:00:00Z", "+", "4294967296", "f"}, 4, err, sizeof err),
                    DP_LOAD_BAD_NUMBER);
    dp_load_row_free(&row);
    dp_load_mapping_free(&m);

    /* points: finite decimals only */
    CU_ASSERT_EQUAL_FATAL(mapping(&m, "{\"stream\":\"geo\",\"step\":{\"time_column\":\"t\",\"format\":\"epoch_ms\",\"origin\":0,\"length\":60},"
                                      "\"kind\":\"INSERT\",\"payload\":{\"type\":\"point\",\"columns\":[\"x\",\"y\"]}}",
                                  err, sizeof err), DP_OK);
    dp_load_row_init(&row);
    const char *pn[] = {"t", "x", "y"};
    CU_ASSERT_EQUAL(convert(&m, &row, pn, (const char *const[]){"120000", "0.25", "-1e-3"}, 3, err, sizeof err), DP_LOAD_OK);
    CU_ASSERT_EQUAL(row.u.step, 3);
    CU_ASSERT_EQUAL(row.u.kind, DP_UPDATE_INSERT);
    CU_ASSERT_EQUAL_FATAL(row.u.payload.kind, DP_PAYLOAD_POINT);
    CU_ASSERT_EQUAL(row.u.payload.point[0], 0.25);
    CU_ASSERT_EQUAL(row.u.payload.point[1], -1e-3);
    const char *bad[] = {"inf", "nan", "0x1p3", "1e999", "1,5", " 1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CU_ASSERT_EQUAL(convert(&m, &row, pn, (const char *const[]){"0", bad[i], "0"}, 3, err, sizeof err), DP_LOAD_BAD_NUMBER);
    dp_load_row_free(&row);
    dp_load_mapping_free(&m);
}

static const dptest_case CASES[] = {
    {"CSV: RFC 4180 quoting, CRLF, BOM, blank lines, line numbers", test_csv_rfc4180},
    {"CSV: malformed records are refused and reading resumes", test_csv_errors_recover},
    {"ISO-8601 timestamps: known values and refusals", test_iso8601},
    {"ISO-8601 agrees with timegm over 1900-2100", test_iso8601_vs_timegm},
    {"epoch seconds/millis and durations", test_epoch_and_duration},
    {"step = floor((v - origin)/length) + 1", test_step_of},
    {"mapping validation names the bad key", test_mapping_validation},
    {"category rows with labels and every reject reason", test_convert_category},
    {"rows, points, kind columns and time steps", test_convert_row_point_kind_time},
    {NULL, NULL},
};

int main(void) { return dptest_run("load_mapping", CASES); }
