/* test_snapshot_roster.c — the roster inside a longitudinal snapshot
 * (dp_lingest_save / dp_lingest_load, format "LIN2"): entity id lengths as
 * varints (core/buf.h dp_buf_put_varint) instead of 8-byte offsets, which
 * roughly halves a window snapshot (bench/RESULTS.md).
 *   - the varint: round trip at every length boundary; over-long, over-64-bit
 *     and truncated encodings are refused;
 *   - a roster of ids of lengths 1..300 survives save/load byte for byte
 *     (save → load → save gives the same bytes), and is smaller than the
 *     old layout by 6 bytes an id or more (7 below length 128);
 *   - a snapshot in the old layout ("LING", u64 offsets) still loads into
 *     the same state (converted here from a new one);
 *   - a length that runs past the id bytes, and every truncation, is refused;
 *   - a snapshot written into a reused buffer (dp_buf_clear, as the
 *     processor keeps one across step closes) is the same bytes as into a
 *     fresh one, whatever the buffer held before, and keeps its memory. */
#include "dptest.h"

#include "core/buf.h"
#include "core/dp_error.h"
#include "synth/longitudinal/longitudinal.h"

#include <stdio.h>
#include <string.h>

static void test_varint(void)
{
    static const uint64_t vals[] = {0, 1, 127, 128, 255, 16383, 16384, 2097151, 2097152, 1ull << 32,
                                    (1ull << 56) - 1, 1ull << 63, UINT64_MAX};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        dp_buf b;
        dp_buf_init(&b);
        dp_buf_put_varint(&b, vals[i]);
        size_t expect = 1;
        for (uint64_t v = vals[i]; v >= 0x80; v >>= 7)
            expect++;
        CU_ASSERT_EQUAL(b.len, expect);
        dp_reader r;
        dp_reader_init(&r, b.data, b.len);
        CU_ASSERT_EQUAL(dp_reader_varint(&r), vals[i]);
        CU_ASSERT_EQUAL(dp_reader_finish(&r), DP_OK);
        for (size_t cut = 0; cut < b.len; cut++) {   /* truncated */
            dp_reader_init(&r, b.data, cut);
            dp_reader_varint(&r);
            CU_ASSERT_NOT_EQUAL(dp_reader_status(&r), DP_OK);
        }
        dp_buf_free(&b);
    }
    static const struct { uint8_t bytes[12]; size_t len; } bad[] = {
        {{0x80, 0x00}, 2},                                                          /* 0, over-long */
        {{0xff, 0x80, 0x00}, 3},                                                    /* 127, over-long */
        {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, 10},         /* 2^64 */
        {{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x81, 0x01}, 11},   /* 11 bytes */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dp_reader r;
        dp_reader_init(&r, bad[i].bytes, bad[i].len);
        dp_reader_varint(&r);
        CU_ASSERT_NOT_EQUAL(dp_reader_status(&r), DP_OK);
    }
}

#define N_IDS 300

/* A lingest with N_IDS individuals whose ids have lengths 1..N_IDS. */
static void make_roster(dp_lingest *li)
{
    char err[256];
    CU_ASSERT_FATAL(dp_lingest_init(li, 6, 3, 2, 0, DP_IMPUTE_CARRY_FORWARD, 0, err, sizeof err) == DP_OK);
    static char ids[N_IDS][N_IDS + 1];
    for (int i = 0; i < N_IDS; i++) {
        for (int j = 0; j <= i; j++)
            ids[i][j] = (char)('a' + (i * 7 + j) % 26);
        dp_update u = {.stream_id = "s", .stream_id_len = 1, .step = 1, .kind = DP_UPDATE_REPORT,
                       .entity_id = ids[i], .entity_id_len = (size_t)i + 1,
                       .payload = {.kind = DP_PAYLOAD_CATEGORY, .category = i % 3}};
        dp_reject_reason why;
        CU_ASSERT_FATAL(dp_lingest_offer(li, &u, &why) == DP_OK && why == DP_REJECT_NONE);
    }
}

static int load_bytes(const uint8_t *p, size_t n, dp_buf *resaved)
{
    dp_lingest li;
    char err[256];
    if (dp_lingest_init(&li, 6, 3, 2, 0, DP_IMPUTE_CARRY_FORWARD, 0, err, sizeof err) != DP_OK)
        return DP_EINVAL;
    dp_reader r;
    dp_reader_init(&r, p, n);
    int rc = dp_lingest_load(&li, &r);
    if (rc == DP_OK)
        rc = dp_reader_finish(&r);
    if (rc == DP_OK && resaved)
        rc = dp_lingest_save(&li, resaved);
    dp_lingest_free(&li);
    return rc;
}

/* The fixed header before the id blob: magic u32, horizon u64, 5 × u32,
 * open_step, n, n_reported u64. */
#define HEADER_BYTES (4 + 8 + 5 * 4 + 3 * 8)

static void test_roster_round_trip_and_old_layout(void)
{
    dp_lingest li;
    make_roster(&li);
    dp_buf b;
    dp_buf_init(&b);
    CU_ASSERT_FATAL(dp_lingest_save(&li, &b) == DP_OK);
    size_t id_bytes = (size_t)N_IDS * (N_IDS + 1) / 2;

    dp_buf again;
    dp_buf_init(&again);
    CU_ASSERT_EQUAL(load_bytes(b.data, b.len, &again), DP_OK);
    CU_ASSERT(again.len == b.len && memcmp(again.data, b.data, b.len) == 0);

    /* Old layout: same header (other magic), same blob, u64 end offsets. */
    size_t blob_at = HEADER_BYTES, lens_at = blob_at + 8 + id_bytes;
    dp_reader r;
    dp_reader_init(&r, b.data + lens_at, b.len - lens_at);
    dp_buf old;
    dp_buf_init(&old);
    dp_buf_put_u32(&old, 0x474e494cu);
    dp_buf_put_bytes(&old, b.data + 4, lens_at - 4);
    uint64_t off = 0;
    for (int i = 0; i < N_IDS; i++) {
        off += dp_reader_varint(&r);
        dp_buf_put_u64(&old, off);
    }
    CU_ASSERT_EQUAL(off, id_bytes);
    dp_buf_put_bytes(&old, r.p + r.off, r.len - r.off);   /* the packed state after the roster */
    CU_ASSERT_EQUAL(old.len, b.len + 7 * 127 + 6 * (N_IDS - 127));
    dp_buf conv;
    dp_buf_init(&conv);
    CU_ASSERT_EQUAL(load_bytes(old.data, old.len, &conv), DP_OK);
    CU_ASSERT(conv.len == b.len && memcmp(conv.data, b.data, b.len) == 0);   /* same state */

    /* A length running past the id bytes; every truncation. */
    dp_buf bad;
    dp_buf_init(&bad);
    dp_buf_put_bytes(&bad, b.data, b.len);
    size_t last = lens_at + 127 + 2 * (N_IDS - 128);   /* the last id's length, 300 = 0xac 0x02 */
    CU_ASSERT_FATAL(bad.data[last] == 0xac && bad.data[last + 1] == 0x02);
    bad.data[last] = 0xad;                              /* 301: one byte past the ids */
    CU_ASSERT_NOT_EQUAL(load_bytes(bad.data, bad.len, NULL), DP_OK);
    int refused = 0;
    for (size_t cut = 0; cut < b.len; cut++)
        refused += load_bytes(b.data, cut, NULL) != DP_OK;
    CU_ASSERT_EQUAL(refused, (int)b.len);

    dp_buf_free(&b);
    dp_buf_free(&again);
    dp_buf_free(&old);
    dp_buf_free(&conv);
    dp_buf_free(&bad);
    dp_lingest_free(&li);
}

static void test_save_into_cleared_buffer(void)
{
    dp_lingest li;
    make_roster(&li);
    dp_buf fresh, reused;
    dp_buf_init(&fresh);
    dp_buf_init(&reused);
    CU_ASSERT_FATAL(dp_lingest_save(&li, &fresh) == DP_OK);
    /* what the buffer held before: longer than the snapshot, other bytes,
     * and a latched error */
    for (size_t i = 0; i < 2 * fresh.len; i++)
        dp_buf_put_u8(&reused, 0xa5);
    reused.failed = DP_ENOMEM;
    uint8_t *mem = reused.data;
    size_t cap = reused.cap;
    dp_buf_clear(&reused);
    CU_ASSERT(reused.len == 0 && reused.failed == 0 && reused.data == mem && reused.cap == cap);
    CU_ASSERT_FATAL(dp_lingest_save(&li, &reused) == DP_OK);
    CU_ASSERT(reused.data == mem);   /* written into the memory it had: no allocation */
    CU_ASSERT(reused.len == fresh.len && memcmp(reused.data, fresh.data, fresh.len) == 0);
    dp_buf_free(&fresh);
    dp_buf_free(&reused);
    dp_lingest_free(&li);
}

static const dptest_case CASES[] = {
    {"varint: round trip at length boundaries; over-long, >64-bit, truncated refused", test_varint},
    {"roster save/load exact, smaller than u64 offsets, old layout still loads", test_roster_round_trip_and_old_layout},
    {"a snapshot into a cleared, reused buffer: same bytes as a fresh one, same memory", test_save_into_cleared_buffer},
    {NULL, NULL},
};

int main(void) { return dptest_run("snapshot_roster", CASES); }
