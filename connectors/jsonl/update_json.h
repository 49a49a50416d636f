/* update_json.h — the JSON-lines form of dpstream's data model
 * (docs/design.md §5), used by `dpstream replay`, `dpstream gen-panel` and the
 * offline demo.
 *
 * Input, one update per line (the Avro `Update` as JSON):
 *
 *   {"stream":"s1","step":1,"kind":"REPORT","entity":"u17","value":1}
 *   {"stream":"s1","step":1,"kind":"INSERT","row":[0,2,1]}
 *   {"stream":"s1","step":1,"kind":"DELETE","point":[0.25,0.5]}
 *   {"stream":"s1","step":1,"kind":"CLOSE_STEP"}
 *
 *   stream      string, required, non-empty
 *   step        integer in 1..2^63-1, required
 *   kind        "REPORT" | "INSERT" | "DELETE" | "CLOSE_STEP", required
 *   entity      string, optional (non-empty when present)
 *   value       integer (a bit or category index)        } at most one
 *   row         array of integers in int32 range          } payload; none
 *   point       array of finite numbers                   } for CLOSE_STEP
 *   event_time  integer, milliseconds since the epoch, optional
 *
 * Anything else — a line that is not one JSON object, duplicate keys,
 * unknown keys, wrong types, a payload or entity on CLOSE_STEP — is
 * refused as DP_REJECT_MALFORMED with a message naming the field.  Strict
 * parsing is deliberate: a misspelt key silently ignored would feed the
 * synthesizer wrong data, and every refusal is visible in rejected.jsonl.
 *
 * Output lines (releases, budget events, rejections) are formatted by hand
 * so that they are deterministic byte for byte:
 *   - keys in the fixed order documented at each formatter;
 *   - integers exact (decimal, no exponent);
 *   - doubles in the shortest form that reads back as the same IEEE-754
 *     double (core/numfmt.h: 1e-06 and 0.1, not 9.9999999999999995e-07 and
 *     0.10000000000000001), non-finite doubles (e.g. eps_simple of a
 *     pure-DP stream, which is NaN) as JSON null;
 *   - strings escaped per RFC 8259 (", \, and control characters; other
 *     bytes of valid UTF-8 are copied).  A string that is not valid UTF-8
 *     cannot appear as a JSON string: the formatters that take raw bytes
 *     write them as hex instead (see dp_update_json_format_rejected).
 *   - no spaces, one object per line, "\n" terminated. */
#ifndef DP_APP_UPDATE_JSON_H
#define DP_APP_UPDATE_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "connectors/jsonl/payload_json.h"
#include "core/utf8.h"
#include "synth/common/synth.h"

/* --- a growable output buffer --------------------------------------------- */

typedef struct dp_jbuf {
    char  *data;
    size_t len;
    size_t cap;
    int    oom;      /* sticky: set once an allocation failed */
} dp_jbuf;

void dp_jbuf_init(dp_jbuf *b);
void dp_jbuf_free(dp_jbuf *b);
void dp_jbuf_reset(dp_jbuf *b);
void dp_jbuf_put(dp_jbuf *b, const char *s, size_t n);
void dp_jbuf_puts(dp_jbuf *b, const char *s);
void dp_jbuf_u64(dp_jbuf *b, uint64_t v);
void dp_jbuf_i64(dp_jbuf *b, int64_t v);
/* The shortest text that reads back as the same double (core/numfmt.h:
 * 1e-06, not 9.9999999999999995e-07), or null when not finite. */
void dp_jbuf_double(dp_jbuf *b, double v);
/* A JSON string literal (with quotes).  Returns -1 (nothing written) if
 * the bytes are not valid UTF-8. */
int  dp_jbuf_string(dp_jbuf *b, const char *s, size_t n);

/* --- parsing an update line ----------------------------------------------- */

/* A parsed update that owns its strings and arrays; `u` points into them
 * and stays valid until the next parse into the same object or free.
 * Reusing one object across lines avoids per-line allocation. */
typedef struct dp_update_owned {
    dp_update u;
    char     *stream;
    size_t    stream_cap;
    char     *entity;
    size_t    entity_cap;
    dp_payload_buf pay;      /* the row or point (payload_json.h) */
} dp_update_owned;

void dp_update_owned_init(dp_update_owned *o);
void dp_update_owned_free(dp_update_owned *o);

/* Parse one line (without its newline; a trailing "\r" is tolerated).
 * Returns DP_OK and fills *o, or DP_EINVAL with a message naming the
 * problem (the caller rejects the line as DP_REJECT_MALFORMED), or
 * DP_ENOMEM. */
int dp_update_json_parse(const char *line, size_t len, dp_update_owned *o,
                         char *errstr, size_t errstr_size);

const char *dp_update_json_kind_name(dp_update_kind k);           /* "REPORT", … */
int dp_update_json_kind_parse(const char *s, dp_update_kind *out); /* 0 or -1 */

/* --- formatting (each appends one line ending in "\n") --------------------- */

/* Keys: stream, step, kind, entity?, value|row|point?, event_time?
 * (the inverse of dp_update_json_parse; -1 if a string is not UTF-8 or a
 * point coordinate is not finite). */
int dp_update_json_format(dp_jbuf *b, const dp_update *u);

/* Keys: type ("record"), stream, step, synthetic_id, value|row|point. */
int dp_update_json_format_record(dp_jbuf *b, const char *stream_id, size_t stream_id_len,
                                 uint64_t step, const dp_synth_record *r);

/* Keys: type ("manifest"), stream, step, synthesizer, mode ("FULL"|"DELTA"|"NONE"),
 * record_count, clamped (bool), imputed_count, debias ({key: number} in the
 * synthesizer's order). */
int dp_update_json_format_manifest(dp_jbuf *b, const dp_release_manifest *m);

/* Keys: type ("budget"), stream, step, status ("ACTIVE"|"EXHAUSTED"),
 * mechanism, unit, neighbors, model ("zcdp"|"pure"), spent_step,
 * spent_total, budget_total, delta, eps_simple, eps_cks, noise {…},
 * accuracy {…}. */
int dp_update_json_format_budget(dp_jbuf *b, const dp_budget_event *e);

/* Keys: line, reason (dp_reject_reason_name), text, then "raw" (the line as
 * a JSON string) if it is valid UTF-8, else "raw_hex" (lower-case hex of
 * its bytes); "raw_truncated":true when `truncated` (the line was longer
 * than the reader keeps). */
int dp_update_json_format_rejected(dp_jbuf *b, uint64_t line_no, dp_reject_reason reason,
                                   const char *text, const char *raw, size_t raw_len,
                                   int truncated);

#endif
