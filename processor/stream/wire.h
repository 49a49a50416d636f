/* wire.h — the Avro binary encodings the Kafka processor reads and writes
 * (DESIGN.md §5), in one place so the processing loop does not depend on
 * a codec's API shape.
 *
 * Until the shared codec (processor/codec, the .avsc files in schemas/) lands, this is
 * a self-contained implementation of Avro's binary encoding (spec 1.11,
 * "Binary Encoding") for the record schemas documented in wire.c; every
 * message is plain Avro binary (no container, no framing).  Swapping in
 * the shared codec changes wire.c only. */
#ifndef DP_STREAM_WIRE_H
#define DP_STREAM_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "synth/synth.h"

/* Memory behind decoded values: every allocation of a decode, freed at
 * once by dp_wire_arena_clear / _free. */
typedef struct dp_wire_arena {
    void **blocks;
    size_t n, cap;
} dp_wire_arena;

void dp_wire_arena_init(dp_wire_arena *a);
void dp_wire_arena_clear(dp_wire_arena *a);
void dp_wire_arena_free(dp_wire_arena *a);

/* --- Update ------------------------------------------------------------------ */

/* DP_OK, or DP_EINVAL with a message naming the problem (the message is
 * MALFORMED), or DP_ENOMEM.  `out` borrows from `data` and the arena. */
int dp_wire_decode_update(const void *data, size_t len, dp_wire_arena *a, dp_update *out,
                          char *errstr, size_t errstr_size);
int dp_wire_encode_update(const dp_update *u, dp_buf *out);

/* --- outputs ------------------------------------------------------------------ */

typedef struct dp_wire_chunk {
    const char            *stream_id;
    size_t                 stream_id_len;
    uint64_t               step;
    uint32_t               index;
    const dp_synth_record *records;
    size_t                 n;
} dp_wire_chunk;

int dp_wire_encode_chunk(const dp_wire_chunk *c, dp_buf *out);
int dp_wire_encode_manifest(const dp_release_manifest *m, uint32_t chunk_count, dp_buf *out);
int dp_wire_encode_budget(const dp_budget_event *e, dp_buf *out);

typedef struct dp_dead_letter {
    const char      *topic;
    int32_t          partition;
    int64_t          offset;
    const void      *key;          /* NULL if the message had none */
    size_t           key_len;
    const char      *reason;       /* dp_reject_reason_name */
    const char      *text;
    const void      *raw;
    size_t           raw_len;
} dp_dead_letter;

int dp_wire_encode_dead_letter(const dp_dead_letter *d, dp_buf *out);

/* What a message of the synthetic topic is. */
typedef enum dp_wire_output_kind { DP_WIRE_CHUNK = 1, DP_WIRE_MANIFEST = 2 } dp_wire_output_kind;

/* Decoders for consumers (`dpstream export`, tests); DP_ECORRUPT with a
 * message on malformed input.  Strings borrow from the arena. */
int dp_wire_decode_synthetic(const void *data, size_t len, dp_wire_arena *a, dp_wire_output_kind *kind,
                             dp_wire_chunk *chunk, dp_release_manifest *manifest, uint32_t *chunk_count,
                             char *errstr, size_t errstr_size);
int dp_wire_decode_budget(const void *data, size_t len, dp_wire_arena *a, dp_budget_event *e,
                          char *errstr, size_t errstr_size);
int dp_wire_decode_dead_letter(const void *data, size_t len, dp_wire_arena *a, dp_dead_letter *d,
                               char *errstr, size_t errstr_size);

#endif
