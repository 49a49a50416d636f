/* test_codec_malformed.c — the Avro codec (processor/codec) on bad input:
 * malformed input of every kind (every truncation, random garbage,
 * mutations, crafted length bombs, wrong magic byte, wrong schema id) is
 * refused with an error and without large allocations, reused value
 * objects do not grow over 10^5 messages, and destroy releases all of
 * avro-c's memory — measured with codec_testkit.h's counting allocator. */
#include "codec_testkit.h"

/* --- malformed input ----------------------------------------------------------------------- */

/* One valid encoding of every type (varied content). */
static uint8_t *valid_message(dp_codec *c, dp_codec_type t, int variant, size_t *len)
{
    dp_buf b;
    dp_buf_init(&b);
    char err[256];
    int rc = DP_EINVAL;
    make_records();
    switch (t) {
    case DP_CODEC_UPDATE: {
        dp_update u = sample_update(variant);
        rc = dp_codec_encode_update_buf(c, &u, &b, err, sizeof err);
        break;
    }
    case DP_CODEC_SYNTHETIC_RECORD: {
        dp_codec_chunk ch = {.stream_id = STREAM_TEXT, .stream_id_len = STREAM_LEN, .step = 3,
                             .chunk_index = (uint32_t)variant, .records = RECORDS + variant % 8,
                             .n_records = 5 + (size_t)variant % 9};
        rc = dp_codec_encode_chunk_buf(c, &ch, &b, err, sizeof err);
        break;
    }
    case DP_CODEC_RELEASE_MANIFEST: {
        dp_codec_manifest m = sample_manifest();
        m.m.n_debias = (size_t)variant % 4;
        rc = dp_codec_encode_manifest_buf(c, &m, &b, err, sizeof err);
        break;
    }
    case DP_CODEC_BUDGET_EVENT: {
        dp_budget_event e = sample_budget(variant & 1);
        rc = dp_codec_encode_budget_buf(c, &e, &b, err, sizeof err);
        break;
    }
    case DP_CODEC_DEAD_LETTER: {
        dp_codec_dead_letter d = sample_dead_letter(variant % 3);
        rc = dp_codec_encode_dead_letter_buf(c, &d, &b, err, sizeof err);
        break;
    }
    case DP_CODEC_SNAPSHOT: {
        dp_codec_snapshot s = sample_snapshot(variant & 1);
        rc = dp_codec_encode_snapshot_buf(c, &s, &b, err, sizeof err);
        break;
    }
    default:
        break;
    }
    CU_ASSERT_FATAL(rc == DP_OK);
    *len = b.len;
    return b.data;
}

/* Every strict prefix of a datum is refused (Avro's binary encoding of a
 * record is prefix-free: each field is needed).  Each prefix is copied to
 * an exact-size heap block so ASan catches any read past its end. */
static void test_truncated_at_every_length(void)
{
    size_t refused = 0;
    reset_peak();
    size_t live0 = g_live;
    for (int f = 0; f < 2; f++) {
        dp_codec *c = new_codec(FRAMINGS[f]);
        for (int t = 0; t < DP_CODEC_TYPE_COUNT; t++) {
            for (int variant = 0; variant < 4; variant++) {
                size_t len;
                uint8_t *msg = valid_message(c, (dp_codec_type)t, variant, &len);
                char err[256];
                CU_ASSERT_EQUAL(decode_any(c, (dp_codec_type)t, msg, len, err, sizeof err), DP_OK);
                for (size_t cut = 0; cut < len; cut++) {
                    uint8_t *p = malloc(cut ? cut : 1);
                    CU_ASSERT_FATAL(p != NULL);
                    memcpy(p, msg, cut);
                    err[0] = '\0';
                    int rc = decode_any(c, (dp_codec_type)t, cut ? p : NULL, cut, err, sizeof err);
                    if (rc != DP_EINVAL)
                        fprintf(stderr, "%s cut at %zu of %zu: rc %d\n",
                                dp_codec_type_name((dp_codec_type)t), cut, len, rc);
                    CU_ASSERT_EQUAL(rc, DP_EINVAL);
                    CU_ASSERT(err[0] != '\0');
                    refused += rc == DP_EINVAL;
                    free(p);
                }
                /* One byte too many is refused as well. */
                uint8_t *longer = malloc(len + 1);
                memcpy(longer, msg, len);
                longer[len] = 0;
                CU_ASSERT_EQUAL(decode_any(c, (dp_codec_type)t, longer, len + 1, err, sizeof err),
                                DP_EINVAL);
                free(longer);
                free(msg);
            }
        }
        dp_codec_destroy(c);
    }
    CU_ASSERT(refused > 1000);
    CU_ASSERT_EQUAL(g_live, live0);
    printf("\n    truncation: %zu prefixes refused; avro peak %zu bytes above baseline\n", refused,
           g_peak - live0);
}

static void test_framing_errors(void)
{
    dp_codec *plain = new_codec(DP_CODEC_FRAMING_PLAIN);
    dp_codec *conf = new_codec(DP_CODEC_FRAMING_CONFLUENT);
    char err[256];
    dp_update d;
    size_t len;
    uint8_t *msg = valid_message(conf, DP_CODEC_UPDATE, 1, &len);
    CU_ASSERT_EQUAL(dp_codec_decode_update(conf, msg, len, &d, err, sizeof err), DP_OK);
    /* Wrong magic byte. */
    msg[0] = 1;
    CU_ASSERT_EQUAL(dp_codec_decode_update(conf, msg, len, &d, err, sizeof err), DP_EINVAL);
    CU_ASSERT(strstr(err, "magic") != NULL);
    msg[0] = 0;
    /* Wrong schema id: one bit off in each byte of the id. */
    for (int i = 1; i <= 4; i++) {
        msg[i] ^= 0x10;
        CU_ASSERT_EQUAL(dp_codec_decode_update(conf, msg, len, &d, err, sizeof err), DP_EINVAL);
        CU_ASSERT(strstr(err, "schema id") != NULL);
        msg[i] ^= 0x10;
    }
    /* The id of another message type is refused too. */
    size_t blen;
    uint8_t *budget = valid_message(conf, DP_CODEC_BUDGET_EVENT, 0, &blen);
    CU_ASSERT_EQUAL(dp_codec_decode_update(conf, budget, blen, &d, err, sizeof err), DP_EINVAL);
    CU_ASSERT(strstr(err, "schema id") != NULL);
    /* A framed message given to a plain codec does not parse as an Update
     * (0x00 is the empty stream id, refused). */
    CU_ASSERT_EQUAL(dp_codec_decode_update(plain, msg, len, &d, err, sizeof err), DP_EINVAL);
    /* And a plain message to a framed codec: first byte 0x12 is no magic. */
    size_t plen;
    uint8_t *pm = valid_message(plain, DP_CODEC_UPDATE, 1, &plen);
    CU_ASSERT_EQUAL(dp_codec_decode_update(conf, pm, plen, &d, err, sizeof err), DP_EINVAL);
    /* Empty and NULL input. */
    CU_ASSERT_EQUAL(dp_codec_decode_update(conf, NULL, 0, &d, err, sizeof err), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_codec_decode_update(plain, NULL, 0, &d, err, sizeof err), DP_EINVAL);
    CU_ASSERT_EQUAL(dp_codec_decode_update(plain, NULL, 5, &d, err, sizeof err), DP_EINVAL);
    free(msg);
    free(budget);
    free(pm);
    dp_codec_destroy(plain);
    dp_codec_destroy(conf);
}

/* Crafted bodies: each is well-formed up to one defect. */
static void test_crafted_malformed(void)
{
    dp_codec *c = new_codec(DP_CODEC_FRAMING_PLAIN);
    struct {
        const char *what;
        uint8_t bytes[40];
        size_t len;
    } cases[] = {
        /* stream length 2^62: a length bomb avro-c would try to allocate */
        {"huge string length", {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 's'}, 11},
        {"negative string length", {0x01, 's', 0x02, 0x00, 0x00, 0x00, 0x00}, 7},
        {"11-byte varint", {0x02, 's', 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00,
                            0x00, 0x00, 0x00, 0x00}, 17},
        {"10th varint byte too large", {0x02, 's', 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                        0x02, 0x00, 0x00, 0x00, 0x00}, 16},
        {"enum index 4", {0x02, 's', 0x02, 0x08, 0x00, 0x00, 0x00}, 7},
        {"enum index -1", {0x02, 's', 0x02, 0x01, 0x00, 0x00, 0x00}, 7},
        {"union branch 2 of 2", {0x02, 's', 0x02, 0x00, 0x04, 0x00, 0x00}, 7},
        {"payload branch 4 of 4", {0x02, 's', 0x02, 0x00, 0x00, 0x08, 0x00}, 7},
        {"array count beyond input", {0x02, 's', 0x02, 0x02, 0x00, 0x04, 0xfe, 0xff, 0xff, 0xff, 0x0f}, 11},
        {"array count INT64_MIN", {0x02, 's', 0x02, 0x02, 0x00, 0x04, 0xff, 0xff, 0xff, 0xff, 0xff,
                                   0xff, 0xff, 0xff, 0xff, 0x01}, 16},
        {"int item wider than 32 bits", {0x02, 's', 0x02, 0x02, 0x00, 0x04, 0x02, 0xff, 0xff, 0xff, 0xff,
                                         0x7f, 0x00, 0x00}, 14},
        {"trailing byte", {0x02, 's', 0x02, 0x06, 0x00, 0x00, 0x00, 0x00}, 8},
        /* well-formed Avro, refused for meaning */
        {"empty stream", {0x00, 0x02, 0x06, 0x00, 0x00, 0x00}, 6},
        {"step 0", {0x02, 's', 0x00, 0x06, 0x00, 0x00, 0x00}, 7},
        {"step -1", {0x02, 's', 0x01, 0x06, 0x00, 0x00, 0x00}, 7},
        {"CLOSE_STEP with entity", {0x02, 's', 0x02, 0x06, 0x02, 0x02, 'u', 0x00, 0x00}, 9},
        {"CLOSE_STEP with payload", {0x02, 's', 0x02, 0x06, 0x00, 0x02, 0x02, 0x00}, 8},
        {"empty entity", {0x02, 's', 0x02, 0x00, 0x02, 0x00, 0x02, 0x02, 0x00}, 9},
        {"stream with NUL", {0x04, 's', 0x00, 0x02, 0x06, 0x00, 0x00, 0x00}, 8},
        {"stream not UTF-8", {0x04, 0xc3, 0x28, 0x02, 0x06, 0x00, 0x00, 0x00}, 8},
        {"surrogate in entity", {0x02, 's', 0x02, 0x00, 0x02, 0x06, 0xed, 0xa0, 0x80, 0x02, 0x02, 0x00}, 12},
        {"NaN coordinate", {0x02, 's', 0x02, 0x02, 0x00, 0x06, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                            0xf8, 0x7f, 0x00, 0x00}, 17},
        {"infinite coordinate", {0x02, 's', 0x02, 0x02, 0x00, 0x06, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00,
                                 0x00, 0xf0, 0xff, 0x00, 0x00}, 17},
    };
    reset_peak();
    size_t live0 = g_live;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dp_update d;
        char err[256] = "";
        uint8_t *p = malloc(cases[i].len);
        memcpy(p, cases[i].bytes, cases[i].len);
        int rc = dp_codec_decode_update(c, p, cases[i].len, &d, err, sizeof err);
        if (rc != DP_EINVAL)
            fprintf(stderr, "crafted '%s' not refused (rc %d)\n", cases[i].what, rc);
        CU_ASSERT_EQUAL(rc, DP_EINVAL);
        CU_ASSERT(err[0] != '\0');
        free(p);
    }
    /* No crafted length made avro-c allocate more than a few KiB. */
    CU_ASSERT(g_peak - live0 < 16384);
    /* Control: the same shape without the defect decodes. */
    static const uint8_t ok[] = {0x02, 's', 0x02, 0x06, 0x00, 0x00, 0x00};
    dp_update d;
    char err[256];
    CU_ASSERT_EQUAL(dp_codec_decode_update(c, ok, sizeof ok, &d, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(d.kind, DP_UPDATE_CLOSE_STEP);

    /* Snapshot of an unknown version; manifest with a negative count;
     * snapshot whose nonce disagrees with its encrypted flag. */
    dp_buf b;
    dp_buf_init(&b);
    dp_codec_snapshot s = sample_snapshot(0), sd;
    CU_ASSERT_FATAL(dp_codec_encode_snapshot_buf(c, &s, &b, err, sizeof err) == DP_OK);
    CU_ASSERT_EQUAL(b.data[0], 0x02);   /* schema_version 1 */
    b.data[0] = 0x04;                   /* version 2: the incremental format, known */
    CU_ASSERT_EQUAL(dp_codec_decode_snapshot(c, b.data, b.len, &sd, err, sizeof err), DP_OK);
    CU_ASSERT_EQUAL(sd.schema_version, 2);
    b.data[0] = 0x06;                   /* version 3 */
    CU_ASSERT_EQUAL(dp_codec_decode_snapshot(c, b.data, b.len, &sd, err, sizeof err), DP_EINVAL);
    CU_ASSERT(strstr(err, "version") != NULL);
    b.data[0] = 0x02;
    CU_ASSERT_EQUAL(b.data[b.len - 2], 0x00);   /* encrypted = false */
    b.data[b.len - 2] = 0x01;                   /* encrypted = true, nonce still null */
    CU_ASSERT_EQUAL(dp_codec_decode_snapshot(c, b.data, b.len, &sd, err, sizeof err), DP_EINVAL);
    dp_buf_free(&b);
    dp_codec_destroy(c);
}

/* Random bytes and random mutations of valid messages: every result is
 * DP_OK or DP_EINVAL, and whatever decodes re-encodes and decodes again
 * (decode enforces exactly what encode does). */
static void test_random_garbage_and_mutations(void)
{
    dp_key key;
    dptest_key(&key, 61);
    dp_drbg g;
    dp_drbg_init(&g, &key, "codec", 5, 1, "test.codec.garbage");
    size_t n_ok = 0, n_bad = 0, n_total = 0;
    reset_peak();
    size_t live0 = g_live;
    for (int f = 0; f < 2; f++) {
        dp_codec *c = new_codec(FRAMINGS[f]);
        for (int t = 0; t < DP_CODEC_TYPE_COUNT; t++) {
            size_t vlen;
            uint8_t *valid = valid_message(c, (dp_codec_type)t, 2, &vlen);
            for (int i = 0; i < 3000; i++) {
                size_t len;
                uint8_t *p;
                if (i % 2 == 0) {
                    /* random bytes, behind a correct header half of the time */
                    len = (size_t)(dp_drbg_u64(&g) % 120);
                    p = malloc(len ? len : 1);
                    for (size_t k = 0; k < len; k++)
                        p[k] = (uint8_t)dp_drbg_u64(&g);
                    if (FRAMINGS[f] == DP_CODEC_FRAMING_CONFLUENT && len >= 5 && i % 4 == 0)
                        memcpy(p, valid, 5);
                } else {
                    /* 1-4 byte mutations of a valid message */
                    len = vlen;
                    p = malloc(len);
                    memcpy(p, valid, len);
                    int muts = 1 + (int)(dp_drbg_u64(&g) % 4);
                    for (int k = 0; k < muts; k++) {
                        size_t at = (size_t)(dp_drbg_u64(&g) % len);
                        p[at] = (uint8_t)dp_drbg_u64(&g);
                    }
                }
                char err[256];
                int rc = decode_any(c, (dp_codec_type)t, p, len, err, sizeof err);
                CU_ASSERT(rc == DP_OK || rc == DP_EINVAL);
                n_total++;
                if (rc == DP_OK) {
                    n_ok++;
                    /* re-encode what was decoded (only the Update here: its
                     * struct is the one the processor's DLQ path sees) */
                    if (t == DP_CODEC_UPDATE) {
                        dp_update d;
                        CU_ASSERT_FATAL(dp_codec_decode_update(c, p, len, &d, err, sizeof err) == DP_OK);
                        dp_buf b;
                        dp_buf_init(&b);
                        int erc = dp_codec_encode_update_buf(c, &d, &b, err, sizeof err);
                        if (erc != DP_OK)
                            fprintf(stderr, "decoded update does not re-encode: %s\n", err);
                        CU_ASSERT(erc == DP_OK);
                        dp_update d2;
                        CU_ASSERT(erc != DP_OK ||
                                  dp_codec_decode_update(c, b.data, b.len, &d2, err, sizeof err) == DP_OK);
                        dp_buf_free(&b);
                    }
                } else {
                    n_bad++;
                }
                free(p);
            }
            free(valid);
        }
        dp_codec_destroy(c);
    }
    CU_ASSERT_EQUAL(n_ok + n_bad, n_total);
    CU_ASSERT(n_bad > n_total / 2);   /* garbage is mostly refused... */
    CU_ASSERT(n_ok > 0);              /* ...but mutations of values still decode */
    CU_ASSERT(g_peak - live0 < (1u << 20));
    CU_ASSERT_EQUAL(g_live, live0);
    printf("\n    garbage/mutations: %zu inputs, %zu decoded, %zu refused; avro peak +%zu bytes\n",
           n_total, n_ok, n_bad, g_peak - live0);
}

/* --- value reuse ------------------------------------------------------------------------------ */

static void test_value_reuse_no_growth(void)
{
    make_records();
    dp_codec *c = new_codec(DP_CODEC_FRAMING_CONFLUENT);
    dp_buf b;
    dp_buf_init(&b);
    char err[256];
    /* The message cycle is 60 long (20 shapes x 3 dead-letter variants);
     * N >= 10^5 and WARM are multiples of it. */
    const int N = 100020, WARM = 1980, PERIOD = 20;
    size_t live_warm = 0, heap_warm = 0;
    int ok = 1;
    for (int i = 0; i < N && ok; i++) {
        b.len = 0;
        int v = i % PERIOD;
        if (v < 14) {
            dp_update u = sample_update(v), d;
            ok &= dp_codec_encode_update_buf(c, &u, &b, err, sizeof err) == DP_OK;
            ok &= dp_codec_decode_update(c, b.data, b.len, &d, err, sizeof err) == DP_OK;
            ok &= update_eq(&u, &d);
        } else if (v < 17) {
            dp_codec_chunk ch = {.stream_id = STREAM_TEXT, .stream_id_len = STREAM_LEN, .step = 1,
                                 .chunk_index = (uint32_t)v, .records = RECORDS,
                                 .n_records = (size_t)(v - 13) * 16};
            dp_codec_chunk d;
            ok &= dp_codec_encode_chunk_buf(c, &ch, &b, err, sizeof err) == DP_OK;
            ok &= dp_codec_decode_chunk(c, b.data, b.len, &d, err, sizeof err) == DP_OK;
            ok &= d.n_records == ch.n_records;
        } else if (v < 19) {
            dp_budget_event e = sample_budget(v & 1), d;
            ok &= dp_codec_encode_budget_buf(c, &e, &b, err, sizeof err) == DP_OK;
            ok &= dp_codec_decode_budget(c, b.data, b.len, &d, err, sizeof err) == DP_OK;
        } else {
            dp_codec_dead_letter dl = sample_dead_letter((i / PERIOD) % 3), d;
            ok &= dp_codec_encode_dead_letter_buf(c, &dl, &b, err, sizeof err) == DP_OK;
            ok &= dp_codec_decode_dead_letter(c, b.data, b.len, &d, err, sizeof err) == DP_OK;
        }
        if (i + 1 == WARM) {
            live_warm = g_live;
            reset_peak();
#if !defined(__SANITIZE_ADDRESS__)
            heap_warm = mallinfo2().uordblks;
#endif
        }
    }
    CU_ASSERT(ok);
    size_t live_end = g_live;
    printf("\n    reuse: %d messages; avro live %zu bytes after %d, %zu at the end, peak %zu\n", N,
           live_warm, WARM, live_end, g_peak);
    /* Same phase of the message cycle at both points, so the retained set
     * must be identical. */
    CU_ASSERT_EQUAL(live_end, live_warm);
    CU_ASSERT(g_peak <= live_warm + 65536);
#if !defined(__SANITIZE_ADDRESS__)
    size_t heap_end = mallinfo2().uordblks;
    printf("    reuse: malloc in use %zu bytes after warm-up, %zu at the end\n", heap_warm, heap_end);
    CU_ASSERT(heap_end <= heap_warm + 65536);
#else
    (void)heap_warm;
#endif
    dp_buf_free(&b);
    dp_codec_destroy(c);
}

static void test_destroy_releases_everything(void)
{
    size_t before = g_live;
    dp_codec *c = new_codec(DP_CODEC_FRAMING_PLAIN);
    CU_ASSERT(g_live > before);
    size_t len;
    uint8_t *m = valid_message(c, DP_CODEC_SYNTHETIC_RECORD, 3, &len);
    dp_codec_chunk d;
    char err[256];
    CU_ASSERT(dp_codec_decode_chunk(c, m, len, &d, err, sizeof err) == DP_OK);
    free(m);
    dp_codec_destroy(c);
    CU_ASSERT_EQUAL(g_live, before);
    dp_codec_destroy(NULL);

    dp_codec_options bad = {.framing = (dp_codec_framing)7};
    CU_ASSERT_EQUAL(dp_codec_create(&c, &bad, err, sizeof err), DP_EINVAL);
    CU_ASSERT_PTR_NULL(c);
}

static const dptest_case CASES[] = {
    {"every truncation and one extra byte refused", test_truncated_at_every_length},
    {"wrong magic byte / schema id / framing refused", test_framing_errors},
    {"crafted malformed bodies refused without length-bomb allocation", test_crafted_malformed},
    {"random garbage and mutations: error or consistent decode", test_random_garbage_and_mutations},
    {"value reuse over 10^5 messages: no memory growth", test_value_reuse_no_growth},
    {"destroy releases all avro memory", test_destroy_releases_everything},
    {NULL, NULL},
};

int main(void)
{
    /* Before anything touches avro-c, so every block carries our header. */
    avro_set_allocator(counting_alloc, NULL);
    return dptest_run("codec malformed", CASES);
}
