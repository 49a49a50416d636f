/* stats_record.c — statistics records and their merger (stats_record.h).
 *
 * Owns: the merger's pending steps (each shard's statistics, copied).
 * Calls: seal (dp_mac, dp_seal, dp_unseal), stats (save, load, merge), buf;
 * the merger's load calls its own add (one set of checks). */
#include "stream/stats_record.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dp_error.h"
#include "stream/seal.h"

static const char MAGIC[4] = {'D', 'P', 'S', '1'};
static const char MAC_LABEL[] = "dpstream.stats.mac.v1";
static const char MERGER_MAGIC[4] = {'D', 'P', 'M', '1'};

static int clip(size_t len) { return (int)(len < 100 ? len : 100); }

static void put_header(const dp_stats_record *r, int sealed, dp_buf *out)
{
    dp_buf_put_bytes(out, MAGIC, sizeof MAGIC);
    dp_buf_put_blob(out, r->updates_topic, r->updates_topic_len);
    dp_buf_put_blob(out, r->stream_id, r->stream_id_len);
    dp_buf_put_u64(out, r->step);
    dp_buf_put_u32(out, r->shard);
    dp_buf_put_u32(out, r->shard_count);
    dp_buf_put_u8(out, sealed ? 1 : 0);
}

int dp_stats_record_encode(const dp_stats_record *r, const dp_stats *s, const dp_key *state_key,
                           const dp_key *mac_key, dp_buf *out, char *errstr, size_t errstr_size)
{
    if (r->shard >= r->shard_count || s->step != r->step || (!state_key && !mac_key))
        return dp_err(errstr, errstr_size, DP_EINVAL, "statistics record: shard %u of %u, step %llu (statistics "
                      "of step %llu)%s", r->shard, r->shard_count, (unsigned long long)r->step,
                      (unsigned long long)s->step, !state_key && !mac_key ? ", no key" : "");
    dp_buf plain, body;
    dp_buf_init(&plain);
    dp_buf_init(&body);
    size_t head = out->len;
    put_header(r, state_key != NULL, out);
    int rc = dp_buf_status(out);
    if (rc == DP_OK)
        rc = dp_stats_save(s, &plain);
    if (rc == DP_OK && state_key) {
        rc = dp_seal(state_key, r->stream_id, r->stream_id_len, r->step, out->data + head, out->len - head,
                     plain.data, plain.len, &body);
    } else if (rc == DP_OK) {
        uint8_t mac[DP_MAC_BYTES];
        dp_mac(mac_key, MAC_LABEL, out->data + head, out->len - head, plain.data, plain.len, mac);
        dp_buf_put_bytes(&body, plain.data, plain.len);
        dp_buf_put_bytes(&body, mac, sizeof mac);
        rc = dp_buf_status(&body);
    }
    if (rc == DP_OK) {
        dp_buf_put_blob(out, body.data, body.len);
        rc = dp_buf_status(out);
    }
    if (plain.data)
        sodium_memzero(plain.data, plain.len);
    dp_buf_free(&plain);
    dp_buf_free(&body);
    return rc == DP_OK ? DP_OK : dp_err(errstr, errstr_size, rc, "statistics record: out of memory");
}

int dp_stats_record_decode(const uint8_t *data, size_t len, uint32_t shard_count, const dp_key *state_key,
                           const dp_key *mac_key, dp_stats_record *r, dp_stats *s, char *errstr,
                           size_t errstr_size)
{
    dp_reader rd;
    dp_reader_init(&rd, data, len);
    char magic[4];
    memset(r, 0, sizeof *r);
    if (dp_reader_bytes(&rd, magic, sizeof magic) != DP_OK || memcmp(magic, MAGIC, sizeof magic) != 0)
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "not a statistics record");
    r->updates_topic = (const char *)dp_reader_blob(&rd, &r->updates_topic_len);
    r->stream_id = (const char *)dp_reader_blob(&rd, &r->stream_id_len);
    r->step = dp_reader_u64(&rd);
    r->shard = dp_reader_u32(&rd);
    r->shard_count = dp_reader_u32(&rd);
    uint8_t sealed = dp_reader_u8(&rd);
    size_t head_len = rd.off, body_len = 0;
    const uint8_t *body = dp_reader_blob(&rd, &body_len);
    if (!body || dp_reader_finish(&rd) != DP_OK || sealed > 1 || !r->updates_topic || !r->stream_id)
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "a malformed statistics record");
    /* From here on the reason names the stream, step and shard (as the header says: not yet authentic). */
#define REFUSE(...)                                                                                                 \
    do {                                                                                                            \
        char why_[256];                                                                                             \
        snprintf(why_, sizeof why_, __VA_ARGS__);                                                                   \
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "statistics of stream '%.*s' step %llu from shard %u: %s", \
                      clip(r->stream_id_len), r->stream_id, (unsigned long long)r->step, r->shard, why_);           \
    } while (0)
    if (r->shard_count != shard_count)
        REFUSE("written for %u shards, but the updates topic has %u partitions", r->shard_count, shard_count);
    if (r->shard >= shard_count)
        REFUSE("an unknown shard (the stream has shards 0..%u)", shard_count - 1);
    if ((sealed != 0) != (state_key != NULL))
        REFUSE("%s, but this instance has %s state key", sealed ? "sealed" : "not sealed", state_key ? "a" : "no");
    dp_buf plain;
    dp_buf_init(&plain);
    int ok;
    if (sealed) {
        char err[128];
        int rc = dp_unseal(state_key, data, head_len, body, body_len, &plain, err, sizeof err);
        if (rc == DP_ENOMEM) {
            dp_buf_free(&plain);
            return dp_err(errstr, errstr_size, rc, "out of memory");
        }
        ok = rc == DP_OK;
    } else {
        uint8_t mac[DP_MAC_BYTES];
        ok = mac_key && body_len >= DP_MAC_BYTES;
        if (ok) {
            dp_mac(mac_key, MAC_LABEL, data, head_len, body, body_len - DP_MAC_BYTES, mac);
            ok = sodium_memcmp(mac, body + body_len - DP_MAC_BYTES, DP_MAC_BYTES) == 0;
            dp_buf_put_bytes(&plain, body, body_len - DP_MAC_BYTES);
        }
    }
    int rc = ok ? dp_buf_status(&plain) : DP_ECORRUPT;
    if (rc == DP_OK) {
        dp_reader pr;
        dp_reader_init(&pr, plain.data, plain.len);
        rc = dp_stats_load(s, &pr);
        if (rc == DP_OK && dp_reader_finish(&pr) != DP_OK)
            rc = DP_ECORRUPT;
    }
    if (plain.data)
        sodium_memzero(plain.data, plain.len);
    dp_buf_free(&plain);
    if (rc == DP_ENOMEM)
        return dp_err(errstr, errstr_size, rc, "out of memory");
    if (!ok)
        REFUSE("fails authentication (altered, or written under another key)");
    if (rc != DP_OK)
        REFUSE("authentic, but its statistics do not decode");
    if (s->step != r->step)
        REFUSE("holds the statistics of step %llu", (unsigned long long)s->step);
#undef REFUSE
    return DP_OK;
}

/* --- merger ----------------------------------------------------------------------- */

struct dp_stats_pending {
    uint64_t  step;
    uint32_t  n_have;
    uint8_t  *have;     /* [shards] */
    dp_stats *shard;    /* [shards] */
};

static void pending_free(dp_stats_pending *p, uint32_t shards)
{
    for (uint32_t i = 0; p->shard && i < shards; i++)
        dp_stats_free(&p->shard[i]);
    free(p->shard);
    free(p->have);
}

int dp_stats_merger_init(dp_stats_merger *m, const char *stream_id, size_t stream_id_len, uint32_t shards,
                         uint64_t released)
{
    memset(m, 0, sizeof *m);
    if (shards == 0)
        return DP_EINVAL;
    if (!(m->stream_id = malloc(stream_id_len ? stream_id_len : 1)))
        return DP_ENOMEM;
    memcpy(m->stream_id, stream_id, stream_id_len);
    m->stream_id_len = stream_id_len;
    m->shards = shards;
    m->released = released;
    return DP_OK;
}

void dp_stats_merger_free(dp_stats_merger *m)
{
    for (size_t i = 0; i < m->n_pending; i++)
        pending_free(&m->pending[i], m->shards);
    free(m->pending);
    free(m->stream_id);
    memset(m, 0, sizeof *m);
}

static dp_stats_pending *find(const dp_stats_merger *m, uint64_t step)
{
    for (size_t i = 0; i < m->n_pending; i++)
        if (m->pending[i].step == step)
            return &m->pending[i];
    return NULL;
}

static dp_stats_pending *open_step(dp_stats_merger *m, uint64_t step)
{
    dp_stats_pending *grown = realloc(m->pending, (m->n_pending + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    m->pending = grown;
    dp_stats_pending *p = &m->pending[m->n_pending];
    memset(p, 0, sizeof *p);
    p->step = step;
    p->have = calloc(m->shards, 1);
    p->shard = calloc(m->shards, sizeof *p->shard);
    if (!p->have || !p->shard) {
        pending_free(p, m->shards);
        return NULL;
    }
    for (uint32_t i = 0; i < m->shards; i++)
        dp_stats_init(&p->shard[i], step);
    m->n_pending++;
    return p;
}

int dp_stats_merger_add(dp_stats_merger *m, const dp_stats_record *r, const dp_stats *s, char *errstr,
                        size_t errstr_size)
{
    const char *why = NULL;
    if (r->stream_id_len != m->stream_id_len || memcmp(r->stream_id, m->stream_id, m->stream_id_len) != 0)
        why = "belongs to another stream";
    else if (r->shard_count != m->shards)
        why = "written for another shard count";
    else if (r->shard >= m->shards)
        why = "an unknown shard";
    else if (r->step <= m->released)
        why = "repeats a step already released";
    else if (s->step != r->step)
        why = "holds another step's statistics";
    dp_stats_pending *p = why ? NULL : find(m, r->step);
    if (p && p->have[r->shard])
        why = "repeats a step: that shard's statistics of it are already in";
    if (why)
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "statistics of stream '%.*s' step %llu from shard %u of %u: %s",
                      clip(r->stream_id_len), r->stream_id, (unsigned long long)r->step, r->shard, r->shard_count,
                      why);
    if (!p && !(p = open_step(m, r->step)))
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    dp_stats *slot = &p->shard[r->shard];
    dp_stats_clear(slot, r->step);
    int rc = dp_stats_merge(slot, s);
    if (rc != DP_OK)
        return dp_err(errstr, errstr_size, rc, "statistics of step %llu from shard %u: %s",
                      (unsigned long long)r->step, r->shard, dp_status_str(rc));
    p->have[r->shard] = 1;
    p->n_have++;
    return DP_OK;
}

int dp_stats_merger_complete(const dp_stats_merger *m, uint64_t step)
{
    const dp_stats_pending *p = find(m, step);
    return p && p->n_have == m->shards;
}

int dp_stats_merger_has(const dp_stats_merger *m, uint64_t step, uint32_t shard)
{
    const dp_stats_pending *p = shard < m->shards ? find(m, step) : NULL;
    return p && p->have[shard];
}

int dp_stats_merger_take(dp_stats_merger *m, uint64_t step, dp_stats *out)
{
    dp_stats_pending *p = find(m, step);
    if (!p || p->n_have != m->shards || step != m->released + 1)
        return DP_ESTATE;
    dp_stats_clear(out, step);
    int rc = DP_OK;
    for (uint32_t i = 0; i < m->shards && rc == DP_OK; i++)
        rc = dp_stats_merge(out, &p->shard[i]);
    if (rc != DP_OK)
        return rc;
    pending_free(p, m->shards);
    *p = m->pending[--m->n_pending];
    m->released = step;
    return DP_OK;
}

/* --- the merger's pending state (docs/kafka.md §10) --------------------------------- */

static int by_step(const void *a, const void *b)
{
    uint64_t x = (*(const dp_stats_pending *const *)a)->step, y = (*(const dp_stats_pending *const *)b)->step;
    return x < y ? -1 : x > y;
}

int dp_stats_merger_save(const dp_stats_merger *m, dp_buf *out)
{
    /* Steps ascending and shards ascending: the bytes are a function of
     * what is held, not of the order the records came in. */
    const dp_stats_pending **order = malloc((m->n_pending ? m->n_pending : 1) * sizeof *order);
    if (!order)
        return DP_ENOMEM;
    for (size_t i = 0; i < m->n_pending; i++)
        order[i] = &m->pending[i];
    qsort(order, m->n_pending, sizeof *order, by_step);
    dp_buf_put_bytes(out, MERGER_MAGIC, sizeof MERGER_MAGIC);
    dp_buf_put_blob(out, m->stream_id, m->stream_id_len);
    dp_buf_put_u32(out, m->shards);
    dp_buf_put_u64(out, m->released);
    dp_buf_put_u32(out, (uint32_t)m->n_pending);
    int rc = DP_OK;
    for (size_t i = 0; i < m->n_pending && rc == DP_OK; i++) {
        const dp_stats_pending *p = order[i];
        dp_buf_put_u64(out, p->step);
        dp_buf_put_u32(out, p->n_have);
        for (uint32_t k = 0; k < m->shards && rc == DP_OK; k++) {
            if (!p->have[k])
                continue;
            dp_buf_put_u32(out, k);
            dp_buf body;
            dp_buf_init(&body);
            rc = dp_stats_save(&p->shard[k], &body);
            if (rc == DP_OK)
                rc = dp_buf_status(&body);
            if (rc == DP_OK)
                dp_buf_put_blob(out, body.data, body.len);
            if (body.data)
                sodium_memzero(body.data, body.len);
            dp_buf_free(&body);
        }
    }
    free(order);
    return rc != DP_OK ? rc : dp_buf_status(out);
}

/* One pending step's shards from r into m. */
static int load_step(dp_stats_merger *m, dp_reader *r, dp_stats *tmp, char *errstr, size_t errstr_size)
{
    uint64_t step = dp_reader_u64(r);
    uint32_t n = dp_reader_u32(r);
    if (dp_reader_status(r) != DP_OK || n == 0 || n > m->shards)
        return dp_err(errstr, errstr_size, DP_ECORRUPT, "merger state of stream '%.*s': a malformed pending step",
                      clip(m->stream_id_len), m->stream_id);
    for (uint32_t j = 0; j < n; j++) {
        dp_stats_record rec = {.stream_id = m->stream_id, .stream_id_len = m->stream_id_len, .step = step,
                               .shard = dp_reader_u32(r), .shard_count = m->shards};
        size_t len = 0;
        const uint8_t *body = dp_reader_blob(r, &len);
        if (!body)
            return dp_err(errstr, errstr_size, DP_ECORRUPT, "merger state of stream '%.*s': truncated",
                          clip(m->stream_id_len), m->stream_id);
        dp_reader br;
        dp_reader_init(&br, body, len);
        dp_stats_clear(tmp, step);
        int rc = dp_stats_load(tmp, &br);
        if (rc == DP_OK && dp_reader_finish(&br) != DP_OK)
            rc = DP_ECORRUPT;
        if (rc != DP_OK)
            return dp_err(errstr, errstr_size, rc, "merger state of stream '%.*s': step %llu shard %u statistics "
                          "do not decode", clip(m->stream_id_len), m->stream_id, (unsigned long long)step, rec.shard);
        rc = dp_stats_merger_add(m, &rec, tmp, errstr, errstr_size);
        if (rc != DP_OK)
            return rc;
    }
    return DP_OK;
}

int dp_stats_merger_load(dp_stats_merger *m, const char *stream_id, size_t stream_id_len, uint32_t shards,
                         uint64_t released, const uint8_t *data, size_t len, char *errstr, size_t errstr_size)
{
    int rc = dp_stats_merger_init(m, stream_id, stream_id_len, shards, released);
    if (rc != DP_OK)
        return dp_err(errstr, errstr_size, rc, "merger of stream '%.*s': %s", clip(stream_id_len), stream_id,
                      dp_status_str(rc));
    dp_reader r;
    dp_reader_init(&r, data, len);
    char magic[4];
    size_t sid_len = 0;
    const char *why = NULL;
    if (dp_reader_bytes(&r, magic, sizeof magic) != DP_OK || memcmp(magic, MERGER_MAGIC, sizeof magic) != 0)
        why = "not a merger state";
    const uint8_t *sid = why ? NULL : dp_reader_blob(&r, &sid_len);
    uint32_t n_shards = why ? 0 : dp_reader_u32(&r);
    uint64_t was = why ? 0 : dp_reader_u64(&r);
    uint32_t n_steps = why ? 0 : dp_reader_u32(&r);
    if (!why && (dp_reader_status(&r) != DP_OK || !sid))
        why = "truncated";
    else if (!why && (sid_len != stream_id_len || memcmp(sid, stream_id, sid_len) != 0))
        why = "of another stream";
    else if (!why && n_shards != shards)
        why = "of another shard count";
    else if (!why && was != released)
        why = "of another released step than the release half's";
    dp_stats tmp;
    dp_stats_init(&tmp, 1);
    rc = why ? DP_ECORRUPT : DP_OK;
    if (why)
        dp_err(errstr, errstr_size, rc, "merger state of stream '%.*s' (%u shards, step %llu released): %s; "
               "refusing it", clip(stream_id_len), stream_id, shards, (unsigned long long)released, why);
    for (uint32_t i = 0; i < n_steps && rc == DP_OK; i++)
        rc = load_step(m, &r, &tmp, errstr, errstr_size);
    if (rc == DP_OK && dp_reader_finish(&r) != DP_OK)
        rc = dp_err(errstr, errstr_size, DP_ECORRUPT, "merger state of stream '%.*s': trailing bytes",
                    clip(stream_id_len), stream_id);
    dp_stats_free(&tmp);
    if (rc != DP_OK)
        dp_stats_merger_free(m);
    return rc;
}
