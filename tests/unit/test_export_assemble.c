/* test_export_assemble.c — release reassembly for `dpstream export`, with
 * no Kafka: record chunks and manifests fed in random interleavings with
 * duplicates, aborted-attempt copies, missing chunks and manifests that
 * contradict their chunks.  The property: a release is handed out at most
 * once, only when complete, and then equal to the true release; releases
 * that did fully arrive are handed out.  Also the manifest checksum from
 * first principles (schemas/ReleaseManifest.avsc) against the codec. */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connectors/export/export_assemble.h"
#include "codec/codec.h"
#include "core/drbg.h"
#include "core/dp_error.h"
#include "dptest.h"

/* --- checksum ---------------------------------------------------------------------- */

static void codec_sum(const dp_synth_record *r, size_t n, uint8_t out[32])
{
    dp_codec_checksum h;
    dp_codec_checksum_init(&h);
    for (size_t i = 0; i < n; i++)
        CU_ASSERT_EQUAL(dp_codec_checksum_add(&h, &r[i]), DP_OK);
    dp_codec_checksum_final(&h, out);
}

static void test_checksum_first_principles(void)
{
    /* Canonical encodings written out by hand from the schema's text:
     * zigzag varint id, zigzag varint branch, value, arrays as one block
     * then 0x00. */
    static const int32_t row[] = {1, -1};
    static const double pt[] = {1.0};
    dp_synth_record r[4];
    memset(r, 0, sizeof r);
    r[0].synthetic_id = 1;   r[0].value.kind = DP_PAYLOAD_CATEGORY; r[0].value.category = 3;
    r[1].synthetic_id = 0;   r[1].value.kind = DP_PAYLOAD_ROW;      r[1].value.row = row; r[1].value.row_len = 2;
    r[2].synthetic_id = 2;   r[2].value.kind = DP_PAYLOAD_POINT;    r[2].value.point = pt; r[2].value.point_len = 1;
    r[3].synthetic_id = 300; r[3].value.kind = DP_PAYLOAD_ROW;      r[3].value.row = row; r[3].value.row_len = 0;
    static const uint8_t canon[] = {
        0x02, 0x00, 0x06,                                        /* id 1, Category 3 */
        0x00, 0x02, 0x04, 0x02, 0x01, 0x00,                      /* id 0, row [1,-1] */
        0x04, 0x04, 0x02, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0x00,    /* id 2, point [1.0] */
        0xd8, 0x04, 0x02, 0x00,                                  /* id 300, row [] */
    };
    uint8_t want[32], got[32];
    crypto_generichash(want, sizeof want, canon, sizeof canon, NULL, 0);
    codec_sum(r, 4, got);
    CU_ASSERT_EQUAL(memcmp(want, got, 32), 0);
    /* chunking does not matter: the hash is over the concatenation */
    uint8_t empty[32];
    codec_sum(r, 0, empty);
    static const uint8_t blake_empty[32] = {
        0x0e, 0x57, 0x51, 0xc0, 0x26, 0xe5, 0x43, 0xb2, 0xe8, 0xab, 0x2e, 0xb0, 0x60, 0x99, 0xda, 0xa1,
        0xd1, 0xe5, 0xdf, 0x47, 0x77, 0x8f, 0x77, 0x87, 0xfa, 0xab, 0x45, 0xcd, 0xf1, 0x2f, 0xe3, 0xa8};
    CU_ASSERT_EQUAL(memcmp(empty, blake_empty, 32), 0);
}

/* --- a captured release ---------------------------------------------------------------- */

typedef struct rel {
    char     stream[8];
    uint64_t step;
    dp_payload_kind kind;
    size_t   n;
    dp_synth_record *recs;
    int32_t *ints;
    double  *dbls;
    size_t   width;
} rel;

typedef struct capture {
    rel     *got;          /* handed-out releases, in order */
    size_t   n_got, cap_got;
    int      fail_next;    /* make the next release callback fail */
} capture;

static int cap_release(void *ctx, const dp_release_manifest *m, const dp_synth_record *r, size_t n)
{
    capture *c = ctx;
    if (c->fail_next) {
        c->fail_next = 0;
        return DP_EIO;
    }
    if (c->n_got == c->cap_got) {
        c->cap_got = c->cap_got ? c->cap_got * 2 : 16;
        c->got = realloc(c->got, c->cap_got * sizeof *c->got);
    }
    rel *g = &c->got[c->n_got++];
    memset(g, 0, sizeof *g);
    snprintf(g->stream, sizeof g->stream, "%.*s", (int)m->stream_id_len, m->stream_id);
    g->step = m->step;
    g->n = n;
    CU_ASSERT_EQUAL(m->record_count, n);
    g->recs = malloc((n ? n : 1) * sizeof *g->recs);
    g->ints = malloc((n ? n : 1) * 4 * sizeof *g->ints);
    g->dbls = malloc((n ? n : 1) * 4 * sizeof *g->dbls);
    for (size_t i = 0; i < n; i++) {
        g->recs[i] = r[i];
        if (r[i].value.kind == DP_PAYLOAD_ROW) {
            memcpy(g->ints + 4 * i, r[i].value.row, r[i].value.row_len * sizeof(int32_t));
            g->recs[i].value.row = g->ints + 4 * i;
        } else if (r[i].value.kind == DP_PAYLOAD_POINT) {
            memcpy(g->dbls + 4 * i, r[i].value.point, r[i].value.point_len * sizeof(double));
            g->recs[i].value.point = g->dbls + 4 * i;
        }
    }
    return DP_OK;
}

static void rel_free(rel *r)
{
    free(r->recs);
    free(r->ints);
    free(r->dbls);
}

static void capture_free(capture *c)
{
    for (size_t i = 0; i < c->n_got; i++)
        rel_free(&c->got[i]);
    free(c->got);
    memset(c, 0, sizeof *c);
}

static int same_records(const dp_synth_record *a, const dp_synth_record *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (a[i].synthetic_id != b[i].synthetic_id || a[i].value.kind != b[i].value.kind)
            return 0;
        const dp_payload *p = &a[i].value, *q = &b[i].value;
        if (p->kind == DP_PAYLOAD_CATEGORY && p->category != q->category)
            return 0;
        if (p->kind == DP_PAYLOAD_ROW &&
            (p->row_len != q->row_len || memcmp(p->row, q->row, p->row_len * sizeof *p->row) != 0))
            return 0;
        if (p->kind == DP_PAYLOAD_POINT &&
            (p->point_len != q->point_len || memcmp(p->point, q->point, p->point_len * sizeof *p->point) != 0))
            return 0;
    }
    return 1;
}

/* --- simple cases ---------------------------------------------------------------------------- */

static void make_cats(dp_synth_record *r, size_t n, int64_t base)
{
    memset(r, 0, n * sizeof *r);
    for (size_t i = 0; i < n; i++) {
        r[i].synthetic_id = i;
        r[i].value.kind = DP_PAYLOAD_CATEGORY;
        r[i].value.category = base + (int64_t)i;
    }
}

static dp_export_manifest manifest_for(const char *stream, uint64_t step, const dp_synth_record *r, size_t n,
                                       uint32_t chunks)
{
    dp_export_manifest em;
    memset(&em, 0, sizeof em);
    em.m.stream_id = stream;
    em.m.stream_id_len = strlen(stream);
    em.m.step = step;
    em.m.synthesizer = "window";
    em.m.record_count = n;
    em.chunk_count = chunks;
    em.has_checksum = 1;
    codec_sum(r, n, em.checksum);
    return em;
}

static void test_manifest_first_and_duplicates(void)
{
    dp_export_asm *a;
    CU_ASSERT_EQUAL_FATAL(dp_export_asm_create(&a), DP_OK);
    capture cap = {0};
    dp_export_sink sink = {.ctx = &cap, .release = cap_release};
    dp_synth_record r[6];
    make_cats(r, 6, 10);
    dp_export_manifest em = manifest_for("s", 4, r, 6, 2);
    /* manifest before its chunks: nothing until both chunks are there */
    CU_ASSERT_EQUAL(dp_export_asm_manifest(a, &em, &sink), DP_OK);
    CU_ASSERT_EQUAL(dp_export_asm_chunk(a, "s", 1, 4, 1, r + 4, 2, &sink), DP_OK);
    CU_ASSERT_EQUAL(cap.n_got, 0);
    /* a chunk index past chunk_count is ignored, not counted */
    CU_ASSERT_EQUAL(dp_export_asm_chunk(a, "s", 1, 4, 2, r, 1, &sink), DP_OK);
    CU_ASSERT_EQUAL(cap.n_got, 0);
    /* the sink fails once: the release stays pending and is retried */
    cap.fail_next = 1;
    CU_ASSERT_EQUAL(dp_export_asm_chunk(a, "s", 1, 4, 0, r, 4, &sink), DP_EIO);
    CU_ASSERT_EQUAL(cap.n_got, 0);
    CU_ASSERT_FALSE(dp_export_asm_released(a, "s", 1, 4));
    CU_ASSERT_EQUAL(dp_export_asm_chunk(a, "s", 1, 4, 0, r, 4, &sink), DP_OK);
    CU_ASSERT_EQUAL_FATAL(cap.n_got, 1);
    CU_ASSERT(same_records(cap.got[0].recs, r, 6));
    CU_ASSERT(dp_export_asm_released(a, "s", 1, 4));
    /* replays of the whole release change nothing */
    CU_ASSERT_EQUAL(dp_export_asm_chunk(a, "s", 1, 4, 0, r, 4, &sink), DP_OK);
    CU_ASSERT_EQUAL(dp_export_asm_manifest(a, &em, &sink), DP_OK);
    CU_ASSERT_EQUAL(cap.n_got, 1);
    CU_ASSERT_EQUAL(dp_export_asm_stats(a)->late_duplicates, 2);
    CU_ASSERT_EQUAL(dp_export_asm_pending(a, NULL, NULL), 0);
    /* an empty release: chunk_count 0 */
    dp_export_manifest e0 = manifest_for("s", 5, r, 0, 0);
    CU_ASSERT_EQUAL(dp_export_asm_manifest(a, &e0, &sink), DP_OK);
    CU_ASSERT_EQUAL(cap.n_got, 2);
    CU_ASSERT_EQUAL(cap.got[1].n, 0);
    capture_free(&cap);
    dp_export_asm_destroy(a);
}

static void test_released_ranges(void)
{
    dp_export_asm *a;
    CU_ASSERT_EQUAL_FATAL(dp_export_asm_create(&a), DP_OK);
    capture cap = {0};
    dp_export_sink sink = {.ctx = &cap, .release = cap_release};
    /* steps complete out of order; ranges must merge and split correctly */
    static const uint64_t order[] = {5, 1, 3, 2, 9, 4, 7, 8, 6, 100, 10};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        dp_export_manifest em = manifest_for("x", order[i], NULL, 0, 0);
        CU_ASSERT_EQUAL(dp_export_asm_manifest(a, &em, &sink), DP_OK);
    }
    CU_ASSERT_EQUAL(cap.n_got, 11);
    for (uint64_t s = 1; s <= 10; s++)
        CU_ASSERT(dp_export_asm_released(a, "x", 1, s));
    CU_ASSERT_FALSE(dp_export_asm_released(a, "x", 1, 11));
    CU_ASSERT_FALSE(dp_export_asm_released(a, "x", 1, 99));
    CU_ASSERT(dp_export_asm_released(a, "x", 1, 100));
    CU_ASSERT_FALSE(dp_export_asm_released(a, "y", 1, 1));
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        dp_export_manifest em = manifest_for("x", order[i], NULL, 0, 0);
        CU_ASSERT_EQUAL(dp_export_asm_manifest(a, &em, &sink), DP_OK);
    }
    CU_ASSERT_EQUAL(cap.n_got, 11);
    capture_free(&cap);
    dp_export_asm_destroy(a);
}

/* --- randomized interleavings ----------------------------------------------------------------- */

enum fate {
    FATE_CLEAN,            /* all chunks + manifest, identical duplicates, any order: written */
    FATE_MISSING_CHUNK,    /* one chunk never arrives: never written */
    FATE_BAD_COUNT,        /* only a manifest with record_count + 1: never written */
    FATE_BAD_CHECKSUM,     /* only a manifest with a wrong checksum: never written */
    FATE_ABORTED_FIRST,    /* an aborted attempt with other values, then the committed one: written */
    FATE_BAD_THEN_GOOD,    /* a contradicting manifest, then the right one: written */
    FATE_COUNT
};

typedef struct event {
    int      is_manifest;
    size_t   release;      /* index into the truth table */
    uint32_t chunk;        /* chunk index */
    size_t   from, n;      /* records [from, from+n) */
    int      variant;      /* 0 true data; 1 altered values (aborted attempt); 2 bad count; 3 bad checksum */
} event;

typedef struct truth {
    char     stream[8];
    uint64_t step;
    size_t   n;
    size_t   chunk_size;
    uint32_t chunks;
    int      fate;
    dp_synth_record *recs;
    dp_synth_record *alt;    /* altered copy (different values) */
    int32_t *ints, *alt_ints;
    double  *dbls, *alt_dbls;
} truth;

static uint64_t rnd(dp_drbg *g, uint64_t m) { return dp_drbg_uniform(g, m); }

static void make_truth(truth *t, dp_drbg *g, int stream_kind)
{
    t->n = (size_t)rnd(g, 30);
    t->chunk_size = 1 + (size_t)rnd(g, 7);
    t->chunks = (uint32_t)((t->n + t->chunk_size - 1) / t->chunk_size);
    size_t n = t->n ? t->n : 1;
    t->recs = calloc(n, sizeof *t->recs);
    t->alt = calloc(n, sizeof *t->alt);
    t->ints = calloc(3 * n, sizeof *t->ints);
    t->alt_ints = calloc(3 * n, sizeof *t->alt_ints);
    t->dbls = calloc(2 * n, sizeof *t->dbls);
    t->alt_dbls = calloc(2 * n, sizeof *t->alt_dbls);
    for (size_t i = 0; i < t->n; i++) {
        dp_synth_record *r = &t->recs[i], *q = &t->alt[i];
        r->synthetic_id = q->synthetic_id = i;
        if (stream_kind == 0) {
            r->value.kind = q->value.kind = DP_PAYLOAD_CATEGORY;
            r->value.category = (int64_t)rnd(g, 4);
            q->value.category = r->value.category + 1;
        } else if (stream_kind == 1) {
            for (int k = 0; k < 3; k++) {
                t->ints[3 * i + k] = (int32_t)rnd(g, 5);
                t->alt_ints[3 * i + k] = t->ints[3 * i + k] + (k == 2);
            }
            r->value.kind = q->value.kind = DP_PAYLOAD_ROW;
            r->value.row = t->ints + 3 * i;
            q->value.row = t->alt_ints + 3 * i;
            r->value.row_len = q->value.row_len = 3;
        } else {
            for (int k = 0; k < 2; k++) {
                t->dbls[2 * i + k] = (double)rnd(g, 1000) / 997.0;
                t->alt_dbls[2 * i + k] = t->dbls[2 * i + k] + (k == 0 ? 0.5 : 0.0);
            }
            r->value.kind = q->value.kind = DP_PAYLOAD_POINT;
            r->value.point = t->dbls + 2 * i;
            q->value.point = t->alt_dbls + 2 * i;
            r->value.point_len = q->value.point_len = 2;
        }
    }
}

static void truth_free(truth *t)
{
    free(t->recs);
    free(t->alt);
    free(t->ints);
    free(t->alt_ints);
    free(t->dbls);
    free(t->alt_dbls);
}

typedef struct evlist {
    event *v;
    size_t n, cap;
} evlist;

static void push(evlist *l, event e)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = e;
}

static void shuffle(event *v, size_t n, dp_drbg *g)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)rnd(g, i);
        event tmp = v[i - 1];
        v[i - 1] = v[j];
        v[j] = tmp;
    }
}

static void chunk_events(evlist *l, const truth *t, size_t ri, int variant, int skip_chunk)
{
    for (uint32_t c = 0; c < t->chunks; c++) {
        if ((int)c == skip_chunk)
            continue;
        size_t from = c * t->chunk_size;
        size_t n = from + t->chunk_size <= t->n ? t->chunk_size : t->n - from;
        push(l, (event){0, ri, c, from, n, variant});
    }
}

/* The events of one release, as a sequence of groups that must arrive in
 * order (each group shuffled internally). */
static void release_events(evlist *out, const truth *t, size_t ri, dp_drbg *g)
{
    evlist grp = {0};
    event man = {1, ri, 0, 0, 0, 0};
    switch (t->fate) {
    case FATE_CLEAN:
        chunk_events(&grp, t, ri, 0, -1);
        push(&grp, man);
        for (uint64_t d = rnd(g, 4); d > 0; d--)       /* identical duplicates, anywhere */
            push(&grp, grp.v[rnd(g, grp.n)]);
        shuffle(grp.v, grp.n, g);
        break;
    case FATE_MISSING_CHUNK:
        chunk_events(&grp, t, ri, 0, t->chunks ? (int)rnd(g, t->chunks) : -1);
        if (t->chunks == 0)
            man.variant = 2;    /* nothing to drop: contradict the count instead */
        push(&grp, man);
        shuffle(grp.v, grp.n, g);
        break;
    case FATE_BAD_COUNT:
    case FATE_BAD_CHECKSUM:
        chunk_events(&grp, t, ri, 0, -1);
        man.variant = t->fate == FATE_BAD_COUNT ? 2 : 3;
        push(&grp, man);
        shuffle(grp.v, grp.n, g);
        break;
    case FATE_ABORTED_FIRST:
        chunk_events(&grp, t, ri, 1, -1);             /* the aborted attempt's chunks */
        if (rnd(g, 2))
            push(&grp, (event){0, ri, t->chunks, 0, t->n ? 1 : 0, 1});   /* and a stray extra index */
        shuffle(grp.v, grp.n, g);
        for (size_t i = 0; i < grp.n; i++)
            push(out, grp.v[i]);
        grp.n = 0;
        chunk_events(&grp, t, ri, 0, -1);
        push(&grp, man);
        shuffle(grp.v, grp.n, g);
        break;
    case FATE_BAD_THEN_GOOD:
        chunk_events(&grp, t, ri, 0, -1);
        man.variant = 2 + (int)rnd(g, 2);
        push(&grp, man);
        shuffle(grp.v, grp.n, g);
        for (size_t i = 0; i < grp.n; i++)
            push(out, grp.v[i]);
        grp.n = 0;
        man.variant = 0;
        push(&grp, man);
        break;
    }
    for (size_t i = 0; i < grp.n; i++)
        push(out, grp.v[i]);
    free(grp.v);
}

static int feed(dp_export_asm *a, const truth *t, const event *e, const dp_export_sink *sink)
{
    if (!e->is_manifest) {
        const dp_synth_record *src = e->variant == 1 ? t->alt : t->recs;
        return dp_export_asm_chunk(a, t->stream, strlen(t->stream), t->step, e->chunk, src + e->from, e->n, sink);
    }
    dp_export_manifest em = manifest_for(t->stream, t->step, t->recs, t->n, t->chunks);
    if (e->variant == 2)
        em.m.record_count++;
    if (e->variant == 3)
        em.checksum[7] ^= 0x40;
    return dp_export_asm_manifest(a, &em, sink);
}

static int count_pending(void *ctx, const char *s, size_t n, uint64_t step, const char *what)
{
    (void)s; (void)n; (void)step; (void)what;
    (*(size_t *)ctx)++;
    return 0;
}

static void pending_cb(void *ctx, const char *s, size_t n, uint64_t step, const char *what)
{
    count_pending(ctx, s, n, step, what);
}

static void test_random_interleavings(void)
{
    enum { TRIALS = 300, STREAMS = 3, STEPS = 6, R = STREAMS * STEPS };
    dp_key key;
    dptest_key(&key, 7);
    int wrong = 0, twice = 0, missing = 0, partial_written = 0, pending_mismatch = 0;
    uint64_t n_fate[FATE_COUNT] = {0}, n_events = 0, checks_failed = 0;
    for (uint64_t trial = 0; trial < TRIALS; trial++) {
        dp_drbg g;
        dp_drbg_init(&g, &key, "asm", 3, trial, "test/export_assemble/v1");
        truth t[R];
        evlist per[R];
        memset(per, 0, sizeof per);
        static const char *const names[STREAMS] = {"a", "b/c", "d"};
        for (size_t i = 0; i < R; i++) {
            memset(&t[i], 0, sizeof t[i]);
            snprintf(t[i].stream, sizeof t[i].stream, "%s", names[i % STREAMS]);
            t[i].step = 1 + i / STREAMS;
            make_truth(&t[i], &g, (int)(i % STREAMS));
            t[i].fate = (int)rnd(&g, FATE_COUNT);
            n_fate[t[i].fate]++;
            release_events(&per[i], &t[i], i, &g);
        }
        /* random merge of the releases' sequences (each keeps its order) */
        size_t pos[R] = {0}, left = 0;
        for (size_t i = 0; i < R; i++)
            left += per[i].n;
        dp_export_asm *a;
        CU_ASSERT_EQUAL_FATAL(dp_export_asm_create(&a), DP_OK);
        capture cap = {0};
        dp_export_sink sink = {.ctx = &cap, .release = cap_release};
        while (left) {
            uint64_t k = rnd(&g, left);
            size_t i = 0;
            while (k >= per[i].n - pos[i]) {
                k -= per[i].n - pos[i];
                i++;
            }
            CU_ASSERT_EQUAL(feed(a, &t[i], &per[i].v[pos[i]], &sink), DP_OK);
            pos[i]++;
            left--;
            n_events++;
        }
        /* late duplicates of clean releases after everything */
        for (size_t i = 0; i < R; i++)
            if (t[i].fate == FATE_CLEAN && per[i].n)
                CU_ASSERT_EQUAL(feed(a, &t[i], &per[i].v[rnd(&g, per[i].n)], &sink), DP_OK);
        /* check what came out */
        int seen[R] = {0};
        for (size_t k = 0; k < cap.n_got; k++) {
            const rel *got = &cap.got[k];
            size_t i = 0;
            while (i < R && !(strcmp(t[i].stream, got->stream) == 0 && t[i].step == got->step))
                i++;
            CU_ASSERT_FATAL(i < R);
            if (seen[i]++)
                twice++;
            if (t[i].fate == FATE_MISSING_CHUNK || t[i].fate == FATE_BAD_COUNT || t[i].fate == FATE_BAD_CHECKSUM)
                partial_written++;
            if (got->n != t[i].n || !same_records(got->recs, t[i].recs, t[i].n))
                wrong++;
        }
        size_t should_pend = 0;
        for (size_t i = 0; i < R; i++) {
            int should = t[i].fate == FATE_CLEAN || t[i].fate == FATE_ABORTED_FIRST || t[i].fate == FATE_BAD_THEN_GOOD;
            if (should && !seen[i])
                missing++;
            should_pend += !should;
        }
        size_t pend = 0;
        CU_ASSERT_EQUAL(dp_export_asm_pending(a, pending_cb, &pend), should_pend);
        if (pend != should_pend)
            pending_mismatch++;
        checks_failed += dp_export_asm_stats(a)->failed_checks;
        capture_free(&cap);
        dp_export_asm_destroy(a);
        for (size_t i = 0; i < R; i++) {
            truth_free(&t[i]);
            free(per[i].v);
        }
    }
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT_EQUAL(twice, 0);
    CU_ASSERT_EQUAL(partial_written, 0);
    CU_ASSERT_EQUAL(missing, 0);
    CU_ASSERT_EQUAL(pending_mismatch, 0);
    /* the scenarios really happened */
    for (int f = 0; f < FATE_COUNT; f++)
        CU_ASSERT(n_fate[f] > 100);
    CU_ASSERT(checks_failed > 100);
    printf("\n  %d trials, %llu events, %llu failed manifest checks; wrong %d, twice %d, partial %d, missing %d ",
           TRIALS, (unsigned long long)n_events, (unsigned long long)checks_failed, wrong, twice, partial_written,
           missing);
}

/* The same harness would catch an assembler that trusted a manifest's
 * counts without the checksum: with checksums stripped, an aborted
 * attempt whose chunks arrive after the committed ones (same counts,
 * other values) is written with the wrong values. */
static void test_checksum_is_what_catches_swapped_chunks(void)
{
    dp_synth_record good[4], bad[4];
    make_cats(good, 4, 0);
    make_cats(bad, 4, 50);
    for (int with_checksum = 1; with_checksum >= 0; with_checksum--) {
        dp_export_asm *a;
        CU_ASSERT_EQUAL_FATAL(dp_export_asm_create(&a), DP_OK);
        capture cap = {0};
        dp_export_sink sink = {.ctx = &cap, .release = cap_release};
        dp_export_manifest em = manifest_for("s", 1, good, 4, 2);
        em.has_checksum = with_checksum;
        CU_ASSERT_EQUAL(dp_export_asm_chunk(a, "s", 1, 1, 0, good, 2, &sink), DP_OK);
        CU_ASSERT_EQUAL(dp_export_asm_manifest(a, &em, &sink), DP_OK);
        CU_ASSERT_EQUAL(dp_export_asm_chunk(a, "s", 1, 1, 1, bad + 2, 2, &sink), DP_OK);   /* wrong data */
        if (with_checksum) {
            CU_ASSERT_EQUAL(cap.n_got, 0);
            CU_ASSERT_EQUAL(dp_export_asm_stats(a)->failed_checks, 1);
            CU_ASSERT_EQUAL(dp_export_asm_chunk(a, "s", 1, 1, 1, good + 2, 2, &sink), DP_OK);   /* the right one */
            CU_ASSERT_EQUAL_FATAL(cap.n_got, 1);
            CU_ASSERT(same_records(cap.got[0].recs, good, 4));
        } else {
            /* counts alone accept it: this is the failure the checksum prevents */
            CU_ASSERT_EQUAL_FATAL(cap.n_got, 1);
            CU_ASSERT_FALSE(same_records(cap.got[0].recs, good, 4));
        }
        capture_free(&cap);
        dp_export_asm_destroy(a);
    }
}

static const dptest_case CASES[] = {
    {"manifest checksum from first principles equals the codec's", test_checksum_first_principles},
    {"manifest first, stray chunk index, sink failure retried, duplicates dropped", test_manifest_first_and_duplicates},
    {"released-step ranges out of order", test_released_ranges},
    {"random interleavings: never partial, never twice, never wrong", test_random_interleavings},
    {"without the checksum a swapped chunk would be written", test_checksum_is_what_catches_swapped_chunks},
    {NULL, NULL},
};

int main(void) { return dptest_run("export_assemble", CASES); }
