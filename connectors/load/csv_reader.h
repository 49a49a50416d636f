/* csv_reader.h — a streaming RFC 4180 record reader for `dpstream load`.
 *
 * Accepts: fields separated by ',', records ended by CRLF or LF (or end
 * of input), fields optionally enclosed in double quotes, a doubled quote
 * ("") inside a quoted field standing for one quote, commas and line
 * breaks inside quoted fields.  A UTF-8 byte-order mark at the very start
 * is skipped.  Completely empty lines are skipped (they are not records:
 * RFC 4180 has no empty record, and spreadsheets often end files with one).
 *
 * Refused, per record (the reader then resumes at the next record):
 *   - a quote inside an unquoted field            (CSV_BAD_QUOTE)
 *   - anything but ',' or a line end after a closing quote (CSV_BAD_QUOTE)
 *   - a quoted field still open at end of input  (CSV_UNTERMINATED)
 *   - a record longer than the byte cap            (CSV_TOO_LONG)
 * Refusing instead of guessing matters here: a mis-split record would put
 * one person's value in another column, silently.
 *
 * Memory: one record (at most `max_record` bytes of field data plus one
 * offset per field) and a 64 KiB read buffer. */
#ifndef DP_APP_CSV_READER_H
#define DP_APP_CSV_READER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum dp_csv_status {
    DP_CSV_OK = 0,
    DP_CSV_BAD_QUOTE,
    DP_CSV_UNTERMINATED,
    DP_CSV_TOO_LONG,
} dp_csv_status;

typedef struct dp_csv_reader {
    FILE    *f;
    size_t   max_record;
    /* read buffer */
    unsigned char chunk[1 << 16];
    size_t   chunk_len, chunk_pos;
    int      eof, read_error, started;
    uint64_t line;            /* physical line of the next byte (1-based) */
    /* the current record: field i is data[off[i] .. off[i]+len[i]) */
    char    *data;
    size_t   data_len, data_cap;
    size_t  *off, *len;
    size_t   n_fields, fields_cap;
} dp_csv_reader;

void dp_csv_reader_init(dp_csv_reader *r, FILE *f, size_t max_record);
void dp_csv_reader_free(dp_csv_reader *r);

/* Read the next record.  Returns 1 with *status DP_CSV_OK (fields valid)
 * or another status (record refused; fields unspecified), 0 at end of
 * input, -1 on a read error or out of memory.  *line_no is the physical
 * line the record starts on. */
int dp_csv_next(dp_csv_reader *r, dp_csv_status *status, uint64_t *line_no);

/* Field i of the last record, NUL-terminated (fields never contain the
 * terminator's position: a NUL byte inside a field is kept and len says
 * where it ends). */
static inline const char *dp_csv_field(const dp_csv_reader *r, size_t i, size_t *len)
{
    if (len)
        *len = r->len[i];
    return r->data + r->off[i];
}

const char *dp_csv_status_text(dp_csv_status s);

#endif
