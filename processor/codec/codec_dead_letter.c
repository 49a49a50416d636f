/* codec_dead_letter.c — the DeadLetter message (schemas/DeadLetter.avsc).
 * Encoding must not fail because of what the rejected input contained:
 * the raw bytes and key travel as Avro bytes, and the reason text (which
 * may quote the input) is sanitised to UTF-8 instead of refused. */
#include "codec/codec_internal.h"

#include <string.h>

#include "core/dp_error.h"

/* RejectReason symbols are dp_reject_reason 1..15 in order (NONE is not a
 * reason to dead-letter).  Adding a reason to synth.h must add the symbol
 * to schemas/DeadLetter.avsc: this assertion makes sure nobody forgets. */
_Static_assert(DP_REJECT_MALFORMED == 1 && DP_REJECT_UNKNOWN_STREAM == 2 &&
               DP_REJECT_WRONG_KIND == 3 && DP_REJECT_UNKNOWN_ENTITY == 4 &&
               DP_REJECT_DUPLICATE_REPORT == 5 && DP_REJECT_OUT_OF_DOMAIN == 6 &&
               DP_REJECT_LATE == 7 && DP_REJECT_FUTURE_STEP == 8 && DP_REJECT_EXHAUSTED == 9 &&
               DP_REJECT_KEY_MISMATCH == 10 && DP_REJECT_STREAM_LIMIT == 11 &&
               DP_REJECT_NOT_PRESENT == 12 && DP_REJECT_USER_LIMIT == 13 &&
               DP_REJECT_INCOMPATIBLE_SCHEMA == 14 && DP_REJECT_ENTITY_REQUIRED == 15 &&
               DP_REJECT_REASON_COUNT == 16,
               "dp_reject_reason must match DeadLetter.avsc's RejectReason symbols");

static int fill_dead_letter(dp_codec *c, const dp_codec_dead_letter *d, char *errstr,
                            size_t errstr_size)
{
    if (d->reason <= DP_REJECT_NONE || d->reason >= DP_REJECT_REASON_COUNT)
        return dp_err(errstr, errstr_size, DP_EINVAL, "DeadLetter: invalid reason %d", (int)d->reason);
    if (!d->topic)
        return dp_err(errstr, errstr_size, DP_EINVAL, "DeadLetter: no source topic");
    if (d->raw_len && !d->raw)
        return dp_err(errstr, errstr_size, DP_EINVAL, "DeadLetter: %zu raw bytes but no data",
                      d->raw_len);
    avro_value_t *v = dpc_begin(c, DP_CODEC_DEAD_LETTER);
    avro_value_t f[DLQ_NFIELDS];
    for (int i = 0; i < DLQ_NFIELDS; i++)
        if (dpc_field(v, (size_t)i, &f[i]) != DP_OK)
            return dpc_avro_fail(errstr, errstr_size, "DeadLetter");
    int rc = dpc_set_str(c, &f[DLQ_TOPIC], d->topic, strlen(d->topic), 1, "DeadLetter.source_topic",
                         errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    const char *text = d->text ? d->text : "";
    size_t clean_len;
    if (dp_utf8_sanitize(&c->scratch, text, strlen(text), &clean_len) != DP_OK)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "DeadLetter: out of memory");
    avro_value_t b;
    if (avro_value_set_int(&f[DLQ_PARTITION], d->partition) != 0 ||
        avro_value_set_long(&f[DLQ_OFFSET], d->offset) != 0 ||
        avro_value_set_enum(&f[DLQ_REASON], (int)d->reason - 1) != 0 ||
        avro_value_set_string_len(&f[DLQ_TEXT], c->scratch.p, clean_len + 1) != 0 ||
        dpc_set_bytes(&f[DLQ_RAW], d->raw, d->raw_len) != DP_OK)
        return dpc_avro_fail(errstr, errstr_size, "DeadLetter");
    /* An empty but present key stays a key (empty bytes), not null. */
    if (d->key) {
        if (avro_value_set_branch(&f[DLQ_KEY], 1, &b) != 0 || dpc_set_bytes(&b, d->key, d->key_len) != DP_OK)
            return dpc_avro_fail(errstr, errstr_size, "DeadLetter.key");
    } else if (avro_value_set_branch(&f[DLQ_KEY], 0, &b) != 0 || avro_value_set_null(&b) != 0) {
        return dpc_avro_fail(errstr, errstr_size, "DeadLetter.key");
    }
    return DP_OK;
}

int dp_codec_encode_dead_letter(dp_codec *c, const dp_codec_dead_letter *d, void *buf,
                                size_t cap, size_t *len, char *errstr, size_t errstr_size)
{
    int rc = fill_dead_letter(c, d, errstr, errstr_size);
    return rc != DP_OK ? rc : dpc_write(c, DP_CODEC_DEAD_LETTER, buf, cap, len, errstr, errstr_size);
}

int dp_codec_encode_dead_letter_buf(dp_codec *c, const dp_codec_dead_letter *d, dp_buf *out,
                                    char *errstr, size_t errstr_size)
{
    int rc = fill_dead_letter(c, d, errstr, errstr_size);
    return rc != DP_OK ? rc : dpc_write_buf(c, DP_CODEC_DEAD_LETTER, out, errstr, errstr_size);
}

int dp_codec_decode_dead_letter(dp_codec *c, const void *data, size_t len,
                                dp_codec_dead_letter *out, char *errstr, size_t errstr_size)
{
    memset(out, 0, sizeof *out);
    avro_value_t *v;
    int rc = dpc_read(c, DP_CODEC_DEAD_LETTER, data, len, &v, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    avro_value_t f[DLQ_NFIELDS];
    for (int i = 0; i < DLQ_NFIELDS; i++)
        if (dpc_field(v, (size_t)i, &f[i]) != DP_OK)
            return dpc_avro_fail(errstr, errstr_size, "DeadLetter");
    dp_codec_dead_letter d;
    memset(&d, 0, sizeof d);
    int reason, disc;
    size_t slen;
    avro_value_t b;
    if (avro_value_get_int(&f[DLQ_PARTITION], &d.partition) != 0 ||
        avro_value_get_long(&f[DLQ_OFFSET], &d.offset) != 0 ||
        avro_value_get_enum(&f[DLQ_REASON], &reason) != 0 ||
        dpc_get_bytes(&f[DLQ_RAW], &d.raw, &d.raw_len) != DP_OK ||
        avro_value_get_discriminant(&f[DLQ_KEY], &disc) != 0 ||
        avro_value_get_current_branch(&f[DLQ_KEY], &b) != 0)
        return dpc_avro_fail(errstr, errstr_size, "DeadLetter");
    if (disc == 1 && dpc_get_bytes(&b, &d.key, &d.key_len) != DP_OK)
        return dpc_avro_fail(errstr, errstr_size, "DeadLetter.key");
    if ((rc = dpc_get_str(&f[DLQ_TOPIC], &d.topic, &slen, 1, "DeadLetter.source_topic", errstr,
                          errstr_size)) != DP_OK ||
        (rc = dpc_get_str(&f[DLQ_TEXT], &d.text, &slen, 0, "DeadLetter.reason_text", errstr,
                          errstr_size)) != DP_OK)
        return rc;
    d.reason = (dp_reject_reason)(reason + 1);
    *out = d;
    return DP_OK;
}
