#include "codec/avro_check.h"

#include <stdint.h>

#include "core/dp_error.h"

/* Deeper than any dpstream schema (they nest 6 levels at most); a bound so
 * that a recursive (link) schema could never recurse without limit. */
#define CHECK_MAX_DEPTH 32

typedef struct cursor {
    const uint8_t *p;
    size_t         len;
    size_t         off;
    char          *errstr;
    size_t         errstr_size;
} cursor;

static int fail(cursor *c, const char *what)
{
    return dp_err(c->errstr, c->errstr_size, DP_EINVAL, "malformed Avro at byte %zu of %zu: %s",
                  c->off, c->len, what);
}

const char *dp_avro_read_varint(const uint8_t *data, size_t len, size_t *off, int max_bytes, int bits,
                                int64_t *out)
{
    uint64_t u = 0;
    for (int i = 0;; i++) {
        if (i == max_bytes)
            return "varint longer than its type allows";
        if (*off >= len)
            return "truncated varint";
        uint8_t b = data[(*off)++];
        uint64_t part = (uint64_t)(b & 0x7f);
        int shift = 7 * i;
        /* The last permitted byte may only carry the bits left of the width. */
        if (shift + 7 > bits && (part >> (bits - shift)) != 0)
            return "varint value too large for its type";
        u |= part << shift;
        if (!(b & 0x80))
            break;
    }
    *out = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    return NULL;
}

static int read_varint(cursor *c, int max_bytes, int bits, int64_t *out)
{
    *out = 0;
    const char *why = dp_avro_read_varint(c->p, c->len, &c->off, max_bytes, bits, out);
    return why ? fail(c, why) : DP_OK;
}

static int read_long(cursor *c, int64_t *out) { return read_varint(c, 10, 64, out); }
static int read_int(cursor *c, int64_t *out)  { return read_varint(c, 5, 32, out); }

static int skip(cursor *c, int64_t n, const char *what)
{
    if (n < 0)
        return fail(c, what);
    if ((uint64_t)n > c->len - c->off)
        return fail(c, what);
    c->off += (size_t)n;
    return DP_OK;
}

/* Smallest encoding of a datum of this schema, capped at 1: what matters
 * is whether an item can be empty (then item counts are not bounded by
 * the input length and need their own cap). */
static int min_size_positive(avro_schema_t s, int depth)
{
    if (depth > CHECK_MAX_DEPTH)
        return 1;
    switch (avro_typeof(s)) {
    case AVRO_NULL:
        return 0;
    case AVRO_FIXED:
        return avro_schema_fixed_size(s) > 0;
    case AVRO_RECORD: {
        size_t n = avro_schema_record_size(s);
        for (size_t i = 0; i < n; i++)
            if (min_size_positive(avro_schema_record_field_get_by_index(s, (int)i), depth + 1))
                return 1;
        return 0;
    }
    case AVRO_LINK:
        return min_size_positive(avro_schema_link_target(s), depth + 1);
    default:
        return 1;   /* every other type has a length, count, tag or value byte */
    }
}

/* Cap on the items of one block whose items may encode to zero bytes. */
#define CHECK_MAX_EMPTY_ITEMS 65536

static int check_datum(cursor *c, avro_schema_t s, int depth);

static int check_blocks(cursor *c, avro_schema_t items, int is_map, int depth)
{
    int item_nonempty = min_size_positive(items, depth + 1);
    for (;;) {
        int64_t count;
        int rc = read_long(c, &count);
        if (rc != DP_OK)
            return rc;
        if (count == 0)
            return DP_OK;
        int64_t block_size = -1;
        if (count < 0) {
            if (count == INT64_MIN)
                return fail(c, "block count out of range");
            count = -count;
            if ((rc = read_long(c, &block_size)) != DP_OK)
                return rc;
            if (block_size < 0 || (uint64_t)block_size > c->len - c->off)
                return fail(c, "block byte size exceeds the message");
        }
        /* Each item (map: key + value) takes at least one byte. */
        if (item_nonempty || is_map) {
            if ((uint64_t)count > c->len - c->off)
                return fail(c, "block count exceeds the remaining bytes");
        } else if (count > CHECK_MAX_EMPTY_ITEMS) {
            return fail(c, "too many empty items in one block");
        }
        size_t start = c->off;
        for (int64_t i = 0; i < count; i++) {
            if (is_map) {
                int64_t klen;
                if ((rc = read_long(c, &klen)) != DP_OK)
                    return rc;
                if ((rc = skip(c, klen, "map key length exceeds the message")) != DP_OK)
                    return rc;
            }
            if ((rc = check_datum(c, items, depth + 1)) != DP_OK)
                return rc;
        }
        if (block_size >= 0 && (uint64_t)block_size != c->off - start)
            return fail(c, "block byte size does not match its items");
    }
}

static int check_datum(cursor *c, avro_schema_t s, int depth)
{
    if (depth > CHECK_MAX_DEPTH)
        return fail(c, "schema nested too deeply");
    int64_t v;
    int rc;
    switch (avro_typeof(s)) {
    case AVRO_NULL:
        return DP_OK;
    case AVRO_BOOLEAN:
        if (c->off >= c->len)
            return fail(c, "truncated boolean");
        if (c->p[c->off] > 1)
            return fail(c, "boolean byte is neither 0 nor 1");
        c->off++;
        return DP_OK;
    case AVRO_INT32:
        return read_int(c, &v);
    case AVRO_INT64:
        return read_long(c, &v);
    case AVRO_FLOAT:
        return skip(c, 4, "truncated float");
    case AVRO_DOUBLE:
        return skip(c, 8, "truncated double");
    case AVRO_STRING:
    case AVRO_BYTES:
        if ((rc = read_long(c, &v)) != DP_OK)
            return rc;
        return skip(c, v, v < 0 ? "negative string/bytes length"
                                : "string/bytes length exceeds the message");
    case AVRO_FIXED:
        return skip(c, avro_schema_fixed_size(s), "truncated fixed");
    case AVRO_ENUM:
        if ((rc = read_long(c, &v)) != DP_OK)
            return rc;
        if (v < 0 || v >= avro_schema_enum_number_of_symbols(s))
            return fail(c, "enum index out of range");
        return DP_OK;
    case AVRO_UNION:
        if ((rc = read_long(c, &v)) != DP_OK)
            return rc;
        if (v < 0 || (uint64_t)v >= avro_schema_union_size(s))
            return fail(c, "union branch out of range");
        return check_datum(c, avro_schema_union_branch(s, (int)v), depth + 1);
    case AVRO_RECORD: {
        size_t n = avro_schema_record_size(s);
        for (size_t i = 0; i < n; i++)
            if ((rc = check_datum(c, avro_schema_record_field_get_by_index(s, (int)i), depth + 1)) != DP_OK)
                return rc;
        return DP_OK;
    }
    case AVRO_ARRAY:
        return check_blocks(c, avro_schema_array_items(s), 0, depth);
    case AVRO_MAP:
        return check_blocks(c, avro_schema_map_values(s), 1, depth);
    case AVRO_LINK:
        return check_datum(c, avro_schema_link_target(s), depth + 1);
    default:
        return fail(c, "unsupported schema type");
    }
}

int dp_avro_check(avro_schema_t schema, const void *data, size_t len,
                  char *errstr, size_t errstr_size)
{
    cursor c = {.p = data, .len = len, .off = 0, .errstr = errstr, .errstr_size = errstr_size};
    if (!data && len > 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "no data");
    int rc = check_datum(&c, schema, 0);
    if (rc != DP_OK)
        return rc;
    if (c.off != len)
        return fail(&c, "trailing bytes after the datum");
    return DP_OK;
}
