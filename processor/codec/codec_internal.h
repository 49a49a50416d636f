/* codec_internal.h — shared between the codec's files; not a public API.
 *
 * Every message type has one slot: its schema, generic value class and two
 * value objects (encode, decode), created by dp_codec_create and reused for
 * every message.
 * Field positions are fixed by the schemas; dp_codec_create checks each
 * record's field names against the lists below, so an edited schema that
 * moves a field fails at startup instead of encoding the wrong thing. */
#ifndef DP_CODEC_INTERNAL_H
#define DP_CODEC_INTERNAL_H

#include <avro.h>
#include <stddef.h>
#include <stdint.h>

#include "codec/codec.h"
#include "core/utf8.h"
#include "core/vec.h"

typedef struct dpc_slot {
    avro_schema_t       schema;
    avro_value_iface_t *iface;
    /* Separate values for the two directions: a decoded struct borrows
     * from `dec`, so encoding (even the decoded struct itself) must not
     * reset it. */
    avro_value_t        enc;
    avro_value_t        dec;
    int                 n_values;   /* how many of enc, dec exist (for cleanup) */
} dpc_slot;


/* One writer schema of Update met on input (codec_update_resolve.c). */
typedef struct dpc_writer dpc_writer;

struct dp_codec {
    dp_codec_framing framing;
    uint32_t         schema_id[DP_CODEC_TYPE_COUNT];
    int              resolve_update_writers;
    dpc_writer     **writers;       /* by insertion; few (one per schema version met) */
    size_t           n_writers;
    dpc_slot         slot[DP_CODEC_TYPE_COUNT];
    avro_reader_t    reader;
    avro_writer_t    writer;
    dp_vec          scratch;        /* char: NUL-terminated copies of (ptr, len) strings */
    /* decode storage, one set per type so decodes of different types do
     * not invalidate each other */
    dp_vec          upd_ints, upd_dbls;        /* the generic Update decoder's */
    dp_update_store  upd_store;                 /* dp_codec_decode_update's */
    dp_vec          chunk_recs, chunk_ints, chunk_dbls;
    dp_vec          manifest_kv;
    dp_vec          budget_kv;
};

/* Field order of each record schema (checked at create). */
enum { UPD_STREAM, UPD_STEP, UPD_KIND, UPD_ENTITY, UPD_PAYLOAD, UPD_EVENT_TIME, UPD_NFIELDS };
enum { CHK_STREAM, CHK_STEP, CHK_INDEX, CHK_RECORDS, CHK_NFIELDS };
enum { ROW_ID, ROW_VALUE, ROW_NFIELDS };
enum { MAN_STREAM, MAN_STEP, MAN_SYNTH, MAN_MODE, MAN_RECORDS, MAN_CHUNKS, MAN_CHECKSUM,
       MAN_DEBIAS, MAN_CLAMPED, MAN_NFIELDS };
enum { BUD_STREAM, BUD_STEP, BUD_STATUS, BUD_MECH, BUD_UNIT, BUD_NEIGHBORS, BUD_MODEL,
       BUD_SPENT_STEP, BUD_SPENT_TOTAL, BUD_BUDGET_TOTAL, BUD_DELTA, BUD_EPS_SIMPLE,
       BUD_EPS_CKS, BUD_NOISE, BUD_ACCURACY, BUD_UNITS_STEP, BUD_UNITS_TOTAL, BUD_UNITS_BUDGET,
       BUD_PUBLIC, BUD_KEY_FP, BUD_NFIELDS };
enum { DLQ_TOPIC, DLQ_PARTITION, DLQ_OFFSET, DLQ_KEY, DLQ_REASON, DLQ_TEXT, DLQ_RAW, DLQ_NFIELDS };
enum { SNAP_VERSION, SNAP_STREAM, SNAP_STEP, SNAP_TOPIC, SNAP_PARTITION, SNAP_OFFSET, SNAP_SYNTH,
       SNAP_STATE, SNAP_LEDGER, SNAP_CHUNK_INDEX, SNAP_CHUNK_COUNT, SNAP_ENCRYPTED, SNAP_NONCE,
       SNAP_NFIELDS };

/* The top-level field names per type, NULL-terminated. */
extern const char *const dpc_field_names[DP_CODEC_TYPE_COUNT][24];

/* --- writing and reading whole messages ------------------------------------ */

/* Reset the type's value and return it for filling. */
avro_value_t *dpc_begin(dp_codec *c, dp_codec_type t);
/* Frame + serialize the filled value into (buf, cap) / append to *out. */
int dpc_write(dp_codec *c, dp_codec_type t, void *buf, size_t cap, size_t *len,
              char *errstr, size_t errstr_size);
int dpc_write_buf(dp_codec *c, dp_codec_type t, dp_buf *out, char *errstr, size_t errstr_size);
/* Unframe, check (avro_check.h) and read one message into the type's value. */
int dpc_read(dp_codec *c, dp_codec_type t, const void *data, size_t len, avro_value_t **v,
             char *errstr, size_t errstr_size);

/* Check and strip the framing header of type t: *data, *len then cover
 * the Avro body. */
int dpc_unframe(const dp_codec *c, dp_codec_type t, const uint8_t **data, size_t *len, char *errstr,
                size_t errstr_size);
/* Re-encode the body of an Update framed with a foreign id, read through
 * its writer schema, in dpstream's own schema: store->bytes[0, *out_len)
 * (DP_OK, DP_EINVAL, DP_ESCHEMA, DP_ENOTFOUND, DP_ENOMEM). */
int dpc_resolve_update(dp_codec *c, uint32_t id, const uint8_t *body, size_t len, dp_update_store *store,
                       size_t *out_len, char *errstr, size_t errstr_size);
void dpc_writers_free(dp_codec *c);

/* The Update decoder through avro-c's generic values (dpc_read), which
 * dp_codec_decode_update replaced (codec_update_decode.c); kept as the
 * reference the direct decoder is tested against.  Borrows from the codec. */
int dpc_decode_update_generic(dp_codec *c, const void *data, size_t len, dp_update *out, char *errstr,
                              size_t errstr_size);
/* Feed the checksum encoded SyntheticRows (their canonical bytes). */
void dpc_checksum_add_rows(dp_codec_checksum *h, const uint8_t *rows, size_t n);
/* Append the framing header of type t (nothing for plain Avro). */
void dpc_put_header_buf(const dp_codec *c, dp_codec_type t, dp_buf *out);
/* The rules every string field obeys: no NUL, valid UTF-8, non-empty if
 * `nonempty`; errors name `field`. */
int dpc_check_text(const char *s, size_t len, int nonempty, const char *field,
                   char *errstr, size_t errstr_size);

/* --- field helpers (all return DP_OK or a dp_status with errstr set) ------- */

int dpc_field(avro_value_t *rec, size_t index, avro_value_t *out);
int dpc_avro_fail(char *errstr, size_t errstr_size, const char *what);

/* Strings: UTF-8 without NUL characters; `nonempty` refuses "". */
int dpc_set_str(dp_codec *c, avro_value_t *v, const char *s, size_t len, int nonempty,
                const char *field, char *errstr, size_t errstr_size);
int dpc_get_str(avro_value_t *v, const char **s, size_t *len, int nonempty,
                const char *field, char *errstr, size_t errstr_size);
/* Optional string: union [null, string]. s == NULL writes null. */
int dpc_set_opt_str(dp_codec *c, avro_value_t *u, const char *s, size_t len,
                    const char *field, char *errstr, size_t errstr_size);
int dpc_get_opt_str(avro_value_t *u, const char **s, size_t *len,
                    const char *field, char *errstr, size_t errstr_size);
int dpc_set_bytes(avro_value_t *v, const void *p, size_t len);
int dpc_get_bytes(avro_value_t *v, const void **p, size_t *len);
/* union [null, double]: NaN <-> null */
int dpc_set_opt_double(avro_value_t *u, double x);
int dpc_get_opt_double(avro_value_t *u, double *x);
/* array of NamedValue {name, value} <-> dp_kv; decoded names borrow from
 * the value (NUL-terminated by avro-c). */
int dpc_set_named_values(avro_value_t *arr, const dp_kv *kv, size_t n, const char *field,
                         char *errstr, size_t errstr_size);
int dpc_get_named_values(avro_value_t *arr, dp_kv *out, size_t *n, const char *field,
                         char *errstr, size_t errstr_size);

/* Payload unions.  Update's union is [null, Category, CategoricalRow, Point]
 * (has_null = 1); SyntheticRow's is [Category, CategoricalRow, Point]. */
int dpc_set_payload(avro_value_t *u, int has_null, const dp_payload *p, const char *field,
                    char *errstr, size_t errstr_size);
/* Kind and item count of a decoded payload (rows and points count items). */
int dpc_payload_shape(avro_value_t *u, int has_null, dp_payload_kind *kind, size_t *n_items,
                      const char *field, char *errstr, size_t errstr_size);
/* Fill *p; row items go to ints[0, n), point items to dbls[0, n). */
int dpc_get_payload(avro_value_t *u, int has_null, dp_payload *p, int32_t *ints, double *dbls,
                    const char *field, char *errstr, size_t errstr_size);

#endif
