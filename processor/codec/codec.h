/* codec.h — Avro encoding of dpstream's Kafka messages (docs/design.md §5).
 *
 * Six message types, one schema each (schemas/<Name>.avsc, embedded in the
 * binary, see dp_codec_schema_json): Update (input), SyntheticRecord (a
 * chunk of a release), ReleaseManifest, BudgetEvent, DeadLetter, Snapshot.
 *
 * Wire format, chosen once per codec (dp_codec_options.framing):
 *   PLAIN      the Avro binary encoding of one datum, nothing else;
 *   CONFLUENT  Confluent Schema Registry framing: byte 0x00, the schema's
 *              registry id as 4 bytes big-endian, then the Avro binary —
 *              what Kafka Connect, ksqlDB and Confluent's Avro
 *              deserializers expect.  The ids come from the configuration
 *              or from a schema registry (stream/registry.h registers the
 *              schemas).  Decode refuses any other id, except for Updates
 *              when resolve_update_writers is set: see "Writer schemas"
 *              below.
 *
 * A codec builds each schema, its generic value class and two value objects
 * (one to encode into, one to decode into) once, and reuses them for every
 * message (allocation per message is then bounded by avro-c's per-string
 * copies; memory does not grow with the number of messages).  A codec is
 * not thread-safe: one per thread.
 *
 * Decoding is the dead-letter path's first line: whatever the bytes, a
 * decode returns DP_OK or DP_EINVAL with a sentence in errstr (the input is
 * MALFORMED), never crashes, never leaks, and never lets avro-c allocate
 * more than the input's length implies.  Before avro-c sees a body it is
 * checked against the schema by our own bounds-checked walker (avro_check.h):
 * every length, count, union branch and enum index must fit, varints must
 * be at most 5 (int) / 10 (long) bytes, booleans 0 or 1, and the datum must
 * end exactly at the end of the message.  Then the fields are checked for
 * meaning (non-empty ids, step >= 1, valid UTF-8, finite coordinates, ...);
 * encoding applies the same rules, so whatever this codec writes it reads.
 *
 * Decoded structs borrow from storage inside the codec: they stay valid
 * until the next decode of the *same* message type on the same codec (or
 * dp_codec_destroy).  Decoding another type, or encoding anything (the
 * decoded struct itself included), does not invalidate them.
 *
 * Encoding writes into a caller buffer (buf, cap): on success *len is the
 * message length; if cap is too small the result is DP_ERANGE and *len is
 * the length needed.  The *_buf variants append to a dp_buf, growing it.
 *
 * Status codes: DP_OK; DP_EINVAL (malformed input to decode, or a struct
 * that cannot be encoded, e.g. an empty stream id); DP_ERANGE (caller
 * buffer too small); DP_ENOMEM. */
#ifndef DP_CODEC_H
#define DP_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "synth/common/synth.h"

typedef enum dp_codec_type {
    DP_CODEC_UPDATE = 0,
    DP_CODEC_SYNTHETIC_RECORD,
    DP_CODEC_RELEASE_MANIFEST,
    DP_CODEC_BUDGET_EVENT,
    DP_CODEC_DEAD_LETTER,
    DP_CODEC_SNAPSHOT,
    DP_CODEC_TYPE_COUNT
} dp_codec_type;

typedef enum dp_codec_framing {
    DP_CODEC_FRAMING_PLAIN = 0,
    DP_CODEC_FRAMING_CONFLUENT = 1,
} dp_codec_framing;

/* Bytes the Confluent framing adds in front of the Avro body. */
#define DP_CODEC_CONFLUENT_HEADER 5

typedef struct dp_codec_options {
    dp_codec_framing framing;
    /* Schema Registry ids per type (CONFLUENT only; written on encode,
     * required on decode). */
    uint32_t schema_id[DP_CODEC_TYPE_COUNT];
    /* CONFLUENT only: an Update framed with another id than schema_id[Update]
     * is read through its writer schema (dp_codec_add_update_writer) instead
     * of refused. */
    int      resolve_update_writers;
} dp_codec_options;

/* Schema record name ("Update", …), file name ("Update.avsc") and the
 * embedded schema text, byte-identical to schemas/<file>; NULL if t is out
 * of range. */
const char *dp_codec_type_name(dp_codec_type t);
const char *dp_codec_schema_file(dp_codec_type t);
const char *dp_codec_schema_json(dp_codec_type t);

typedef struct dp_codec dp_codec;

int  dp_codec_create(dp_codec **out, const dp_codec_options *opts,
                     char *errstr, size_t errstr_size);
void dp_codec_destroy(dp_codec *c);

/* --- release checksum ---------------------------------------------------------
 * BLAKE2b-256 (unkeyed) over the canonical encodings of a release's records
 * in release order — the ReleaseManifest.checksum field, defined precisely
 * in schemas/ReleaseManifest.avsc.  It does not depend on how the records
 * are split into chunks, so a consumer can verify a reassembled release. */

#define DP_CODEC_CHECKSUM_BYTES 32

typedef struct dp_codec_checksum {
    /* libsodium's crypto_generichash_state wants 64-byte alignment, which
     * malloc does not promise; the state lives at an aligned offset inside. */
    unsigned char raw[384 + 64];
} dp_codec_checksum;

void dp_codec_checksum_init(dp_codec_checksum *h);
/* DP_EINVAL if the record cannot be encoded (payload NONE, id > 2^63-1,
 * non-finite coordinate): the same records dp_codec_encode_chunk refuses. */
int  dp_codec_checksum_add(dp_codec_checksum *h, const dp_synth_record *r);
void dp_codec_checksum_final(dp_codec_checksum *h, uint8_t out[DP_CODEC_CHECKSUM_BYTES]);

/* --- message structs that synth.h does not already define -------------------- */

/* One SyntheticRecord message: records [0, n_records) of chunk chunk_index
 * of the release of (stream, step). */
typedef struct dp_codec_chunk {
    const char            *stream_id;
    size_t                 stream_id_len;
    uint64_t               step;
    uint32_t               chunk_index;          /* <= INT32_MAX */
    const dp_synth_record *records;
    size_t                 n_records;
} dp_codec_chunk;

/* A ReleaseManifest: the synthesizer's manifest plus what the processor
 * adds when it publishes the release (chunk count, checksum). */
typedef struct dp_codec_manifest {
    dp_release_manifest m;
    uint32_t            chunk_count;             /* <= INT32_MAX */
    uint8_t             checksum[DP_CODEC_CHECKSUM_BYTES];
} dp_codec_manifest;

/* A DeadLetter.  reason must not be DP_REJECT_NONE.  text is sanitised on
 * encode (bytes that are not valid UTF-8 become U+FFFD) because the
 * dead-letter path must not fail on hostile input echoed into the text. */
typedef struct dp_codec_dead_letter {
    const char      *topic;        /* NUL-terminated, non-empty */
    int32_t          partition;
    int64_t          offset;
    const void      *key;          /* NULL: the message had no key */
    size_t           key_len;
    dp_reject_reason reason;
    const char      *text;         /* NUL-terminated */
    const void      *raw;          /* may be NULL when raw_len == 0 */
    size_t           raw_len;
} dp_codec_dead_letter;

#define DP_CODEC_SNAPSHOT_VERSION 1
/* Format 2: the state bytes are a chunk manifest (stream/state_cas.h);
 * everything else as version 1.  Readers of version 1 only refuse it. */
#define DP_CODEC_SNAPSHOT_VERSION_CAS 2
#define DP_CODEC_NONCE_BYTES 24

/* One Snapshot chunk (see schemas/Snapshot.avsc for the chunking and
 * encryption conventions; this codec only checks their consistency:
 * chunk_index < chunk_count, nonce present iff encrypted). */
typedef struct dp_codec_snapshot {
    uint32_t       schema_version;               /* DP_CODEC_SNAPSHOT_VERSION or _CAS */
    const char    *stream_id;
    size_t         stream_id_len;
    uint64_t       last_closed_step;             /* 0: none closed yet */
    const char    *input_topic;                  /* NUL-terminated, non-empty */
    int32_t        input_partition;              /* >= 0 */
    int64_t        input_offset;                 /* >= 0 */
    const char    *synthesizer;                  /* NUL-terminated, non-empty */
    const uint8_t *state;
    size_t         state_len;
    const uint8_t *ledger;
    size_t         ledger_len;
    uint32_t       chunk_index;
    uint32_t       chunk_count;                  /* 1 .. INT32_MAX */
    int            encrypted;
    uint8_t        nonce[DP_CODEC_NONCE_BYTES];  /* meaningful iff encrypted */
} dp_codec_snapshot;

/* --- encode ----------------------------------------------------------------- */

int dp_codec_encode_update(dp_codec *c, const dp_update *u, void *buf, size_t cap,
                           size_t *len, char *errstr, size_t errstr_size);
int dp_codec_encode_chunk(dp_codec *c, const dp_codec_chunk *ch, void *buf, size_t cap,
                          size_t *len, char *errstr, size_t errstr_size);
int dp_codec_encode_manifest(dp_codec *c, const dp_codec_manifest *m, void *buf, size_t cap,
                             size_t *len, char *errstr, size_t errstr_size);
/* Doubles delta / eps_simple / eps_cks that are NaN are written as null
 * (and read back as NaN); status must be ACTIVE or EXHAUSTED, neighbors
 * "replace" or "add_remove", model zCDP or pure. */
int dp_codec_encode_budget(dp_codec *c, const dp_budget_event *e, void *buf, size_t cap,
                           size_t *len, char *errstr, size_t errstr_size);
int dp_codec_encode_dead_letter(dp_codec *c, const dp_codec_dead_letter *d, void *buf,
                                size_t cap, size_t *len, char *errstr, size_t errstr_size);
int dp_codec_encode_snapshot(dp_codec *c, const dp_codec_snapshot *s, void *buf, size_t cap,
                             size_t *len, char *errstr, size_t errstr_size);

/* The same, appending to *out (which grows; out->failed latches ENOMEM). */
int dp_codec_encode_update_buf(dp_codec *c, const dp_update *u, dp_buf *out,
                               char *errstr, size_t errstr_size);
int dp_codec_encode_chunk_buf(dp_codec *c, const dp_codec_chunk *ch, dp_buf *out,
                              char *errstr, size_t errstr_size);
/* dp_codec_encode_chunk_buf that also adds the chunk's records to the
 * release checksum h, in order — what dp_codec_checksum_add of each record
 * would add, without encoding them twice. */
int dp_codec_encode_chunk_hashed(dp_codec *c, const dp_codec_chunk *ch, dp_buf *out, dp_codec_checksum *h,
                                 char *errstr, size_t errstr_size);
int dp_codec_encode_manifest_buf(dp_codec *c, const dp_codec_manifest *m, dp_buf *out,
                                 char *errstr, size_t errstr_size);
int dp_codec_encode_budget_buf(dp_codec *c, const dp_budget_event *e, dp_buf *out,
                               char *errstr, size_t errstr_size);
int dp_codec_encode_dead_letter_buf(dp_codec *c, const dp_codec_dead_letter *d, dp_buf *out,
                                    char *errstr, size_t errstr_size);
int dp_codec_encode_snapshot_buf(dp_codec *c, const dp_codec_snapshot *s, dp_buf *out,
                                 char *errstr, size_t errstr_size);

/* --- writer schemas of Update (Avro schema resolution) -----------------------
 *
 * Upstream producers may write Updates with another version of the Update
 * schema than dpstream's (schemas/Update.avsc), registered in a schema
 * registry under another id.  With resolve_update_writers, the decoder
 * reads such a message with Avro schema resolution against dpstream's own
 * schema (the reader's):
 *   * a field both schemas have must have the same type in both (the
 *     records, enums and unions inside it included, named types with
 *     their full names, org.dpstream.v1.*: avro_schema_equal);
 *   * a field only the writer has is read and dropped;
 *   * a field only the reader has takes the reader's default — which only
 *     entity, payload and event_time have (null); a writer without stream,
 *     step or kind cannot be read;
 *   * the writer's record must be named Update (its own namespace is free).
 * That is Avro's resolution restricted to what avro-c 1.11 can be trusted
 * with (it cannot fill reader defaults itself, docs/kafka.md §4): a writer a full
 * Avro implementation would also resolve through type promotion (e.g. an
 * int step) is refused as incompatible — conservative, never a misread.
 * The decision is a pure function of the writer schema's text, which a
 * registry never changes for an id, so a replay decides the same way.
 *
 * The exact own id keeps the direct decoder (codec_update_decode.c); other
 * ids are re-encoded in dpstream's schema and then go through the same
 * decoder, so both paths apply the same Update rules. */

/* The schema id of a Confluent-framed message: DP_OK and *id, or DP_EINVAL
 * if data is shorter than the header or does not start with byte 0x00. */
int dp_codec_framed_id(const void *data, size_t len, uint32_t *id);
/* 1 if the codec decodes Updates framed with id without further help (the
 * own id, or a writer schema already added), 0 if the caller must first
 * dp_codec_add_update_writer it. */
int dp_codec_update_writer_known(const dp_codec *c, uint32_t id);
/* Tell the codec the writer schema of id: its JSON text, or NULL if the
 * registry has no schema with that id.  DP_OK if Updates framed with id
 * can be read (from now on they decode), DP_ESCHEMA if not (why in errstr;
 * from now on they fail to decode with DP_ESCHEMA), DP_ENOMEM. */
int dp_codec_add_update_writer(dp_codec *c, uint32_t id, const char *schema_json,
                               char *errstr, size_t errstr_size);

/* --- decode ----------------------------------------------------------------- */

/* Update rules (the same as the JSON reader's, update_json.h): stream
 * non-empty; step >= 1; entity non-empty when present; CLOSE_STEP carries
 * neither entity nor payload; coordinates finite.  Decoded directly from
 * the Avro binary (codec_update_decode.c), not through avro-c: the result's
 * strings borrow from `data` and are NOT NUL-terminated (use the lengths),
 * its payload array from the codec (valid until the next Update decode on
 * this codec).  With resolve_update_writers, an Update framed with another
 * id decodes through its writer schema (strings then borrow from the
 * store, not from data), or fails with DP_ESCHEMA (the writer schema cannot
 * be resolved, or the registry has none with that id) or DP_ENOTFOUND (the
 * writer schema was not added yet: add it and decode again). */
int dp_codec_decode_update(dp_codec *c, const void *data, size_t len, dp_update *out,
                           char *errstr, size_t errstr_size);
/* Storage for decoded Row / Point payloads, owned by the caller, so that
 * many decoded updates can be held at once (one store per update: the
 * processor decodes a whole poll batch before ingesting it).  Zero-init;
 * grows as needed; dp_update_store_free releases it. */
typedef struct dp_update_store {
    int32_t *ints;
    size_t   ints_cap;
    double  *dbls;
    size_t   dbls_cap;
    uint8_t *bytes;      /* an Update re-encoded from another writer schema */
    size_t   bytes_cap;
} dp_update_store;
/* dp_codec_decode_update with the payload arrays in *store: the result
 * borrows strings from `data` and arrays from `store`, and stays valid
 * while both do (other decodes on the codec do not touch it). */
int dp_codec_decode_update_into(dp_codec *c, const void *data, size_t len, dp_update *out,
                                dp_update_store *store, char *errstr, size_t errstr_size);
void dp_update_store_free(dp_update_store *s);
/* Room for `need` ints (is_double = 0) or doubles in the store.  DP_OK or
 * DP_ENOMEM. */
int  dp_update_store_reserve(dp_update_store *s, int is_double, size_t need);
int dp_codec_decode_chunk(dp_codec *c, const void *data, size_t len, dp_codec_chunk *out,
                          char *errstr, size_t errstr_size);
int dp_codec_decode_manifest(dp_codec *c, const void *data, size_t len, dp_codec_manifest *out,
                             char *errstr, size_t errstr_size);
int dp_codec_decode_budget(dp_codec *c, const void *data, size_t len, dp_budget_event *out,
                           char *errstr, size_t errstr_size);
int dp_codec_decode_dead_letter(dp_codec *c, const void *data, size_t len,
                                dp_codec_dead_letter *out, char *errstr, size_t errstr_size);
/* Refuses schema_version != DP_CODEC_SNAPSHOT_VERSION (migrations belong
 * here, in code: avro-c cannot resolve added fields with defaults). */
int dp_codec_decode_snapshot(dp_codec *c, const void *data, size_t len, dp_codec_snapshot *out,
                             char *errstr, size_t errstr_size);

#endif
