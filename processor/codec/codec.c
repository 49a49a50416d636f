/* codec.c — codec lifetime, framing, and the field helpers every message
 * type uses.  See codec.h for the contract. */
#include "codec/codec_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codec/avro_check.h"
#include "core/dp_error.h"

const char *const dpc_field_names[DP_CODEC_TYPE_COUNT][24] = {
    [DP_CODEC_UPDATE] = {"stream", "step", "kind", "entity", "payload", "event_time", NULL},
    [DP_CODEC_SYNTHETIC_RECORD] = {"stream", "step", "chunk_index", "records", NULL},
    [DP_CODEC_RELEASE_MANIFEST] = {"stream", "step", "synthesizer", "mode", "record_count",
                                   "chunk_count", "checksum", "debias", "clamped", NULL},
    [DP_CODEC_BUDGET_EVENT] = {"stream", "step", "status", "mechanism", "unit", "neighbors",
                               "model", "spent_step", "spent_total", "budget_total", "delta",
                               "eps_simple", "eps_cks", "noise", "accuracy", "spent_units_step", "spent_units_total", "budget_units",
                               "public_inputs", "key_fingerprint", NULL},
    [DP_CODEC_DEAD_LETTER] = {"source_topic", "partition", "offset", "key", "reason",
                              "reason_text", "raw", NULL},
    [DP_CODEC_SNAPSHOT] = {"schema_version", "stream", "last_closed_step", "input_topic",
                           "input_partition", "input_offset", "synthesizer", "state", "ledger",
                           "chunk_index", "chunk_count", "encrypted", "nonce", NULL},
};

static const char *const TYPE_NAMES[DP_CODEC_TYPE_COUNT] = {
    "Update", "SyntheticRecord", "ReleaseManifest", "BudgetEvent", "DeadLetter", "Snapshot",
};
static const char *const TYPE_FILES[DP_CODEC_TYPE_COUNT] = {
    "Update.avsc", "SyntheticRecord.avsc", "ReleaseManifest.avsc",
    "BudgetEvent.avsc", "DeadLetter.avsc", "Snapshot.avsc",
};

const char *dp_codec_type_name(dp_codec_type t)
{
    return (unsigned)t < DP_CODEC_TYPE_COUNT ? TYPE_NAMES[t] : NULL;
}

const char *dp_codec_schema_file(dp_codec_type t)
{
    return (unsigned)t < DP_CODEC_TYPE_COUNT ? TYPE_FILES[t] : NULL;
}

int dpc_avro_fail(char *errstr, size_t errstr_size, const char *what)
{
    /* avro-c reports through errno-style codes plus a thread-local text. */
    return dp_err(errstr, errstr_size, DP_EINVAL, "%s: %s", what, avro_strerror());
}

/* --- lifetime ---------------------------------------------------------------- */

static int check_field_order(dp_codec_type t, avro_schema_t s, char *errstr, size_t errstr_size)
{
    size_t n = avro_schema_record_size(s);
    size_t i = 0;
    for (; dpc_field_names[t][i]; i++) {
        const char *name = i < n ? avro_schema_record_field_name(s, (int)i) : NULL;
        if (!name || strcmp(name, dpc_field_names[t][i]) != 0)
            return dp_err(errstr, errstr_size, DP_EINVAL,
                          "embedded schema %s: field %zu is %s, the codec expects %s",
                          TYPE_NAMES[t], i, name ? name : "(missing)", dpc_field_names[t][i]);
    }
    if (i != n)
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      "embedded schema %s has %zu fields, the codec knows %zu",
                      TYPE_NAMES[t], n, i);
    return DP_OK;
}

int dp_codec_create(dp_codec **out, const dp_codec_options *opts,
                    char *errstr, size_t errstr_size)
{
    *out = NULL;
    if (!opts || (opts->framing != DP_CODEC_FRAMING_PLAIN &&
                  opts->framing != DP_CODEC_FRAMING_CONFLUENT))
        return dp_err(errstr, errstr_size, DP_EINVAL, "codec: unknown framing");
    dp_codec *c = calloc(1, sizeof *c);
    if (!c)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "codec: out of memory");
    c->framing = opts->framing;
    memcpy(c->schema_id, opts->schema_id, sizeof c->schema_id);
    c->resolve_update_writers = opts->framing == DP_CODEC_FRAMING_CONFLUENT && opts->resolve_update_writers;

    int rc = DP_OK;
    for (int t = 0; t < DP_CODEC_TYPE_COUNT && rc == DP_OK; t++) {
        dpc_slot *s = &c->slot[t];
        const char *json = dp_codec_schema_json((dp_codec_type)t);
        if (avro_schema_from_json_length(json, strlen(json), &s->schema) != 0) {
            s->schema = NULL;
            rc = dp_err(errstr, errstr_size, DP_EINVAL, "codec: schema %s does not parse: %s",
                        TYPE_NAMES[t], avro_strerror());
            break;
        }
        if ((rc = check_field_order((dp_codec_type)t, s->schema, errstr, errstr_size)) != DP_OK)
            break;
        s->iface = avro_generic_class_from_schema(s->schema);
        if (!s->iface) {
            rc = dp_err(errstr, errstr_size, DP_ENOMEM, "codec: value class for %s: %s",
                        TYPE_NAMES[t], avro_strerror());
            break;
        }
        if (avro_generic_value_new(s->iface, &s->enc) != 0 ||
            (s->n_values = 1, avro_generic_value_new(s->iface, &s->dec) != 0)) {
            rc = dp_err(errstr, errstr_size, DP_ENOMEM, "codec: value for %s: %s",
                        TYPE_NAMES[t], avro_strerror());
            break;
        }
        s->n_values = 2;
    }
    if (rc == DP_OK) {
        /* Sources and destinations are set per message. */
        static const char empty[1];
        c->reader = avro_reader_memory(empty, 0);
        c->writer = avro_writer_memory(empty, 0);
        if (!c->reader || !c->writer)
            rc = dp_err(errstr, errstr_size, DP_ENOMEM, "codec: out of memory");
    }
    if (rc != DP_OK) {
        dp_codec_destroy(c);
        return rc;
    }
    *out = c;
    return DP_OK;
}

void dp_codec_destroy(dp_codec *c)
{
    if (!c)
        return;
    for (int t = 0; t < DP_CODEC_TYPE_COUNT; t++) {
        dpc_slot *s = &c->slot[t];
        if (s->n_values >= 1)
            avro_value_decref(&s->enc);
        if (s->n_values >= 2)
            avro_value_decref(&s->dec);
        if (s->iface)
            avro_value_iface_decref(s->iface);
        if (s->schema)
            avro_schema_decref(s->schema);
    }
    if (c->reader)
        avro_reader_free(c->reader);
    if (c->writer)
        avro_writer_free(c->writer);
    dp_vec *vecs[] = {&c->scratch, &c->upd_ints, &c->upd_dbls, &c->chunk_recs, &c->chunk_ints,
                       &c->chunk_dbls, &c->manifest_kv, &c->budget_kv};
    for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++)
        free(vecs[i]->p);
    dp_update_store_free(&c->upd_store);
    dpc_writers_free(c);
    free(c);
}

/* --- whole messages ------------------------------------------------------------ */

avro_value_t *dpc_begin(dp_codec *c, dp_codec_type t)
{
    avro_value_t *v = &c->slot[t].enc;
    avro_value_reset(v);
    return v;
}

static size_t header_len(const dp_codec *c)
{
    return c->framing == DP_CODEC_FRAMING_CONFLUENT ? DP_CODEC_CONFLUENT_HEADER : 0;
}

static void put_header(const dp_codec *c, dp_codec_type t, uint8_t *p)
{
    if (c->framing != DP_CODEC_FRAMING_CONFLUENT)
        return;
    uint32_t id = c->schema_id[t];
    p[0] = 0;   /* Confluent "magic byte" */
    p[1] = (uint8_t)(id >> 24);
    p[2] = (uint8_t)(id >> 16);
    p[3] = (uint8_t)(id >> 8);
    p[4] = (uint8_t)id;
}

void dpc_put_header_buf(const dp_codec *c, dp_codec_type t, dp_buf *out)
{
    uint8_t h[DP_CODEC_CONFLUENT_HEADER];
    put_header(c, t, h);
    dp_buf_put_bytes(out, h, header_len(c));
}

/* Serialize into exactly `body` bytes at p (sized by avro_value_sizeof). */
static int write_body(dp_codec *c, dp_codec_type t, uint8_t *p, size_t body,
                      char *errstr, size_t errstr_size)
{
    avro_writer_memory_set_dest(c->writer, (const char *)p, (int64_t)body);
    if (avro_value_write(c->writer, &c->slot[t].enc) != 0)
        return dpc_avro_fail(errstr, errstr_size, "codec: avro write");
    if ((size_t)avro_writer_tell(c->writer) != body)
        return dp_err(errstr, errstr_size, DP_EINVAL, "codec: %s encoded to %lld bytes, sized %zu",
                      TYPE_NAMES[t], (long long)avro_writer_tell(c->writer), body);
    return DP_OK;
}

static int body_size(dp_codec *c, dp_codec_type t, size_t *size, char *errstr, size_t errstr_size)
{
    if (avro_value_sizeof(&c->slot[t].enc, size) != 0)
        return dpc_avro_fail(errstr, errstr_size, "codec: avro sizeof");
    return DP_OK;
}

int dpc_write(dp_codec *c, dp_codec_type t, void *buf, size_t cap, size_t *len,
              char *errstr, size_t errstr_size)
{
    size_t body;
    int rc = body_size(c, t, &body, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    size_t need = header_len(c) + body;
    *len = need;
    if (!buf || cap < need)
        return dp_err(errstr, errstr_size, DP_ERANGE, "codec: %s needs %zu bytes, buffer has %zu",
                      TYPE_NAMES[t], need, buf ? cap : 0);
    put_header(c, t, buf);
    return write_body(c, t, (uint8_t *)buf + header_len(c), body, errstr, errstr_size);
}

int dpc_write_buf(dp_codec *c, dp_codec_type t, dp_buf *out, char *errstr, size_t errstr_size)
{
    if (out->failed)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "codec: output buffer failed earlier");
    size_t body;
    int rc = body_size(c, t, &body, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    size_t need = header_len(c) + body;
    if (need > SIZE_MAX - out->len) {
        out->failed = DP_ENOMEM;
        return dp_err(errstr, errstr_size, DP_ENOMEM, "codec: output too large");
    }
    if (out->len + need > out->cap) {
        size_t cap = out->cap ? out->cap : 64;
        while (cap < out->len + need)
            cap = cap > SIZE_MAX / 2 ? out->len + need : cap * 2;
        uint8_t *p = realloc(out->data, cap);
        if (!p) {
            out->failed = DP_ENOMEM;
            return dp_err(errstr, errstr_size, DP_ENOMEM, "codec: out of memory");
        }
        out->data = p;
        out->cap = cap;
    }
    uint8_t *p = out->data + out->len;
    put_header(c, t, p);
    if ((rc = write_body(c, t, p + header_len(c), body, errstr, errstr_size)) != DP_OK)
        return rc;
    out->len += need;
    return DP_OK;
}

int dpc_unframe(const dp_codec *c, dp_codec_type t, const uint8_t **data, size_t *len, char *errstr,
                size_t errstr_size)
{
    const uint8_t *p = *data;
    if (!p && *len > 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s: no data", TYPE_NAMES[t]);
    if (c->framing != DP_CODEC_FRAMING_CONFLUENT)
        return DP_OK;
    if (*len < DP_CODEC_CONFLUENT_HEADER)
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s: %zu bytes, shorter than the 5-byte schema registry header",
                      TYPE_NAMES[t], *len);
    if (p[0] != 0)
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      "%s: magic byte 0x%02x, expected 0x00 (schema registry framing)", TYPE_NAMES[t], p[0]);
    uint32_t id = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
    if (id != c->schema_id[t])
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s: schema id %u, expected %u", TYPE_NAMES[t], id,
                      c->schema_id[t]);
    *data = p + DP_CODEC_CONFLUENT_HEADER;
    *len -= DP_CODEC_CONFLUENT_HEADER;
    return DP_OK;
}

int dpc_read(dp_codec *c, dp_codec_type t, const void *data, size_t len, avro_value_t **v,
             char *errstr, size_t errstr_size)
{
    const uint8_t *p = data;
    int rc = dpc_unframe(c, t, &p, &len, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    char why[192];
    if (dp_avro_check(c->slot[t].schema, p, len, why, sizeof why) != DP_OK)
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s: %s", TYPE_NAMES[t], why);
    static const char empty[1];
    avro_reader_memory_set_source(c->reader, len ? (const char *)p : empty, (int64_t)len);
    avro_value_t *val = &c->slot[t].dec;
    if (avro_value_read(c->reader, val) != 0) {
        /* Not reachable for checked input except when out of memory. */
        int oom = errno == ENOMEM;
        avro_value_reset(val);
        return dp_err(errstr, errstr_size, oom ? DP_ENOMEM : DP_EINVAL, "%s: avro read: %s",
                      TYPE_NAMES[t], avro_strerror());
    }
    *v = val;
    return DP_OK;
}

/* --- field helpers -------------------------------------------------------------- */

int dpc_field(avro_value_t *rec, size_t index, avro_value_t *out)
{
    return avro_value_get_by_index(rec, index, out, NULL) == 0 ? DP_OK : DP_EINVAL;
}

int dpc_check_text(const char *s, size_t len, int nonempty, const char *field,
                   char *errstr, size_t errstr_size)
{
    if (nonempty && len == 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s is empty", field);
    if (len && !s)
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s is NULL", field);
    size_t ascii = 0;   /* the usual case, ids: printable ASCII, no NUL */
    /* Eight bytes at a time while no byte is 0 or >= 0x80 (the word test
     * is exact: a zero byte sets its high bit in (w - ones) & ~w); the
     * byte loop then stops at the same first other byte it always did. */
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    for (uint64_t w; ascii + 8 <= len; ascii += 8) {
        memcpy(&w, s + ascii, sizeof w);
        if ((w | ((w - ones) & ~w)) & highs)
            break;
    }
    while (ascii < len && (uint8_t)(s[ascii] - 1) < 0x7f)
        ascii++;
    if (ascii == len)
        return DP_OK;
    if (!dp_id_text_valid(s, len))   /* core/utf8.h: the one rule for text */
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s %s", field,
                      memchr(s, 0, len) ? "contains a NUL character" : "is not valid UTF-8");
    return DP_OK;
}

int dpc_set_str(dp_codec *c, avro_value_t *v, const char *s, size_t len, int nonempty,
                const char *field, char *errstr, size_t errstr_size)
{
    int rc = dpc_check_text(s, len, nonempty, field, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    /* avro-c copies len+1 bytes (the size it takes includes a NUL), so a
     * borrowed (ptr, len) string — e.g. inside a Kafka message — is copied
     * and terminated first rather than over-read. */
    if (len == SIZE_MAX || dp_vec_reserve(&c->scratch, len + 1, 1) != DP_OK)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "%s: out of memory", field);
    char *tmp = c->scratch.p;
    if (len)
        memcpy(tmp, s, len);
    tmp[len] = '\0';
    if (avro_value_set_string_len(v, tmp, len + 1) != 0)
        return dpc_avro_fail(errstr, errstr_size, field);
    return DP_OK;
}

int dpc_get_str(avro_value_t *v, const char **s, size_t *len, int nonempty,
                const char *field, char *errstr, size_t errstr_size)
{
    const char *p = NULL;
    size_t size = 0;
    if (avro_value_get_string(v, &p, &size) != 0)
        return dpc_avro_fail(errstr, errstr_size, field);
    /* avro-c's size counts the terminating NUL; an empty string read from
     * the wire may come back as size 0 or 1. */
    size_t n = size ? size - 1 : 0;
    if (!p)
        p = "";
    int rc = dpc_check_text(p, n, nonempty, field, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    *s = p;
    *len = n;
    return DP_OK;
}

int dpc_set_opt_str(dp_codec *c, avro_value_t *u, const char *s, size_t len,
                    const char *field, char *errstr, size_t errstr_size)
{
    avro_value_t b;
    if (!s) {
        if (avro_value_set_branch(u, 0, &b) != 0 || avro_value_set_null(&b) != 0)
            return dpc_avro_fail(errstr, errstr_size, field);
        return DP_OK;
    }
    if (avro_value_set_branch(u, 1, &b) != 0)
        return dpc_avro_fail(errstr, errstr_size, field);
    return dpc_set_str(c, &b, s, len, 1, field, errstr, errstr_size);
}

int dpc_get_opt_str(avro_value_t *u, const char **s, size_t *len,
                    const char *field, char *errstr, size_t errstr_size)
{
    int d;
    avro_value_t b;
    if (avro_value_get_discriminant(u, &d) != 0 || avro_value_get_current_branch(u, &b) != 0)
        return dpc_avro_fail(errstr, errstr_size, field);
    if (d == 0) {
        *s = NULL;
        *len = 0;
        return DP_OK;
    }
    return dpc_get_str(&b, s, len, 1, field, errstr, errstr_size);
}

int dpc_set_bytes(avro_value_t *v, const void *p, size_t len)
{
    static const char empty[1];
    return avro_value_set_bytes(v, (void *)(len ? p : empty), len) == 0 ? DP_OK : DP_EINVAL;
}

int dpc_get_bytes(avro_value_t *v, const void **p, size_t *len)
{
    const void *q = NULL;
    size_t n = 0;
    if (avro_value_get_bytes(v, &q, &n) != 0)
        return DP_EINVAL;
    static const char empty[1];
    *p = q ? q : empty;
    *len = n;
    return DP_OK;
}

int dpc_set_opt_double(avro_value_t *u, double x)
{
    avro_value_t b;
    if (isnan(x))
        return avro_value_set_branch(u, 0, &b) == 0 && avro_value_set_null(&b) == 0 ? DP_OK
                                                                                    : DP_EINVAL;
    return avro_value_set_branch(u, 1, &b) == 0 && avro_value_set_double(&b, x) == 0 ? DP_OK
                                                                                     : DP_EINVAL;
}

int dpc_get_opt_double(avro_value_t *u, double *x)
{
    int d;
    avro_value_t b;
    if (avro_value_get_discriminant(u, &d) != 0 || avro_value_get_current_branch(u, &b) != 0)
        return DP_EINVAL;
    if (d == 0) {
        *x = NAN;
        return DP_OK;
    }
    return avro_value_get_double(&b, x) == 0 ? DP_OK : DP_EINVAL;
}

int dpc_set_named_values(avro_value_t *arr, const dp_kv *kv, size_t n, const char *field,
                         char *errstr, size_t errstr_size)
{
    if (n && !kv)
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s: %zu entries but no array", field, n);
    for (size_t i = 0; i < n; i++) {
        if (!kv[i].key)
            return dp_err(errstr, errstr_size, DP_EINVAL, "%s[%zu] has no name", field, i);
        size_t klen = strlen(kv[i].key);
        int rc = dpc_check_text(kv[i].key, klen, 1, field, errstr, errstr_size);
        if (rc != DP_OK)
            return rc;
        avro_value_t item, name, value;
        if (avro_value_append(arr, &item, NULL) != 0 || dpc_field(&item, 0, &name) != DP_OK ||
            dpc_field(&item, 1, &value) != DP_OK ||
            avro_value_set_string_len(&name, (char *)kv[i].key, klen + 1) != 0 ||
            avro_value_set_double(&value, kv[i].value) != 0)
            return dpc_avro_fail(errstr, errstr_size, field);
    }
    return DP_OK;
}

int dpc_get_named_values(avro_value_t *arr, dp_kv *out, size_t *n, const char *field,
                         char *errstr, size_t errstr_size)
{
    size_t count;
    if (avro_value_get_size(arr, &count) != 0)
        return dpc_avro_fail(errstr, errstr_size, field);
    for (size_t i = 0; i < count; i++) {
        avro_value_t item, name, value;
        const char *s;
        size_t slen;
        if (avro_value_get_by_index(arr, i, &item, NULL) != 0 ||
            dpc_field(&item, 0, &name) != DP_OK || dpc_field(&item, 1, &value) != DP_OK)
            return dpc_avro_fail(errstr, errstr_size, field);
        int rc = dpc_get_str(&name, &s, &slen, 1, field, errstr, errstr_size);
        if (rc != DP_OK)
            return rc;
        out[i].key = s;
        if (avro_value_get_double(&value, &out[i].value) != 0)
            return dpc_avro_fail(errstr, errstr_size, field);
    }
    *n = count;
    return DP_OK;
}

/* --- payload unions --------------------------------------------------------------- */

int dpc_set_payload(avro_value_t *u, int has_null, const dp_payload *p, const char *field,
                    char *errstr, size_t errstr_size)
{
    avro_value_t b, inner, item;
    int off = has_null ? 1 : 0;
    switch (p->kind) {
    case DP_PAYLOAD_NONE:
        if (!has_null)
            return dp_err(errstr, errstr_size, DP_EINVAL, "%s: a value is required", field);
        if (avro_value_set_branch(u, 0, &b) != 0 || avro_value_set_null(&b) != 0)
            return dpc_avro_fail(errstr, errstr_size, field);
        return DP_OK;
    case DP_PAYLOAD_CATEGORY:
        if (avro_value_set_branch(u, off + 0, &b) != 0 || dpc_field(&b, 0, &inner) != DP_OK ||
            avro_value_set_long(&inner, p->category) != 0)
            return dpc_avro_fail(errstr, errstr_size, field);
        return DP_OK;
    case DP_PAYLOAD_ROW:
        if (p->row_len && !p->row)
            return dp_err(errstr, errstr_size, DP_EINVAL, "%s: row of %zu values but no array",
                          field, p->row_len);
        if (avro_value_set_branch(u, off + 1, &b) != 0 || dpc_field(&b, 0, &inner) != DP_OK)
            return dpc_avro_fail(errstr, errstr_size, field);
        for (size_t i = 0; i < p->row_len; i++)
            if (avro_value_append(&inner, &item, NULL) != 0 ||
                avro_value_set_int(&item, p->row[i]) != 0)
                return dpc_avro_fail(errstr, errstr_size, field);
        return DP_OK;
    case DP_PAYLOAD_POINT:
        if (p->point_len && !p->point)
            return dp_err(errstr, errstr_size, DP_EINVAL, "%s: point of %zu coordinates but no array",
                          field, p->point_len);
        for (size_t i = 0; i < p->point_len; i++)
            if (!isfinite(p->point[i]))
                return dp_err(errstr, errstr_size, DP_EINVAL, "%s: coordinate %zu is not finite",
                              field, i);
        if (avro_value_set_branch(u, off + 2, &b) != 0 || dpc_field(&b, 0, &inner) != DP_OK)
            return dpc_avro_fail(errstr, errstr_size, field);
        for (size_t i = 0; i < p->point_len; i++)
            if (avro_value_append(&inner, &item, NULL) != 0 ||
                avro_value_set_double(&item, p->point[i]) != 0)
                return dpc_avro_fail(errstr, errstr_size, field);
        return DP_OK;
    }
    return dp_err(errstr, errstr_size, DP_EINVAL, "%s: unknown payload kind %d", field, (int)p->kind);
}

int dpc_payload_shape(avro_value_t *u, int has_null, dp_payload_kind *kind, size_t *n_items,
                      const char *field, char *errstr, size_t errstr_size)
{
    int d;
    avro_value_t b, inner;
    if (avro_value_get_discriminant(u, &d) != 0 || avro_value_get_current_branch(u, &b) != 0)
        return dpc_avro_fail(errstr, errstr_size, field);
    int k = has_null ? d : d + 1;   /* k: 0 null, 1 category, 2 row, 3 point */
    *n_items = 0;
    switch (k) {
    case 0: *kind = DP_PAYLOAD_NONE; return DP_OK;
    case 1: *kind = DP_PAYLOAD_CATEGORY; return DP_OK;
    case 2: *kind = DP_PAYLOAD_ROW; break;
    case 3: *kind = DP_PAYLOAD_POINT; break;
    default:
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s: union branch %d", field, d);
    }
    if (dpc_field(&b, 0, &inner) != DP_OK || avro_value_get_size(&inner, n_items) != 0)
        return dpc_avro_fail(errstr, errstr_size, field);
    return DP_OK;
}

int dpc_get_payload(avro_value_t *u, int has_null, dp_payload *p, int32_t *ints, double *dbls,
                    const char *field, char *errstr, size_t errstr_size)
{
    dp_payload_kind kind;
    size_t n;
    int rc = dpc_payload_shape(u, has_null, &kind, &n, field, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    memset(p, 0, sizeof *p);
    p->kind = kind;
    if (kind == DP_PAYLOAD_NONE)
        return DP_OK;
    avro_value_t b, inner, item;
    if (avro_value_get_current_branch(u, &b) != 0 || dpc_field(&b, 0, &inner) != DP_OK)
        return dpc_avro_fail(errstr, errstr_size, field);
    if (kind == DP_PAYLOAD_CATEGORY) {
        if (avro_value_get_long(&inner, &p->category) != 0)
            return dpc_avro_fail(errstr, errstr_size, field);
        return DP_OK;
    }
    for (size_t i = 0; i < n; i++) {
        if (avro_value_get_by_index(&inner, i, &item, NULL) != 0)
            return dpc_avro_fail(errstr, errstr_size, field);
        if (kind == DP_PAYLOAD_ROW) {
            if (avro_value_get_int(&item, &ints[i]) != 0)
                return dpc_avro_fail(errstr, errstr_size, field);
        } else {
            if (avro_value_get_double(&item, &dbls[i]) != 0)
                return dpc_avro_fail(errstr, errstr_size, field);
            if (!isfinite(dbls[i]))
                return dp_err(errstr, errstr_size, DP_EINVAL, "%s: coordinate %zu is not finite",
                              field, i);
        }
    }
    if (kind == DP_PAYLOAD_ROW) {
        p->row = ints;
        p->row_len = n;
    } else {
        p->point = dbls;
        p->point_len = n;
    }
    return DP_OK;
}
