/* wire.c — Avro binary encoding of dpstream's messages (see wire.h).
 *
 * Avro binary (spec 1.11): int/long = zig-zag varint; string/bytes = long
 * length + bytes; double = 8 bytes little-endian IEEE-754; boolean = one
 * byte; enum = int symbol index; union = long branch index + value; array
 * = blocks of (long count, items), ending with count 0; record = fields in
 * order.  The schemas (namespace "dpstream"):
 *
 *   Payload  = union { null,
 *                      record Category {long value},
 *                      record Row      {array<int> values},
 *                      record Point    {array<double> coords} }
 *   KeyValue = record {string key, double value}
 *
 *   updates topic:   record Update {
 *       string stream, long step,
 *       enum UpdateKind {REPORT, INSERT, DELETE, CLOSE_STEP} kind,
 *       union {null, bytes} entity, Payload payload, union {null, long} event_time }
 *
 *   synthetic topic: union { SyntheticRecordChunk, ReleaseManifest }
 *     record SyntheticRecordChunk {
 *       string stream, long step, int chunk,
 *       array<record SyntheticRecord {long id, Payload value}> records }
 *     record ReleaseManifest {
 *       string stream, long step, string synthesizer, enum Mode {FULL, DELTA} mode,
 *       long record_count, int chunk_count, boolean clamped, long imputed_count,
 *       array<KeyValue> debias }
 *     A release is its chunks 0..chunk_count-1 followed by its manifest,
 *     all keyed by stream id (one partition, in order, in one transaction).
 *
 *   budget topic:    record BudgetEvent {
 *       string stream, long step, enum BudgetStatus {ACTIVE, EXHAUSTED} status,
 *       string mechanism, string unit, string neighbors,
 *       enum PrivacyModel {ZCDP, PURE} model,
 *       double spent_step, double spent_total, double budget_total, double delta,
 *       union {null, double} eps_simple, union {null, double} eps_cks,
 *       array<KeyValue> noise, array<KeyValue> accuracy }
 *     (non-finite ε values are null)
 *
 *   dead-letter topic: record DeadLetter {
 *       string topic, int partition, long offset, union {null, bytes} key,
 *       string reason, string text, bytes raw }
 *
 * Decoding is strict: truncated input, trailing bytes, out-of-range
 * integers, unknown branch or symbol indices are errors. */
#include "stream/wire.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dp_error.h"

/* --- arena ----------------------------------------------------------------------- */

void dp_wire_arena_init(dp_wire_arena *a) { memset(a, 0, sizeof *a); }

void dp_wire_arena_clear(dp_wire_arena *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->blocks[i]);
    a->n = 0;
}

void dp_wire_arena_free(dp_wire_arena *a)
{
    dp_wire_arena_clear(a);
    free(a->blocks);
    memset(a, 0, sizeof *a);
}

static void *arena_alloc(dp_wire_arena *a, size_t n)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 16;
        void **b = realloc(a->blocks, cap * sizeof *b);
        if (!b)
            return NULL;
        a->blocks = b;
        a->cap = cap;
    }
    void *p = malloc(n ? n : 1);
    if (p)
        a->blocks[a->n++] = p;
    return p;
}

/* --- writer ------------------------------------------------------------------------ */

static void put_long(dp_buf *b, int64_t v)
{
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    uint8_t tmp[10];
    size_t n = 0;
    while (z >= 0x80) {
        tmp[n++] = (uint8_t)(z | 0x80);
        z >>= 7;
    }
    tmp[n++] = (uint8_t)z;
    dp_buf_put_bytes(b, tmp, n);
}

static void put_bytes(dp_buf *b, const void *p, size_t n)
{
    put_long(b, (int64_t)n);
    if (n)
        dp_buf_put_bytes(b, p, n);
}

static void put_str(dp_buf *b, const char *s) { put_bytes(b, s, s ? strlen(s) : 0); }
static void put_double(dp_buf *b, double v) { dp_buf_put_f64(b, v); }
static void put_bool(dp_buf *b, int v) { dp_buf_put_u8(b, v ? 1 : 0); }

static void put_kvs(dp_buf *b, const dp_kv *kv, size_t n)
{
    if (n) {
        put_long(b, (int64_t)n);
        for (size_t i = 0; i < n; i++) {
            put_str(b, kv[i].key);
            put_double(b, kv[i].value);
        }
    }
    put_long(b, 0);
}

static void put_payload(dp_buf *b, const dp_payload *p)
{
    switch (p->kind) {
    case DP_PAYLOAD_CATEGORY:
        put_long(b, 1);
        put_long(b, p->category);
        break;
    case DP_PAYLOAD_ROW:
        put_long(b, 2);
        if (p->row_len) {
            put_long(b, (int64_t)p->row_len);
            for (size_t i = 0; i < p->row_len; i++)
                put_long(b, p->row[i]);
        }
        put_long(b, 0);
        break;
    case DP_PAYLOAD_POINT:
        put_long(b, 3);
        if (p->point_len) {
            put_long(b, (int64_t)p->point_len);
            for (size_t i = 0; i < p->point_len; i++)
                put_double(b, p->point[i]);
        }
        put_long(b, 0);
        break;
    default:
        put_long(b, 0);
        break;
    }
}

int dp_wire_encode_update(const dp_update *u, dp_buf *out)
{
    put_bytes(out, u->stream_id, u->stream_id_len);
    put_long(out, (int64_t)u->step);
    put_long(out, (int64_t)u->kind);
    if (u->entity_id) {
        put_long(out, 1);
        put_bytes(out, u->entity_id, u->entity_id_len);
    } else {
        put_long(out, 0);
    }
    put_payload(out, &u->payload);
    if (u->has_event_time) {
        put_long(out, 1);
        put_long(out, u->event_time_ms);
    } else {
        put_long(out, 0);
    }
    return dp_buf_status(out);
}

int dp_wire_encode_chunk(const dp_wire_chunk *c, dp_buf *out)
{
    put_long(out, 0);   /* union branch: SyntheticRecordChunk */
    put_bytes(out, c->stream_id, c->stream_id_len);
    put_long(out, (int64_t)c->step);
    put_long(out, (int64_t)c->index);
    if (c->n) {
        put_long(out, (int64_t)c->n);
        for (size_t i = 0; i < c->n; i++) {
            put_long(out, (int64_t)c->records[i].synthetic_id);
            put_payload(out, &c->records[i].value);
        }
    }
    put_long(out, 0);
    return dp_buf_status(out);
}

int dp_wire_encode_manifest(const dp_release_manifest *m, uint32_t chunk_count, dp_buf *out)
{
    put_long(out, 1);   /* union branch: ReleaseManifest */
    put_bytes(out, m->stream_id, m->stream_id_len);
    put_long(out, (int64_t)m->step);
    put_str(out, m->synthesizer);
    put_long(out, m->mode == DP_RELEASE_DELTA ? 1 : 0);
    put_long(out, (int64_t)m->record_count);
    put_long(out, (int64_t)chunk_count);
    put_bool(out, m->clamped);
    put_long(out, (int64_t)m->imputed_count);
    put_kvs(out, m->debias, m->n_debias);
    return dp_buf_status(out);
}

static void put_opt_double(dp_buf *b, double v)
{
    if (isfinite(v)) {
        put_long(b, 1);
        put_double(b, v);
    } else {
        put_long(b, 0);
    }
}

int dp_wire_encode_budget(const dp_budget_event *e, dp_buf *out)
{
    put_bytes(out, e->stream_id, e->stream_id_len);
    put_long(out, (int64_t)e->step);
    put_long(out, e->status == DP_BUDGET_EXHAUSTED ? 1 : 0);
    put_str(out, e->mechanism);
    put_str(out, e->unit);
    put_str(out, e->neighbors);
    put_long(out, e->model == DP_PRIVACY_PURE ? 1 : 0);
    put_double(out, e->spent_step);
    put_double(out, e->spent_total);
    put_double(out, e->budget_total);
    put_double(out, e->delta);
    put_opt_double(out, e->eps_simple);
    put_opt_double(out, e->eps_cks);
    put_kvs(out, e->noise, e->n_noise);
    put_kvs(out, e->accuracy, e->n_accuracy);
    return dp_buf_status(out);
}

int dp_wire_encode_dead_letter(const dp_dead_letter *d, dp_buf *out)
{
    put_str(out, d->topic);
    put_long(out, d->partition);
    put_long(out, d->offset);
    if (d->key) {
        put_long(out, 1);
        put_bytes(out, d->key, d->key_len);
    } else {
        put_long(out, 0);
    }
    put_str(out, d->reason);
    put_str(out, d->text);
    put_bytes(out, d->raw, d->raw_len);
    return dp_buf_status(out);
}

/* --- reader ------------------------------------------------------------------------ */

typedef struct rd {
    const uint8_t *p;
    size_t         len, off;
    int            bad;         /* latched */
    dp_wire_arena *a;
    char          *err;
    size_t         errn;
} rd;

static void fail(rd *r, const char *fmt, ...)
{
    if (r->bad)
        return;
    r->bad = 1;
    if (r->err && r->errn) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->err, r->errn, fmt, ap);
        va_end(ap);
    }
}

static int64_t get_long(rd *r)
{
    uint64_t z = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (r->bad || r->off >= r->len) {
            fail(r, "truncated Avro value at byte %zu", r->off);
            return 0;
        }
        uint8_t c = r->p[r->off++];
        if (shift == 63 && (c & 0x7e)) {
            fail(r, "Avro long overflows 64 bits at byte %zu", r->off);
            return 0;
        }
        z |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            return (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
    }
    fail(r, "Avro varint longer than 10 bytes");
    return 0;
}

static int32_t get_int(rd *r)
{
    int64_t v = get_long(r);
    if (v < INT32_MIN || v > INT32_MAX) {
        fail(r, "Avro int out of range");
        return 0;
    }
    return (int32_t)v;
}

static const uint8_t *get_bytes(rd *r, size_t *n)
{
    int64_t l = get_long(r);
    if (r->bad)
        return NULL;
    if (l < 0 || (uint64_t)l > r->len - r->off) {
        fail(r, "Avro bytes/string length %lld exceeds the message", (long long)l);
        return NULL;
    }
    const uint8_t *p = r->p + r->off;
    r->off += (size_t)l;
    *n = (size_t)l;
    return p;
}

/* A NUL-terminated copy in the arena. */
static const char *get_str(rd *r, size_t *n_out)
{
    size_t n = 0;
    const uint8_t *p = get_bytes(r, &n);
    if (!p)
        return NULL;
    char *s = arena_alloc(r->a, n + 1);
    if (!s) {
        fail(r, "out of memory");
        return NULL;
    }
    memcpy(s, p, n);
    s[n] = '\0';
    if (n_out)
        *n_out = n;
    return s;
}

static double get_double(rd *r)
{
    if (r->bad || r->len - r->off < 8) {
        fail(r, "truncated Avro double");
        return 0;
    }
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | r->p[r->off + (size_t)i];
    r->off += 8;
    double d;
    memcpy(&d, &v, sizeof d);
    return d;
}

static int get_bool(rd *r)
{
    if (r->bad || r->off >= r->len) {
        fail(r, "truncated Avro boolean");
        return 0;
    }
    uint8_t c = r->p[r->off++];
    if (c > 1)
        fail(r, "Avro boolean byte %u", c);
    return c;
}

static int64_t get_index(rd *r, int64_t n, const char *what)
{
    int64_t v = get_long(r);
    if (!r->bad && (v < 0 || v >= n))
        fail(r, "%s index %lld out of range", what, (long long)v);
    return v;
}

/* Array block header: the item count of the next block (0 = end). */
static int64_t get_block(rd *r)
{
    int64_t c = get_long(r);
    if (c < 0) {
        c = -c;
        (void)get_long(r);   /* block size in bytes: not needed */
    }
    if (!r->bad && (uint64_t)c > r->len - r->off)
        fail(r, "Avro array block of %lld items exceeds the message", (long long)c);
    return r->bad ? 0 : c;
}

/* Append-only growable array in the arena (old blocks stay until clear). */
static void *grow(rd *r, void *old, size_t n_old, size_t n_new, size_t elem)
{
    void *p = arena_alloc(r->a, n_new * elem);
    if (!p) {
        fail(r, "out of memory");
        return NULL;
    }
    if (n_old)
        memcpy(p, old, n_old * elem);
    return p;
}

static void get_payload(rd *r, dp_payload *p)
{
    memset(p, 0, sizeof *p);
    int64_t br = get_index(r, 4, "payload union");
    if (r->bad)
        return;
    if (br == 1) {
        p->kind = DP_PAYLOAD_CATEGORY;
        p->category = get_long(r);
    } else if (br == 2) {
        p->kind = DP_PAYLOAD_ROW;
        int32_t *row = NULL;
        size_t n = 0;
        for (int64_t c; (c = get_block(r)) > 0;) {
            row = grow(r, row, n, n + (size_t)c, sizeof *row);
            for (int64_t i = 0; i < c && row; i++)
                row[n++] = get_int(r);
            if (r->bad)
                return;
        }
        p->row = row;
        p->row_len = n;
    } else if (br == 3) {
        p->kind = DP_PAYLOAD_POINT;
        double *pt = NULL;
        size_t n = 0;
        for (int64_t c; (c = get_block(r)) > 0;) {
            pt = grow(r, pt, n, n + (size_t)c, sizeof *pt);
            for (int64_t i = 0; i < c && pt; i++)
                pt[n++] = get_double(r);
            if (r->bad)
                return;
        }
        p->point = pt;
        p->point_len = n;
    }
}

static dp_kv *get_kvs(rd *r, size_t *n_out)
{
    dp_kv *kv = NULL;
    size_t n = 0;
    for (int64_t c; (c = get_block(r)) > 0;) {
        kv = grow(r, kv, n, n + (size_t)c, sizeof *kv);
        for (int64_t i = 0; i < c && kv; i++) {
            kv[n].key = get_str(r, NULL);
            kv[n].value = get_double(r);
            n++;
        }
        if (r->bad)
            return NULL;
    }
    *n_out = n;
    return kv;
}

static int finish(rd *r, int bad_status)
{
    if (!r->bad && r->off != r->len)
        fail(r, "%zu trailing bytes after the Avro record", r->len - r->off);
    return r->bad ? bad_status : DP_OK;
}

int dp_wire_decode_update(const void *data, size_t len, dp_wire_arena *a, dp_update *u,
                          char *errstr, size_t errstr_size)
{
    rd r = {.p = data, .len = data ? len : 0, .a = a, .err = errstr, .errn = errstr_size};
    memset(u, 0, sizeof *u);
    u->stream_id = get_str(&r, &u->stream_id_len);
    int64_t step = get_long(&r);
    int64_t kind = get_index(&r, 4, "UpdateKind");
    if (get_index(&r, 2, "entity union") == 1)
        u->entity_id = (const char *)get_bytes(&r, &u->entity_id_len);
    get_payload(&r, &u->payload);
    if (get_index(&r, 2, "event_time union") == 1) {
        u->has_event_time = 1;
        u->event_time_ms = get_long(&r);
    }
    if (finish(&r, DP_EINVAL) != DP_OK)
        return DP_EINVAL;
    /* the same field rules as the JSON form (update_json.h) */
    if (u->stream_id_len == 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "stream: must be non-empty");
    if (step < 1)
        return dp_err(errstr, errstr_size, DP_EINVAL, "step: must be in 1..2^63-1");
    if (u->entity_id && u->entity_id_len == 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "entity: must be non-empty when present");
    u->step = (uint64_t)step;
    u->kind = (dp_update_kind)kind;
    if (u->kind == DP_UPDATE_CLOSE_STEP && (u->entity_id || u->payload.kind != DP_PAYLOAD_NONE))
        return dp_err(errstr, errstr_size, DP_EINVAL, "CLOSE_STEP carries no entity or payload");
    for (size_t i = 0; i < u->payload.point_len; i++)
        if (!isfinite(u->payload.point[i]))
            return dp_err(errstr, errstr_size, DP_EINVAL, "point: coordinates must be finite");
    return DP_OK;
}

int dp_wire_decode_synthetic(const void *data, size_t len, dp_wire_arena *a, dp_wire_output_kind *kind,
                             dp_wire_chunk *c, dp_release_manifest *m, uint32_t *chunk_count,
                             char *errstr, size_t errstr_size)
{
    rd r = {.p = data, .len = data ? len : 0, .a = a, .err = errstr, .errn = errstr_size};
    int64_t br = get_index(&r, 2, "synthetic union");
    if (r.bad)
        return DP_ECORRUPT;
    if (br == 0) {
        *kind = DP_WIRE_CHUNK;
        memset(c, 0, sizeof *c);
        c->stream_id = get_str(&r, &c->stream_id_len);
        c->step = (uint64_t)get_long(&r);
        c->index = (uint32_t)get_int(&r);
        dp_synth_record *recs = NULL;
        size_t n = 0;
        for (int64_t k; (k = get_block(&r)) > 0;) {
            recs = grow(&r, recs, n, n + (size_t)k, sizeof *recs);
            for (int64_t i = 0; i < k && recs; i++) {
                recs[n].synthetic_id = (uint64_t)get_long(&r);
                get_payload(&r, &recs[n].value);
                n++;
            }
            if (r.bad)
                break;
        }
        c->records = recs;
        c->n = n;
        return finish(&r, DP_ECORRUPT);
    }
    *kind = DP_WIRE_MANIFEST;
    memset(m, 0, sizeof *m);
    m->stream_id = get_str(&r, &m->stream_id_len);
    m->step = (uint64_t)get_long(&r);
    m->synthesizer = get_str(&r, NULL);
    m->mode = get_index(&r, 2, "Mode") == 1 ? DP_RELEASE_DELTA : DP_RELEASE_FULL;
    m->record_count = (uint64_t)get_long(&r);
    *chunk_count = (uint32_t)get_int(&r);
    m->clamped = get_bool(&r);
    m->imputed_count = (uint64_t)get_long(&r);
    m->debias = get_kvs(&r, &m->n_debias);
    return finish(&r, DP_ECORRUPT);
}

int dp_wire_decode_budget(const void *data, size_t len, dp_wire_arena *a, dp_budget_event *e,
                          char *errstr, size_t errstr_size)
{
    rd r = {.p = data, .len = data ? len : 0, .a = a, .err = errstr, .errn = errstr_size};
    memset(e, 0, sizeof *e);
    e->stream_id = get_str(&r, &e->stream_id_len);
    e->step = (uint64_t)get_long(&r);
    e->status = get_index(&r, 2, "BudgetStatus") == 1 ? DP_BUDGET_EXHAUSTED : DP_BUDGET_ACTIVE;
    e->mechanism = get_str(&r, NULL);
    e->unit = get_str(&r, NULL);
    e->neighbors = get_str(&r, NULL);
    e->model = get_index(&r, 2, "PrivacyModel") == 1 ? DP_PRIVACY_PURE : DP_PRIVACY_ZCDP;
    e->spent_step = get_double(&r);
    e->spent_total = get_double(&r);
    e->budget_total = get_double(&r);
    e->delta = get_double(&r);
    e->eps_simple = get_index(&r, 2, "eps_simple union") == 1 ? get_double(&r) : NAN;
    e->eps_cks = get_index(&r, 2, "eps_cks union") == 1 ? get_double(&r) : NAN;
    e->noise = get_kvs(&r, &e->n_noise);
    e->accuracy = get_kvs(&r, &e->n_accuracy);
    return finish(&r, DP_ECORRUPT);
}

int dp_wire_decode_dead_letter(const void *data, size_t len, dp_wire_arena *a, dp_dead_letter *d,
                               char *errstr, size_t errstr_size)
{
    rd r = {.p = data, .len = data ? len : 0, .a = a, .err = errstr, .errn = errstr_size};
    memset(d, 0, sizeof *d);
    d->topic = get_str(&r, NULL);
    d->partition = get_int(&r);
    d->offset = get_long(&r);
    if (get_index(&r, 2, "key union") == 1)
        d->key = get_bytes(&r, &d->key_len);
    d->reason = get_str(&r, NULL);
    d->text = get_str(&r, NULL);
    d->raw = get_bytes(&r, &d->raw_len);
    return finish(&r, DP_ECORRUPT);
}
