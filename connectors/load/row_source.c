/* row_source.c — rows of a CSV, JSON-lines or update JSON-lines file, each
 * converted to an Update or refused (row_source.h).
 *
 * Refusals the reading itself finds (the mapping's are load_mapping.c's):
 *   csv      a record the reader refuses (BAD_RECORD; TOO_LONG), a record
 *            with another number of fields than the header (FIELD_COUNT)
 *   jsonl    a line over the limit (TOO_LONG), a line that is not a JSON
 *            object (BAD_RECORD), a key holding an array or an object
 *            (BAD_NUMBER)
 *   updates  a line over the limit (TOO_LONG), a line update_json.c
 *            refuses (BAD_RECORD, its message)
 * The raw text of a refused CSV record is its fields joined by commas (the
 * record's exact bytes are gone after unquoting); of a line, the line (of
 * an over-long line, its first 256 bytes).
 *
 * Owns: the readers, the cell arrays, the converted row.  Calls:
 * csv_reader, line_reader, load_mapping (dp_load_row_convert),
 * update_json (dp_update_json_parse), jansson. */
#include "connectors/load/row_source.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connectors/jsonl/line_reader.h"
#include "connectors/jsonl/update_json.h"
#include "connectors/load/csv_reader.h"
#include "core/dp_error.h"

#define ROW_TEXT_MAPPED  384    /* the room for a refusal of a mapped row */

struct dp_row_source {
    dp_row_format          f;
    const dp_load_mapping *map;
    FILE                  *in;
    const char            *name;
    /* csv */
    dp_csv_reader          csv;
    int                    csv_open;
    size_t                 n_header;
    size_t                *col_of;    /* mapped column -> header position */
    /* jsonl, updates */
    dp_line_reader         lr;
    int                    lr_open;
    uint64_t               line_no;
    char                 (*tmp)[40];  /* a JSON number's text, per mapped column */
    /* the mapped columns' values */
    const char           **vals;
    size_t                *lens;
    dp_load_row            row;
    dp_update_owned        upd;
    char                   text[1024];
};

int dp_row_format_choose(const char *format, const char *path, dp_row_format *out, char *err, size_t errsz)
{
    if (format) {
        if (strcmp(format, "csv") == 0)
            *out = DP_ROW_CSV;
        else if (strcmp(format, "jsonl") == 0)
            *out = DP_ROW_JSONL;
        else if (strcmp(format, "updates") == 0)
            *out = DP_ROW_UPDATES;
        else
            return dp_err(err, errsz, DP_EINVAL, "--format must be csv, jsonl or updates");
        return DP_OK;
    }
    const char *dot = strrchr(path, '.');
    if (dot && (strcmp(dot, ".csv") == 0 || strcmp(dot, ".CSV") == 0))
        *out = DP_ROW_CSV;
    else if (dot && (strcmp(dot, ".jsonl") == 0 || strcmp(dot, ".ndjson") == 0 || strcmp(dot, ".json") == 0))
        *out = DP_ROW_JSONL;
    else
        return dp_err(err, errsz, DP_EINVAL, "cannot tell the format of %s from its name: give --format csv|jsonl",
                      path);
    return DP_OK;
}

void dp_row_source_close(dp_row_source *s)
{
    if (!s)
        return;
    if (s->csv_open)
        dp_csv_reader_free(&s->csv);
    if (s->lr_open)
        dp_line_reader_free(&s->lr);
    free(s->col_of);
    free(s->tmp);
    free(s->vals);
    free(s->lens);
    dp_load_row_free(&s->row);
    dp_update_owned_free(&s->upd);
    free(s);
}

/* The header row: every mapped column bound to its position, refusing
 * ambiguity. */
static int csv_open_header(dp_row_source *s, char *err, size_t errsz)
{
    const dp_load_mapping *m = s->map;
    dp_csv_reader *rd = &s->csv;
    dp_csv_status st;
    uint64_t line;
    int got = dp_csv_next(rd, &st, &line);
    if (got < 0)
        return dp_err(err, errsz, DP_EIO, "cannot read %s", s->name);
    if (got == 0 || st != DP_CSV_OK)
        return dp_err(err, errsz, DP_EINVAL, "%s: %s", s->name,
                      got == 0 ? "empty input: a header row is required" : dp_csv_status_text(st));
    s->n_header = rd->n_fields;
    for (size_t c = 0; c < m->n_columns; c++) {
        size_t found = SIZE_MAX;
        for (size_t h = 0; h < s->n_header; h++) {
            size_t hl;
            const char *hn = dp_csv_field(rd, h, &hl);
            if (hl == strlen(m->columns[c]) && memcmp(hn, m->columns[c], hl) == 0) {
                if (found != SIZE_MAX)
                    return dp_err(err, errsz, DP_EINVAL, "%s: column \"%s\" appears twice in the header", s->name,
                                  m->columns[c]);
                found = h;
            }
        }
        if (found == SIZE_MAX)
            return dp_err(err, errsz, DP_EINVAL, "%s: the header has no column \"%s\"", s->name, m->columns[c]);
        s->col_of[c] = found;
    }
    return DP_OK;
}

int dp_row_source_open(dp_row_source **out, dp_row_format f, const dp_load_mapping *map, FILE *in,
                       const char *name, size_t max_record, char *err, size_t errsz)
{
    *out = NULL;
    dp_row_source *s = calloc(1, sizeof *s);
    if (!s)
        return dp_err(err, errsz, DP_ENOMEM, "out of memory");
    s->f = f;
    s->map = map;
    s->in = in;
    s->name = name;
    dp_load_row_init(&s->row);
    dp_update_owned_init(&s->upd);
    size_t nc = f == DP_ROW_UPDATES ? 0 : map->n_columns;
    int rc = DP_OK;
    s->vals = calloc(nc ? nc : 1, sizeof *s->vals);
    s->lens = calloc(nc ? nc : 1, sizeof *s->lens);
    int ok = s->vals && s->lens;
    if (f == DP_ROW_CSV) {
        dp_csv_reader_init(&s->csv, in, max_record);
        s->csv_open = 1;
        ok = ok && (s->col_of = calloc(nc ? nc : 1, sizeof *s->col_of));
    } else {
        s->lr_open = dp_line_reader_init(&s->lr, in, max_record) == DP_OK;
        ok = ok && s->lr_open && (s->tmp = calloc(nc ? nc : 1, sizeof *s->tmp));
    }
    if (!ok)
        rc = dp_err(err, errsz, DP_ENOMEM, "out of memory");
    else if (f == DP_ROW_CSV)
        rc = csv_open_header(s, err, errsz);
    if (rc != DP_OK) {
        dp_row_source_close(s);
        return rc;
    }
    *out = s;
    return DP_OK;
}

/* The mapped columns' values in s->vals/lens → row (1), or a fatal status. */
static int convert(dp_row_source *s, dp_row *row, char *err, size_t errsz)
{
    int oom = 0;
    row->reject = dp_load_row_convert(s->map, s->vals, s->lens, &s->row, &oom, s->text, ROW_TEXT_MAPPED);
    if (oom)
        return dp_err(err, errsz, DP_ENOMEM, "out of memory");
    row->text = s->text;
    row->u = &s->row.u;
    return 1;
}

static int refuse(dp_row_source *s, dp_row *row, dp_load_reject why, const char *text)
{
    (void)s;
    row->reject = why;
    row->text = text;
    return 1;
}

static int csv_next(dp_row_source *s, dp_row *row, char *err, size_t errsz)
{
    dp_csv_reader *rd = &s->csv;
    dp_csv_status st;
    uint64_t line;
    int got = dp_csv_next(rd, &st, &line);
    if (got == 0)
        return 0;
    if (got < 0)
        return dp_err(err, errsz, DP_EIO, "read error on %s", s->name);
    row->line = line;
    row->raw = "";
    if (st != DP_CSV_OK)
        return refuse(s, row, st == DP_CSV_TOO_LONG ? DP_LOAD_TOO_LONG : DP_LOAD_BAD_RECORD, dp_csv_status_text(st));
    /* the raw text: fields joined by commas */
    for (size_t i = 0; i + 1 < rd->n_fields; i++)
        rd->data[rd->off[i] + rd->len[i]] = ',';
    row->raw = rd->data ? rd->data : "";
    row->raw_len = rd->n_fields ? rd->off[rd->n_fields - 1] + rd->len[rd->n_fields - 1] : 0;
    if (rd->n_fields != s->n_header) {
        snprintf(s->text, ROW_TEXT_MAPPED, "%zu fields, the header has %zu", rd->n_fields, s->n_header);
        return refuse(s, row, DP_LOAD_FIELD_COUNT, s->text);
    }
    for (size_t c = 0; c < s->map->n_columns; c++) {
        s->vals[c] = rd->data + rd->off[s->col_of[c]];
        s->lens[c] = rd->len[s->col_of[c]];
    }
    return convert(s, row, err, errsz);
}

/* A JSON value as the text a CSV cell would hold: strings as they are,
 * integers in decimal, reals with %.17g, booleans true/false; null and
 * absent are missing. */
static int json_cell(const json_t *v, char *tmp, size_t tmp_size, const char **str, size_t *n)
{
    if (!v || json_is_null(v)) {
        *str = NULL;
        *n = 0;
        return 0;
    }
    if (json_is_string(v)) {
        *str = json_string_value(v);
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
    *str = tmp;
    *n = (size_t)k;
    return 0;
}

static int jsonl_row(dp_row_source *s, dp_row *row, char *err, size_t errsz)
{
    const dp_load_mapping *m = s->map;
    json_error_t jerr;
    json_t *obj = json_loadb(row->raw, row->raw_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!obj || !json_is_object(obj)) {
        snprintf(s->text, ROW_TEXT_MAPPED, "not a JSON object%s%s", obj ? "" : ": ", obj ? "" : jerr.text);
        json_decref(obj);
        return refuse(s, row, DP_LOAD_BAD_RECORD, s->text);
    }
    size_t c;
    for (c = 0; c < m->n_columns; c++)
        if (json_cell(json_object_get(obj, m->columns[c]), s->tmp[c], sizeof s->tmp[c], &s->vals[c], &s->lens[c]) != 0)
            break;
    int rc;
    if (c < m->n_columns) {
        snprintf(s->text, ROW_TEXT_MAPPED, "key \"%s\" holds an array or object, not a value", m->columns[c]);
        rc = refuse(s, row, DP_LOAD_BAD_NUMBER, s->text);
    } else {
        rc = convert(s, row, err, errsz);   /* the values point into obj until here */
    }
    json_decref(obj);
    return rc;
}

static int updates_row(dp_row_source *s, dp_row *row, char *err, size_t errsz)
{
    int rc = dp_update_json_parse(row->raw, row->raw_len, &s->upd, s->text, sizeof s->text);
    if (rc == DP_ENOMEM)
        return dp_err(err, errsz, DP_ENOMEM, "out of memory");
    if (rc != DP_OK)
        return refuse(s, row, DP_LOAD_BAD_RECORD, s->text);
    row->u = &s->upd.u;
    return 1;
}

/* An over-long line is read past, not buffered (line_reader.h): memory
 * stays one max_record whatever the input. */
static int line_next(dp_row_source *s, dp_row *row, char *err, size_t errsz)
{
    int got, truncated;
    size_t len;
    while ((got = dp_line_next(&s->lr, &len, &truncated)) == 1) {
        s->line_no++;
        while (len && s->lr.buf[len - 1] == '\r')
            len--;
        if (len == 0 && !truncated)
            continue;
        row->line = s->line_no;
        row->raw = s->lr.buf;
        row->raw_len = len;
        if (truncated) {
            row->raw_len = 256;
            return refuse(s, row, DP_LOAD_TOO_LONG, "line longer than the limit");
        }
        return s->f == DP_ROW_UPDATES ? updates_row(s, row, err, errsz) : jsonl_row(s, row, err, errsz);
    }
    if (got < 0 || ferror(s->in))
        return dp_err(err, errsz, DP_EIO, "read error on %s", s->name);
    return 0;
}

int dp_row_source_next(dp_row_source *s, dp_row *row, char *err, size_t errsz)
{
    memset(row, 0, sizeof *row);
    return s->f == DP_ROW_CSV ? csv_next(s, row, err, errsz) : line_next(s, row, err, errsz);
}
