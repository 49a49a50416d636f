/* test_state_cas.c — incremental snapshots (processor/stream/state_cas.h,
 * format 2 of state_record.h), against an in-memory "compacted topic"
 * (newest value per key, tombstones delete):
 *   - cut points are content-defined: bounded by the maximum, a pure
 *     function of the bytes, and an insertion near the start leaves the
 *     chunks after it unchanged;
 *   - a state round-trips through chunks + manifest, sealed and plain,
 *     also when the manifest itself is split over index keys;
 *   - the next snapshot writes only the chunks that changed and tombstones
 *     exactly the ones its manifest dropped; the topic then holds exactly
 *     the chunks the newest manifest names;
 *   - the records are a pure function of the state (byte-identical rewrite);
 *   - a chunk missing from the topic, or altered, fails the restore with a
 *     message naming it, never a wrong state;
 *   - format-1 snapshots still restore. */
#define _GNU_SOURCE   /* memmem */
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "core/dp_error.h"
#include "dptest.h"
#include "stream/state_cas.h"
#include "stream/state_record.h"

static dp_key g_mac = {{0x6d, 0x61, 0x63, 2}};
static dp_key g_state = {{0x73, 0x74, 0x61, 7}};

/* --- a compacted topic in memory ------------------------------------------------ */

typedef struct topic_rec {
    dp_buf         key;
    dp_state_piece val;   /* .data NULL = tombstone */
    int            is_chunk;
} topic_rec;

typedef struct topic {
    topic_rec rec[4096];
    size_t    n;
    size_t    produced, tombstones, chunk_bytes;
} topic;

static topic_rec *topic_find(topic *t, const void *key, size_t key_len)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->rec[i].key.len == key_len && memcmp(t->rec[i].key.data, key, key_len) == 0)
            return &t->rec[i];
    return NULL;
}

static int topic_put(topic *t, const void *key, size_t key_len, const uint8_t *val, size_t val_len, int is_chunk)
{
    topic_rec *r = topic_find(t, key, key_len);
    if (!r) {
        CU_ASSERT_FATAL(t->n < sizeof t->rec / sizeof t->rec[0]);
        r = &t->rec[t->n++];
        dp_buf_init(&r->key);
        dp_buf_put_bytes(&r->key, key, key_len);
    }
    free((void *)r->val.data);
    r->val.data = NULL;
    r->val.len = 0;
    r->is_chunk = is_chunk;
    t->produced++;
    if (!val) {
        t->tombstones++;
        return DP_OK;
    }
    uint8_t *copy = malloc(val_len ? val_len : 1);
    memcpy(copy, val, val_len);
    r->val.data = copy;
    r->val.len = val_len;
    if (is_chunk)
        t->chunk_bytes += val_len;
    return DP_OK;
}

static void topic_free(topic *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free((void *)t->rec[i].val.data);
        dp_buf_free(&t->rec[i].key);
    }
    t->n = 0;
}

static int emit_cas(void *ctx, const uint8_t *key, size_t key_len, const uint8_t *val, size_t val_len)
{
    return topic_put(ctx, key, key_len, val, val_len, 1);
}

static const dp_state_piece *lookup(void *ctx, const void *key, size_t key_len)
{
    topic_rec *r = topic_find(ctx, key, key_len);
    return r && r->val.data ? &r->val : NULL;
}

/* Live content chunks on the topic (non-tombstoned). */
static size_t live_chunks(topic *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += t->rec[i].is_chunk && t->rec[i].val.data && dp_cas_key_is_content(t->rec[i].key.data, t->rec[i].key.len);
    return n;
}

/* A roster-like state: a header that changes with the step, a large
 * unchanging region, then a per-individual region that changes. */
static void make_state(dp_buf *b, uint64_t step, size_t roster, size_t tail)
{
    b->len = 0;
    dp_buf_put_u64(b, step);
    uint64_t x = 12345;
    for (size_t i = 0; i < roster; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        dp_buf_put_u8(b, (uint8_t)('a' + (x >> 59) % 26));
    }
    x = step * 977 + 1;
    for (size_t i = 0; i < tail; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        dp_buf_put_u8(b, (uint8_t)(x >> 56));
    }
    CU_ASSERT_FATAL(dp_buf_status(b) == DP_OK);
}

/* --- cut points --------------------------------------------------------------------- */

static void test_split_content_defined(void)
{
    dp_buf a, b;
    dp_buf_init(&a);
    dp_buf_init(&b);
    make_state(&a, 1, 200000, 0);
    size_t *ea, na, *eb, nb;
    CU_ASSERT_EQUAL_FATAL(dp_cas_split(a.data, a.len, 8192, &ea, &na), DP_OK);
    CU_ASSERT(na > 10);
    size_t prev = 0;
    for (size_t i = 0; i < na; i++) {
        CU_ASSERT(ea[i] > prev && ea[i] - prev <= 8192);
        prev = ea[i];
    }
    CU_ASSERT_EQUAL(prev, a.len);
    /* 37 bytes inserted near the start: every cut after the first few
     * chunks is the same cut, shifted by 37 */
    dp_buf_put_bytes(&b, a.data, 1000);
    dp_buf_put_bytes(&b, "an inserted run of thirty-seven bytes", 37);
    dp_buf_put_bytes(&b, a.data + 1000, a.len - 1000);
    CU_ASSERT_EQUAL_FATAL(dp_cas_split(b.data, b.len, 8192, &eb, &nb), DP_OK);
    size_t same = 0;
    for (size_t i = 0; i < na; i++)
        for (size_t j = 0; j < nb; j++)
            same += ea[i] + 37 == eb[j];
    CU_ASSERT(same + 3 >= na);
    printf("\n    %zu chunks; %zu cut points survive a 37-byte insertion", na, same);
    /* a pure function of the bytes */
    size_t *ec, nc;
    CU_ASSERT_EQUAL_FATAL(dp_cas_split(a.data, a.len, 8192, &ec, &nc), DP_OK);
    CU_ASSERT(nc == na && memcmp(ec, ea, na * sizeof *ea) == 0);
    /* empty and tiny states */
    free(ec);
    CU_ASSERT_EQUAL(dp_cas_split(a.data, 0, 8192, &ec, &nc), DP_OK);
    CU_ASSERT_EQUAL(nc, 0);
    free(ec);
    CU_ASSERT_EQUAL(dp_cas_split(a.data, 5, 1, &ec, &nc), DP_OK);
    CU_ASSERT_EQUAL(nc, 5);
    free(ec);
    free(ea);
    free(eb);
    dp_buf_free(&a);
    dp_buf_free(&b);
}

/* --- snapshots through the record layer --------------------------------------------- */

typedef struct writer {
    dp_codec *codec;
    topic    *t;
    dp_buf    known;        /* the stream's committed digests */
    uint32_t  index_chunks;
    size_t    chunk_bytes;
    const dp_key *state_key;
} writer;

static int emit_piece(void *ctx, uint32_t index, uint32_t count, const dp_buf *enc)
{
    writer *w = ctx;
    dp_buf key;
    dp_buf_init(&key);
    CU_ASSERT_EQUAL_FATAL(dp_state_snapshot_key("win/a", 5, index, &key), DP_OK);
    int rc = topic_put(w->t, key.data, key.len, enc->data, enc->len, 0);
    for (uint32_t i = count; index == count - 1 && i < w->index_chunks; i++) {
        CU_ASSERT_EQUAL_FATAL(dp_state_snapshot_key("win/a", 5, i, &key), DP_OK);
        topic_put(w->t, key.data, key.len, NULL, 0, 0);
    }
    if (index == count - 1)
        w->index_chunks = count;
    dp_buf_free(&key);
    return rc;
}

/* What snapshot_publish.c does for one step; returns the bytes of new chunks. */
static size_t write_snapshot(writer *w, const dp_buf *state, uint64_t open_step)
{
    dp_cas_stream cs = {.stream_id = "win/a", .stream_id_len = 5, .updates_topic = "t.updates",
                        .updates_topic_len = 9, .partition = 1};
    dp_buf manifest, digests, enc;
    dp_buf_init(&manifest);
    dp_buf_init(&digests);
    dp_buf_init(&enc);
    size_t written = 0, n_written = 0, before = w->t->chunk_bytes;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_cas_write(&cs, state->data, state->len, w->chunk_bytes, w->state_key, &g_mac,
                                       w->known.data, w->known.len / DP_CAS_DIGEST_BYTES, &manifest, &digests,
                                       emit_cas, w->t, &n_written, &written, err, sizeof err),
                          DP_OK);
    dp_state_record r = {.kind = DP_STATE_SNAPSHOT, .updates_topic = "t.updates", .updates_topic_len = 9,
                         .partition = 1, .stream_id = "win/a", .stream_id_len = 5, .skip_below = 10,
                         .open_step = open_step, .synthesizer = "window", .state = manifest.data,
                         .state_len = manifest.len, .format = DP_CODEC_SNAPSHOT_VERSION_CAS};
    CU_ASSERT_EQUAL_FATAL(dp_state_encode_snapshot_chunks(w->codec, &r, w->state_key, &g_mac, w->chunk_bytes, &enc,
                                                          emit_piece, w, err, sizeof err),
                          DP_OK);
    CU_ASSERT_EQUAL_FATAL(dp_cas_tombstones("win/a", 5, w->known.data, w->known.len / DP_CAS_DIGEST_BYTES,
                                            digests.data, digests.len / DP_CAS_DIGEST_BYTES, emit_cas, w->t),
                          DP_OK);
    w->known.len = 0;
    dp_buf_put_bytes(&w->known, digests.data, digests.len);
    dp_buf_free(&manifest);
    dp_buf_free(&digests);
    dp_buf_free(&enc);
    return w->t->chunk_bytes - before;
}

static int restore(writer *w, dp_buf *out_state, dp_buf *digests, char *err, size_t errn)
{
    dp_state_record r;
    dp_buf scratch;
    dp_buf_init(&scratch);
    const dp_state_piece *first = lookup(w->t, "win/a", 5);
    CU_ASSERT_PTR_NOT_NULL_FATAL(first);
    int rc = dp_state_decode_newest(w->codec, "win/a", 5, first, lookup, w->t, w->t->n, w->state_key, &g_mac, &r,
                                    &scratch, digests, err, errn);
    out_state->len = 0;
    if (rc == DP_OK) {
        CU_ASSERT_EQUAL(r.format, 2);
        CU_ASSERT_EQUAL(r.skip_below, 10);
        dp_buf_put_bytes(out_state, r.state, r.state_len);
    }
    dp_buf_free(&scratch);
    return rc;
}

static void run_incremental(const dp_key *state_key, size_t chunk_bytes, size_t roster, size_t tail)
{
    dp_codec *c = NULL;
    dp_codec_options o = {0};
    char err[512];
    CU_ASSERT_EQUAL_FATAL(dp_codec_create(&c, &o, err, sizeof err), DP_OK);
    topic *t = calloc(1, sizeof *t);
    writer w = {.codec = c, .t = t, .chunk_bytes = chunk_bytes, .state_key = state_key};
    dp_buf_init(&w.known);
    dp_buf st, got, dg;
    dp_buf_init(&st);
    dp_buf_init(&got);
    dp_buf_init(&dg);
    size_t first = 0, later = 0;
    for (uint64_t step = 1; step <= 4; step++) {
        make_state(&st, step, roster, tail);
        size_t wrote = write_snapshot(&w, &st, step + 1);
        if (step == 1)
            first = wrote;
        else
            later = later > wrote ? later : wrote;
        /* restore byte-identical; the digests restored are the ones written */
        CU_ASSERT_EQUAL_FATAL(restore(&w, &got, &dg, err, sizeof err), DP_OK);
        CU_ASSERT(got.len == st.len && memcmp(got.data, st.data, st.len) == 0);
        CU_ASSERT(dg.len == w.known.len && memcmp(dg.data, w.known.data, dg.len) == 0);
        /* compaction keeps exactly what the newest manifest names */
        CU_ASSERT_EQUAL(live_chunks(t), w.known.len / DP_CAS_DIGEST_BYTES);
        /* a sealed chunk never holds the roster's plaintext */
        if (state_key)
            for (size_t i = 0; i < t->n; i++)
                if (t->rec[i].val.data && t->rec[i].val.len > 64)
                    CU_ASSERT(memmem(t->rec[i].val.data, t->rec[i].val.len, st.data + 100, 32) == NULL);
    }
    /* steady steps write about the changed tail, not the roster */
    printf("\n    %s, max %zu: state %zu bytes; step 1 wrote %zu bytes of chunks, later steps at most %zu",
           state_key ? "sealed" : "plain", chunk_bytes, st.len, first, later);
    CU_ASSERT(first >= st.len);
    CU_ASSERT(later < tail + 2 * chunk_bytes + 2 * chunk_bytes / 4);
    CU_ASSERT(later < st.len / 2);

    /* the same state again writes nothing new, and the same records */
    size_t produced = t->produced;
    CU_ASSERT_EQUAL(write_snapshot(&w, &st, 5), 0);
    CU_ASSERT(t->produced - produced == w.index_chunks);   /* the manifest only */

    /* byte-identical records from a fresh writer (a replay) */
    topic *t2 = calloc(1, sizeof *t2);
    writer w2 = {.codec = c, .t = t2, .chunk_bytes = chunk_bytes, .state_key = state_key};
    dp_buf_init(&w2.known);
    write_snapshot(&w2, &st, 5);
    for (size_t i = 0; i < t2->n; i++) {
        const dp_state_piece *v = lookup(t, t2->rec[i].key.data, t2->rec[i].key.len);
        CU_ASSERT(v && v->len == t2->rec[i].val.len && memcmp(v->data, t2->rec[i].val.data, v->len) == 0);
    }

    /* a chunk missing from the topic: a clear refusal, no state */
    topic_rec *victim = NULL;
    for (size_t i = 0; i < t->n && !victim; i++)
        if (t->rec[i].val.data && dp_cas_key_is_content(t->rec[i].key.data, t->rec[i].key.len))
            victim = &t->rec[i];
    CU_ASSERT_PTR_NOT_NULL_FATAL(victim);
    const uint8_t *saved = victim->val.data;
    victim->val.data = NULL;
    err[0] = '\0';
    CU_ASSERT_EQUAL(restore(&w, &got, NULL, err, sizeof err), DP_ECORRUPT);
    CU_ASSERT(strstr(err, "is missing from the state topic") != NULL);
    CU_ASSERT(strstr(err, "stream 'win/a' at step 4") != NULL);
    CU_ASSERT_EQUAL(got.len, 0);
    printf("\n    missing: %s", err);
    victim->val.data = saved;
    /* an altered chunk */
    ((uint8_t *)saved)[victim->val.len - 1] ^= 1;
    err[0] = '\0';
    CU_ASSERT_EQUAL(restore(&w, &got, NULL, err, sizeof err), DP_ECORRUPT);
    CU_ASSERT(strstr(err, "fails authentication") != NULL);
    ((uint8_t *)saved)[victim->val.len - 1] ^= 1;
    CU_ASSERT_EQUAL(restore(&w, &got, NULL, err, sizeof err), DP_OK);

    topic_free(t);
    topic_free(t2);
    free(t);
    free(t2);
    dp_buf_free(&w.known);
    dp_buf_free(&w2.known);
    dp_buf_free(&st);
    dp_buf_free(&got);
    dp_buf_free(&dg);
    dp_codec_destroy(c);
}

static void test_incremental_plain(void) { run_incremental(NULL, 4096, 100000, 3000); }
static void test_incremental_sealed(void) { run_incremental(&g_state, 4096, 100000, 3000); }
/* a tiny maximum: the manifest itself spans several index keys */
static void test_incremental_manifest_pieces(void) { run_incremental(&g_state, 256, 6000, 300); }

/* A format-1 snapshot (written before incremental snapshots) restores. */
static void test_format1_restores(void)
{
    dp_codec *c = NULL;
    dp_codec_options o = {0};
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_codec_create(&c, &o, err, sizeof err), DP_OK);
    topic *t = calloc(1, sizeof *t);
    writer w = {.codec = c, .t = t, .chunk_bytes = 300, .state_key = &g_state};
    dp_buf st, enc, got;
    dp_buf_init(&st);
    dp_buf_init(&enc);
    dp_buf_init(&got);
    make_state(&st, 1, 2000, 100);
    dp_state_record r = {.kind = DP_STATE_SNAPSHOT, .updates_topic = "t.updates", .updates_topic_len = 9,
                         .partition = 1, .stream_id = "win/a", .stream_id_len = 5, .skip_below = 10,
                         .open_step = 2, .synthesizer = "window", .state = st.data, .state_len = st.len};
    CU_ASSERT_EQUAL_FATAL(dp_state_encode_snapshot_chunks(c, &r, &g_state, &g_mac, 300, &enc, emit_piece, &w, err,
                                                          sizeof err),
                          DP_OK);
    CU_ASSERT(w.index_chunks > 1);
    dp_state_record out;
    dp_buf scratch, dg;
    dp_buf_init(&scratch);
    dp_buf_init(&dg);
    dp_buf_put_u8(&dg, 7);
    CU_ASSERT_EQUAL(dp_state_decode_newest(c, "win/a", 5, lookup(t, "win/a", 5), lookup, t, t->n, &g_state, &g_mac,
                                           &out, &scratch, &dg, err, sizeof err),
                    DP_OK);
    CU_ASSERT_EQUAL(out.format, 1);
    CU_ASSERT_EQUAL(out.chunk_count, w.index_chunks);
    CU_ASSERT_EQUAL(dg.len, 0);
    CU_ASSERT(out.state_len == st.len && memcmp(out.state, st.data, st.len) == 0);
    /* the next (format-2) snapshot replaces its index keys: the pieces
     * beyond the new manifest's are tombstoned */
    w.chunk_bytes = 4096;
    write_snapshot(&w, &st, 3);
    CU_ASSERT_EQUAL(w.index_chunks, 1);
    dp_buf k;
    dp_buf_init(&k);
    CU_ASSERT_EQUAL(dp_state_snapshot_key("win/a", 5, 1, &k), DP_OK);
    CU_ASSERT_PTR_NULL(lookup(t, k.data, k.len));
    CU_ASSERT_EQUAL(restore(&w, &got, NULL, err, sizeof err), DP_OK);
    CU_ASSERT(got.len == st.len && memcmp(got.data, st.data, st.len) == 0);
    dp_buf_free(&k);
    dp_buf_free(&scratch);
    dp_buf_free(&dg);
    dp_buf_free(&st);
    dp_buf_free(&enc);
    dp_buf_free(&got);
    dp_buf_free(&w.known);
    topic_free(t);
    free(t);
    dp_codec_destroy(c);
}

static void test_keys(void)
{
    uint8_t d[DP_CAS_DIGEST_BYTES];
    memset(d, 0xab, sizeof d);
    dp_buf k;
    dp_buf_init(&k);
    CU_ASSERT_EQUAL(dp_cas_chunk_key("win/a", 5, d, &k), DP_OK);
    CU_ASSERT_EQUAL(k.len, 5 + 1 + DP_CAS_DIGEST_BYTES);
    CU_ASSERT_TRUE(dp_cas_key_is_content(k.data, k.len));
    CU_ASSERT_TRUE(dp_state_key_is_chunk(k.data, k.len));   /* restore reads it through its manifest */
    CU_ASSERT_EQUAL(dp_state_snapshot_key("win/a", 5, 3, &k), DP_OK);
    CU_ASSERT_FALSE(dp_cas_key_is_content(k.data, k.len));
    CU_ASSERT_FALSE(dp_cas_key_is_content("win/a", 5));
    dp_buf_free(&k);
}

static const dptest_case CASES[] = {
    {"cut points are content-defined and bounded", test_split_content_defined},
    {"incremental snapshots, plaintext: only changed chunks, exact compaction, missing chunk refused",
     test_incremental_plain},
    {"incremental snapshots, sealed: the same, and no plaintext on the topic", test_incremental_sealed},
    {"incremental snapshots with the manifest over several index keys", test_incremental_manifest_pieces},
    {"format-1 snapshots restore; the next snapshot tombstones their pieces", test_format1_restores},
    {"content-chunk keys", test_keys},
    {NULL, NULL},
};

int main(void) { return dptest_run("state_cas", CASES); }
