/* csv_reader.c — RFC 4180 records, one byte at a time (see csv_reader.h). */
#include "connectors/load/csv_reader.h"

#include <stdlib.h>
#include <string.h>

void dp_csv_reader_init(dp_csv_reader *r, FILE *f, size_t max_record)
{
    memset(r, 0, sizeof *r);
    r->f = f;
    r->max_record = max_record;
    r->line = 1;
}

void dp_csv_reader_free(dp_csv_reader *r)
{
    free(r->data);
    free(r->off);
    free(r->len);
    r->data = NULL;
    r->off = r->len = NULL;
}

const char *dp_csv_status_text(dp_csv_status s)
{
    switch (s) {
    case DP_CSV_OK:           return "ok";
    case DP_CSV_BAD_QUOTE:    return "misplaced double quote (RFC 4180: quote a field that contains quotes, and double them)";
    case DP_CSV_UNTERMINATED: return "quoted field not closed before end of input";
    case DP_CSV_TOO_LONG:     return "record longer than the limit";
    }
    return "?";
}

/* -1: end of input; -2: read error. */
static int next_byte(dp_csv_reader *r)
{
    if (r->chunk_pos == r->chunk_len) {
        if (r->eof)
            return -1;
        r->chunk_len = fread(r->chunk, 1, sizeof r->chunk, r->f);
        r->chunk_pos = 0;
        if (r->chunk_len == 0) {
            r->eof = 1;
            if (ferror(r->f)) {
                r->read_error = 1;
                return -2;
            }
            return -1;
        }
    }
    int c = r->chunk[r->chunk_pos++];
    if (c == '\n')
        r->line++;
    return c;
}

static int peek_byte(dp_csv_reader *r)
{
    if (r->chunk_pos == r->chunk_len) {
        int c = next_byte(r);
        if (c < 0)
            return c;
        /* push back (the byte is still in the buffer) */
        r->chunk_pos--;
        if (c == '\n')
            r->line--;
        return c;
    }
    return r->chunk[r->chunk_pos];
}

static int put_byte(dp_csv_reader *r, char c, int *too_long)
{
    if (*too_long)
        return 0;
    if (r->data_len + 1 > r->max_record) {
        *too_long = 1;
        return 0;
    }
    if (r->data_len + 2 > r->data_cap) {
        size_t cap = r->data_cap ? r->data_cap * 2 : 1024;
        char *d = realloc(r->data, cap);
        if (!d)
            return -1;
        r->data = d;
        r->data_cap = cap;
    }
    r->data[r->data_len++] = c;
    return 0;
}

/* Start field number n_fields at the current data position. */
static int begin_field(dp_csv_reader *r)
{
    if (r->n_fields == r->fields_cap) {
        size_t cap = r->fields_cap ? r->fields_cap * 2 : 32;
        size_t *o = realloc(r->off, cap * sizeof *o);
        if (!o)
            return -1;
        r->off = o;
        size_t *l = realloc(r->len, cap * sizeof *l);
        if (!l)
            return -1;
        r->len = l;
        r->fields_cap = cap;
    }
    r->off[r->n_fields] = r->data_len;
    r->len[r->n_fields] = 0;
    r->n_fields++;
    return 0;
}

/* Close the current field with a terminating NUL (not counted). */
static int end_field(dp_csv_reader *r, int *too_long)
{
    size_t i = r->n_fields - 1;
    r->len[i] = r->data_len - r->off[i];
    if (*too_long)
        return 0;
    if (put_byte(r, '\0', too_long) != 0)
        return -1;
    return 0;
}

/* Skip the rest of the physical line (error recovery). */
static void skip_line(dp_csv_reader *r)
{
    int c;
    while ((c = next_byte(r)) >= 0 && c != '\n')
        ;
}

int dp_csv_next(dp_csv_reader *r, dp_csv_status *status, uint64_t *line_no)
{
    enum { FIELD_START, UNQUOTED, QUOTED, QUOTE_SEEN } st = FIELD_START;
    int c, lone_cr = 0;
    *status = DP_CSV_OK;
    if (!r->started) {
        r->started = 1;
        /* UTF-8 BOM */
        if (peek_byte(r) == 0xEF) {
            size_t save = r->chunk_pos;
            if (r->chunk_len - save >= 3 && r->chunk[save + 1] == 0xBB && r->chunk[save + 2] == 0xBF)
                r->chunk_pos += 3;
        }
    }
    /* skip empty lines */
    for (;;) {
        c = peek_byte(r);
        if (c == -2)
            return -1;
        if (c == -1)
            return 0;
        if (c == '\n') {
            next_byte(r);
            continue;
        }
        if (c == '\r') {
            next_byte(r);
            if (peek_byte(r) == '\n') {
                next_byte(r);
                continue;
            }
            lone_cr = 1;   /* a bare CR is data: it starts the record */
        }
        break;
    }
    *line_no = r->line;
    r->data_len = 0;
    r->n_fields = 0;
    int too_long = 0;
    if (begin_field(r) != 0)
        return -1;
    if (lone_cr) {
        if (put_byte(r, '\r', &too_long) != 0)
            return -1;
        st = UNQUOTED;
    }
    for (;;) {
        c = next_byte(r);
        if (c == -2)
            return -1;
        if (c == -1) {
            if (st == QUOTED) {
                *status = DP_CSV_UNTERMINATED;
                return 1;
            }
            break;
        }
        if (st == QUOTED) {
            if (c == '"')
                st = QUOTE_SEEN;
            else if (put_byte(r, (char)c, &too_long) != 0)
                return -1;
            continue;
        }
        if (st == QUOTE_SEEN) {
            if (c == '"') {   /* "" inside a quoted field */
                if (put_byte(r, '"', &too_long) != 0)
                    return -1;
                st = QUOTED;
                continue;
            }
            if (c != ',' && c != '\n' && !(c == '\r' && peek_byte(r) == '\n')) {
                *status = DP_CSV_BAD_QUOTE;
                if (c != '\n')
                    skip_line(r);
                return 1;
            }
            /* fall through to the separator handling below */
        }
        if (c == ',') {
            /* once over the cap the record is refused: its fields are
             * not tracked either (a long line of commas must not grow
             * the offset arrays without bound) */
            if (end_field(r, &too_long) != 0 || (!too_long && begin_field(r) != 0))
                return -1;
            st = FIELD_START;
            continue;
        }
        if (c == '\n')
            break;
        if (c == '\r' && peek_byte(r) == '\n') {
            next_byte(r);
            break;
        }
        if (c == '"') {
            if (st == FIELD_START) {
                st = QUOTED;
                continue;
            }
            *status = DP_CSV_BAD_QUOTE;
            skip_line(r);
            return 1;
        }
        st = UNQUOTED;
        if (put_byte(r, (char)c, &too_long) != 0)
            return -1;
    }
    if (end_field(r, &too_long) != 0)
        return -1;
    if (too_long)
        *status = DP_CSV_TOO_LONG;
    return 1;
}
