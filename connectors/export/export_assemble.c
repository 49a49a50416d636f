/* export_assemble.c — chunk + manifest reassembly (see export_assemble.h). */
#include "connectors/export/export_assemble.h"

#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "core/dp_error.h"
#include "core/bytes_map.h"

_Static_assert(DP_EXPORT_CHECKSUM_BYTES == DP_CODEC_CHECKSUM_BYTES, "checksum sizes differ");

/* --- owned copies ------------------------------------------------------------------- */

/* A chunk's records with their row/point payloads copied into two flat
 * arrays; record pointers are fixed up after the copies are complete. */
typedef struct chunk {
    uint32_t         index;
    size_t           n;
    dp_synth_record *recs;
    int32_t         *ints;
    double          *dbls;
} chunk;

static void chunk_free(chunk *c)
{
    free(c->recs);
    free(c->ints);
    free(c->dbls);
    memset(c, 0, sizeof *c);
}

static int chunk_copy(chunk *c, uint32_t index, const dp_synth_record *r, size_t n)
{
    size_t ni = 0, nd = 0;
    memset(c, 0, sizeof *c);
    c->index = index;
    for (size_t i = 0; i < n; i++) {
        if (r[i].value.kind == DP_PAYLOAD_ROW)
            ni += r[i].value.row_len;
        else if (r[i].value.kind == DP_PAYLOAD_POINT)
            nd += r[i].value.point_len;
    }
    if ((n && !(c->recs = malloc(n * sizeof *c->recs))) || (ni && !(c->ints = malloc(ni * sizeof *c->ints))) ||
        (nd && !(c->dbls = malloc(nd * sizeof *c->dbls)))) {
        chunk_free(c);
        return DP_ENOMEM;
    }
    size_t oi = 0, od = 0;
    for (size_t i = 0; i < n; i++) {
        c->recs[i] = r[i];
        dp_payload *p = &c->recs[i].value;
        if (p->kind == DP_PAYLOAD_ROW) {
            if (p->row_len)
                memcpy(c->ints + oi, p->row, p->row_len * sizeof *c->ints);
            p->row = c->ints + oi;
            oi += p->row_len;
        } else if (p->kind == DP_PAYLOAD_POINT) {
            if (p->point_len)
                memcpy(c->dbls + od, p->point, p->point_len * sizeof *c->dbls);
            p->point = c->dbls + od;
            od += p->point_len;
        }
    }
    c->n = n;
    return DP_OK;
}

typedef struct manifest_copy {
    int                 present;
    dp_export_manifest  em;        /* m.stream_id / synthesizer / debias point into the fields below */
    char               *stream;
    char               *synthesizer;
    dp_kv              *debias;
    char              **debias_keys;
} manifest_copy;

static void manifest_free(manifest_copy *mc)
{
    free(mc->stream);
    free(mc->synthesizer);
    if (mc->debias_keys)
        for (size_t i = 0; i < mc->em.m.n_debias; i++)
            free(mc->debias_keys[i]);
    free(mc->debias_keys);
    free(mc->debias);
    memset(mc, 0, sizeof *mc);
}

static int manifest_copy_from(manifest_copy *mc, const dp_export_manifest *src)
{
    memset(mc, 0, sizeof *mc);
    mc->em = *src;
    const dp_release_manifest *m = &src->m;
    const char *syn = m->synthesizer ? m->synthesizer : "";
    if (!(mc->stream = malloc(m->stream_id_len + 1)) || !(mc->synthesizer = strdup(syn)))
        goto oom;
    memcpy(mc->stream, m->stream_id, m->stream_id_len);
    mc->stream[m->stream_id_len] = '\0';
    mc->em.m.stream_id = mc->stream;
    mc->em.m.synthesizer = mc->synthesizer;
    mc->em.m.n_debias = 0;
    mc->em.m.debias = NULL;
    if (m->n_debias) {
        if (!(mc->debias = calloc(m->n_debias, sizeof *mc->debias)) ||
            !(mc->debias_keys = calloc(m->n_debias, sizeof *mc->debias_keys)))
            goto oom;
        for (size_t i = 0; i < m->n_debias; i++) {
            if (!(mc->debias_keys[i] = strdup(m->debias[i].key ? m->debias[i].key : "")))
                goto oom;
            mc->em.m.n_debias = i + 1;
            mc->debias[i].key = mc->debias_keys[i];
            mc->debias[i].value = m->debias[i].value;
        }
        mc->em.m.debias = mc->debias;
    }
    mc->present = 1;
    return DP_OK;
oom:
    manifest_free(mc);
    return DP_ENOMEM;
}

/* --- per stream ------------------------------------------------------------------- */

typedef struct pending {
    uint64_t      step;
    chunk        *chunks;      /* sorted by index */
    size_t        n_chunks, cap_chunks;
    manifest_copy manifest;
} pending;

typedef struct step_range {
    uint64_t lo, hi;
} step_range;

typedef struct stream_state {
    const char *id;           /* owned by the map */
    size_t      id_len;
    step_range *released;     /* sorted, disjoint, non-adjacent */
    size_t      n_released, cap_released;
    pending    *pend;         /* unsorted; usually 0 or 1 entries */
    size_t      n_pend, cap_pend;
} stream_state;

struct dp_export_asm {
    dp_bytes_map    streams;  /* id -> stream_state* (core/bytes_map.h) */
    dp_export_stats stats;
};

int dp_export_asm_create(dp_export_asm **out)
{
    dp_export_asm *a = calloc(1, sizeof *a);
    if (!a)
        return DP_ENOMEM;
    dp_bytes_map_init(&a->streams);
    *out = a;
    return DP_OK;
}

static void pending_free(pending *p)
{
    for (size_t i = 0; i < p->n_chunks; i++)
        chunk_free(&p->chunks[i]);
    free(p->chunks);
    manifest_free(&p->manifest);
    memset(p, 0, sizeof *p);
}

void dp_export_asm_destroy(dp_export_asm *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->streams.cap; i++) {
        stream_state *s = dp_bytes_map_at(&a->streams, i);
        if (!s)
            continue;
        for (size_t j = 0; j < s->n_pend; j++)
            pending_free(&s->pend[j]);
        free(s->pend);
        free(s->released);
        free(s);
    }
    dp_bytes_map_free(&a->streams);
    free(a);
}

const dp_export_stats *dp_export_asm_stats(const dp_export_asm *a) { return &a->stats; }

static stream_state *stream_find(const dp_export_asm *a, const char *id, size_t len)
{
    dp_bytes_map_slot *e = dp_bytes_map_find(&a->streams, id, len);
    return e ? e->value : NULL;
}

static stream_state *stream_get(dp_export_asm *a, const char *id, size_t len)
{
    stream_state *s = stream_find(a, id, len);
    if (s)
        return s;
    dp_bytes_map_slot *e = dp_bytes_map_upsert(&a->streams, id, len);
    if (!e || !(s = calloc(1, sizeof *s)))
        return NULL;
    s->id = e->key;
    s->id_len = e->key_len;
    e->value = s;
    return s;
}

/* Index of the first range with hi >= step. */
static size_t range_lower(const stream_state *s, uint64_t step)
{
    size_t lo = 0, hi = s->n_released;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->released[mid].hi < step)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int is_released(const stream_state *s, uint64_t step)
{
    size_t i = range_lower(s, step);
    return i < s->n_released && s->released[i].lo <= step;
}

static int mark_released(stream_state *s, uint64_t step)
{
    size_t i = range_lower(s, step);
    /* extend the range ending just before step, or the one starting just after */
    int join_prev = i > 0 && s->released[i - 1].hi + 1 == step;
    int join_next = i < s->n_released && step + 1 == s->released[i].lo;
    if (join_prev && join_next) {
        s->released[i - 1].hi = s->released[i].hi;
        memmove(&s->released[i], &s->released[i + 1], (s->n_released - i - 1) * sizeof *s->released);
        s->n_released--;
        return DP_OK;
    }
    if (join_prev) {
        s->released[i - 1].hi = step;
        return DP_OK;
    }
    if (join_next) {
        s->released[i].lo = step;
        return DP_OK;
    }
    if (s->n_released == s->cap_released) {
        size_t cap = s->cap_released ? s->cap_released * 2 : 4;
        step_range *r = realloc(s->released, cap * sizeof *r);
        if (!r)
            return DP_ENOMEM;
        s->released = r;
        s->cap_released = cap;
    }
    memmove(&s->released[i + 1], &s->released[i], (s->n_released - i) * sizeof *s->released);
    s->released[i].lo = s->released[i].hi = step;
    s->n_released++;
    return DP_OK;
}

int dp_export_asm_released(const dp_export_asm *a, const char *stream, size_t stream_len, uint64_t step)
{
    const stream_state *s = stream_find(a, stream, stream_len);
    return s && is_released(s, step);
}

static pending *pending_get(stream_state *s, uint64_t step)
{
    for (size_t i = 0; i < s->n_pend; i++)
        if (s->pend[i].step == step)
            return &s->pend[i];
    if (s->n_pend == s->cap_pend) {
        size_t cap = s->cap_pend ? s->cap_pend * 2 : 2;
        pending *p = realloc(s->pend, cap * sizeof *p);
        if (!p)
            return NULL;
        s->pend = p;
        s->cap_pend = cap;
    }
    pending *p = &s->pend[s->n_pend++];
    memset(p, 0, sizeof *p);
    p->step = step;
    return p;
}

static void pending_remove(stream_state *s, pending *p)
{
    size_t i = (size_t)(p - s->pend);
    pending_free(p);
    s->pend[i] = s->pend[s->n_pend - 1];
    s->n_pend--;
}

static void notice(const dp_export_sink *sink, const stream_state *s, uint64_t step, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void notice(const dp_export_sink *sink, const stream_state *s, uint64_t step, const char *fmt, ...)
{
    if (!sink->notice)
        return;
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sink->notice(sink->ctx, s->id, s->id_len, step, msg);
}

/* What a complete release still lacks: 0 if ready, 1 if waiting (chunks
 * missing), -1 if its chunks contradict the manifest. */
static int check_release(const pending *p, char *why, size_t why_size)
{
    const dp_export_manifest *em = &p->manifest.em;
    uint64_t have = 0;
    size_t k = 0;
    for (uint32_t want = 0; want < em->chunk_count; want++) {
        while (k < p->n_chunks && p->chunks[k].index < want)
            k++;
        if (k == p->n_chunks || p->chunks[k].index != want) {
            snprintf(why, why_size, "chunk %u of %u has not arrived", want, em->chunk_count);
            return 1;
        }
        have += p->chunks[k].n;
    }
    if (have != em->m.record_count) {
        snprintf(why, why_size, "chunks 0..%u hold %llu records but the manifest says %llu",
                 em->chunk_count ? em->chunk_count - 1 : 0, (unsigned long long)have,
                 (unsigned long long)em->m.record_count);
        return -1;
    }
    return 0;
}

/* Concatenate chunks 0..chunk_count-1 (shallow record copies). */
static int gather(const pending *p, dp_synth_record **out, size_t *n_out)
{
    const dp_export_manifest *em = &p->manifest.em;
    size_t n = (size_t)em->m.record_count;
    dp_synth_record *all = NULL;
    if (n && !(all = malloc(n * sizeof *all)))
        return DP_ENOMEM;
    size_t o = 0;
    for (size_t k = 0; k < p->n_chunks; k++) {
        if (p->chunks[k].index >= em->chunk_count)
            break;
        memcpy(all + o, p->chunks[k].recs, p->chunks[k].n * sizeof *all);
        o += p->chunks[k].n;
    }
    *out = all;
    *n_out = o;
    return DP_OK;
}

static int try_complete(dp_export_asm *a, stream_state *s, pending *p, const dp_export_sink *sink)
{
    if (!p->manifest.present)
        return DP_OK;
    char why[256];
    int c = check_release(p, why, sizeof why);
    if (c > 0)
        return DP_OK;
    if (c < 0) {
        a->stats.failed_checks++;
        notice(sink, s, p->step, "release not written: %s", why);
        return DP_OK;
    }
    dp_synth_record *all;
    size_t n;
    int rc = gather(p, &all, &n);
    if (rc != DP_OK)
        return rc;
    if (p->manifest.em.has_checksum) {
        uint8_t sum[DP_EXPORT_CHECKSUM_BYTES];
        dp_codec_checksum h;
        dp_codec_checksum_init(&h);
        for (size_t i = 0; i < n && rc == DP_OK; i++)
            rc = dp_codec_checksum_add(&h, &all[i]);
        dp_codec_checksum_final(&h, sum);
        if (rc != DP_OK || sodium_memcmp(sum, p->manifest.em.checksum, sizeof sum) != 0) {
            free(all);
            a->stats.failed_checks++;
            notice(sink, s, p->step, "release not written: %s",
                   rc != DP_OK ? "a record cannot be encoded canonically" : "checksum does not match the records");
            return DP_OK;
        }
    }
    rc = sink->release(sink->ctx, &p->manifest.em.m, all, n);
    free(all);
    if (rc != DP_OK)
        return rc;
    if ((rc = mark_released(s, p->step)) != DP_OK)
        return rc;
    a->stats.released++;
    a->stats.records_released += n;
    pending_remove(s, p);
    return DP_OK;
}

int dp_export_asm_chunk(dp_export_asm *a, const char *stream, size_t stream_len, uint64_t step,
                        uint32_t chunk_index, const dp_synth_record *records, size_t n,
                        const dp_export_sink *sink)
{
    a->stats.chunks++;
    stream_state *s = stream_get(a, stream, stream_len);
    if (!s)
        return DP_ENOMEM;
    if (is_released(s, step)) {
        a->stats.late_duplicates++;
        return DP_OK;
    }
    pending *p = pending_get(s, step);
    if (!p)
        return DP_ENOMEM;
    chunk c;
    int rc = chunk_copy(&c, chunk_index, records, n);
    if (rc != DP_OK)
        return rc;
    /* sorted insert; the latest copy of an index replaces the held one */
    size_t lo = 0, hi = p->n_chunks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->chunks[mid].index < chunk_index)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < p->n_chunks && p->chunks[lo].index == chunk_index) {
        chunk_free(&p->chunks[lo]);
        p->chunks[lo] = c;
        a->stats.replaced_chunks++;
    } else {
        if (p->n_chunks == p->cap_chunks) {
            size_t cap = p->cap_chunks ? p->cap_chunks * 2 : 4;
            chunk *cs = realloc(p->chunks, cap * sizeof *cs);
            if (!cs) {
                chunk_free(&c);
                return DP_ENOMEM;
            }
            p->chunks = cs;
            p->cap_chunks = cap;
        }
        memmove(&p->chunks[lo + 1], &p->chunks[lo], (p->n_chunks - lo) * sizeof *p->chunks);
        p->chunks[lo] = c;
        p->n_chunks++;
    }
    return try_complete(a, s, p, sink);
}

int dp_export_asm_manifest(dp_export_asm *a, const dp_export_manifest *m, const dp_export_sink *sink)
{
    a->stats.manifests++;
    stream_state *s = stream_get(a, m->m.stream_id, m->m.stream_id_len);
    if (!s)
        return DP_ENOMEM;
    if (is_released(s, m->m.step)) {
        a->stats.late_duplicates++;
        return DP_OK;
    }
    pending *p = pending_get(s, m->m.step);
    if (!p)
        return DP_ENOMEM;
    manifest_copy mc;
    int rc = manifest_copy_from(&mc, m);
    if (rc != DP_OK)
        return rc;
    if (p->manifest.present) {
        a->stats.replaced_manifests++;
        manifest_free(&p->manifest);
    }
    p->manifest = mc;
    return try_complete(a, s, p, sink);
}

/* --- end-of-input report ------------------------------------------------------------ */

typedef struct pend_ref {
    const stream_state *s;
    const pending      *p;
} pend_ref;

static int pend_cmp(const void *x, const void *y)
{
    const pend_ref *a = x, *b = y;
    size_t n = a->s->id_len < b->s->id_len ? a->s->id_len : b->s->id_len;
    int c = memcmp(a->s->id, b->s->id, n);
    if (c)
        return c;
    if (a->s->id_len != b->s->id_len)
        return a->s->id_len < b->s->id_len ? -1 : 1;
    return a->p->step < b->p->step ? -1 : a->p->step > b->p->step;
}

size_t dp_export_asm_pending(const dp_export_asm *a,
                             void (*fn)(void *ctx, const char *stream, size_t stream_len, uint64_t step,
                                        const char *what),
                             void *ctx)
{
    size_t total = 0;
    for (size_t i = 0; i < a->streams.cap; i++) {
        const stream_state *s = dp_bytes_map_at(&a->streams, i);
        total += s ? s->n_pend : 0;
    }
    if (!fn || total == 0)
        return total;
    pend_ref *refs = malloc(total * sizeof *refs);
    if (!refs) {
        fn(ctx, "", 0, 0, "(out of memory listing incomplete releases)");
        return total;
    }
    size_t k = 0;
    for (size_t i = 0; i < a->streams.cap; i++) {
        const stream_state *s = dp_bytes_map_at(&a->streams, i);
        if (!s)
            continue;
        for (size_t j = 0; j < s->n_pend; j++)
            refs[k++] = (pend_ref){s, &s->pend[j]};
    }
    /* sorted so the report does not depend on hash-table order */
    qsort(refs, total, sizeof *refs, pend_cmp);
    for (size_t i = 0; i < total; i++) {
        char why[256];
        const pending *p = refs[i].p;
        if (!p->manifest.present)
            snprintf(why, sizeof why, "%zu chunk(s) but no manifest", p->n_chunks);
        else if (check_release(p, why, sizeof why) == 0)
            snprintf(why, sizeof why, "checksum does not match the records");
        fn(ctx, refs[i].s->id, refs[i].s->id_len, p->step, why);
    }
    free(refs);
    return total;
}
