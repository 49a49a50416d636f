/* test_codec.c — the Avro codec (processor/codec): the embedded schemas
 * equal schemas/<Name>.avsc, every message type round-trips in both framings
 * (every payload variant), the encoding matches the Avro specification
 * byte for byte on hand-built vectors, the release checksum is what
 * ReleaseManifest.avsc defines, and unencodable structs are refused.
 * Malformed input and value reuse: test_codec_malformed.c. */
#include "codec_testkit.h"

/* --- schemas ---------------------------------------------------------------------------- */

static char *read_schema_file(const char *name, size_t *len)
{
    const char *root = getenv("DPSTREAM_SOURCE_DIR");
    char path[1024];
    if (root && *root) {
        snprintf(path, sizeof path, "%s/schemas/%s", root, name);
    } else {
        /* __FILE__ is tests/unit/test_codec.c under the source root */
        snprintf(path, sizeof path, "%s", __FILE__);
        char *slash = strrchr(path, '/');
        CU_ASSERT_FATAL(slash != NULL);
        snprintf(slash, sizeof path - (size_t)(slash - path), "/../../schemas/%s", name);
    }
    FILE *f = fopen(path, "rb");
    if (!f)
        fprintf(stderr, "cannot open %s\n", path);
    CU_ASSERT_FATAL(f != NULL);
    char *buf = malloc(1 << 16);
    CU_ASSERT_FATAL(buf != NULL);
    *len = fread(buf, 1, (1 << 16) - 1, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

/* Every record schema and every field carries a "doc". */
static void check_docs(json_t *t, const char *where, int *n_fields)
{
    if (json_is_array(t)) {
        size_t i;
        json_t *b;
        json_array_foreach(t, i, b) check_docs(b, where, n_fields);
        return;
    }
    if (!json_is_object(t))
        return;
    const char *type = json_string_value(json_object_get(t, "type"));
    if (type && strcmp(type, "record") == 0) {
        if (!json_is_string(json_object_get(t, "doc")))
            fprintf(stderr, "%s: record without doc\n", where);
        CU_ASSERT(json_is_string(json_object_get(t, "doc")));
        size_t i;
        json_t *fld;
        json_array_foreach(json_object_get(t, "fields"), i, fld)
        {
            (*n_fields)++;
            if (!json_is_string(json_object_get(fld, "doc")))
                fprintf(stderr, "%s: field %s without doc\n", where,
                        json_string_value(json_object_get(fld, "name")));
            CU_ASSERT(json_is_string(json_object_get(fld, "doc")));
            check_docs(json_object_get(fld, "type"), where, n_fields);
        }
    } else if (type && strcmp(type, "array") == 0) {
        check_docs(json_object_get(t, "items"), where, n_fields);
    } else if (json_is_object(json_object_get(t, "type")) || json_is_array(json_object_get(t, "type"))) {
        check_docs(json_object_get(t, "type"), where, n_fields);
    }
}

static void test_schemas_match_files(void)
{
    for (int t = 0; t < DP_CODEC_TYPE_COUNT; t++) {
        size_t len;
        char *file = read_schema_file(dp_codec_schema_file((dp_codec_type)t), &len);
        const char *emb = dp_codec_schema_json((dp_codec_type)t);
        CU_ASSERT_FATAL(emb != NULL);
        int same = strlen(emb) == len && memcmp(emb, file, len) == 0;
        if (!same)
            fprintf(stderr, "embedded %s differs from schemas/%s: run python3 schemas/embed.py\n",
                    dp_codec_type_name((dp_codec_type)t), dp_codec_schema_file((dp_codec_type)t));
        CU_ASSERT(same);
        json_error_t jerr;
        json_t *j = json_loadb(file, len, 0, &jerr);
        CU_ASSERT_FATAL(j != NULL);
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "name")),
                               dp_codec_type_name((dp_codec_type)t));
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "namespace")), "org.dpstream.v1");
        int n_fields = 0;
        check_docs(j, dp_codec_type_name((dp_codec_type)t), &n_fields);
        CU_ASSERT(n_fields >= 6);
        json_decref(j);
        free(file);
    }
    CU_ASSERT_PTR_NULL(dp_codec_schema_json(DP_CODEC_TYPE_COUNT));
}

/* --- round trips -------------------------------------------------------------------------- */

static void test_update_round_trip(void)
{
    for (int f = 0; f < 2; f++) {
        dp_codec *c = new_codec(FRAMINGS[f]);
        for (int v = 0; v < 21; v++) {
            dp_update u = sample_update(v);
            size_t len;
            uint8_t *enc = encode_both(c, enc_update, encb_update, &u, &len);
            if (FRAMINGS[f] == DP_CODEC_FRAMING_CONFLUENT) {
                CU_ASSERT_EQUAL(enc[0], 0);
                uint32_t id = (uint32_t)enc[1] << 24 | (uint32_t)enc[2] << 16 | (uint32_t)enc[3] << 8 | enc[4];
                CU_ASSERT_EQUAL(id, 100u);
            }
            dp_update d;
            char err[256] = "";
            int rc = dp_codec_decode_update(c, enc, len, &d, err, sizeof err);
            if (rc != DP_OK)
                fprintf(stderr, "decode variant %d: %s\n", v, err);
            CU_ASSERT_FATAL(rc == DP_OK);
            CU_ASSERT(update_eq(&u, &d));
            /* Decoded -> encoded again gives the same bytes. */
            size_t len2;
            uint8_t *enc2 = encode_both(c, enc_update, encb_update, &d, &len2);
            CU_ASSERT(len2 == len && memcmp(enc, enc2, len) == 0);
            free(enc);
            free(enc2);
        }
        dp_codec_destroy(c);
    }
}

/* Hand-built from the Avro 1.11 specification (zigzag varints, unions as
 * branch index + value, doubles little-endian, arrays as blocks). */
static void test_update_golden_bytes(void)
{
    static const uint8_t expect_cat[] = {
        0x02, 's',          /* stream "s" */
        0x02,               /* step 1 */
        0x00,               /* kind REPORT */
        0x02, 0x02, 'u',    /* entity: branch 1, "u" */
        0x02, 0x06,         /* payload: branch 1 (Category), value 3 */
        0x00,               /* event_time: null */
    };
    static const uint8_t expect_point[] = {
        0x02, 's', 0x04,    /* stream "s", step 2 */
        0x04,               /* kind DELETE */
        0x00,               /* entity null */
        0x06,               /* payload branch 3 (Point) */
        0x02,               /* one item */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe0, 0x3f,   /* 0.5 */
        0x00,               /* end of array */
        0x02, 0x80, 0x01,   /* event_time: branch 1, 64 */
    };
    static const double half = 0.5;
    dp_update cat = {.stream_id = "s", .stream_id_len = 1, .step = 1, .kind = DP_UPDATE_REPORT,
                     .entity_id = "u", .entity_id_len = 1,
                     .payload = {.kind = DP_PAYLOAD_CATEGORY, .category = 3}};
    dp_update pt = {.stream_id = "s", .stream_id_len = 1, .step = 2, .kind = DP_UPDATE_DELETE,
                    .payload = {.kind = DP_PAYLOAD_POINT, .point = &half, .point_len = 1},
                    .has_event_time = 1, .event_time_ms = 64};
    for (int f = 0; f < 2; f++) {
        dp_codec *c = new_codec(FRAMINGS[f]);
        size_t h = FRAMINGS[f] == DP_CODEC_FRAMING_CONFLUENT ? 5 : 0;
        uint8_t buf[64];
        size_t len;
        char err[256];
        CU_ASSERT_FATAL(dp_codec_encode_update(c, &cat, buf, sizeof buf, &len, err, sizeof err) == DP_OK);
        CU_ASSERT_EQUAL(len, h + sizeof expect_cat);
        CU_ASSERT(memcmp(buf + h, expect_cat, sizeof expect_cat) == 0);
        if (h) {
            static const uint8_t hdr[] = {0x00, 0x00, 0x00, 0x00, 100};
            CU_ASSERT(memcmp(buf, hdr, 5) == 0);
        }
        CU_ASSERT_FATAL(dp_codec_encode_update(c, &pt, buf, sizeof buf, &len, err, sizeof err) == DP_OK);
        CU_ASSERT_EQUAL(len, h + sizeof expect_point);
        CU_ASSERT(memcmp(buf + h, expect_point, sizeof expect_point) == 0);
        dp_codec_destroy(c);
    }
}

/* A spec-valid encoding avro-c itself never writes: an array block with a
 * negative count followed by its byte size.  Decoded like the plain form;
 * a wrong byte size is refused. */
static void test_negative_block_count(void)
{
    uint8_t msg[] = {
        0x02, 's', 0x02, 0x02 /* INSERT */, 0x00 /* no entity */,
        0x04,             /* payload branch 2 (CategoricalRow) */
        0x03, 0x04,       /* block count -2, block size 2 bytes */
        0x02, 0x08,       /* 1, 4 */
        0x00,             /* end */
        0x00,             /* no event time */
    };
    dp_codec *c = new_codec(DP_CODEC_FRAMING_PLAIN);
    dp_update d;
    char err[256];
    CU_ASSERT_FATAL(dp_codec_decode_update(c, msg, sizeof msg, &d, err, sizeof err) == DP_OK);
    CU_ASSERT_EQUAL(d.payload.kind, DP_PAYLOAD_ROW);
    CU_ASSERT_EQUAL(d.payload.row_len, 2);
    CU_ASSERT(d.payload.row_len == 2 && d.payload.row[0] == 1 && d.payload.row[1] == 4);
    msg[7] = 0x06;   /* claim 3 bytes */
    CU_ASSERT_EQUAL(dp_codec_decode_update(c, msg, sizeof msg, &d, err, sizeof err), DP_EINVAL);
    dp_codec_destroy(c);
}

static void check_chunk_eq(const dp_codec_chunk *a, const dp_codec_chunk *b)
{
    CU_ASSERT(str_eq(a->stream_id, a->stream_id_len, b->stream_id, b->stream_id_len));
    CU_ASSERT_EQUAL(a->step, b->step);
    CU_ASSERT_EQUAL(a->chunk_index, b->chunk_index);
    CU_ASSERT_FATAL(a->n_records == b->n_records);
    for (size_t i = 0; i < a->n_records; i++) {
        CU_ASSERT_EQUAL(a->records[i].synthetic_id, b->records[i].synthetic_id);
        CU_ASSERT(payload_eq(&a->records[i].value, &b->records[i].value));
    }
}

/* Length of the Avro long varint of v. */
static size_t varint_len(int64_t v)
{
    uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    size_t n = 1;
    while (u >= 0x80) {
        u >>= 7;
        n++;
    }
    return n;
}

static void test_chunk_round_trip_and_checksum(void)
{
    make_records();
    for (int f = 0; f < 2; f++) {
        dp_codec *c = new_codec(FRAMINGS[f]);
        size_t h = FRAMINGS[f] == DP_CODEC_FRAMING_CONFLUENT ? 5 : 0;
        /* Header length: an empty chunk is header ‖ 0x00. */
        dp_codec_chunk empty = {.stream_id = STREAM_TEXT, .stream_id_len = STREAM_LEN, .step = 5,
                                .chunk_index = 0, .records = NULL, .n_records = 0};
        size_t elen;
        uint8_t *eenc = encode_both(c, enc_chunk, encb_chunk, &empty, &elen);
        size_t prefix = elen - h - 1;
        dp_codec_chunk dec;
        char err[256];
        CU_ASSERT_FATAL(dp_codec_decode_chunk(c, eenc, elen, &dec, err, sizeof err) == DP_OK);
        check_chunk_eq(&empty, &dec);
        free(eenc);

        /* The release = 64 records, split into chunks of 1, 20 and 43. */
        static const size_t splits[][2] = {{0, 1}, {1, 21}, {21, 64}};
        crypto_generichash_state bytes_hash;
        crypto_generichash_init(&bytes_hash, NULL, 0, 32);
        for (int k = 0; k < 3; k++) {
            size_t lo = splits[k][0], n = splits[k][1] - lo;
            dp_codec_chunk ch = {.stream_id = STREAM_TEXT, .stream_id_len = STREAM_LEN, .step = 5,
                                 .chunk_index = (uint32_t)k, .records = RECORDS + lo, .n_records = n};
            size_t len;
            uint8_t *enc = encode_both(c, enc_chunk, encb_chunk, &ch, &len);
            CU_ASSERT_FATAL(dp_codec_decode_chunk(c, enc, len, &dec, err, sizeof err) == DP_OK);
            check_chunk_eq(&ch, &dec);
            /* The canonical record bytes are the array body of the chunk:
             * after header and block count, before the final 0x00. */
            size_t start = h + prefix + varint_len((int64_t)n);
            CU_ASSERT_FATAL(start < len);
            crypto_generichash_update(&bytes_hash, enc + start, len - 1 - start);
            free(enc);
        }
        uint8_t from_bytes[32], from_api[32];
        crypto_generichash_final(&bytes_hash, from_bytes, 32);
        dp_codec_checksum ck;
        dp_codec_checksum_init(&ck);
        for (size_t i = 0; i < 64; i++)
            CU_ASSERT(dp_codec_checksum_add(&ck, &RECORDS[i]) == DP_OK);
        dp_codec_checksum_final(&ck, from_api);
        CU_ASSERT(memcmp(from_bytes, from_api, 32) == 0);

        /* The checksum sees every record: changing one coordinate's last
         * bit, or the order of two records, changes it. */
        dp_synth_record rec2[2] = {RECORDS[2], RECORDS[1]};
        uint8_t swapped[32], base[32];
        dp_codec_checksum_init(&ck);
        dp_codec_checksum_add(&ck, &RECORDS[1]);
        dp_codec_checksum_add(&ck, &RECORDS[2]);
        dp_codec_checksum_final(&ck, base);
        dp_codec_checksum_init(&ck);
        dp_codec_checksum_add(&ck, &rec2[0]);
        dp_codec_checksum_add(&ck, &rec2[1]);
        dp_codec_checksum_final(&ck, swapped);
        CU_ASSERT(memcmp(base, swapped, 32) != 0);
        /* Empty release: BLAKE2b-256 of the empty string. */
        uint8_t empty_sum[32], empty_ref[32];
        dp_codec_checksum_init(&ck);
        dp_codec_checksum_final(&ck, empty_sum);
        crypto_generichash(empty_ref, 32, NULL, 0, NULL, 0);
        CU_ASSERT(memcmp(empty_sum, empty_ref, 32) == 0);
        dp_codec_destroy(c);
    }
}

static void test_manifest_budget_dead_letter_snapshot_round_trip(void)
{
    for (int f = 0; f < 2; f++) {
        dp_codec *c = new_codec(FRAMINGS[f]);
        char err[256];
        size_t len;
        uint8_t *enc;

        dp_codec_manifest m = sample_manifest(), md;
        enc = encode_both(c, enc_manifest, encb_manifest, &m, &len);
        CU_ASSERT_FATAL(dp_codec_decode_manifest(c, enc, len, &md, err, sizeof err) == DP_OK);
        CU_ASSERT(str_eq(m.m.stream_id, m.m.stream_id_len, md.m.stream_id, md.m.stream_id_len));
        CU_ASSERT_EQUAL(md.m.step, 42);
        CU_ASSERT_STRING_EQUAL(md.m.synthesizer, "window");
        CU_ASSERT_EQUAL(md.m.mode, DP_RELEASE_DELTA);
        CU_ASSERT_EQUAL(md.m.record_count, 1000000);
        CU_ASSERT_EQUAL(md.m.clamped, 1);
        CU_ASSERT(kv_eq(m.m.debias, m.m.n_debias, md.m.debias, md.m.n_debias));
        CU_ASSERT_EQUAL(md.chunk_count, 977);
        CU_ASSERT(memcmp(m.checksum, md.checksum, 32) == 0);
        free(enc);
        /* FULL, unclamped, no debias entries */
        m.m.mode = DP_RELEASE_FULL;
        m.m.clamped = 0;
        m.m.n_debias = 0;
        m.chunk_count = 0;
        enc = encode_both(c, enc_manifest, encb_manifest, &m, &len);
        CU_ASSERT_FATAL(dp_codec_decode_manifest(c, enc, len, &md, err, sizeof err) == DP_OK);
        CU_ASSERT(md.m.mode == DP_RELEASE_FULL && md.m.clamped == 0 && md.m.n_debias == 0 &&
                  md.chunk_count == 0);
        free(enc);
        /* NONE (no dataset yet) holds no records: round-trips with 0, refused with any */
        m.m.mode = DP_RELEASE_NONE;
        m.m.record_count = 0;
        enc = encode_both(c, enc_manifest, encb_manifest, &m, &len);
        CU_ASSERT_FATAL(dp_codec_decode_manifest(c, enc, len, &md, err, sizeof err) == DP_OK);
        CU_ASSERT(md.m.mode == DP_RELEASE_NONE && md.m.record_count == 0);
        free(enc);
        m.m.record_count = 3;
        dp_buf nb;
        dp_buf_init(&nb);
        CU_ASSERT_EQUAL(dp_codec_encode_manifest_buf(c, &m, &nb, err, sizeof err), DP_EINVAL);
        CU_ASSERT(strstr(err, "NONE") != NULL);
        dp_buf_free(&nb);

        for (int pure = 0; pure < 2; pure++) {
            dp_budget_event e = sample_budget(pure), ed;
            enc = encode_both(c, enc_budget, encb_budget, &e, &len);
            CU_ASSERT_FATAL(dp_codec_decode_budget(c, enc, len, &ed, err, sizeof err) == DP_OK);
            CU_ASSERT(str_eq(e.stream_id, e.stream_id_len, ed.stream_id, ed.stream_id_len));
            CU_ASSERT_EQUAL(ed.step, e.step);
            CU_ASSERT_EQUAL(ed.status, e.status);
            CU_ASSERT_STRING_EQUAL(ed.mechanism, e.mechanism);
            CU_ASSERT_STRING_EQUAL(ed.unit, e.unit);
            CU_ASSERT_STRING_EQUAL(ed.neighbors, e.neighbors);
            CU_ASSERT_EQUAL(ed.model, e.model);
            CU_ASSERT(double_same(ed.spent_step, e.spent_step));
            CU_ASSERT(double_same(ed.spent_total, e.spent_total));
            CU_ASSERT(double_same(ed.budget_total, e.budget_total));
            CU_ASSERT(double_same(ed.delta, e.delta));
            CU_ASSERT(double_same(ed.eps_simple, e.eps_simple));
            CU_ASSERT(double_same(ed.eps_cks, e.eps_cks));
            CU_ASSERT(kv_eq(e.noise, e.n_noise, ed.noise, ed.n_noise));
            CU_ASSERT(kv_eq(e.accuracy, e.n_accuracy, ed.accuracy, ed.n_accuracy));
            free(enc);
        }

        for (int v = 0; v < 9; v++) {
            dp_codec_dead_letter d = sample_dead_letter(v), dd;
            enc = encode_both(c, enc_dead_letter, encb_dead_letter, &d, &len);
            CU_ASSERT_FATAL(dp_codec_decode_dead_letter(c, enc, len, &dd, err, sizeof err) == DP_OK);
            CU_ASSERT_STRING_EQUAL(dd.topic, d.topic);
            CU_ASSERT_EQUAL(dd.partition, d.partition);
            CU_ASSERT_EQUAL(dd.offset, d.offset);
            CU_ASSERT_EQUAL(dd.reason, d.reason);
            CU_ASSERT_STRING_EQUAL(dd.text, d.text);
            CU_ASSERT((dd.key == NULL) == (d.key == NULL));
            CU_ASSERT(dd.key_len == d.key_len && (d.key_len == 0 || memcmp(dd.key, d.key, d.key_len) == 0));
            CU_ASSERT(dd.raw_len == d.raw_len && (d.raw_len == 0 || memcmp(dd.raw, d.raw, d.raw_len) == 0));
            free(enc);
        }
        /* Ill-formed UTF-8 in the reason text is replaced, not refused. */
        dp_codec_dead_letter bad = sample_dead_letter(0), bd;
        bad.text = "id \xff\xc3(\xed\xa0\x80 ok \xe2\x82\xac";
        enc = encode_both(c, enc_dead_letter, encb_dead_letter, &bad, &len);
        CU_ASSERT_FATAL(dp_codec_decode_dead_letter(c, enc, len, &bd, err, sizeof err) == DP_OK);
        CU_ASSERT_STRING_EQUAL(bd.text, "id \xef\xbf\xbd\xef\xbf\xbd(\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                                        " ok \xe2\x82\xac");
        free(enc);

        for (int encr = 0; encr < 2; encr++) {
            dp_codec_snapshot s = sample_snapshot(encr), sd;
            enc = encode_both(c, enc_snapshot, encb_snapshot, &s, &len);
            CU_ASSERT_FATAL(dp_codec_decode_snapshot(c, enc, len, &sd, err, sizeof err) == DP_OK);
            CU_ASSERT_EQUAL(sd.schema_version, DP_CODEC_SNAPSHOT_VERSION);
            CU_ASSERT(str_eq(s.stream_id, s.stream_id_len, sd.stream_id, sd.stream_id_len));
            CU_ASSERT_EQUAL(sd.last_closed_step, s.last_closed_step);
            CU_ASSERT_STRING_EQUAL(sd.input_topic, s.input_topic);
            CU_ASSERT_EQUAL(sd.input_partition, s.input_partition);
            CU_ASSERT_EQUAL(sd.input_offset, s.input_offset);
            CU_ASSERT_STRING_EQUAL(sd.synthesizer, s.synthesizer);
            CU_ASSERT(sd.state_len == s.state_len && memcmp(sd.state, s.state, s.state_len) == 0);
            CU_ASSERT(sd.ledger_len == s.ledger_len &&
                      (s.ledger_len == 0 || memcmp(sd.ledger, s.ledger, s.ledger_len) == 0));
            CU_ASSERT_EQUAL(sd.chunk_index, s.chunk_index);
            CU_ASSERT_EQUAL(sd.chunk_count, s.chunk_count);
            CU_ASSERT_EQUAL(sd.encrypted, s.encrypted);
            CU_ASSERT(!encr || memcmp(sd.nonce, s.nonce, DP_CODEC_NONCE_BYTES) == 0);
            free(enc);
        }
        dp_codec_destroy(c);
    }
}

/* Decoding one type does not invalidate the borrowed result of another. */
static void test_decodes_of_different_types_coexist(void)
{
    dp_codec *c = new_codec(DP_CODEC_FRAMING_PLAIN);
    char err[256];
    dp_update u = sample_update(5), ud, ud2;
    dp_budget_event e = sample_budget(0), ed;
    dp_buf bu, be;
    dp_buf_init(&bu);
    dp_buf_init(&be);
    CU_ASSERT_FATAL(dp_codec_encode_update_buf(c, &u, &bu, err, sizeof err) == DP_OK);
    CU_ASSERT_FATAL(dp_codec_encode_budget_buf(c, &e, &be, err, sizeof err) == DP_OK);
    CU_ASSERT_FATAL(dp_codec_decode_update(c, bu.data, bu.len, &ud, err, sizeof err) == DP_OK);
    CU_ASSERT_FATAL(dp_codec_decode_budget(c, be.data, be.len, &ed, err, sizeof err) == DP_OK);
    CU_ASSERT(update_eq(&u, &ud));
    CU_ASSERT_STRING_EQUAL(ed.mechanism, e.mechanism);
    /* ...while a second decode of the same type replaces the first. */
    dp_update u2 = sample_update(3);
    dp_buf_free(&bu);
    dp_buf_init(&bu);
    CU_ASSERT_FATAL(dp_codec_encode_update_buf(c, &u2, &bu, err, sizeof err) == DP_OK);
    CU_ASSERT_FATAL(dp_codec_decode_update(c, bu.data, bu.len, &ud2, err, sizeof err) == DP_OK);
    CU_ASSERT(update_eq(&u2, &ud2));
    dp_buf_free(&bu);
    dp_buf_free(&be);
    dp_codec_destroy(c);
}

/* --- refusals on encode ----------------------------------------------------------------- */

static void test_encode_refusals(void)
{
    dp_codec *c = new_codec(DP_CODEC_FRAMING_PLAIN);
    uint8_t buf[4096];
    size_t len;
    char err[256];
    static const double bad_pt[] = {0.5, NAN};
    static const double inf_pt[] = {INFINITY};

    dp_update u = sample_update(1);
    u.stream_id_len = 0;
    CU_ASSERT_EQUAL(dp_codec_encode_update(c, &u, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    u = sample_update(1);
    u.stream_id = "a\0b";
    u.stream_id_len = 3;
    CU_ASSERT_EQUAL(dp_codec_encode_update(c, &u, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    u = sample_update(1);
    u.stream_id = "\xc0\xaf";   /* overlong '/' */
    u.stream_id_len = 2;
    CU_ASSERT_EQUAL(dp_codec_encode_update(c, &u, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    u = sample_update(1);
    u.step = 0;
    CU_ASSERT_EQUAL(dp_codec_encode_update(c, &u, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    u.step = (uint64_t)INT64_MAX + 1;
    CU_ASSERT_EQUAL(dp_codec_encode_update(c, &u, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    u = sample_update(1);
    u.kind = DP_UPDATE_CLOSE_STEP;   /* with entity and payload */
    CU_ASSERT_EQUAL(dp_codec_encode_update(c, &u, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    u = sample_update(1);
    u.entity_id_len = 0;             /* present but empty */
    CU_ASSERT_EQUAL(dp_codec_encode_update(c, &u, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    u = sample_update(5);
    u.payload.point = bad_pt;
    u.payload.point_len = 2;
    CU_ASSERT_EQUAL(dp_codec_encode_update(c, &u, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    u.payload.point = inf_pt;
    u.payload.point_len = 1;
    CU_ASSERT_EQUAL(dp_codec_encode_update(c, &u, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);

    dp_synth_record r = {.synthetic_id = 1, .value = {.kind = DP_PAYLOAD_NONE}};
    dp_codec_chunk ch = {.stream_id = "s", .stream_id_len = 1, .step = 1, .records = &r, .n_records = 1};
    CU_ASSERT_EQUAL(dp_codec_encode_chunk(c, &ch, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    dp_codec_checksum ck;
    dp_codec_checksum_init(&ck);
    CU_ASSERT_EQUAL(dp_codec_checksum_add(&ck, &r), DP_EINVAL);
    r.value.kind = DP_PAYLOAD_CATEGORY;
    r.synthetic_id = (uint64_t)INT64_MAX + 1;
    CU_ASSERT_EQUAL(dp_codec_encode_chunk(c, &ch, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_codec_checksum_add(&ck, &r), DP_EINVAL);

    dp_codec_manifest m = sample_manifest();
    m.m.synthesizer = "";
    CU_ASSERT_EQUAL(dp_codec_encode_manifest(c, &m, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    m = sample_manifest();
    m.chunk_count = (uint32_t)INT32_MAX + 1;
    CU_ASSERT_EQUAL(dp_codec_encode_manifest(c, &m, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);

    dp_budget_event e = sample_budget(0);
    e.neighbors = "swap";
    CU_ASSERT_EQUAL(dp_codec_encode_budget(c, &e, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    e = sample_budget(0);
    e.model = (dp_privacy_model)0;
    CU_ASSERT_EQUAL(dp_codec_encode_budget(c, &e, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    e = sample_budget(0);
    dp_kv nameless[] = {{NULL, 1.0}};
    e.noise = nameless;
    e.n_noise = 1;
    CU_ASSERT_EQUAL(dp_codec_encode_budget(c, &e, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);

    dp_codec_dead_letter d = sample_dead_letter(0);
    d.reason = DP_REJECT_NONE;
    CU_ASSERT_EQUAL(dp_codec_encode_dead_letter(c, &d, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);

    dp_codec_snapshot s = sample_snapshot(1);
    s.chunk_index = 3;
    CU_ASSERT_EQUAL(dp_codec_encode_snapshot(c, &s, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    s = sample_snapshot(0);
    s.schema_version = 3;   /* 1 and 2 (incremental) are written */
    CU_ASSERT_EQUAL(dp_codec_encode_snapshot(c, &s, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);
    s = sample_snapshot(0);
    s.input_offset = -1;
    CU_ASSERT_EQUAL(dp_codec_encode_snapshot(c, &s, buf, sizeof buf, &len, err, sizeof err), DP_EINVAL);

    /* A refused encode leaves the codec usable. */
    u = sample_update(3);
    CU_ASSERT_EQUAL(dp_codec_encode_update(c, &u, buf, sizeof buf, &len, err, sizeof err), DP_OK);
    dp_codec_destroy(c);
}

static const dptest_case CASES[] = {
    {"embedded schemas equal schemas/<Name>.avsc, every field documented", test_schemas_match_files},
    {"Update round trip, every payload variant, both framings", test_update_round_trip},
    {"Update bytes equal hand-built Avro vectors", test_update_golden_bytes},
    {"negative array block count (spec-valid) decodes; wrong size refused", test_negative_block_count},
    {"SyntheticRecord chunks round trip; checksum = BLAKE2b of canonical bytes", test_chunk_round_trip_and_checksum},
    {"ReleaseManifest, BudgetEvent, DeadLetter, Snapshot round trip", test_manifest_budget_dead_letter_snapshot_round_trip},
    {"decodes of different types coexist", test_decodes_of_different_types_coexist},
    {"unencodable structs are refused", test_encode_refusals},
    {NULL, NULL},
};

int main(void)
{
    /* Before anything touches avro-c, so every block carries our header. */
    avro_set_allocator(counting_alloc, NULL);
    return dptest_run("codec", CASES);
}
