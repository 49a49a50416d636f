/* update_json.c — JSON lines ↔ dp_update, and deterministic output lines
 * for releases, budget events and rejections.  See update_json.h for the
 * formats.
 *
 * Owns: the parsed update's strings (dp_update_owned).  Calls:
 * payload_json (the value / row / point of a line), jansson, numfmt. */
#include "connectors/jsonl/update_json.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dp_error.h"
#include "core/numfmt.h"

/* --- dp_jbuf ---------------------------------------------------------------- */

void dp_jbuf_init(dp_jbuf *b) { memset(b, 0, sizeof *b); }

void dp_jbuf_free(dp_jbuf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

void dp_jbuf_reset(dp_jbuf *b) { b->len = 0; }

static int jbuf_reserve(dp_jbuf *b, size_t extra)
{
    if (b->oom)
        return -1;
    if (b->len + extra + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) {
        if (cap > SIZE_MAX / 2) {
            b->oom = 1;
            return -1;
        }
        cap *= 2;
    }
    char *d = realloc(b->data, cap);
    if (!d) {
        b->oom = 1;
        return -1;
    }
    b->data = d;
    b->cap = cap;
    return 0;
}

void dp_jbuf_put(dp_jbuf *b, const char *s, size_t n)
{
    if (jbuf_reserve(b, n) != 0)
        return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void dp_jbuf_puts(dp_jbuf *b, const char *s) { dp_jbuf_put(b, s, strlen(s)); }

void dp_jbuf_u64(dp_jbuf *b, uint64_t v)
{
    char tmp[24];
    size_t i = sizeof tmp;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    dp_jbuf_put(b, tmp + i, sizeof tmp - i);
}

void dp_jbuf_i64(dp_jbuf *b, int64_t v)
{
    if (v < 0) {
        dp_jbuf_put(b, "-", 1);
        /* -(v+1)+1 avoids overflow at INT64_MIN */
        dp_jbuf_u64(b, (uint64_t)(-(v + 1)) + 1u);
    } else {
        dp_jbuf_u64(b, (uint64_t)v);
    }
}

void dp_jbuf_double(dp_jbuf *b, double v)
{
    if (!isfinite(v)) {
        dp_jbuf_put(b, "null", 4);
        return;
    }
    /* the shortest text that reads back as v: 1e-06, not 9.9999999999999995e-07 */
    char tmp[DP_FMT_DOUBLE_MAX];
    dp_jbuf_put(b, tmp, dp_fmt_double(v, tmp, sizeof tmp));
}

int dp_jbuf_string(dp_jbuf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    if (!dp_utf8_valid(s, n))
        return -1;
    dp_jbuf_put(b, "\"", 1);
    size_t run = 0;   /* start of the pending run of bytes copied verbatim */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        dp_jbuf_put(b, s + run, i - run);
        run = i + 1;
        switch (c) {
        case '"':  dp_jbuf_put(b, "\\\"", 2); break;
        case '\\': dp_jbuf_put(b, "\\\\", 2); break;
        case '\n': dp_jbuf_put(b, "\\n", 2); break;
        case '\r': dp_jbuf_put(b, "\\r", 2); break;
        case '\t': dp_jbuf_put(b, "\\t", 2); break;
        case '\b': dp_jbuf_put(b, "\\b", 2); break;
        case '\f': dp_jbuf_put(b, "\\f", 2); break;
        default: {
            char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            dp_jbuf_put(b, esc, 6);
        }
        }
    }
    dp_jbuf_put(b, s + run, n - run);
    dp_jbuf_put(b, "\"", 1);
    return 0;
}

/* --- update kinds ------------------------------------------------------------- */

static const char *const KIND_NAMES[] = {"REPORT", "INSERT", "DELETE", "CLOSE_STEP"};

const char *dp_update_json_kind_name(dp_update_kind k)
{
    return (unsigned)k < 4 ? KIND_NAMES[k] : "UNKNOWN";
}

int dp_update_json_kind_parse(const char *s, dp_update_kind *out)
{
    for (unsigned i = 0; i < 4; i++)
        if (strcmp(s, KIND_NAMES[i]) == 0) {
            *out = (dp_update_kind)i;
            return 0;
        }
    return -1;
}

/* --- parsing ------------------------------------------------------------------ */

void dp_update_owned_init(dp_update_owned *o) { memset(o, 0, sizeof *o); }

void dp_update_owned_free(dp_update_owned *o)
{
    free(o->stream);
    free(o->entity);
    dp_payload_buf_free(&o->pay);
    memset(o, 0, sizeof *o);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

static int copy_string(char **dst, size_t *cap, const json_t *v)
{
    size_t n = json_string_length(v);
    if (grow((void **)dst, cap, n + 1, 1) != 0)
        return -1;
    memcpy(*dst, json_string_value(v), n);
    (*dst)[n] = '\0';
    return 0;
}

int dp_update_json_parse(const char *line, size_t len, dp_update_owned *o,
                         char *errstr, size_t errstr_size)
{
    if (len > 0 && line[len - 1] == '\r')
        len--;
    json_error_t jerr;
    /* Duplicate keys are refused: which of two "value"s counts would be
     * a parser accident, not a decision. */
    json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return dp_err(errstr, errstr_size, DP_EINVAL, "not valid JSON (column %d: %s)",
                      jerr.column, jerr.text);
    int rc = DP_EINVAL;
    dp_update *u = &o->u;
    memset(u, 0, sizeof *u);
    if (!json_is_object(root)) {
        dp_err(errstr, errstr_size, DP_EINVAL, "an update must be a JSON object");
        goto out;
    }
    const char *key;
    json_t *val;
    json_t *jstream = NULL, *jstep = NULL, *jkind = NULL, *jentity = NULL, *jvalue = NULL,
           *jrow = NULL, *jpoint = NULL, *jtime = NULL;
    json_object_foreach(root, key, val) {
        if (strcmp(key, "stream") == 0) jstream = val;
        else if (strcmp(key, "step") == 0) jstep = val;
        else if (strcmp(key, "kind") == 0) jkind = val;
        else if (strcmp(key, "entity") == 0) jentity = val;
        else if (strcmp(key, "value") == 0) jvalue = val;
        else if (strcmp(key, "row") == 0) jrow = val;
        else if (strcmp(key, "point") == 0) jpoint = val;
        else if (strcmp(key, "event_time") == 0) jtime = val;
        else {
            dp_err(errstr, errstr_size, DP_EINVAL, "unknown field \"%s\"", key);
            goto out;
        }
    }
    if (!jstream || !json_is_string(jstream) || json_string_length(jstream) == 0) {
        dp_err(errstr, errstr_size, DP_EINVAL, "\"stream\" must be a non-empty string");
        goto out;
    }
    if (!jstep || !json_is_integer(jstep) || json_integer_value(jstep) < 1) {
        dp_err(errstr, errstr_size, DP_EINVAL, "\"step\" must be an integer >= 1");
        goto out;
    }
    if (!jkind || !json_is_string(jkind) || dp_update_json_kind_parse(json_string_value(jkind), &u->kind) != 0) {
        dp_err(errstr, errstr_size, DP_EINVAL,
               "\"kind\" must be one of REPORT, INSERT, DELETE, CLOSE_STEP");
        goto out;
    }
    if (jentity && (!json_is_string(jentity) || json_string_length(jentity) == 0)) {
        dp_err(errstr, errstr_size, DP_EINVAL, "\"entity\" must be a non-empty string");
        goto out;
    }
    int n_payload = (jvalue != NULL) + (jrow != NULL) + (jpoint != NULL);
    if (n_payload > 1) {
        dp_err(errstr, errstr_size, DP_EINVAL, "at most one of \"value\", \"row\", \"point\" may be given");
        goto out;
    }
    if (u->kind == DP_UPDATE_CLOSE_STEP && (n_payload || jentity)) {
        dp_err(errstr, errstr_size, DP_EINVAL, "a CLOSE_STEP marker carries no entity and no payload");
        goto out;
    }
    if (jtime && !json_is_integer(jtime)) {
        dp_err(errstr, errstr_size, DP_EINVAL, "\"event_time\" must be an integer (milliseconds)");
        goto out;
    }

    rc = DP_ENOMEM;
    if (copy_string(&o->stream, &o->stream_cap, jstream) != 0)
        goto out;
    u->stream_id = o->stream;
    u->stream_id_len = json_string_length(jstream);
    u->step = (uint64_t)json_integer_value(jstep);
    if (jentity) {
        if (copy_string(&o->entity, &o->entity_cap, jentity) != 0)
            goto out;
        u->entity_id = o->entity;
        u->entity_id_len = json_string_length(jentity);
    }
    if (jtime) {
        u->has_event_time = 1;
        u->event_time_ms = (int64_t)json_integer_value(jtime);
    }
    rc = dp_payload_json_parse(jvalue, jrow, jpoint, 0, &o->pay, &u->payload, errstr, errstr_size);
out:
    if (rc == DP_ENOMEM)
        dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    json_decref(root);
    return rc;
}

/* --- formatting ----------------------------------------------------------------- */

static int put_key(dp_jbuf *b, const char *key, int first)
{
    if (!first)
        dp_jbuf_put(b, ",", 1);
    dp_jbuf_put(b, "\"", 1);
    dp_jbuf_puts(b, key);   /* keys are our own constants: plain ASCII */
    dp_jbuf_put(b, "\":", 2);
    return 0;
}

static int put_payload(dp_jbuf *b, const dp_payload *p)
{
    switch (p->kind) {
    case DP_PAYLOAD_NONE:
        return 0;
    case DP_PAYLOAD_CATEGORY:
        put_key(b, "value", 0);
        dp_jbuf_i64(b, p->category);
        return 0;
    case DP_PAYLOAD_ROW:
        put_key(b, "row", 0);
        dp_jbuf_put(b, "[", 1);
        for (size_t i = 0; i < p->row_len; i++) {
            if (i)
                dp_jbuf_put(b, ",", 1);
            dp_jbuf_i64(b, p->row[i]);
        }
        dp_jbuf_put(b, "]", 1);
        return 0;
    case DP_PAYLOAD_POINT:
        put_key(b, "point", 0);
        dp_jbuf_put(b, "[", 1);
        for (size_t i = 0; i < p->point_len; i++) {
            if (!isfinite(p->point[i]))
                return -1;
            if (i)
                dp_jbuf_put(b, ",", 1);
            dp_jbuf_double(b, p->point[i]);
        }
        dp_jbuf_put(b, "]", 1);
        return 0;
    }
    return -1;
}

static int put_kvs(dp_jbuf *b, const char *key, const dp_kv *kv, size_t n)
{
    put_key(b, key, 0);
    dp_jbuf_put(b, "{", 1);
    for (size_t i = 0; i < n; i++) {
        if (i)
            dp_jbuf_put(b, ",", 1);
        if (dp_jbuf_string(b, kv[i].key, strlen(kv[i].key)) != 0)
            return -1;
        dp_jbuf_put(b, ":", 1);
        dp_jbuf_double(b, kv[i].value);
    }
    dp_jbuf_put(b, "}", 1);
    return 0;
}

static int put_str_field(dp_jbuf *b, const char *key, const char *s, size_t n, int first)
{
    put_key(b, key, first);
    return dp_jbuf_string(b, s ? s : "", s ? n : 0);
}

static int finish(dp_jbuf *b, size_t start, int rc)
{
    if (rc != 0 || b->oom) {
        if (!b->oom)
            b->len = start;   /* drop the partial line */
        return -1;
    }
    dp_jbuf_put(b, "\n", 1);
    return b->oom ? -1 : 0;
}

int dp_update_json_format(dp_jbuf *b, const dp_update *u)
{
    size_t start = b->len;
    int rc = 0;
    dp_jbuf_put(b, "{", 1);
    rc |= put_str_field(b, "stream", u->stream_id, u->stream_id_len, 1);
    put_key(b, "step", 0);
    dp_jbuf_u64(b, u->step);
    put_key(b, "kind", 0);
    dp_jbuf_put(b, "\"", 1);
    dp_jbuf_puts(b, dp_update_json_kind_name(u->kind));
    dp_jbuf_put(b, "\"", 1);
    if (u->entity_id)
        rc |= put_str_field(b, "entity", u->entity_id, u->entity_id_len, 0);
    rc |= put_payload(b, &u->payload);
    if (u->has_event_time) {
        put_key(b, "event_time", 0);
        dp_jbuf_i64(b, u->event_time_ms);
    }
    dp_jbuf_put(b, "}", 1);
    return finish(b, start, rc);
}

int dp_update_json_format_record(dp_jbuf *b, const char *stream_id, size_t stream_id_len,
                                 uint64_t step, const dp_synth_record *r)
{
    size_t start = b->len;
    int rc = 0;
    dp_jbuf_puts(b, "{\"type\":\"record\"");
    rc |= put_str_field(b, "stream", stream_id, stream_id_len, 0);
    put_key(b, "step", 0);
    dp_jbuf_u64(b, step);
    put_key(b, "synthetic_id", 0);
    dp_jbuf_u64(b, r->synthetic_id);
    rc |= put_payload(b, &r->value);
    dp_jbuf_put(b, "}", 1);
    return finish(b, start, rc);
}

int dp_update_json_format_manifest(dp_jbuf *b, const dp_release_manifest *m)
{
    size_t start = b->len;
    int rc = 0;
    dp_jbuf_puts(b, "{\"type\":\"manifest\"");
    rc |= put_str_field(b, "stream", m->stream_id, m->stream_id_len, 0);
    put_key(b, "step", 0);
    dp_jbuf_u64(b, m->step);
    rc |= put_str_field(b, "synthesizer", m->synthesizer, m->synthesizer ? strlen(m->synthesizer) : 0, 0);
    put_key(b, "mode", 0);
    const char *mode = dp_release_mode_name(m->mode);
    rc |= mode ? 0 : -1;
    dp_jbuf_puts(b, "\"");
    dp_jbuf_puts(b, mode ? mode : "");
    dp_jbuf_puts(b, "\"");
    put_key(b, "record_count", 0);
    dp_jbuf_u64(b, m->record_count);
    put_key(b, "clamped", 0);
    dp_jbuf_puts(b, m->clamped ? "true" : "false");
    rc |= put_kvs(b, "debias", m->debias, m->n_debias);
    dp_jbuf_put(b, "}", 1);
    return finish(b, start, rc);
}

int dp_update_json_format_budget(dp_jbuf *b, const dp_budget_event *e)
{
    size_t start = b->len;
    int rc = 0;
    dp_jbuf_puts(b, "{\"type\":\"budget\"");
    rc |= put_str_field(b, "stream", e->stream_id, e->stream_id_len, 0);
    put_key(b, "step", 0);
    dp_jbuf_u64(b, e->step);
    put_key(b, "status", 0);
    dp_jbuf_puts(b, e->status == DP_BUDGET_EXHAUSTED ? "\"EXHAUSTED\"" : "\"ACTIVE\"");
    rc |= put_str_field(b, "mechanism", e->mechanism, e->mechanism ? strlen(e->mechanism) : 0, 0);
    rc |= put_str_field(b, "unit", e->unit, e->unit ? strlen(e->unit) : 0, 0);
    rc |= put_str_field(b, "neighbors", e->neighbors, e->neighbors ? strlen(e->neighbors) : 0, 0);
    put_key(b, "model", 0);
    dp_jbuf_puts(b, e->model == DP_PRIVACY_PURE ? "\"pure\"" : "\"zcdp\"");
    put_key(b, "spent_step", 0);
    dp_jbuf_double(b, e->spent_step);
    put_key(b, "spent_total", 0);
    dp_jbuf_double(b, e->spent_total);
    put_key(b, "budget_total", 0);
    dp_jbuf_double(b, e->budget_total);
    put_key(b, "delta", 0);
    dp_jbuf_double(b, e->delta);
    put_key(b, "eps_simple", 0);
    dp_jbuf_double(b, e->eps_simple);
    put_key(b, "eps_cks", 0);
    dp_jbuf_double(b, e->eps_cks);
    rc |= put_kvs(b, "noise", e->noise, e->n_noise);
    rc |= put_kvs(b, "accuracy", e->accuracy, e->n_accuracy);
    put_key(b, "spent_units_step", 0);
    dp_jbuf_u64(b, e->spent_units_step);
    put_key(b, "spent_units_total", 0);
    dp_jbuf_u64(b, e->spent_units_total);
    put_key(b, "budget_units", 0);
    dp_jbuf_u64(b, e->budget_units);
    rc |= put_str_field(b, "public_inputs", e->public_inputs ? e->public_inputs : "",
                        e->public_inputs ? strlen(e->public_inputs) : 0, 0);
    rc |= put_str_field(b, "key_fingerprint", e->key_fingerprint ? e->key_fingerprint : "",
                        e->key_fingerprint ? strlen(e->key_fingerprint) : 0, 0);
    dp_jbuf_put(b, "}", 1);
    return finish(b, start, rc);
}

int dp_update_json_format_rejected(dp_jbuf *b, uint64_t line_no, dp_reject_reason reason,
                                   const char *text, const char *raw, size_t raw_len,
                                   int truncated)
{
    static const char hex[] = "0123456789abcdef";
    size_t start = b->len;
    int rc = 0;
    dp_jbuf_puts(b, "{\"line\":");
    dp_jbuf_u64(b, line_no);
    put_key(b, "reason", 0);
    dp_jbuf_put(b, "\"", 1);
    dp_jbuf_puts(b, dp_reject_reason_name(reason));
    dp_jbuf_put(b, "\"", 1);
    /* Messages may quote input bytes; fall back to a fixed text rather than
     * emit invalid JSON. */
    put_key(b, "text", 0);
    if (dp_jbuf_string(b, text, strlen(text)) != 0)
        dp_jbuf_puts(b, "\"(message not valid UTF-8)\"");
    if (dp_utf8_valid(raw, raw_len)) {
        rc |= put_str_field(b, "raw", raw, raw_len, 0);
    } else {
        put_key(b, "raw_hex", 0);
        dp_jbuf_put(b, "\"", 1);
        for (size_t i = 0; i < raw_len; i++) {
            unsigned char c = (unsigned char)raw[i];
            char h[2] = {hex[c >> 4], hex[c & 15]};
            dp_jbuf_put(b, h, 2);
        }
        dp_jbuf_put(b, "\"", 1);
    }
    if (truncated)
        dp_jbuf_puts(b, ",\"raw_truncated\":true");
    dp_jbuf_put(b, "}", 1);
    return finish(b, start, rc);
}
