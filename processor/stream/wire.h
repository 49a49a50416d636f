/* wire.h — convenience encoders over the shared codec (codec/codec.h) for
 * callers that do not keep a dp_codec of their own (the JSONL loader).
 * Plain Avro framing; each thread lazily gets its own codec (a codec is
 * not thread-safe), released by dp_wire_thread_release.  Code that
 * encodes many message types or needs Confluent framing should hold a
 * dp_codec directly. */
#ifndef DP_STREAM_WIRE_H
#define DP_STREAM_WIRE_H

#include "core/buf.h"
#include "synth/synth.h"

/* Append the plain Avro Update encoding of u to out.  DP_OK, DP_EINVAL (u
 * cannot be encoded: the codec's rules) or DP_ENOMEM. */
int  dp_wire_encode_update(const dp_update *u, dp_buf *out);
void dp_wire_thread_release(void);

#endif
