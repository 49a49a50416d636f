/* payload_json.h — the payload of an update or release line, parsed once
 * for every reader of dpstream's JSON lines (docs/design.md §5):
 * update_json.c (update lines), export_run.c (release record lines of
 * `dpstream replay`), and the buffers load_mapping.c converts a row's
 * cells into.
 *
 *   "value": integer                      a category (or bit)
 *   "row":   [integer in int32 range, …]  a row of attributes
 *   "point": [finite number, …]           a point
 *
 * Owns: nothing beyond the caller's dp_payload_buf.  Calls: jansson. */
#ifndef DP_CONNECTORS_PAYLOAD_JSON_H
#define DP_CONNECTORS_PAYLOAD_JSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "synth/common/synth.h"

/* Where a payload's array lives: grown as needed, reused across lines by
 * a reader that keeps one payload at a time; a reader that keeps many
 * takes the array over (and zeroes the buffer) after each parse. */
typedef struct dp_payload_buf {
    int32_t *row;
    size_t   row_cap;
    double  *point;
    size_t   point_cap;
} dp_payload_buf;

void dp_payload_buf_free(dp_payload_buf *b);
/* Room for n (at least one) row or point coordinates; NULL when out of memory. */
int32_t *dp_payload_buf_row(dp_payload_buf *b, size_t n);
double  *dp_payload_buf_point(dp_payload_buf *b, size_t n);

/* Arrays may be empty (a release record as written; an update's may not). */
#define DP_PAYLOAD_JSON_EMPTY_OK 1u

/* The payload given by whichever of value / row / point is non-NULL (the
 * caller has checked at most one is; none leaves *out DP_PAYLOAD_NONE).
 * DP_OK, DP_EINVAL with a message naming the member ("\"row\"[2] must be
 * an integer in int32 range"), or DP_ENOMEM.  *out points into b. */
int dp_payload_json_parse(const json_t *value, const json_t *row, const json_t *point, unsigned flags,
                          dp_payload_buf *b, dp_payload *out, char *err, size_t errsz);

#endif
