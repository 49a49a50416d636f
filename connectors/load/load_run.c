/* load_run.c — one load (load_run.h).
 *
 * Rows are read in order and converted by the mapping (load_mapping.h).
 * Output is the update JSON lines of update_json.h (what `dpstream replay`
 * reads), or Avro Updates produced to Kafka keyed by stream id
 * (load_kafka.h).
 *
 * Close steps (docs/design.md §2: step boundaries are markers in the log):
 * per stream, when a row's step is after the stream's current step, a
 * CLOSE_STEP marker is written for every step from the current one up to
 * the row's step - 1 (an empty step in between is closed too, or the
 * processor would refuse the later rows as FUTURE_STEP); at end of input
 * the last step of every stream is closed, streams in order of first
 * appearance.  A row for a step already closed is rejected
 * (STEP_BACKWARDS: the input must be sorted by step within each stream),
 * and a row skipping more than max_gap empty steps is rejected (STEP_GAP),
 * which catches a wrong origin or length before it floods the log with
 * markers.  Rejected rows never stop the load: each is reported on stderr
 * with its line number and reason, and appended to the rejects file as
 * JSON lines {"line":N,"reason":"…","text":"…","raw":"…"}. */
#include "connectors/load/load_run.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "connectors/jsonl/update_json.h"
#include "connectors/jsonl/line_reader.h"
#include "connectors/load/csv_reader.h"
#include "core/dp_error.h"
#include "core/bytes_map.h"

#define LOAD_MAX_RECORD  (1u << 20)
#define LOAD_FLUSH_AT    (1u << 16)

/* --- output targets ------------------------------------------------------------------ */

typedef struct load_target {
    /* file target */
    FILE    *f;
    dp_jbuf  buf;
    /* kafka target */
    dp_load_kafka *kafka;
} load_target;

static int target_emit(load_target *t, const dp_update *u, char *err, size_t errsz)
{
    if (t->kafka)
        return dp_load_kafka_send(t->kafka, u, err, errsz);
    if (dp_update_json_format(&t->buf, u) != 0)
        return dp_err(err, errsz, DP_ENOMEM, "cannot format update (out of memory)");
    if (t->buf.len >= LOAD_FLUSH_AT) {
        size_t w = fwrite(t->buf.data, 1, t->buf.len, t->f);
        int ok = w == t->buf.len;
        dp_jbuf_reset(&t->buf);
        if (!ok)
            return dp_err(err, errsz, DP_EIO, "write failed: %s", strerror(errno));
    }
    return DP_OK;
}

static int target_finish(load_target *t, char *err, size_t errsz)
{
    if (t->kafka)
        return dp_load_kafka_flush(t->kafka, err, errsz);
    if (t->buf.len && fwrite(t->buf.data, 1, t->buf.len, t->f) != t->buf.len)
        return dp_err(err, errsz, DP_EIO, "write failed: %s", strerror(errno));
    dp_jbuf_reset(&t->buf);
    if (fflush(t->f) != 0)
        return dp_err(err, errsz, DP_EIO, "write failed: %s", strerror(errno));
    return DP_OK;
}

/* --- per-stream step tracking (for --close-steps) ------------------------------------- */

typedef struct stream_pos {
    const char *id;    /* owned by the track's map */
    size_t      len;
    uint64_t    step;  /* current (open) step */
} stream_pos;

typedef struct stream_track {
    dp_bytes_map index;  /* id -> stream_pos* (core/bytes_map.h) */
    stream_pos **v;      /* in order of first appearance: the order end-of-input markers go out in */
    size_t       n, cap;
    stream_pos  *last;   /* the previous row's stream (rows of one stream come in runs) */
} stream_track;

/* The stream's entry, created with step 0 ("nothing seen") if new. */
static stream_pos *track_get(stream_track *t, const char *id, size_t len)
{
    if (t->last && t->last->len == len && memcmp(t->last->id, id, len) == 0)
        return t->last;
    dp_bytes_map_slot *e = dp_bytes_map_upsert(&t->index, id, len);
    if (!e)
        return NULL;
    if (!e->value) {
        if (t->n == t->cap) {
            size_t cap = t->cap ? t->cap * 2 : 16;
            stream_pos **v = realloc(t->v, cap * sizeof *v);
            if (!v)
                return NULL;
            t->v = v;
            t->cap = cap;
        }
        stream_pos *p = calloc(1, sizeof *p);
        if (!p)
            return NULL;
        p->id = e->key;
        p->len = e->key_len;
        e->value = t->v[t->n++] = p;
    }
    return t->last = e->value;
}

static void track_free(stream_track *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i]);
    free(t->v);
    dp_bytes_map_free(&t->index);
    memset(t, 0, sizeof *t);
}

/* --- the run ----------------------------------------------------------------------------- */

typedef struct load_run {
    const dp_load_mapping *map;
    load_target  *target;
    int           close_steps;
    uint64_t      max_gap;
    int           quiet;
    FILE         *rejects;
    dp_jbuf       rej_buf;
    stream_track  track;
    dp_load_row   row;
    /* counters */
    uint64_t rows, emitted, markers, rejected;
    uint64_t by_reason[DP_LOAD_REJECT_COUNT];
    /* progress */
    struct timespec t0, last_report;
    const char *cur_stream;
    uint64_t    cur_step;
    char        err[512];
} load_run;

static double seconds_since(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) * 1e-9;
}

/* Progress goes to stderr at most once per second; it never touches the
 * output, which stays a pure function of the input. */
static void progress(load_run *r, int force)
{
    if (r->quiet)
        return;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (!force && seconds_since(&r->last_report, &now) < 1.0)
        return;
    r->last_report = now;
    double el = seconds_since(&r->t0, &now);
    fprintf(stderr, "dpstream load: %llu rows, %.0f rows/s, %llu rejected",
            (unsigned long long)r->rows, el > 0 ? (double)r->rows / el : 0.0, (unsigned long long)r->rejected);
    if (r->cur_stream)
        fprintf(stderr, ", step %llu of stream '%s'", (unsigned long long)r->cur_step, r->cur_stream);
    fputc('\n', stderr);
}

static int reject(load_run *r, uint64_t line, dp_load_reject reason, const char *text, const char *raw,
                  size_t raw_len)
{
    r->rejected++;
    r->by_reason[reason]++;
    fprintf(stderr, "dpstream load: line %llu: %s: %s\n", (unsigned long long)line, dp_load_reject_name(reason), text);
    if (!r->rejects)
        return DP_OK;
    dp_jbuf *b = &r->rej_buf;
    dp_jbuf_puts(b, "{\"line\":");
    dp_jbuf_u64(b, line);
    dp_jbuf_puts(b, ",\"reason\":\"");
    dp_jbuf_puts(b, dp_load_reject_name(reason));
    dp_jbuf_puts(b, "\",\"text\":");
    if (dp_jbuf_string(b, text, strlen(text)) != 0)
        dp_jbuf_puts(b, "\"(message not valid UTF-8)\"");
    static const char hex[] = "0123456789abcdef";
    if (dp_utf8_valid(raw, raw_len)) {
        dp_jbuf_puts(b, ",\"raw\":");
        dp_jbuf_string(b, raw, raw_len);
    } else {
        dp_jbuf_puts(b, ",\"raw_hex\":\"");
        for (size_t i = 0; i < raw_len; i++) {
            unsigned char c = (unsigned char)raw[i];
            char h[2] = {hex[c >> 4], hex[c & 15]};
            dp_jbuf_put(b, h, 2);
        }
        dp_jbuf_puts(b, "\"");
    }
    dp_jbuf_puts(b, "}\n");
    if (b->oom)
        return DP_ENOMEM;
    if (b->len >= LOAD_FLUSH_AT) {
        size_t w = fwrite(b->data, 1, b->len, r->rejects);
        int ok = w == b->len;
        dp_jbuf_reset(b);
        if (!ok)
            return DP_EIO;
    }
    return DP_OK;
}

static int emit_marker(load_run *r, const stream_pos *p, uint64_t step)
{
    dp_update m;
    memset(&m, 0, sizeof m);
    m.stream_id = p->id;
    m.stream_id_len = p->len;
    m.step = step;
    m.kind = DP_UPDATE_CLOSE_STEP;
    int rc = target_emit(r->target, &m, r->err, sizeof r->err);
    if (rc == DP_OK)
        r->markers++;
    return rc;
}

/* Convert and emit one row; DP_OK (used or rejected) or a fatal status. */
static int load_row(load_run *r, uint64_t line, const char *const *vals, const size_t *lens,
                    const char *raw, size_t raw_len)
{
    char msg[384];
    int oom = 0;
    r->rows++;
    dp_load_reject why = dp_load_row_convert(r->map, vals, lens, &r->row, &oom, msg, sizeof msg);
    if (oom)
        return dp_err(r->err, sizeof r->err, DP_ENOMEM, "out of memory");
    if (why != DP_LOAD_OK)
        return reject(r, line, why, msg, raw, raw_len);
    const dp_update *u = &r->row.u;
    stream_pos *p = track_get(&r->track, u->stream_id, u->stream_id_len);
    if (!p)
        return dp_err(r->err, sizeof r->err, DP_ENOMEM, "out of memory");
    r->cur_stream = p->id;
    if (r->close_steps) {
        if (p->step && u->step < p->step) {
            snprintf(msg, sizeof msg, "step %llu of stream '%s' is already closed (current step %llu); "
                     "sort the input by step within each stream",
                     (unsigned long long)u->step, p->id, (unsigned long long)p->step);
            return reject(r, line, DP_LOAD_STEP_BACKWARDS, msg, raw, raw_len);
        }
        if (p->step && u->step - p->step > r->max_gap) {
            snprintf(msg, sizeof msg, "stream '%s' jumps from step %llu to %llu (more than --max-gap %llu steps)",
                     p->id, (unsigned long long)p->step, (unsigned long long)u->step, (unsigned long long)r->max_gap);
            return reject(r, line, DP_LOAD_STEP_GAP, msg, raw, raw_len);
        }
        if (p->step)
            for (uint64_t s = p->step; s < u->step; s++) {
                int rc = emit_marker(r, p, s);
                if (rc != DP_OK)
                    return rc;
            }
    }
    p->step = u->step;
    r->cur_step = u->step;
    int rc = target_emit(r->target, u, r->err, sizeof r->err);
    if (rc != DP_OK)
        return rc;
    r->emitted++;
    if ((r->rows & 1023) == 0)
        progress(r, 0);
    return DP_OK;
}

/* --- CSV input ---------------------------------------------------------------------------- */

static int run_csv(load_run *r, FILE *in, const char *path)
{
    dp_csv_reader rd;
    dp_csv_reader_init(&rd, in, LOAD_MAX_RECORD);
    int rc = DP_OK;
    const dp_load_mapping *m = r->map;
    size_t nc = m->n_columns;
    size_t *col_of = calloc(nc ? nc : 1, sizeof *col_of);
    const char **vals = calloc(nc ? nc : 1, sizeof *vals);
    size_t *lens = calloc(nc ? nc : 1, sizeof *lens);
    if (!col_of || !vals || !lens) {
        rc = dp_err(r->err, sizeof r->err, DP_ENOMEM, "out of memory");
        goto out;
    }
    dp_csv_status st;
    uint64_t line;
    int got = dp_csv_next(&rd, &st, &line);
    if (got < 0) {
        rc = dp_err(r->err, sizeof r->err, DP_EIO, "cannot read %s", path);
        goto out;
    }
    if (got == 0 || st != DP_CSV_OK) {
        rc = dp_err(r->err, sizeof r->err, DP_EINVAL, "%s: %s", path,
                    got == 0 ? "empty input: a header row is required" : dp_csv_status_text(st));
        goto out;
    }
    size_t n_header = rd.n_fields;
    /* bind every mapped column to its header position, refusing ambiguity */
    for (size_t c = 0; c < nc; c++) {
        size_t found = SIZE_MAX;
        for (size_t h = 0; h < n_header; h++) {
            size_t hl;
            const char *hn = dp_csv_field(&rd, h, &hl);
            if (hl == strlen(m->columns[c]) && memcmp(hn, m->columns[c], hl) == 0) {
                if (found != SIZE_MAX) {
                    rc = dp_err(r->err, sizeof r->err, DP_EINVAL, "%s: column \"%s\" appears twice in the header",
                                path, m->columns[c]);
                    goto out;
                }
                found = h;
            }
        }
        if (found == SIZE_MAX) {
            rc = dp_err(r->err, sizeof r->err, DP_EINVAL, "%s: the header has no column \"%s\"", path, m->columns[c]);
            goto out;
        }
        col_of[c] = found;
    }
    char msg[256];
    while ((got = dp_csv_next(&rd, &st, &line)) == 1) {
        const char *raw = rd.data ? rd.data : "";
        size_t raw_len = 0;
        /* the raw text for a reject line: fields joined by commas (the
         * record's exact bytes are gone after unquoting) */
        if (st == DP_CSV_OK) {
            for (size_t i = 0; i + 1 < rd.n_fields; i++)
                rd.data[rd.off[i] + rd.len[i]] = ',';
            raw_len = rd.n_fields ? rd.off[rd.n_fields - 1] + rd.len[rd.n_fields - 1] : 0;
        }
        if (st != DP_CSV_OK) {
            r->rows++;
            rc = reject(r, line, st == DP_CSV_TOO_LONG ? DP_LOAD_TOO_LONG : DP_LOAD_BAD_RECORD,
                        dp_csv_status_text(st), "", 0);
        } else if (rd.n_fields != n_header) {
            r->rows++;
            snprintf(msg, sizeof msg, "%zu fields, the header has %zu", rd.n_fields, n_header);
            rc = reject(r, line, DP_LOAD_FIELD_COUNT, msg, raw, raw_len);
        } else {
            for (size_t c = 0; c < nc; c++) {
                vals[c] = rd.data + rd.off[col_of[c]];
                lens[c] = rd.len[col_of[c]];
            }
            rc = load_row(r, line, vals, lens, raw, raw_len);
        }
        if (rc != DP_OK)
            goto out;
    }
    if (got < 0)
        rc = dp_err(r->err, sizeof r->err, DP_EIO, "read error on %s", path);
out:
    free(col_of);
    free(vals);
    free(lens);
    dp_csv_reader_free(&rd);
    return rc;
}

/* --- JSONL input --------------------------------------------------------------------------- */

/* A JSON value as the text a CSV cell would hold: strings as they are,
 * integers in decimal, reals with %.17g, booleans true/false; null and
 * absent are missing. */
static int json_cell(const json_t *v, char *tmp, size_t tmp_size, const char **s, size_t *n)
{
    if (!v || json_is_null(v)) {
        *s = NULL;
        *n = 0;
        return 0;
    }
    if (json_is_string(v)) {
        *s = json_string_value(v);
        *n = json_string_length(v);
        return 0;
    }
    int k;
    if (json_is_integer(v))
        k = snprintf(tmp, tmp_size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v))
        k = snprintf(tmp, tmp_size, "%.17g", json_real_value(v));
    else if (json_is_boolean(v))
        k = snprintf(tmp, tmp_size, "%s", json_is_true(v) ? "true" : "false");
    else
        return -1;   /* arrays / objects do not fit one column */
    *s = tmp;
    *n = (size_t)k;
    return 0;
}

static int run_jsonl(load_run *r, FILE *in, const char *path)
{
    const dp_load_mapping *m = r->map;
    size_t nc = m->n_columns;
    int rc = DP_OK;
    dp_line_reader lr;
    int lr_ok = dp_line_reader_init(&lr, in, LOAD_MAX_RECORD) == DP_OK;
    char *line = lr.buf;
    const char **vals = calloc(nc, sizeof *vals);
    size_t *lens = calloc(nc, sizeof *lens);
    char (*tmp)[40] = calloc(nc, sizeof *tmp);
    if (!lr_ok || !vals || !lens || !tmp) {
        rc = dp_err(r->err, sizeof r->err, DP_ENOMEM, "out of memory");
        goto out;
    }
    uint64_t line_no = 0;
    int got, truncated;
    size_t len;
    char msg[384];
    /* An over-long line is read past, not buffered (line_reader.h): memory
     * stays one LOAD_MAX_RECORD whatever the input. */
    while ((got = dp_line_next(&lr, &len, &truncated)) == 1) {
        line_no++;
        while (len && line[len - 1] == '\r')
            len--;
        if (len == 0 && !truncated)
            continue;
        if (truncated) {
            r->rows++;
            rc = reject(r, line_no, DP_LOAD_TOO_LONG, "line longer than the limit", line, 256);
            if (rc != DP_OK)
                goto out;
            continue;
        }
        json_error_t jerr;
        json_t *obj = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!obj || !json_is_object(obj)) {
            r->rows++;
            snprintf(msg, sizeof msg, "not a JSON object%s%s", obj ? "" : ": ", obj ? "" : jerr.text);
            json_decref(obj);
            if ((rc = reject(r, line_no, DP_LOAD_BAD_RECORD, msg, line, len)) != DP_OK)
                goto out;
            continue;
        }
        size_t c;
        for (c = 0; c < nc; c++)
            if (json_cell(json_object_get(obj, m->columns[c]), tmp[c], sizeof tmp[c], &vals[c], &lens[c]) != 0)
                break;
        if (c < nc) {
            r->rows++;
            snprintf(msg, sizeof msg, "key \"%s\" holds an array or object, not a value", m->columns[c]);
            rc = reject(r, line_no, DP_LOAD_BAD_NUMBER, msg, line, len);
        } else {
            rc = load_row(r, line_no, vals, lens, line, len);
        }
        json_decref(obj);
        if (rc != DP_OK)
            goto out;
    }
    if (rc == DP_OK && (got < 0 || ferror(in)))
        rc = dp_err(r->err, sizeof r->err, DP_EIO, "read error on %s", path);
out:
    dp_line_reader_free(&lr);
    free(vals);
    free(lens);
    free(tmp);
    return rc;
}

/* --- the whole load ------------------------------------------------------------------ */

int dp_load_run(const dp_load_options *o, dp_load_summary *sum, char *err, size_t errsz)
{
    load_target target;
    memset(&target, 0, sizeof target);
    dp_jbuf_init(&target.buf);
    target.f = o->out;
    target.kafka = o->kafka;
    load_run run;
    memset(&run, 0, sizeof run);
    dp_jbuf_init(&run.rej_buf);
    dp_load_row_init(&run.row);
    run.map = o->map;
    run.target = &target;
    run.close_steps = o->close_steps;
    run.max_gap = o->max_gap;
    run.quiet = o->quiet;
    run.rejects = o->rejects;
    clock_gettime(CLOCK_MONOTONIC, &run.t0);
    run.last_report = run.t0;

    int rc = o->is_csv ? run_csv(&run, o->in, o->input_name) : run_jsonl(&run, o->in, o->input_name);
    if (rc == DP_OK && o->close_steps)
        for (size_t i = 0; i < run.track.n && rc == DP_OK; i++)
            rc = emit_marker(&run, run.track.v[i], run.track.v[i]->step);
    if (rc == DP_OK)
        rc = target_finish(&target, run.err, sizeof run.err);
    if (rc == DP_OK && run.rejects && run.rej_buf.len &&
        fwrite(run.rej_buf.data, 1, run.rej_buf.len, run.rejects) != run.rej_buf.len)
        rc = dp_err(run.err, sizeof run.err, DP_EIO, "cannot write the rejects file");
    if (rc != DP_OK)
        snprintf(err, errsz, "%s", run.err[0] ? run.err : dp_status_str(rc));
    else if (run.rows >= 1024)
        progress(&run, 1);
    memset(sum, 0, sizeof *sum);
    sum->rows = run.rows;
    sum->emitted = run.emitted;
    sum->markers = run.markers;
    sum->rejected = run.rejected;
    memcpy(sum->by_reason, run.by_reason, sizeof sum->by_reason);
    sum->streams = run.track.n;
    dp_jbuf_free(&target.buf);
    dp_jbuf_free(&run.rej_buf);
    dp_load_row_free(&run.row);
    track_free(&run.track);
    return rc;
}
