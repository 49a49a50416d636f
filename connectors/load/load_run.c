/* load_run.c — one load (load_run.h).
 *
 * Rows come in order from the row source (row_source.h: the one place the
 * input format is known), already converted to updates or refused.
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
 * markers.  Rejected rows never stop the load (unless strict: update
 * lines, where a bad one stops it, or with raw_invalid goes to Kafka as
 * it is): each is reported on stderr with its line number and reason, and
 * appended to the rejects file as JSON lines
 * {"line":N,"reason":"…","text":"…","raw":"…"}.
 *
 * Owns: the output target, the per-stream step tracking, the counters.
 * Calls: row_source (rows), update_json (file output), load_kafka (Kafka
 * output). */
#include "connectors/load/load_run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "connectors/jsonl/update_json.h"
#include "connectors/load/row_source.h"
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
    const char   *label;
    int           strict, raw_invalid;
    FILE         *rejects;
    dp_jbuf       rej_buf;
    stream_track  track;
    /* counters */
    uint64_t rows, emitted, markers, rejected, raw;
    uint64_t by_reason[DP_LOAD_REJECT_COUNT];
    /* progress */
    struct timespec t0, last_report;
    const char *cur_stream;
    uint64_t    cur_step;
    char        err[1100];   /* room for an update line's refusal (update_json.c) */
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
    fprintf(stderr, "dpstream %s: %llu rows, %.0f rows/s, %llu rejected", r->label, (unsigned long long)r->rows,
            el > 0 ? (double)r->rows / el : 0.0, (unsigned long long)r->rejected);
    if (r->cur_stream)
        fprintf(stderr, ", step %llu of stream '%s'", (unsigned long long)r->cur_step, r->cur_stream);
    fputc('\n', stderr);
}

static int reject(load_run *r, uint64_t line, dp_load_reject reason, const char *text, const char *raw,
                  size_t raw_len)
{
    r->rejected++;
    r->by_reason[reason]++;
    fprintf(stderr, "dpstream %s: line %llu: %s: %s\n", r->label, (unsigned long long)line,
            dp_load_reject_name(reason), text);
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

/* Emit one converted row (and, with close_steps, the markers before it);
 * DP_OK (used or rejected) or a fatal status. */
static int load_row(load_run *r, uint64_t line, const dp_update *u, const char *raw, size_t raw_len)
{
    char msg[384];
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

/* --- the rows ------------------------------------------------------------------------------ */

/* Every row of the source, in order: used, refused (reported; with
 * strict, fatal; with raw_invalid, produced as it is) or a fatal status. */
static int run_rows(load_run *r, dp_row_source *src)
{
    dp_row row;
    int got = 0, rc = DP_OK;
    while (rc == DP_OK && (got = dp_row_source_next(src, &row, r->err, sizeof r->err)) == 1) {
        r->rows++;
        if (row.reject == DP_LOAD_OK)
            rc = load_row(r, row.line, row.u, row.raw, row.raw_len);
        else if (r->strict)
            rc = dp_err(r->err, sizeof r->err, DP_EINVAL, "line %llu: %s", (unsigned long long)row.line, row.text);
        else if (r->raw_invalid && (rc = dp_load_kafka_send_raw(r->target->kafka, row.raw, row.raw_len, r->err,
                                                                 sizeof r->err)) == DP_OK)
            r->raw++;
        else if (!r->raw_invalid)
            rc = reject(r, row.line, row.reject, row.text, row.raw, row.raw_len);
    }
    return rc != DP_OK ? rc : got;
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
    run.map = o->map;
    run.target = &target;
    run.close_steps = o->close_steps;
    run.max_gap = o->max_gap;
    run.quiet = o->quiet;
    run.label = o->label ? o->label : "load";
    run.strict = o->strict;
    run.raw_invalid = o->raw_invalid && o->kafka;
    run.rejects = o->rejects;
    clock_gettime(CLOCK_MONOTONIC, &run.t0);
    run.last_report = run.t0;

    dp_row_source *src = NULL;
    int rc = dp_row_source_open(&src, o->format, o->map, o->in, o->input_name, LOAD_MAX_RECORD, run.err,
                                sizeof run.err);
    if (rc == DP_OK)
        rc = run_rows(&run, src);
    dp_row_source_close(src);
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
    sum->raw = run.raw;
    memcpy(sum->by_reason, run.by_reason, sizeof sum->by_reason);
    sum->streams = run.track.n;
    dp_jbuf_free(&target.buf);
    dp_jbuf_free(&run.rej_buf);
    track_free(&run.track);
    return rc;
}
