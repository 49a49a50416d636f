/* shard_key.c — update keys and the KEY_MISMATCH rule (shard_key.h).
 *
 * Owns: nothing.  Calls: kafka_util (dp_kafka_key_partition), buf. */
#include "stream/shard_key.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/dp_error.h"
#include "stream/kafka_util.h"

int dp_update_key(const dp_update *u, int sharded, dp_buf *out)
{
    dp_buf_clear(out);
    dp_buf_put_bytes(out, u->stream_id, u->stream_id_len);
    if (sharded) {
        dp_buf_put_u8(out, DP_SHARD_KEY_SEP);
        if (u->entity_id && u->kind != DP_UPDATE_CLOSE_STEP)
            dp_buf_put_bytes(out, u->entity_id, u->entity_id_len);
    }
    return dp_buf_status(out);
}

int dp_shard_key_decode(const void *key, size_t key_len, const char **stream, size_t *stream_len,
                        const char **entity, size_t *entity_len)
{
    const char *k = key;
    const char *sep = key_len ? memchr(k, DP_SHARD_KEY_SEP, key_len) : NULL;
    if (!sep || sep == k)
        return DP_EINVAL;
    *stream = k;
    *stream_len = (size_t)(sep - k);
    *entity = sep + 1;
    *entity_len = key_len - *stream_len - 1;
    return DP_OK;
}

static int clip(size_t len) { return (int)(len < 100 ? len : 100); }

/* Sharded: the key must decode and name u's stream and entity. */
static int sharded_key_mismatch(const dp_update *u, const void *key, size_t key_len, char *msg, size_t n)
{
    const char *s, *e;
    size_t sl, el;
    if (!key || dp_shard_key_decode(key, key_len, &s, &sl, &e, &el) != DP_OK) {
        snprintf(msg, n, "the message's key %s; a sharded stream's key is its stream id, a 0x00 byte and its "
                 "entity id", key ? "is not a sharded key" : "is null");
        return 1;
    }
    if (sl != u->stream_id_len || memcmp(s, u->stream_id, sl) != 0) {
        snprintf(msg, n, "the message's key names stream '%.*s', its payload stream '%.*s'", clip(sl), s,
                 clip(u->stream_id_len), u->stream_id);
        return 1;
    }
    size_t want = u->entity_id && u->kind != DP_UPDATE_CLOSE_STEP ? u->entity_id_len : 0;
    if (el != want || (want && memcmp(e, u->entity_id, el) != 0)) {
        snprintf(msg, n, "the message's key names entity '%.*s', its payload %s%.*s%s", clip(el), e,
                 want ? "entity '" : "none", clip(want), want ? u->entity_id : "", want ? "'" : "");
        return 1;
    }
    return 0;
}

int dp_update_key_mismatch(const char *partitioner, const dp_update *u, int sharded, const void *key, size_t key_len,
                           int32_t partition, int32_t partition_count, char *msg, size_t n)
{
    if (sharded) {
        if (sharded_key_mismatch(u, key, key_len, msg, n))
            return 1;
        if (u->kind == DP_UPDATE_CLOSE_STEP)
            return 0;   /* written to every partition: each is a shard whose step it closes */
    } else if (!key || key_len != u->stream_id_len || memcmp(key, u->stream_id, key_len) != 0) {
        snprintf(msg, n, "the message's key %s the stream id", key ? "is not" : "is null; it must be");
        return 1;
    }
    if (partition_count <= 0)
        return 0;   /* metadata unavailable: the caller's own placement checks still hold */
    int32_t home = dp_kafka_key_partition(partitioner, key, key_len, partition_count);
    if (home == partition)
        return 0;
    if (sharded)
        snprintf(msg, n, "the key of stream '%.*s' entity '%.*s' belongs in partition %" PRId32 " of %" PRId32
                 " (partitioner %s), but the message is in partition %" PRId32, clip(u->stream_id_len),
                 u->stream_id, clip(u->entity_id ? u->entity_id_len : 0), u->entity_id ? u->entity_id : "", home,
                 partition_count, partitioner, partition);
    else
        snprintf(msg, n, "stream id '%.*s' belongs in partition %" PRId32 " of %" PRId32 " (partitioner %s), "
                 "but the message is in partition %" PRId32, clip(u->stream_id_len), u->stream_id, home,
                 partition_count, partitioner, partition);
    return 1;
}
