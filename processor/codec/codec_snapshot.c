/* codec_snapshot.c — the Snapshot message (schemas/Snapshot.avsc).
 * Versioned explicitly: avro-c 1.11.1 cannot resolve a reader schema that
 * adds a field with a default, so a future layout gets a new version
 * number and a migration here instead of schema resolution. */
#include "codec/codec_internal.h"

#include <string.h>

#include "core/dp_error.h"

static int fill_snapshot(dp_codec *c, const dp_codec_snapshot *s, char *errstr, size_t errstr_size)
{
    if (s->schema_version != DP_CODEC_SNAPSHOT_VERSION && s->schema_version != DP_CODEC_SNAPSHOT_VERSION_CAS)
        return dp_err(errstr, errstr_size, DP_EINVAL, "Snapshot: version %u, this codec writes %d and %d",
                      s->schema_version, DP_CODEC_SNAPSHOT_VERSION, DP_CODEC_SNAPSHOT_VERSION_CAS);
    if (s->last_closed_step > (uint64_t)INT64_MAX || s->input_partition < 0 || s->input_offset < 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "Snapshot: step, partition or offset out of range");
    if (s->chunk_count < 1 || s->chunk_count > (uint32_t)INT32_MAX || s->chunk_index >= s->chunk_count)
        return dp_err(errstr, errstr_size, DP_EINVAL, "Snapshot: chunk %u of %u", s->chunk_index,
                      s->chunk_count);
    if (!s->input_topic || !s->synthesizer)
        return dp_err(errstr, errstr_size, DP_EINVAL, "Snapshot: input topic and synthesizer required");
    if ((s->state_len && !s->state) || (s->ledger_len && !s->ledger))
        return dp_err(errstr, errstr_size, DP_EINVAL, "Snapshot: byte length without data");
    avro_value_t *v = dpc_begin(c, DP_CODEC_SNAPSHOT);
    avro_value_t f[SNAP_NFIELDS];
    for (int i = 0; i < SNAP_NFIELDS; i++)
        if (dpc_field(v, (size_t)i, &f[i]) != DP_OK)
            return dpc_avro_fail(errstr, errstr_size, "Snapshot");
    int rc;
    if ((rc = dpc_set_str(c, &f[SNAP_STREAM], s->stream_id, s->stream_id_len, 1, "Snapshot.stream",
                          errstr, errstr_size)) != DP_OK ||
        (rc = dpc_set_str(c, &f[SNAP_TOPIC], s->input_topic, strlen(s->input_topic), 1,
                          "Snapshot.input_topic", errstr, errstr_size)) != DP_OK ||
        (rc = dpc_set_str(c, &f[SNAP_SYNTH], s->synthesizer, strlen(s->synthesizer), 1,
                          "Snapshot.synthesizer", errstr, errstr_size)) != DP_OK)
        return rc;
    avro_value_t b;
    if (avro_value_set_int(&f[SNAP_VERSION], (int32_t)s->schema_version) != 0 ||
        avro_value_set_long(&f[SNAP_STEP], (int64_t)s->last_closed_step) != 0 ||
        avro_value_set_int(&f[SNAP_PARTITION], s->input_partition) != 0 ||
        avro_value_set_long(&f[SNAP_OFFSET], s->input_offset) != 0 ||
        dpc_set_bytes(&f[SNAP_STATE], s->state, s->state_len) != DP_OK ||
        dpc_set_bytes(&f[SNAP_LEDGER], s->ledger, s->ledger_len) != DP_OK ||
        avro_value_set_int(&f[SNAP_CHUNK_INDEX], (int32_t)s->chunk_index) != 0 ||
        avro_value_set_int(&f[SNAP_CHUNK_COUNT], (int32_t)s->chunk_count) != 0 ||
        avro_value_set_boolean(&f[SNAP_ENCRYPTED], s->encrypted != 0) != 0)
        return dpc_avro_fail(errstr, errstr_size, "Snapshot");
    if (s->encrypted) {
        if (avro_value_set_branch(&f[SNAP_NONCE], 1, &b) != 0 ||
            avro_value_set_fixed(&b, (void *)s->nonce, DP_CODEC_NONCE_BYTES) != 0)
            return dpc_avro_fail(errstr, errstr_size, "Snapshot.nonce");
    } else if (avro_value_set_branch(&f[SNAP_NONCE], 0, &b) != 0 || avro_value_set_null(&b) != 0) {
        return dpc_avro_fail(errstr, errstr_size, "Snapshot.nonce");
    }
    return DP_OK;
}

int dp_codec_encode_snapshot(dp_codec *c, const dp_codec_snapshot *s, void *buf, size_t cap,
                             size_t *len, char *errstr, size_t errstr_size)
{
    int rc = fill_snapshot(c, s, errstr, errstr_size);
    return rc != DP_OK ? rc : dpc_write(c, DP_CODEC_SNAPSHOT, buf, cap, len, errstr, errstr_size);
}

int dp_codec_encode_snapshot_buf(dp_codec *c, const dp_codec_snapshot *s, dp_buf *out,
                                 char *errstr, size_t errstr_size)
{
    int rc = fill_snapshot(c, s, errstr, errstr_size);
    return rc != DP_OK ? rc : dpc_write_buf(c, DP_CODEC_SNAPSHOT, out, errstr, errstr_size);
}

int dp_codec_decode_snapshot(dp_codec *c, const void *data, size_t len, dp_codec_snapshot *out,
                             char *errstr, size_t errstr_size)
{
    memset(out, 0, sizeof *out);
    avro_value_t *v;
    int rc = dpc_read(c, DP_CODEC_SNAPSHOT, data, len, &v, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    avro_value_t f[SNAP_NFIELDS];
    for (int i = 0; i < SNAP_NFIELDS; i++)
        if (dpc_field(v, (size_t)i, &f[i]) != DP_OK)
            return dpc_avro_fail(errstr, errstr_size, "Snapshot");
    dp_codec_snapshot s;
    memset(&s, 0, sizeof s);
    int32_t version, index, count;
    int64_t step;
    int encrypted, disc;
    size_t slen;
    const void *state, *ledger;
    avro_value_t b;
    if (avro_value_get_int(&f[SNAP_VERSION], &version) != 0)
        return dpc_avro_fail(errstr, errstr_size, "Snapshot");
    /* Refuse unknown versions before trusting anything else in the record. */
    if (version != DP_CODEC_SNAPSHOT_VERSION && version != DP_CODEC_SNAPSHOT_VERSION_CAS)
        return dp_err(errstr, errstr_size, DP_EINVAL, "Snapshot: unsupported schema version %d",
                      (int)version);
    if (avro_value_get_long(&f[SNAP_STEP], &step) != 0 ||
        avro_value_get_int(&f[SNAP_PARTITION], &s.input_partition) != 0 ||
        avro_value_get_long(&f[SNAP_OFFSET], &s.input_offset) != 0 ||
        dpc_get_bytes(&f[SNAP_STATE], &state, &s.state_len) != DP_OK ||
        dpc_get_bytes(&f[SNAP_LEDGER], &ledger, &s.ledger_len) != DP_OK ||
        avro_value_get_int(&f[SNAP_CHUNK_INDEX], &index) != 0 ||
        avro_value_get_int(&f[SNAP_CHUNK_COUNT], &count) != 0 ||
        avro_value_get_boolean(&f[SNAP_ENCRYPTED], &encrypted) != 0 ||
        avro_value_get_discriminant(&f[SNAP_NONCE], &disc) != 0 ||
        avro_value_get_current_branch(&f[SNAP_NONCE], &b) != 0)
        return dpc_avro_fail(errstr, errstr_size, "Snapshot");
    if (step < 0 || s.input_partition < 0 || s.input_offset < 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "Snapshot: negative step, partition or offset");
    if (count < 1 || index < 0 || index >= count)
        return dp_err(errstr, errstr_size, DP_EINVAL, "Snapshot: chunk %d of %d", (int)index, (int)count);
    if ((encrypted != 0) != (disc == 1))
        return dp_err(errstr, errstr_size, DP_EINVAL, "Snapshot: nonce present iff encrypted");
    if (disc == 1) {
        const void *nonce;
        size_t nlen;
        if (avro_value_get_fixed(&b, &nonce, &nlen) != 0 || nlen != DP_CODEC_NONCE_BYTES)
            return dpc_avro_fail(errstr, errstr_size, "Snapshot.nonce");
        memcpy(s.nonce, nonce, DP_CODEC_NONCE_BYTES);
    }
    if ((rc = dpc_get_str(&f[SNAP_STREAM], &s.stream_id, &s.stream_id_len, 1, "Snapshot.stream",
                          errstr, errstr_size)) != DP_OK ||
        (rc = dpc_get_str(&f[SNAP_TOPIC], &s.input_topic, &slen, 1, "Snapshot.input_topic", errstr,
                          errstr_size)) != DP_OK ||
        (rc = dpc_get_str(&f[SNAP_SYNTH], &s.synthesizer, &slen, 1, "Snapshot.synthesizer", errstr,
                          errstr_size)) != DP_OK)
        return rc;
    s.schema_version = (uint32_t)version;
    s.last_closed_step = (uint64_t)step;
    s.state = state;
    s.ledger = ledger;
    s.chunk_index = (uint32_t)index;
    s.chunk_count = (uint32_t)count;
    s.encrypted = encrypted != 0;
    *out = s;
    return DP_OK;
}
