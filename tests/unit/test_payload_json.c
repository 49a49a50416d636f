/* test_payload_json.c — the one JSON payload parser (connectors/jsonl/
 * payload_json.h) that update lines, release record lines and load rows
 * share: what it accepts and refuses under each reader's rule, the exact
 * messages update lines report, and its buffers. */
#include <jansson.h>
#include <string.h>

#include "connectors/jsonl/payload_json.h"
#include "core/dp_error.h"
#include "dptest.h"

/* Parse the member `key` of the object text `obj`; returns the status and
 * leaves the message in err. */
static int parse(const char *obj, unsigned flags, dp_payload_buf *b, dp_payload *out, char *err, size_t n)
{
    json_t *o = json_loads(obj, 0, NULL);
    CU_ASSERT_FATAL(o != NULL);
    int rc = dp_payload_json_parse(json_object_get(o, "value"), json_object_get(o, "row"),
                                   json_object_get(o, "point"), flags, b, out, err, n);
    json_decref(o);
    return rc;
}

static void expect_refused(const char *obj, unsigned flags, const char *msg)
{
    dp_payload_buf b;
    memset(&b, 0, sizeof b);
    dp_payload p;
    char err[256] = "";
    CU_ASSERT_EQUAL(parse(obj, flags, &b, &p, err, sizeof err), DP_EINVAL);
    CU_ASSERT_STRING_EQUAL(err, msg);
    dp_payload_buf_free(&b);
}

static void test_update_rule_messages(void)
{
    expect_refused("{\"value\": 1.5}", 0, "\"value\" must be an integer");
    expect_refused("{\"row\": []}", 0, "\"row\" must be a non-empty array of integers");
    expect_refused("{\"row\": 3}", 0, "\"row\" must be a non-empty array of integers");
    expect_refused("{\"row\": [0, 2147483648]}", 0, "\"row\"[1] must be an integer in int32 range");
    expect_refused("{\"row\": [-2147483649]}", 0, "\"row\"[0] must be an integer in int32 range");
    expect_refused("{\"point\": []}", 0, "\"point\" must be a non-empty array of numbers");
    expect_refused("{\"point\": [0.5, \"x\"]}", 0, "\"point\"[1] must be a finite number");
}

static void test_record_rule_takes_empty_arrays(void)
{
    dp_payload_buf b;
    memset(&b, 0, sizeof b);
    dp_payload p;
    char err[256];
    CU_ASSERT_EQUAL(parse("{\"row\": []}", DP_PAYLOAD_JSON_EMPTY_OK, &b, &p, err, sizeof err), DP_OK);
    CU_ASSERT(p.kind == DP_PAYLOAD_ROW && p.row_len == 0 && p.row != NULL);
    CU_ASSERT_EQUAL(parse("{\"point\": []}", DP_PAYLOAD_JSON_EMPTY_OK, &b, &p, err, sizeof err), DP_OK);
    CU_ASSERT(p.kind == DP_PAYLOAD_POINT && p.point_len == 0 && p.point != NULL);
    dp_payload_buf_free(&b);
    /* the elements are still checked */
    expect_refused("{\"row\": [1, true]}", DP_PAYLOAD_JSON_EMPTY_OK, "\"row\"[1] must be an integer in int32 range");
}

static void test_values_and_buffer_reuse(void)
{
    dp_payload_buf b;
    memset(&b, 0, sizeof b);
    dp_payload p;
    char err[256];
    CU_ASSERT_EQUAL(parse("{\"value\": -7}", 0, &b, &p, err, sizeof err), DP_OK);
    CU_ASSERT(p.kind == DP_PAYLOAD_CATEGORY && p.category == -7);
    CU_ASSERT_EQUAL(parse("{\"row\": [-2147483648, 0, 2147483647]}", 0, &b, &p, err, sizeof err), DP_OK);
    CU_ASSERT(p.kind == DP_PAYLOAD_ROW && p.row_len == 3 && p.row[0] == INT32_MIN && p.row[2] == INT32_MAX);
    int32_t *first = b.row;
    CU_ASSERT_EQUAL(parse("{\"row\": [4]}", 0, &b, &p, err, sizeof err), DP_OK);
    CU_ASSERT(p.row == first && p.row_len == 1 && p.row[0] == 4);   /* a shorter row reuses the buffer */
    CU_ASSERT_EQUAL(parse("{\"point\": [0.25, -1e300, 3]}", 0, &b, &p, err, sizeof err), DP_OK);
    CU_ASSERT(p.kind == DP_PAYLOAD_POINT && p.point_len == 3 && p.point[0] == 0.25 && p.point[1] == -1e300 &&
              p.point[2] == 3.0);
    CU_ASSERT_EQUAL(parse("{}", 0, &b, &p, err, sizeof err), DP_OK);
    CU_ASSERT(p.kind == DP_PAYLOAD_NONE);
    dp_payload_buf_free(&b);
}

static const dptest_case CASES[] = {
    {"update lines: each refusal names the member, in update_json's words", test_update_rule_messages},
    {"record lines: empty arrays are taken, elements still checked", test_record_rule_takes_empty_arrays},
    {"values are exact at the int32 bounds; a buffer is reused", test_values_and_buffer_reuse},
    {NULL, NULL},
};

int main(void) { return dptest_run("payload_json", CASES); }
