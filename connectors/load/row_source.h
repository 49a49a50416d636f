/* row_source.h — the one input seam of `dpstream load` (and of its alias
 * `dpstream produce`): rows of a file, one at a time, each already turned
 * into a dpstream Update or refused with a reason.
 *
 * Formats, chosen once (dp_row_format_choose) from --format or else from
 * the file name:
 *   csv      RFC 4180 with a header row (csv_reader.h); the mapping's
 *            columns are bound to header positions when the source opens
 *   jsonl    one JSON object per line (line_reader.h); a key's value is
 *            read as the text a CSV cell would hold
 *   updates  update JSON lines (update_json.h), already in dpstream's
 *            data model: no mapping, each line parsed as it is
 * csv and jsonl rows go through the mapping (load_mapping.h).
 *
 * Owns: the reader of the chosen format, the converted row's buffers.
 * Calls: csv_reader / line_reader (reading), load_mapping (converting
 * cells), update_json (parsing update lines), jansson (JSON rows). */
#ifndef DP_CONNECTORS_ROW_SOURCE_H
#define DP_CONNECTORS_ROW_SOURCE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "connectors/load/load_mapping.h"

typedef enum dp_row_format { DP_ROW_CSV = 0, DP_ROW_JSONL, DP_ROW_UPDATES } dp_row_format;

/* The format named by `format` ("csv", "jsonl", "updates"), or when it is
 * NULL the one the name of `path` says (.csv; .jsonl, .ndjson, .json).
 * DP_OK, or DP_EINVAL with the message. */
int dp_row_format_choose(const char *format, const char *path, dp_row_format *out, char *err, size_t errsz);

/* One row of input. */
typedef struct dp_row {
    uint64_t         line;      /* its line (CSV: where the record starts) */
    dp_load_reject   reject;    /* DP_LOAD_OK, or why the row is refused */
    const char      *text;      /* the refusal in words (reject != DP_LOAD_OK) */
    const dp_update *u;         /* the update (reject == DP_LOAD_OK) */
    const char      *raw;       /* the row's text, for the rejects file */
    size_t           raw_len;
} dp_row;

typedef struct dp_row_source dp_row_source;

/* Open a source over `in` (`name` for messages; `map` for csv and jsonl,
 * unused for updates).  DP_OK, or a status with the message: DP_EIO (the
 * input cannot be read), DP_EINVAL (no header, a mapped column missing
 * from it or in it twice), DP_ENOMEM. */
int  dp_row_source_open(dp_row_source **out, dp_row_format f, const dp_load_mapping *map, FILE *in,
                        const char *name, size_t max_record, char *err, size_t errsz);
/* The next row: 1 (row filled; valid until the next call), 0 at end of
 * input, or a fatal status with the message (a read error, out of memory). */
int  dp_row_source_next(dp_row_source *s, dp_row *row, char *err, size_t errsz);
void dp_row_source_close(dp_row_source *s);

#endif
