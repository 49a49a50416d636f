/* codec_release.c — SyntheticRecord chunks and the ReleaseManifest
 * (schemas/SyntheticRecord.avsc, schemas/ReleaseManifest.avsc). */
#include "codec/codec_internal.h"
#include "codec/avro_write.h"

#include <math.h>
#include <string.h>

#include "core/dp_error.h"

_Static_assert(DP_RELEASE_FULL == 0 && DP_RELEASE_DELTA == 1 && DP_RELEASE_NONE == 2 && DP_RELEASE_MODE_COUNT == 3,
               "dp_release_mode must match ReleaseMode's symbols");

/* --- SyntheticRecord --------------------------------------------------------- */

static int check_chunk(const dp_codec_chunk *ch, char *errstr, size_t errstr_size);

static int fill_chunk(dp_codec *c, const dp_codec_chunk *ch, char *errstr, size_t errstr_size)
{
    int rc = check_chunk(ch, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    avro_value_t *v = dpc_begin(c, DP_CODEC_SYNTHETIC_RECORD);
    avro_value_t f[CHK_NFIELDS];
    for (int i = 0; i < CHK_NFIELDS; i++)
        if (dpc_field(v, (size_t)i, &f[i]) != DP_OK)
            return dpc_avro_fail(errstr, errstr_size, "SyntheticRecord");
    rc = dpc_set_str(c, &f[CHK_STREAM], ch->stream_id, ch->stream_id_len, 1, "SyntheticRecord.stream", errstr,
                     errstr_size);
    if (rc != DP_OK)
        return rc;
    if (avro_value_set_long(&f[CHK_STEP], (int64_t)ch->step) != 0 ||
        avro_value_set_int(&f[CHK_INDEX], (int32_t)ch->chunk_index) != 0)
        return dpc_avro_fail(errstr, errstr_size, "SyntheticRecord");
    for (size_t i = 0; i < ch->n_records; i++) {
        const dp_synth_record *r = &ch->records[i];
        avro_value_t row, id, val;
        if (avro_value_append(&f[CHK_RECORDS], &row, NULL) != 0 ||
            dpc_field(&row, ROW_ID, &id) != DP_OK || dpc_field(&row, ROW_VALUE, &val) != DP_OK ||
            avro_value_set_long(&id, (int64_t)r->synthetic_id) != 0)
            return dpc_avro_fail(errstr, errstr_size, "SyntheticRecord");
        if ((rc = dpc_set_payload(&val, 0, &r->value, "SyntheticRecord.records.value", errstr,
                                  errstr_size)) != DP_OK)
            return rc;
    }
    return DP_OK;
}

int dp_codec_encode_chunk(dp_codec *c, const dp_codec_chunk *ch, void *buf, size_t cap,
                          size_t *len, char *errstr, size_t errstr_size)
{
    int rc = fill_chunk(c, ch, errstr, errstr_size);
    return rc != DP_OK ? rc
                       : dpc_write(c, DP_CODEC_SYNTHETIC_RECORD, buf, cap, len, errstr, errstr_size);
}

/* What a chunk must satisfy to be encoded, by either encoder.
 *
 * The release path writes every synthetic record once, so the chunk is
 * serialized directly (avro_write.h) instead of through avro-c's generic
 * values, which cost ~0.5 µs per record — most of a 25 000-record step's
 * close-to-release latency (bench/RESULTS.md).  It refuses exactly what
 * fill_chunk refuses and writes the bytes avro-c writes (one array block
 * holding every item, then the 0 terminator); test_codec checks both
 * against dp_codec_encode_chunk, which stays on the generic path. */
static int check_chunk(const dp_codec_chunk *ch, char *errstr, size_t errstr_size)
{
    if (ch->step < 1 || ch->step > (uint64_t)INT64_MAX)
        return dp_err(errstr, errstr_size, DP_EINVAL, "SyntheticRecord: step %llu outside 1..2^63-1",
                      (unsigned long long)ch->step);
    if (ch->chunk_index > (uint32_t)INT32_MAX)
        return dp_err(errstr, errstr_size, DP_EINVAL, "SyntheticRecord: chunk index %u too large",
                      ch->chunk_index);
    if (ch->n_records && !ch->records)
        return dp_err(errstr, errstr_size, DP_EINVAL, "SyntheticRecord: %zu records but no array",
                      ch->n_records);
    int rc = dpc_check_text(ch->stream_id, ch->stream_id_len, 1, "SyntheticRecord.stream", errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    for (size_t i = 0; i < ch->n_records; i++) {
        const dp_synth_record *r = &ch->records[i];
        const dp_payload *v = &r->value;
        if (r->synthetic_id > (uint64_t)INT64_MAX)
            return dp_err(errstr, errstr_size, DP_EINVAL,
                          "SyntheticRecord: record %zu: synthetic id above 2^63-1", i);
        switch (v->kind) {
        case DP_PAYLOAD_CATEGORY:
            break;
        case DP_PAYLOAD_ROW:
            if (v->row_len && !v->row)
                return dp_err(errstr, errstr_size, DP_EINVAL,
                              "SyntheticRecord.records.value: row of %zu values but no array", v->row_len);
            break;
        case DP_PAYLOAD_POINT:
            if (v->point_len && !v->point)
                return dp_err(errstr, errstr_size, DP_EINVAL,
                              "SyntheticRecord.records.value: point of %zu coordinates but no array", v->point_len);
            for (size_t j = 0; j < v->point_len; j++)
                if (!isfinite(v->point[j]))
                    return dp_err(errstr, errstr_size, DP_EINVAL,
                                  "SyntheticRecord.records.value: coordinate %zu is not finite", j);
            break;
        case DP_PAYLOAD_NONE:
            return dp_err(errstr, errstr_size, DP_EINVAL, "SyntheticRecord.records.value: a value is required");
        default:
            return dp_err(errstr, errstr_size, DP_EINVAL, "SyntheticRecord.records.value: unknown payload kind %d",
                          (int)v->kind);
        }
    }
    return DP_OK;
}

/* Most bytes one SyntheticRow takes: id, branch, then a long or an array
 * (count, items, terminator). */
static size_t row_max_bytes(const dp_synth_record *r)
{
    size_t items = r->value.kind == DP_PAYLOAD_ROW     ? r->value.row_len * DPC_AVRO_MAX_LONG
                   : r->value.kind == DP_PAYLOAD_POINT ? r->value.point_len * 8
                                                       : 0;
    return 4 * DPC_AVRO_MAX_LONG + items;
}

static size_t write_row(uint8_t *p, const dp_synth_record *r)
{
    size_t n = dpc_avro_write_long(p, (int64_t)r->synthetic_id);
    const dp_payload *v = &r->value;
    /* union branch = position in SyntheticRow.value (no null there) */
    switch (v->kind) {
    case DP_PAYLOAD_CATEGORY:
        n += dpc_avro_write_long(p + n, 0);
        n += dpc_avro_write_long(p + n, v->category);
        return n;
    case DP_PAYLOAD_ROW:
        n += dpc_avro_write_long(p + n, 1);
        if (v->row_len)
            n += dpc_avro_write_long(p + n, (int64_t)v->row_len);
        for (size_t j = 0; j < v->row_len; j++)
            n += dpc_avro_write_long(p + n, v->row[j]);
        break;
    default:   /* DP_PAYLOAD_POINT (check_chunk refused the rest) */
        n += dpc_avro_write_long(p + n, 2);
        if (v->point_len)
            n += dpc_avro_write_long(p + n, (int64_t)v->point_len);
        for (size_t j = 0; j < v->point_len; j++)
            n += dpc_avro_write_double(p + n, v->point[j]);
        break;
    }
    p[n++] = 0;   /* end of the array's blocks */
    return n;
}

int dp_codec_encode_chunk_hashed(dp_codec *c, const dp_codec_chunk *ch, dp_buf *out, dp_codec_checksum *h,
                                 char *errstr, size_t errstr_size)
{
    if (out->failed)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "codec: output buffer failed earlier");
    int rc = check_chunk(ch, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    size_t len0 = out->len;
    dpc_put_header_buf(c, DP_CODEC_SYNTHETIC_RECORD, out);
    dpc_avro_put_bytes(out, ch->stream_id, ch->stream_id_len);
    dpc_avro_put_long(out, (int64_t)ch->step);
    dpc_avro_put_long(out, (int64_t)ch->chunk_index);
    if (ch->n_records)
        dpc_avro_put_long(out, (int64_t)ch->n_records);
    size_t rows_at = out->len;
    for (size_t i = 0; i < ch->n_records; i++) {
        uint8_t *p = dp_buf_tail(out, row_max_bytes(&ch->records[i]));
        if (!p)
            break;
        out->len += write_row(p, &ch->records[i]);
    }
    /* The release checksum's canonical bytes are exactly these rows
     * (codec.h), so they are hashed as written. */
    if (h && !out->failed)
        dpc_checksum_add_rows(h, out->data + rows_at, out->len - rows_at);
    dpc_avro_put_long(out, 0);   /* end of the records array */
    if (out->failed) {
        out->len = len0;
        return dp_err(errstr, errstr_size, DP_ENOMEM, "SyntheticRecord: out of memory");
    }
    return DP_OK;
}

int dp_codec_encode_chunk_buf(dp_codec *c, const dp_codec_chunk *ch, dp_buf *out,
                              char *errstr, size_t errstr_size)
{
    return dp_codec_encode_chunk_hashed(c, ch, out, NULL, errstr, errstr_size);
}

int dp_codec_decode_chunk(dp_codec *c, const void *data, size_t len, dp_codec_chunk *out,
                          char *errstr, size_t errstr_size)
{
    memset(out, 0, sizeof *out);
    avro_value_t *v;
    int rc = dpc_read(c, DP_CODEC_SYNTHETIC_RECORD, data, len, &v, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    avro_value_t f[CHK_NFIELDS];
    for (int i = 0; i < CHK_NFIELDS; i++)
        if (dpc_field(v, (size_t)i, &f[i]) != DP_OK)
            return dpc_avro_fail(errstr, errstr_size, "SyntheticRecord");
    dp_codec_chunk ch;
    memset(&ch, 0, sizeof ch);
    int64_t step;
    int32_t index;
    size_t n;
    if (avro_value_get_long(&f[CHK_STEP], &step) != 0 || avro_value_get_int(&f[CHK_INDEX], &index) != 0 ||
        avro_value_get_size(&f[CHK_RECORDS], &n) != 0)
        return dpc_avro_fail(errstr, errstr_size, "SyntheticRecord");
    if (step < 1)
        return dp_err(errstr, errstr_size, DP_EINVAL, "SyntheticRecord: step %lld is not >= 1",
                      (long long)step);
    if (index < 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "SyntheticRecord: negative chunk index %d",
                      (int)index);
    if ((rc = dpc_get_str(&f[CHK_STREAM], &ch.stream_id, &ch.stream_id_len, 1,
                          "SyntheticRecord.stream", errstr, errstr_size)) != DP_OK)
        return rc;
    ch.step = (uint64_t)step;
    ch.chunk_index = (uint32_t)index;

    /* Pass 1: sizes, so the pooled row/point storage is allocated once and
     * the payload pointers into it stay valid. */
    size_t n_ints = 0, n_dbls = 0;
    for (size_t i = 0; i < n; i++) {
        avro_value_t row, val;
        dp_payload_kind k;
        size_t items;
        if (avro_value_get_by_index(&f[CHK_RECORDS], i, &row, NULL) != 0 ||
            dpc_field(&row, ROW_VALUE, &val) != DP_OK)
            return dpc_avro_fail(errstr, errstr_size, "SyntheticRecord");
        if ((rc = dpc_payload_shape(&val, 0, &k, &items, "SyntheticRecord.records.value", errstr,
                                    errstr_size)) != DP_OK)
            return rc;
        if (k == DP_PAYLOAD_ROW)
            n_ints += items;
        else if (k == DP_PAYLOAD_POINT)
            n_dbls += items;
    }
    if (dp_vec_reserve(&c->chunk_recs, n, sizeof(dp_synth_record)) != DP_OK ||
        dp_vec_reserve(&c->chunk_ints, n_ints, sizeof(int32_t)) != DP_OK ||
        dp_vec_reserve(&c->chunk_dbls, n_dbls, sizeof(double)) != DP_OK)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "SyntheticRecord: out of memory");
    dp_synth_record *recs = c->chunk_recs.p;
    int32_t *ints = c->chunk_ints.p;
    double *dbls = c->chunk_dbls.p;
    /* Pass 2: fill. */
    for (size_t i = 0; i < n; i++) {
        avro_value_t row, id, val;
        int64_t sid;
        if (avro_value_get_by_index(&f[CHK_RECORDS], i, &row, NULL) != 0 ||
            dpc_field(&row, ROW_ID, &id) != DP_OK || dpc_field(&row, ROW_VALUE, &val) != DP_OK ||
            avro_value_get_long(&id, &sid) != 0)
            return dpc_avro_fail(errstr, errstr_size, "SyntheticRecord");
        if (sid < 0)
            return dp_err(errstr, errstr_size, DP_EINVAL,
                          "SyntheticRecord: record %zu has a negative synthetic id", i);
        recs[i].synthetic_id = (uint64_t)sid;
        if ((rc = dpc_get_payload(&val, 0, &recs[i].value, ints, dbls,
                                  "SyntheticRecord.records.value", errstr, errstr_size)) != DP_OK)
            return rc;
        ints += recs[i].value.row_len;
        dbls += recs[i].value.point_len;
    }
    ch.records = recs;
    ch.n_records = n;
    *out = ch;
    return DP_OK;
}

/* --- ReleaseManifest ---------------------------------------------------------- */

static int fill_manifest(dp_codec *c, const dp_codec_manifest *cm, char *errstr, size_t errstr_size)
{
    const dp_release_manifest *m = &cm->m;
    if (m->step < 1 || m->step > (uint64_t)INT64_MAX)
        return dp_err(errstr, errstr_size, DP_EINVAL, "ReleaseManifest: step %llu outside 1..2^63-1",
                      (unsigned long long)m->step);
    if (!dp_release_mode_name(m->mode))
        return dp_err(errstr, errstr_size, DP_EINVAL, "ReleaseManifest: unknown mode %d", (int)m->mode);
    if (m->mode == DP_RELEASE_NONE && m->record_count != 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "ReleaseManifest: mode NONE with %llu records",
                      (unsigned long long)m->record_count);
    if (m->record_count > (uint64_t)INT64_MAX ||
        cm->chunk_count > (uint32_t)INT32_MAX)
        return dp_err(errstr, errstr_size, DP_EINVAL, "ReleaseManifest: count out of range");
    if (!m->synthesizer)
        return dp_err(errstr, errstr_size, DP_EINVAL, "ReleaseManifest: no synthesizer name");
    avro_value_t *v = dpc_begin(c, DP_CODEC_RELEASE_MANIFEST);
    avro_value_t f[MAN_NFIELDS];
    for (int i = 0; i < MAN_NFIELDS; i++)
        if (dpc_field(v, (size_t)i, &f[i]) != DP_OK)
            return dpc_avro_fail(errstr, errstr_size, "ReleaseManifest");
    int rc;
    if ((rc = dpc_set_str(c, &f[MAN_STREAM], m->stream_id, m->stream_id_len, 1,
                          "ReleaseManifest.stream", errstr, errstr_size)) != DP_OK ||
        (rc = dpc_set_str(c, &f[MAN_SYNTH], m->synthesizer, strlen(m->synthesizer), 1,
                          "ReleaseManifest.synthesizer", errstr, errstr_size)) != DP_OK ||
        (rc = dpc_set_named_values(&f[MAN_DEBIAS], m->debias, m->n_debias, "ReleaseManifest.debias",
                                   errstr, errstr_size)) != DP_OK)
        return rc;
    if (avro_value_set_long(&f[MAN_STEP], (int64_t)m->step) != 0 ||
        avro_value_set_enum(&f[MAN_MODE], (int)m->mode) != 0 ||
        avro_value_set_long(&f[MAN_RECORDS], (int64_t)m->record_count) != 0 ||
        avro_value_set_int(&f[MAN_CHUNKS], (int32_t)cm->chunk_count) != 0 ||
        avro_value_set_fixed(&f[MAN_CHECKSUM], (void *)cm->checksum, DP_CODEC_CHECKSUM_BYTES) != 0 ||
        avro_value_set_boolean(&f[MAN_CLAMPED], m->clamped != 0) != 0)
        return dpc_avro_fail(errstr, errstr_size, "ReleaseManifest");
    return DP_OK;
}

int dp_codec_encode_manifest(dp_codec *c, const dp_codec_manifest *m, void *buf, size_t cap,
                             size_t *len, char *errstr, size_t errstr_size)
{
    int rc = fill_manifest(c, m, errstr, errstr_size);
    return rc != DP_OK ? rc
                       : dpc_write(c, DP_CODEC_RELEASE_MANIFEST, buf, cap, len, errstr, errstr_size);
}

int dp_codec_encode_manifest_buf(dp_codec *c, const dp_codec_manifest *m, dp_buf *out,
                                 char *errstr, size_t errstr_size)
{
    int rc = fill_manifest(c, m, errstr, errstr_size);
    return rc != DP_OK ? rc : dpc_write_buf(c, DP_CODEC_RELEASE_MANIFEST, out, errstr, errstr_size);
}

int dp_codec_decode_manifest(dp_codec *c, const void *data, size_t len, dp_codec_manifest *out,
                             char *errstr, size_t errstr_size)
{
    memset(out, 0, sizeof *out);
    avro_value_t *v;
    int rc = dpc_read(c, DP_CODEC_RELEASE_MANIFEST, data, len, &v, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    avro_value_t f[MAN_NFIELDS];
    for (int i = 0; i < MAN_NFIELDS; i++)
        if (dpc_field(v, (size_t)i, &f[i]) != DP_OK)
            return dpc_avro_fail(errstr, errstr_size, "ReleaseManifest");
    dp_codec_manifest cm;
    memset(&cm, 0, sizeof cm);
    dp_release_manifest *m = &cm.m;
    int64_t step, records;
    int32_t chunks;
    int mode;
    int clamped;
    const void *sum;
    size_t sum_len, n_debias, synth_len;
    if (avro_value_get_long(&f[MAN_STEP], &step) != 0 || avro_value_get_enum(&f[MAN_MODE], &mode) != 0 ||
        avro_value_get_long(&f[MAN_RECORDS], &records) != 0 ||
        avro_value_get_int(&f[MAN_CHUNKS], &chunks) != 0 ||
        avro_value_get_fixed(&f[MAN_CHECKSUM], &sum, &sum_len) != 0 ||
        avro_value_get_boolean(&f[MAN_CLAMPED], &clamped) != 0 ||
        avro_value_get_size(&f[MAN_DEBIAS], &n_debias) != 0)
        return dpc_avro_fail(errstr, errstr_size, "ReleaseManifest");
    if (step < 1 || records < 0 || chunks < 0)
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      "ReleaseManifest: step must be >= 1 and counts >= 0");
    if (!dp_release_mode_name((dp_release_mode)mode))
        return dp_err(errstr, errstr_size, DP_EINVAL, "ReleaseManifest: unknown mode %d", mode);
    if (mode == DP_RELEASE_NONE && records != 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "ReleaseManifest: mode NONE with %lld records",
                      (long long)records);
    if (sum_len != DP_CODEC_CHECKSUM_BYTES)
        return dp_err(errstr, errstr_size, DP_EINVAL, "ReleaseManifest: checksum of %zu bytes", sum_len);
    if ((rc = dpc_get_str(&f[MAN_STREAM], &m->stream_id, &m->stream_id_len, 1,
                          "ReleaseManifest.stream", errstr, errstr_size)) != DP_OK ||
        (rc = dpc_get_str(&f[MAN_SYNTH], &m->synthesizer, &synth_len, 1,
                          "ReleaseManifest.synthesizer", errstr, errstr_size)) != DP_OK)
        return rc;
    if (dp_vec_reserve(&c->manifest_kv, n_debias, sizeof(dp_kv)) != DP_OK)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "ReleaseManifest: out of memory");
    if ((rc = dpc_get_named_values(&f[MAN_DEBIAS], c->manifest_kv.p, &m->n_debias,
                                   "ReleaseManifest.debias", errstr, errstr_size)) != DP_OK)
        return rc;
    m->debias = c->manifest_kv.p;
    m->step = (uint64_t)step;
    m->mode = (dp_release_mode)mode;
    m->record_count = (uint64_t)records;
    m->clamped = clamped != 0;
    cm.chunk_count = (uint32_t)chunks;
    memcpy(cm.checksum, sum, DP_CODEC_CHECKSUM_BYTES);
    *out = cm;
    return DP_OK;
}
