/* codec_update.c — the Update message (schemas/Update.avsc). */
#include "codec/codec_internal.h"

#include <string.h>

#include "core/dp_error.h"

/* The C enum is the Avro enum UpdateKind by position. */
_Static_assert(DP_UPDATE_REPORT == 0 && DP_UPDATE_INSERT == 1 && DP_UPDATE_DELETE == 2 &&
               DP_UPDATE_CLOSE_STEP == 3, "dp_update_kind must match UpdateKind's symbols");

static int fill_update(dp_codec *c, const dp_update *u, char *errstr, size_t errstr_size)
{
    if (u->step < 1 || u->step > (uint64_t)INT64_MAX)
        return dp_err(errstr, errstr_size, DP_EINVAL, "Update: step %llu outside 1..2^63-1",
                      (unsigned long long)u->step);
    if ((unsigned)u->kind > DP_UPDATE_CLOSE_STEP)
        return dp_err(errstr, errstr_size, DP_EINVAL, "Update: unknown kind %d", (int)u->kind);
    if (u->kind == DP_UPDATE_CLOSE_STEP && (u->entity_id || u->payload.kind != DP_PAYLOAD_NONE))
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      "Update: CLOSE_STEP carries neither entity nor payload");
    avro_value_t *v = dpc_begin(c, DP_CODEC_UPDATE);
    avro_value_t f[UPD_NFIELDS];
    for (int i = 0; i < UPD_NFIELDS; i++)
        if (dpc_field(v, (size_t)i, &f[i]) != DP_OK)
            return dpc_avro_fail(errstr, errstr_size, "Update");
    int rc;
    if ((rc = dpc_set_str(c, &f[UPD_STREAM], u->stream_id, u->stream_id_len, 1, "Update.stream",
                          errstr, errstr_size)) != DP_OK ||
        (rc = dpc_set_opt_str(c, &f[UPD_ENTITY], u->entity_id, u->entity_id_len, "Update.entity",
                              errstr, errstr_size)) != DP_OK ||
        (rc = dpc_set_payload(&f[UPD_PAYLOAD], 1, &u->payload, "Update.payload", errstr,
                              errstr_size)) != DP_OK)
        return rc;
    avro_value_t b;
    if (avro_value_set_long(&f[UPD_STEP], (int64_t)u->step) != 0 ||
        avro_value_set_enum(&f[UPD_KIND], (int)u->kind) != 0)
        return dpc_avro_fail(errstr, errstr_size, "Update");
    if (u->has_event_time) {
        if (avro_value_set_branch(&f[UPD_EVENT_TIME], 1, &b) != 0 ||
            avro_value_set_long(&b, u->event_time_ms) != 0)
            return dpc_avro_fail(errstr, errstr_size, "Update.event_time");
    } else if (avro_value_set_branch(&f[UPD_EVENT_TIME], 0, &b) != 0 || avro_value_set_null(&b) != 0) {
        return dpc_avro_fail(errstr, errstr_size, "Update.event_time");
    }
    return DP_OK;
}

int dp_codec_encode_update(dp_codec *c, const dp_update *u, void *buf, size_t cap,
                           size_t *len, char *errstr, size_t errstr_size)
{
    int rc = fill_update(c, u, errstr, errstr_size);
    return rc != DP_OK ? rc : dpc_write(c, DP_CODEC_UPDATE, buf, cap, len, errstr, errstr_size);
}

int dp_codec_encode_update_buf(dp_codec *c, const dp_update *u, dp_buf *out,
                               char *errstr, size_t errstr_size)
{
    int rc = fill_update(c, u, errstr, errstr_size);
    return rc != DP_OK ? rc : dpc_write_buf(c, DP_CODEC_UPDATE, out, errstr, errstr_size);
}

int dpc_decode_update_generic(dp_codec *c, const void *data, size_t len, dp_update *out,
                              char *errstr, size_t errstr_size)
{
    memset(out, 0, sizeof *out);
    avro_value_t *v;
    int rc = dpc_read(c, DP_CODEC_UPDATE, data, len, &v, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    avro_value_t f[UPD_NFIELDS];
    for (int i = 0; i < UPD_NFIELDS; i++)
        if (dpc_field(v, (size_t)i, &f[i]) != DP_OK)
            return dpc_avro_fail(errstr, errstr_size, "Update");
    dp_update u;
    memset(&u, 0, sizeof u);
    int64_t step;
    int kind, d;
    avro_value_t b;
    if (avro_value_get_long(&f[UPD_STEP], &step) != 0 || avro_value_get_enum(&f[UPD_KIND], &kind) != 0 ||
        avro_value_get_discriminant(&f[UPD_EVENT_TIME], &d) != 0 ||
        avro_value_get_current_branch(&f[UPD_EVENT_TIME], &b) != 0)
        return dpc_avro_fail(errstr, errstr_size, "Update");
    if (step < 1)
        return dp_err(errstr, errstr_size, DP_EINVAL, "Update: step %lld is not >= 1", (long long)step);
    u.step = (uint64_t)step;
    u.kind = (dp_update_kind)kind;
    if (d == 1) {
        u.has_event_time = 1;
        if (avro_value_get_long(&b, &u.event_time_ms) != 0)
            return dpc_avro_fail(errstr, errstr_size, "Update.event_time");
    }
    if ((rc = dpc_get_str(&f[UPD_STREAM], &u.stream_id, &u.stream_id_len, 1, "Update.stream",
                          errstr, errstr_size)) != DP_OK ||
        (rc = dpc_get_opt_str(&f[UPD_ENTITY], &u.entity_id, &u.entity_id_len, "Update.entity",
                              errstr, errstr_size)) != DP_OK)
        return rc;
    dp_payload_kind pk;
    size_t n;
    if ((rc = dpc_payload_shape(&f[UPD_PAYLOAD], 1, &pk, &n, "Update.payload", errstr,
                                errstr_size)) != DP_OK)
        return rc;
    if (pk == DP_PAYLOAD_ROW && dp_vec_reserve(&c->upd_ints, n, sizeof(int32_t)) != DP_OK)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "Update: out of memory");
    if (pk == DP_PAYLOAD_POINT && dp_vec_reserve(&c->upd_dbls, n, sizeof(double)) != DP_OK)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "Update: out of memory");
    if ((rc = dpc_get_payload(&f[UPD_PAYLOAD], 1, &u.payload, c->upd_ints.p, c->upd_dbls.p,
                              "Update.payload", errstr, errstr_size)) != DP_OK)
        return rc;
    if (u.kind == DP_UPDATE_CLOSE_STEP && (u.entity_id || u.payload.kind != DP_PAYLOAD_NONE))
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      "Update: CLOSE_STEP carries neither entity nor payload");
    *out = u;
    return DP_OK;
}
