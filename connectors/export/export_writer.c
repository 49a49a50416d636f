/* export_writer.c — export file layouts (see export_writer.h). */
#include "connectors/export/export_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "connectors/jsonl/update_json.h"
#include "core/dp_error.h"

/* Shape of the records of one output file (for the CSV header). */
typedef struct shape {
    int    known;
    dp_payload_kind kind;
    size_t width;
} shape;

typedef struct stream_file {
    char  *id;          /* raw stream id */
    size_t id_len;
    shape  sh;          /* single layout: the file's header */
} stream_file;

struct dp_export_writer {
    char            *dir;
    dp_export_layout layout;
    dp_export_format format;
    FILE            *releases;     /* releases layout */
    FILE            *manifests;    /* per-step / single */
    FILE            *budget;
    FILE            *dead;
    dp_jbuf          buf;
    dp_jbuf          mbuf;
    stream_file     *streams;      /* single / per-step: streams seen in this run */
    size_t           n_streams, cap_streams;
};

size_t dp_export_file_name(const char *s, size_t len, char *out, size_t out_size)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        int keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
                   c == '-' || (c == '.' && i > 0);
        size_t need = keep ? 1 : 3;
        if (o + need + 1 > out_size)
            return 0;
        if (keep) {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    if (o + 1 > out_size)
        return 0;
    out[o] = '\0';
    return o;
}

static FILE *create_in(const char *dir, const char *name, char *errstr, size_t errstr_size)
{
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path) {
        dp_err(errstr, errstr_size, DP_EINVAL, "path too long: %s/%s", dir, name);
        return NULL;
    }
    FILE *f = fopen(path, "wb");
    if (!f)
        dp_err(errstr, errstr_size, DP_EIO, "cannot create %s: %s", path, strerror(errno));
    return f;
}

int dp_export_writer_open(dp_export_writer **out, const char *dir, dp_export_layout layout,
                          dp_export_format format, const char *dead_letter_path, char *errstr, size_t errstr_size)
{
    *out = NULL;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return dp_err(errstr, errstr_size, DP_EIO, "cannot create directory %s: %s", dir, strerror(errno));
    dp_export_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->dir = strdup(dir))) {
        free(w);
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    }
    w->layout = layout;
    w->format = format;
    dp_jbuf_init(&w->buf);
    dp_jbuf_init(&w->mbuf);
    int ok = 1;
    if (layout == DP_EXPORT_LAYOUT_RELEASES)
        ok = (w->releases = create_in(dir, "releases.jsonl", errstr, errstr_size)) != NULL;
    else
        ok = (w->manifests = create_in(dir, "manifests.jsonl", errstr, errstr_size)) != NULL;
    ok = ok && (w->budget = create_in(dir, "budget.jsonl", errstr, errstr_size)) != NULL;
    if (ok && dead_letter_path) {
        /* Raw rejected input: mode 0600, and only where the caller said. */
        int fd = open(dead_letter_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || !(w->dead = fdopen(fd, "wb"))) {
            dp_err(errstr, errstr_size, DP_EIO, "cannot create %s: %s", dead_letter_path, strerror(errno));
            if (fd >= 0)
                close(fd);
            ok = 0;
        }
    }
    if (!ok) {
        dp_export_writer_close(w, NULL, 0);
        return DP_EIO;
    }
    *out = w;
    return DP_OK;
}

static int write_all(FILE *f, const char *p, size_t n, const char *what, char *errstr, size_t errstr_size)
{
    if ((n && fwrite(p, 1, n, f) != n) || fflush(f) != 0)
        return dp_err(errstr, errstr_size, DP_EIO, "write to %s failed: %s", what, strerror(errno));
    return DP_OK;
}

static stream_file *stream_seen(dp_export_writer *w, const char *id, size_t len, int *is_new)
{
    for (size_t i = 0; i < w->n_streams; i++)
        if (w->streams[i].id_len == len && memcmp(w->streams[i].id, id, len) == 0) {
            *is_new = 0;
            return &w->streams[i];
        }
    if (w->n_streams == w->cap_streams) {
        size_t cap = w->cap_streams ? w->cap_streams * 2 : 8;
        stream_file *s = realloc(w->streams, cap * sizeof *s);
        if (!s)
            return NULL;
        w->streams = s;
        w->cap_streams = cap;
    }
    stream_file *s = &w->streams[w->n_streams];
    memset(s, 0, sizeof *s);
    if (!(s->id = malloc(len + 1)))
        return NULL;
    memcpy(s->id, id, len);
    s->id[len] = '\0';
    s->id_len = len;
    w->n_streams++;
    *is_new = 1;
    return s;
}

static void shape_of(const dp_synth_record *r, shape *s)
{
    s->known = 1;
    s->kind = r->value.kind;
    s->width = r->value.kind == DP_PAYLOAD_ROW ? r->value.row_len
             : r->value.kind == DP_PAYLOAD_POINT ? r->value.point_len : 1;
}

static int same_shape(const shape *a, const shape *b)
{
    return a->kind == b->kind && a->width == b->width;
}

static void csv_header(dp_jbuf *b, int with_step, const shape *s)
{
    if (with_step) {
        /* single layout: a tidy long table, one scalar per line, because a
         * stream's record shape may change between steps (window releases
         * k-value rows at step k, then one value per step) */
        dp_jbuf_puts(b, "step,synthetic_id,component,value\n");
        return;
    }
    dp_jbuf_puts(b, "synthetic_id");
    if (s->known) {
        if (s->kind == DP_PAYLOAD_CATEGORY) {
            dp_jbuf_puts(b, ",value");
        } else {
            for (size_t i = 0; i < s->width; i++) {
                char col[32];
                snprintf(col, sizeof col, ",%c%zu", s->kind == DP_PAYLOAD_ROW ? 'c' : 'x', i + 1);
                dp_jbuf_puts(b, col);
            }
        }
    }
    dp_jbuf_puts(b, "\n");
}

/* One line of the single layout's long table: component is 1-based. */
static void csv_long_cell(dp_jbuf *b, uint64_t step, uint64_t id, size_t component)
{
    dp_jbuf_u64(b, step);
    dp_jbuf_puts(b, ",");
    dp_jbuf_u64(b, id);
    dp_jbuf_puts(b, ",");
    dp_jbuf_u64(b, component);
    dp_jbuf_puts(b, ",");
}

static void csv_record(dp_jbuf *b, int with_step, uint64_t step, const dp_synth_record *r)
{
    const dp_payload *p = &r->value;
    if (with_step) {
        if (p->kind == DP_PAYLOAD_CATEGORY) {
            csv_long_cell(b, step, r->synthetic_id, 1);
            dp_jbuf_i64(b, p->category);
            dp_jbuf_puts(b, "\n");
        }
        for (size_t i = 0; p->kind == DP_PAYLOAD_ROW && i < p->row_len; i++) {
            csv_long_cell(b, step, r->synthetic_id, i + 1);
            dp_jbuf_i64(b, p->row[i]);
            dp_jbuf_puts(b, "\n");
        }
        for (size_t i = 0; p->kind == DP_PAYLOAD_POINT && i < p->point_len; i++) {
            csv_long_cell(b, step, r->synthetic_id, i + 1);
            dp_jbuf_double(b, p->point[i]);
            dp_jbuf_puts(b, "\n");
        }
        return;
    }
    dp_jbuf_u64(b, r->synthetic_id);
    if (p->kind == DP_PAYLOAD_CATEGORY) {
        dp_jbuf_puts(b, ",");
        dp_jbuf_i64(b, p->category);
    } else if (p->kind == DP_PAYLOAD_ROW) {
        for (size_t i = 0; i < p->row_len; i++) {
            dp_jbuf_puts(b, ",");
            dp_jbuf_i64(b, p->row[i]);
        }
    } else if (p->kind == DP_PAYLOAD_POINT) {
        for (size_t i = 0; i < p->point_len; i++) {
            dp_jbuf_puts(b, ",");
            dp_jbuf_double(b, p->point[i]);
        }
    }
    dp_jbuf_puts(b, "\n");
}

/* Format the release's records into w->buf for a CSV/JSONL file whose
 * header shape is *sh (set from the first record if unknown). */
static int format_records(dp_export_writer *w, const dp_release_manifest *m, const dp_synth_record *r, size_t n,
                          int with_step, shape *sh, char *errstr, size_t errstr_size)
{
    for (size_t i = 0; i < n; i++) {
        if (w->format == DP_EXPORT_CSV) {
            shape s;
            shape_of(&r[i], &s);
            if (!sh->known)
                *sh = s;
            else if (!with_step && !same_shape(sh, &s))
                return dp_err(errstr, errstr_size, DP_EINVAL,
                              "stream '%s' step %llu: record %zu does not have the shape of the CSV header",
                              m->stream_id, (unsigned long long)m->step, i);
            csv_record(&w->buf, with_step, m->step, &r[i]);
        } else if (dp_update_json_format_record(&w->buf, m->stream_id, m->stream_id_len, m->step, &r[i]) != 0) {
            return dp_err(errstr, errstr_size, DP_EINVAL, "stream '%s' step %llu: record %zu cannot be written as JSON",
                          m->stream_id, (unsigned long long)m->step, i);
        }
    }
    return w->buf.oom ? dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory") : DP_OK;
}

static int write_manifest(dp_export_writer *w, const dp_release_manifest *m, char *errstr, size_t errstr_size)
{
    dp_jbuf_reset(&w->mbuf);
    if (dp_update_json_format_manifest(&w->mbuf, m) != 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "manifest of stream step %llu cannot be written as JSON",
                      (unsigned long long)m->step);
    return write_all(w->manifests, w->mbuf.data, w->mbuf.len, "manifests.jsonl", errstr, errstr_size);
}

int dp_export_writer_release(dp_export_writer *w, const dp_release_manifest *m,
                             const dp_synth_record *r, size_t n, char *errstr, size_t errstr_size)
{
    int rc;
    dp_jbuf_reset(&w->buf);
    if (w->layout == DP_EXPORT_LAYOUT_RELEASES) {
        for (size_t i = 0; i < n; i++)
            if (dp_update_json_format_record(&w->buf, m->stream_id, m->stream_id_len, m->step, &r[i]) != 0)
                return dp_err(errstr, errstr_size, DP_EINVAL, "record %zu of stream step %llu cannot be written as JSON",
                              i, (unsigned long long)m->step);
        if (dp_update_json_format_manifest(&w->buf, m) != 0)
            return dp_err(errstr, errstr_size, DP_EINVAL, "manifest of step %llu cannot be written as JSON",
                          (unsigned long long)m->step);
        return write_all(w->releases, w->buf.data, w->buf.len, "releases.jsonl", errstr, errstr_size);
    }
    char name[1024];
    if (dp_export_file_name(m->stream_id, m->stream_id_len, name, sizeof name) == 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "stream id too long for a file name");
    int is_new;
    stream_file *sf = stream_seen(w, m->stream_id, m->stream_id_len, &is_new);
    if (!sf)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    const char *ext = w->format == DP_EXPORT_CSV ? "csv" : "jsonl";
    char path[4096], tmp[4200];
    if (w->layout == DP_EXPORT_LAYOUT_PER_STEP) {
        snprintf(path, sizeof path, "%s/%s", w->dir, name);
        if (is_new && mkdir(path, 0755) != 0 && errno != EEXIST)
            return dp_err(errstr, errstr_size, DP_EIO, "cannot create directory %s: %s", path, strerror(errno));
        shape sh = {0, DP_PAYLOAD_NONE, 0};
        if ((rc = format_records(w, m, r, n, 0, &sh, errstr, errstr_size)) != DP_OK)
            return rc;
        snprintf(path, sizeof path, "%s/%s/step-%04llu.%s", w->dir, name, (unsigned long long)m->step, ext);
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        FILE *f = fopen(tmp, "wb");
        if (!f)
            return dp_err(errstr, errstr_size, DP_EIO, "cannot create %s: %s", tmp, strerror(errno));
        int ok = 1;
        if (w->format == DP_EXPORT_CSV) {
            dp_jbuf hdr;
            dp_jbuf_init(&hdr);
            csv_header(&hdr, 0, &sh);
            ok = !hdr.oom && fwrite(hdr.data, 1, hdr.len, f) == hdr.len;
            dp_jbuf_free(&hdr);
        }
        ok = ok && (w->buf.len == 0 || fwrite(w->buf.data, 1, w->buf.len, f) == w->buf.len);
        ok = (fclose(f) == 0) && ok;
        /* rename is atomic: the step file appears complete or not at all */
        if (!ok || rename(tmp, path) != 0) {
            remove(tmp);
            return dp_err(errstr, errstr_size, DP_EIO, "cannot write %s: %s", path, strerror(errno));
        }
        return write_manifest(w, m, errstr, errstr_size);
    }
    /* single */
    snprintf(path, sizeof path, "%s/%s.%s", w->dir, name, ext);
    shape sh = sf->sh;
    if ((rc = format_records(w, m, r, n, 1, &sh, errstr, errstr_size)) != DP_OK)
        return rc;
    int header_now = w->format == DP_EXPORT_CSV && !sf->sh.known && sh.known;
    FILE *f = fopen(path, is_new ? "wb" : "ab");
    if (!f)
        return dp_err(errstr, errstr_size, DP_EIO, "cannot open %s: %s", path, strerror(errno));
    int ok = 1;
    if (header_now) {
        dp_jbuf hdr;
        dp_jbuf_init(&hdr);
        csv_header(&hdr, 1, &sh);
        ok = !hdr.oom && fwrite(hdr.data, 1, hdr.len, f) == hdr.len;
        dp_jbuf_free(&hdr);
    }
    ok = ok && (w->buf.len == 0 || fwrite(w->buf.data, 1, w->buf.len, f) == w->buf.len);
    ok = (fclose(f) == 0) && ok;
    if (!ok)
        return dp_err(errstr, errstr_size, DP_EIO, "cannot write %s: %s", path, strerror(errno));
    sf->sh = sh;
    return write_manifest(w, m, errstr, errstr_size);
}

int dp_export_writer_budget_line(dp_export_writer *w, const char *line, size_t len, char *errstr, size_t errstr_size)
{
    return write_all(w->budget, line, len, "budget.jsonl", errstr, errstr_size);
}

int dp_export_writer_dead_letter_line(dp_export_writer *w, const char *line, size_t len, char *errstr,
                                      size_t errstr_size)
{
    if (!w->dead)
        return dp_err(errstr, errstr_size, DP_ESTATE, "no dead-letter file open");
    return write_all(w->dead, line, len, "deadletter.jsonl", errstr, errstr_size);
}

int dp_export_writer_close(dp_export_writer *w, char *errstr, size_t errstr_size)
{
    if (!w)
        return DP_OK;
    int bad = 0;
    FILE *fs[] = {w->releases, w->manifests, w->budget, w->dead};
    for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++)
        if (fs[i] && fclose(fs[i]) != 0)
            bad = 1;
    for (size_t i = 0; i < w->n_streams; i++)
        free(w->streams[i].id);
    free(w->streams);
    dp_jbuf_free(&w->buf);
    dp_jbuf_free(&w->mbuf);
    free(w->dir);
    free(w);
    return bad ? dp_err(errstr, errstr_size, DP_EIO, "closing an output file failed") : DP_OK;
}
