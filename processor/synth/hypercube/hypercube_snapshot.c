/* hypercube_snapshot.c — snapshots of `hypercube`'s release half: the
 * schedule's position, every cell's counter, the last release's counts and
 * (d = 1) the history new cells replay; every field range-checked on load. */
#include "synth/hypercube/hypercube_release.h"
#include "core/ledger_io.h"

#include "core/dp_error.h"

#include <stdlib.h>
#include <string.h>

#define NAME "hypercube"

int hc_release_save(const dp_release_half *rel, dp_buf *b)
{
    const hc_release *m = (const hc_release *)rel;
    const dp_hypercube_config *c = &m->cfg;
    int dense = c->variant == DP_HYPERCUBE_DENSE;
    dp_buf_put_u32(b, dense ? HC_REL_MAGIC_DENSE : HC_REL_MAGIC);
    dp_buf_put_u32(b, c->box.d);
    dp_buf_put_u32(b, c->max_depth);
    dp_buf_put_u64(b, c->points_per_step);
    dp_buf_put_u8(b, (uint8_t)c->delta_output);
    dp_buf_put_f64(b, c->epsilon);
    if (dense) {   /* the paper's layout is unchanged; "dense" adds its constants and open epoch */
        dp_buf_put_u32(b, c->epochs_per_level);
        dp_buf_put_f64(b, c->depth_snr);
        dp_buf_put_f64(b, c->split_threshold);
        dp_buf_put_u64(b, m->open_steps);
    }
    dp_buf_put_u64(b, m->done);
    dp_buf_put_u64(b, m->t);
    dp_buf_put_u64(b, m->cstep);
    dp_buf_put_u32(b, m->level);
    dp_buf_put_u32(b, m->depth);
    dp_buf_put_u32(b, m->prev_depth);
    dp_buf_put_f64(b, m->eps_step);
    dp_buf_put_u8(b, (uint8_t)m->clamped);
    int rc = dp_ledger_save(&m->ledger, b);
    for (unsigned j = 1; j <= m->depth && rc == DP_OK; j++)
        for (uint64_t p = 0; p < ((uint64_t)1 << j); p++)
            dp_isc_save(&m->cells[j][p], b);
    for (uint64_t p = 0; p < ((uint64_t)1 << m->prev_depth) && rc == DP_OK; p++)
        dp_buf_put_u64(b, m->prev[p]);
    const hc_history *h = &m->hist;
    dp_buf_put_u64(b, h->steps);
    for (uint64_t s = 0; s < h->steps; s++) {
        dp_buf_put_u64(b, h->t[s]);
        dp_buf_put_u64(b, h->off[s + 1] - h->off[s]);
        for (uint64_t i = h->off[s]; i < h->off[s + 1]; i++) {
            dp_buf_put_u64(b, h->keys[i]);
            dp_buf_put_i64(b, h->counts[i]);
        }
    }
    return rc == DP_OK ? dp_buf_status(b) : rc;
}
static int load_history(hc_release *m, dp_reader *r)
{
    uint64_t steps = dp_reader_u64(r);
    if (dp_reader_status(r) != DP_OK || steps != (m->cfg.box.d == 1 ? m->cstep : 0) ||
        steps > (r->len - r->off) / 16)
        return DP_ECORRUPT;
    uint64_t last_t = 0;
    dp_stats st;
    dp_stats_init(&st, 0);
    int rc = DP_OK;
    for (uint64_t s = 0; s < steps && rc == DP_OK; s++) {
        uint64_t t = dp_reader_u64(r), n = dp_reader_u64(r);
        if (dp_reader_status(r) != DP_OK || t <= last_t || t > m->t || n > t - last_t || n > (r->len - r->off) / 16) {
            rc = DP_ECORRUPT;
            break;
        }
        dp_stats_clear(&st, 0);
        uint64_t prev_key = 0;
        int64_t sum = 0;
        for (uint64_t i = 0; i < n && rc == DP_OK; i++) {
            uint64_t k = dp_reader_u64(r);
            int64_t c = dp_reader_i64(r);
            if (dp_reader_status(r) != DP_OK || k >> m->cfg.max_depth || (i && k <= prev_key) || c <= 0 ||
                (uint64_t)c > t - last_t)
                rc = DP_ECORRUPT;
            else
                rc = dp_stats_add(&st, k, c);
            prev_key = k;
            sum += c;
        }
        if (rc == DP_OK && (uint64_t)sum != t - last_t)
            rc = DP_ECORRUPT;
        if (rc == DP_OK && (rc = dp_stats_finish(&st)) == DP_OK)
            rc = hc_history_append(&m->hist, t, &st);
        last_t = t;
    }
    dp_stats_free(&st);
    if (rc == DP_OK && steps && last_t != m->t)
        rc = DP_ECORRUPT;
    return rc;
}
int hc_release_load(dp_release_half *rel, dp_reader *r)
{
    hc_release *m = (hc_release *)rel;
    const dp_hypercube_config *c = &m->cfg;
    uint32_t magic = dp_reader_u32(r);
    /* A stream started under the paper's rule, the default before issue 38,
     * whose configuration does not name a variant continues under that rule:
     * its counters, schedule and spend are the paper's (changing them mid-
     * stream is a new stream).  A named variant must match the snapshot. */
    if (magic == HC_REL_MAGIC && c->variant == DP_HYPERCUBE_DENSE && !c->variant_explicit)
        m->cfg.variant = DP_HYPERCUBE_PAPER;
    int dense = c->variant == DP_HYPERCUBE_DENSE;
    if (magic != (dense ? HC_REL_MAGIC_DENSE : HC_REL_MAGIC) || dp_reader_u32(r) != c->box.d ||
        dp_reader_u32(r) != c->max_depth || dp_reader_u64(r) != c->points_per_step ||
        dp_reader_u8(r) != (uint8_t)c->delta_output || dp_reader_f64(r) != c->epsilon)
        return DP_ECORRUPT;
    if (dense && (dp_reader_u32(r) != c->epochs_per_level || dp_reader_f64(r) != c->depth_snr ||
                  dp_reader_f64(r) != c->split_threshold))
        return DP_ECORRUPT;
    m->open_steps = dense ? dp_reader_u64(r) : 0;
    m->done = dp_reader_u64(r);
    m->t = dp_reader_u64(r);
    m->cstep = dp_reader_u64(r);
    m->level = dp_reader_u32(r);
    unsigned depth = dp_reader_u32(r), prev_depth = dp_reader_u32(r);
    m->eps_step = dp_reader_f64(r);
    m->clamped = dp_reader_u8(r) != 0;
    if (dp_reader_status(r) != DP_OK || m->cstep > m->done || m->cstep > m->t ||
        (m->cstep && m->level != hc_level_of(m, m->t)) || (!m->cstep && (m->t || m->level)) ||
        depth != dp_hypercube_depth(c, m->level) || prev_depth != (m->done ? depth : 0) || m->open_steps > m->cstep)
        return DP_ECORRUPT;
    if (dp_ledger_load(&m->ledger, r) != DP_OK)
        return DP_ECORRUPT;
    if (hc_grow_scratch(m, depth) != DP_OK)
        return DP_ENOMEM;
    for (unsigned j = 1; j <= depth; j++) {
        const dp_isc_level *lv;
        char why[160];
        if (hc_level_params(m, j, m->level, &lv, why, sizeof why) != DP_OK)
            return DP_ECORRUPT;
        uint64_t cells = (uint64_t)1 << j;
        if (cells > (r->len - r->off) / 29 + 1 || !(m->cells[j] = calloc(cells, sizeof *m->cells[j])))
            return DP_ECORRUPT;
        m->depth = j;
        for (uint64_t p = 0; p < cells; p++) {
            dp_isc_keys k = {m->key, m->stream_id, m->stream_id_len, NAME, j, p};
            if (dp_isc_load(&m->cells[j][p], lv, m->level, &k, r) != DP_OK)
                return DP_ECORRUPT;
        }
    }
    uint64_t pc = (uint64_t)1 << prev_depth, total = 0;
    uint64_t *p = realloc(m->prev, pc * sizeof *p);
    if (!p)
        return DP_ENOMEM;
    m->prev = p;
    m->prev_depth = prev_depth;
    for (uint64_t i = 0; i < pc; i++) {
        m->prev[i] = dp_reader_u64(r);
        if (m->prev[i] > m->t - total)
            return DP_ECORRUPT;
        total += m->prev[i];
    }
    m->released = total;
    if (dp_reader_status(r) != DP_OK || total != (m->t > c->max_release_points ? c->max_release_points : m->t))
        return DP_ECORRUPT;
    int rc = load_history(m, r);
    return rc != DP_OK ? rc : dp_reader_status(r);
}
