/* load_mapping.h — how `dpstream load` turns one row of a CSV or JSONL file
 * into one dpstream Update (docs/design.md §5, update_json.h).
 *
 * A mapping is a small JSON object (a file given with --mapping, or built
 * from command-line flags; flags override the file's top-level keys):
 *
 *   {
 *     "stream":  "panel-a"                  a constant stream id, or
 *                {"column": "region"}       the id taken from a column;
 *     "step":    {"column": "year", "origin": 1980, "length": 1}
 *                  integer column v: step = floor((v - origin) / length) + 1
 *                  (origin defaults to 1 and length to 1, i.e. step = v), or
 *                {"time_column": "ts", "format": "iso8601",
 *                 "origin": "2024-01-01T00:00:00Z", "length": "1d"}
 *                  timestamp ts: step = floor((ts - origin) / length) + 1,
 *                  computed exactly in integer milliseconds;
 *                  format "iso8601" (default), "epoch_s" or "epoch_ms";
 *                  origin a string (ISO-8601) or a number (epoch seconds);
 *                  length a number (seconds) or "<n><unit>", unit one of
 *                  ms s m h d w; the row's event_time is set to ts;
 *     "entity":  {"column": "id"}           optional;
 *     "kind":    "REPORT"                   optional constant (default REPORT;
 *                                           REPORT, INSERT or DELETE), or
 *                {"column": "op", "labels": {"add": "INSERT", "del": "DELETE"}}
 *                  the column holds a kind name, or a label mapped to one;
 *     "payload": {"type": "category", "column": "union", "labels": {"no": 0, "yes": 1}}
 *                {"type": "row", "columns": ["a", "b"], "labels": {"a": {"x": 0, "y": 1}}}
 *                {"type": "point", "columns": ["x", "y"]}
 *                  category: one integer (or a label mapped to one);
 *                  row: one integer (or label) per column, in order;
 *                  point: one finite decimal number per column.
 *   }
 *
 * ISO-8601 timestamps accepted: "YYYY-MM-DD" (midnight UTC) and
 * "YYYY-MM-DDThh:mm[:ss[.fraction]]" followed by "Z" or an offset
 * "+hh:mm" / "-hh:mm" (a space may replace the "T").  A timestamp with a
 * time of day but no zone is refused: which zone was meant is a guess, and
 * a guess off by one hour moves rows into the wrong step.  Fractions finer
 * than a millisecond are floored.
 *
 * Every value is checked strictly (whole field consumed, in range, valid
 * UTF-8 for ids); a row that fails is rejected with a reason code and the
 * rest of the input continues (load_mapping.c / cmd_load.c). */
#ifndef DP_APP_LOAD_MAPPING_H
#define DP_APP_LOAD_MAPPING_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "connectors/jsonl/payload_json.h"
#include "synth/common/synth.h"

/* Why a row was rejected by the loader (names: dp_load_reject_name). */
typedef enum dp_load_reject {
    DP_LOAD_OK = 0,
    DP_LOAD_BAD_RECORD,       /* CSV syntax error / line not a JSON object */
    DP_LOAD_TOO_LONG,         /* record over the size limit */
    DP_LOAD_FIELD_COUNT,      /* CSV record with a different number of fields than the header */
    DP_LOAD_MISSING_VALUE,    /* empty field / absent or null JSON key */
    DP_LOAD_BAD_NUMBER,       /* not an integer / finite number, or out of range */
    DP_LOAD_UNKNOWN_LABEL,    /* label not in the mapping's labels */
    DP_LOAD_BAD_TIMESTAMP,    /* unparsable timestamp */
    DP_LOAD_BEFORE_ORIGIN,    /* step would be < 1 */
    DP_LOAD_BAD_STRING,       /* stream / entity id not valid UTF-8 */
    DP_LOAD_BAD_KIND,         /* kind column value not REPORT / INSERT / DELETE */
    DP_LOAD_STEP_BACKWARDS,   /* --close-steps: step of a stream already closed */
    DP_LOAD_STEP_GAP,         /* --close-steps: too many empty steps skipped at once */
    DP_LOAD_REJECT_COUNT
} dp_load_reject;

const char *dp_load_reject_name(dp_load_reject r);

typedef enum dp_ts_format { DP_TS_ISO8601 = 0, DP_TS_EPOCH_S, DP_TS_EPOCH_MS } dp_ts_format;

/* A label → integer table, sorted by label for binary search. */
typedef struct dp_label_entry {
    char   *label;
    int64_t value;
} dp_label_entry;

typedef struct dp_label_map {
    dp_label_entry *items;
    size_t          n;
} dp_label_map;

typedef struct dp_load_mapping {
    /* Columns the mapping reads, each name once, in first-use order.  The
     * input side supplies values in this order (see dp_load_row_convert). */
    char  **columns;
    size_t  n_columns;

    char   *stream_const;          /* or */
    int     stream_col;            /* index into columns, -1 if constant */

    int     step_from_time;
    int     step_col;
    int64_t step_origin;           /* integer steps: value units; time: epoch ms */
    int64_t step_length;           /* integer steps: value units; time: ms; > 0 */
    dp_ts_format time_format;

    int     entity_col;            /* -1: no entity */

    dp_update_kind kind_const;
    int     kind_col;              /* -1: constant kind */
    dp_label_map kind_labels;      /* label → dp_update_kind */

    dp_payload_kind payload;       /* CATEGORY, ROW or POINT */
    int    *value_cols;            /* n_values indices into columns */
    size_t  n_values;
    dp_label_map *value_labels;    /* n_values tables (n == 0: integers) */
} dp_load_mapping;

/* Parse and validate a mapping object.  DP_OK, DP_EINVAL (message naming the
 * key) or DP_ENOMEM. */
int  dp_load_mapping_from_json(dp_load_mapping *m, const json_t *root, char *errstr, size_t errstr_size);
void dp_load_mapping_free(dp_load_mapping *m);

/* One converted row.  `u` points into the buffers, valid until the next
 * conversion into the same object. */
typedef struct dp_load_row {
    dp_update u;
    char     *stream;
    size_t    stream_cap;
    char     *entity;
    size_t    entity_cap;
    dp_payload_buf pay;     /* the row or point (connectors/jsonl/payload_json.h) */
} dp_load_row;

void dp_load_row_init(dp_load_row *r);
void dp_load_row_free(dp_load_row *r);

/* Convert one input row.  vals[i]/lens[i] is the value of m->columns[i]
 * (vals[i] NULL if absent; values need not be NUL-terminated).  Returns
 * DP_LOAD_OK and fills *out, or a reject code with a message in errstr;
 * sets *oom and returns DP_LOAD_BAD_RECORD if memory ran out. */
dp_load_reject dp_load_row_convert(const dp_load_mapping *m, const char *const *vals, const size_t *lens,
                                   dp_load_row *out, int *oom, char *errstr, size_t errstr_size);

/* --- value parsers (exposed for tests) ------------------------------------- */

/* Strict decimal integer (optional sign, digits only, int64 range). 0 / -1. */
int dp_load_parse_int(const char *s, size_t n, int64_t *out);
/* Timestamp in the given format → milliseconds since the epoch. 0 / -1. */
int dp_load_parse_timestamp(const char *s, size_t n, dp_ts_format f, int64_t *ms);
/* Duration: "<n><unit>" (unit ms s m h d w) → milliseconds > 0.  0 / -1. */
int dp_load_parse_duration(const char *s, int64_t *ms);
/* step = floor((v - origin) / length) + 1; 0, or -1 if v < origin or on
 * overflow. */
int dp_load_step_of(int64_t v, int64_t origin, int64_t length, uint64_t *step);

#endif
