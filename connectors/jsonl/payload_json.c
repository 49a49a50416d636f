/* payload_json.c — value / row / point of a JSON line (payload_json.h).
 *
 * Owns: nothing (the caller's buffers).  Calls: jansson. */
#include "connectors/jsonl/payload_json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/dp_error.h"

void dp_payload_buf_free(dp_payload_buf *b)
{
    free(b->row);
    free(b->point);
    memset(b, 0, sizeof *b);
}

/* Room for need elements (at least one): exactly that the first time,
 * doubling after. */
static void *reserve(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need == 0)
        need = 1;
    if (need <= *cap)
        return *p;
    size_t c = *cap ? *cap : need;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q)
        return NULL;
    *p = q;
    *cap = c;
    return q;
}

int32_t *dp_payload_buf_row(dp_payload_buf *b, size_t n)
{
    return reserve((void **)&b->row, &b->row_cap, n, sizeof *b->row);
}

double *dp_payload_buf_point(dp_payload_buf *b, size_t n)
{
    return reserve((void **)&b->point, &b->point_cap, n, sizeof *b->point);
}

static int parse_row(const json_t *a, unsigned flags, dp_payload_buf *b, dp_payload *out, char *err, size_t errsz)
{
    size_t n = json_array_size(a);
    if (!json_is_array(a) || (n == 0 && !(flags & DP_PAYLOAD_JSON_EMPTY_OK)))
        return dp_err(err, errsz, DP_EINVAL, "\"row\" must be a non-empty array of integers");
    int32_t *xs = dp_payload_buf_row(b, n);
    if (!xs)
        return dp_err(err, errsz, DP_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(a, i);
        if (!json_is_integer(e) || json_integer_value(e) < INT32_MIN || json_integer_value(e) > INT32_MAX)
            return dp_err(err, errsz, DP_EINVAL, "\"row\"[%zu] must be an integer in int32 range", i);
        xs[i] = (int32_t)json_integer_value(e);
    }
    out->kind = DP_PAYLOAD_ROW;
    out->row = xs;
    out->row_len = n;
    return DP_OK;
}

static int parse_point(const json_t *a, unsigned flags, dp_payload_buf *b, dp_payload *out, char *err, size_t errsz)
{
    size_t n = json_array_size(a);
    if (!json_is_array(a) || (n == 0 && !(flags & DP_PAYLOAD_JSON_EMPTY_OK)))
        return dp_err(err, errsz, DP_EINVAL, "\"point\" must be a non-empty array of numbers");
    double *xs = dp_payload_buf_point(b, n);
    if (!xs)
        return dp_err(err, errsz, DP_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(a, i);
        /* jansson reads no NaN or infinity; the check is for values built
         * by hand */
        if (!json_is_number(e) || !isfinite(json_number_value(e)))
            return dp_err(err, errsz, DP_EINVAL, "\"point\"[%zu] must be a finite number", i);
        xs[i] = json_number_value(e);
    }
    out->kind = DP_PAYLOAD_POINT;
    out->point = xs;
    out->point_len = n;
    return DP_OK;
}

int dp_payload_json_parse(const json_t *value, const json_t *row, const json_t *point, unsigned flags,
                          dp_payload_buf *b, dp_payload *out, char *err, size_t errsz)
{
    memset(out, 0, sizeof *out);
    if (value) {
        if (!json_is_integer(value))
            return dp_err(err, errsz, DP_EINVAL, "\"value\" must be an integer");
        out->kind = DP_PAYLOAD_CATEGORY;
        out->category = (int64_t)json_integer_value(value);
        return DP_OK;
    }
    if (row)
        return parse_row(row, flags, b, out, err, errsz);
    if (point)
        return parse_point(point, flags, b, out, err, errsz);
    return DP_OK;
}
