/* export_writer.h — the files `dpstream export` writes from complete
 * releases (export_assemble.h hands them over; nothing partial ever gets
 * here).
 *
 * Layouts (all under DIR; stream ids become file names with bytes outside
 * [A-Za-z0-9_.-] — and a leading '.' — written as %XX, so "cum/a" is
 * "cum%2Fa" and no id can escape DIR):
 *
 *   releases  DIR/releases.jsonl: each release's record lines, then its
 *             manifest line, byte for byte the format of `dpstream replay`
 *             (update_json.h) — the default, and what tests compare.
 *   per-step  DIR/<stream>/step-0001.csv (or .jsonl) per release, written
 *             to a temporary name and renamed, so a reader never sees a
 *             half-written step file; DIR/manifests.jsonl.
 *   single    DIR/<stream>.csv (or .jsonl): every release of the stream,
 *             with a step column; DIR/manifests.jsonl.
 *
 * Every layout also writes DIR/budget.jsonl (budget events, replay's
 * format) and, when reading Kafka, DIR/deadletter.jsonl.  Files are
 * (re)created when the writer opens: an export always reproduces the
 * topics from their beginning.  In the jsonl files a release is written
 * with one write and flushed before the next is taken.
 *
 * CSV columns, per-step: synthetic_id then "value" (category), c1..cd
 * (row) or x1..xd (point); all records of a release must have one shape
 * (otherwise DP_EINVAL, never silently mixed).  Single: step,synthetic_id,
 * value, where value is the category or the row/point values joined by
 * ';' — a stream's shape may change between steps (`window` releases
 * k-value rows at step k, then one value per step).  Doubles with %.17g
 * (exact round trip). */
#ifndef DP_APP_EXPORT_WRITER_H
#define DP_APP_EXPORT_WRITER_H

#include <stddef.h>

#include "synth/common/synth.h"

typedef enum dp_export_layout {
    DP_EXPORT_LAYOUT_RELEASES = 0,
    DP_EXPORT_LAYOUT_PER_STEP,
    DP_EXPORT_LAYOUT_SINGLE,
} dp_export_layout;

typedef enum dp_export_format { DP_EXPORT_CSV = 0, DP_EXPORT_JSONL } dp_export_format;

typedef struct dp_export_writer dp_export_writer;

/* Creates DIR if needed.  dead_letter_path: also write dead letters there
 * (mode 0600; NULL: none — they hold raw personal input). */
int dp_export_writer_open(dp_export_writer **out, const char *dir, dp_export_layout layout,
                          dp_export_format format, const char *dead_letter_path, char *errstr, size_t errstr_size);
int dp_export_writer_release(dp_export_writer *w, const dp_release_manifest *m,
                             const dp_synth_record *records, size_t n, char *errstr, size_t errstr_size);
/* One complete line (ending in "\n") for budget.jsonl / deadletter.jsonl. */
int dp_export_writer_budget_line(dp_export_writer *w, const char *line, size_t len,
                                 char *errstr, size_t errstr_size);
int dp_export_writer_dead_letter_line(dp_export_writer *w, const char *line, size_t len,
                                      char *errstr, size_t errstr_size);
/* Closes every file; DP_OK or DP_EIO (a write failed). */
int dp_export_writer_close(dp_export_writer *w, char *errstr, size_t errstr_size);

/* Stream id → file name component (exposed for tests).  Returns the
 * length written (NUL-terminated), or 0 if out_size is too small. */
size_t dp_export_file_name(const char *stream, size_t len, char *out, size_t out_size);

#endif
