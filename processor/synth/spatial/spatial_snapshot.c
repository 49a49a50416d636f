/* spatial_snapshot.c — snapshots of `spatial`'s release half: the plan's
 * budgets (checked against the configuration), the pending statistics, the
 * ledger, the partition tree and every node's counter, status and released
 * measure; every field range-checked on load. */
#include "synth/spatial/spatial_release.h"
#include "core/ledger_io.h"

#include "core/dp_error.h"

#include <math.h>
#include <stdlib.h>

int sp_release_save(const dp_release_half *rel, dp_buf *b)
{
    const spatial_release *m = (const spatial_release *)rel;
    dp_buf_put_u32(b, SPATIAL_REL_MAGIC);
    dp_buf_put_u32(b, m->cfg.box.d);
    dp_buf_put_u32(b, m->cfg.max_depth);
    dp_buf_put_u8(b, (uint8_t)m->cfg.variant);
    dp_buf_put_u8(b, (uint8_t)m->cfg.delta_output);
    dp_buf_put_f64(b, m->eps_tree);
    dp_buf_put_f64(b, m->eps_count);
    dp_buf_put_u64(b, m->done);
    dp_buf_put_u8(b, (uint8_t)m->exhausted);
    dp_buf_put_u64(b, m->leaves);
    dp_buf_put_u64(b, m->max_leaf_depth);
    dp_buf_put_u64(b, m->points);
    dp_buf_put_u8(b, (uint8_t)m->clamped);
    dp_buf_put_u8(b, (uint8_t)m->truncated);
    int rc = dp_stats_save(&m->pending, b);
    if (rc == DP_OK)
        rc = dp_ledger_save(&m->ledger, b);
    if (rc == DP_OK)
        rc = dp_ptree_save(&m->tree, b);
    for (uint32_t v = 0; v < m->tree.n && rc == DP_OK; v++) {
        dp_buf_put_u8(b, m->status[v]);
        dp_buf_put_u32(b, m->gen[v]);
        dp_buf_put_f64(b, m->syn[v]);
        dp_buf_put_i64(b, m->C[v]);
        dp_buf_put_u8(b, m->cnt[v] != NULL);
        if (m->cnt[v]) {
            dp_buf cb;
            dp_buf_init(&cb);
            rc = dp_counter_snapshot(m->cnt[v], &cb);
            if (rc == DP_OK)
                dp_buf_put_blob(b, cb.data, cb.len);
            dp_buf_free(&cb);
        }
    }
    return rc == DP_OK ? dp_buf_status(b) : rc;
}

int sp_release_load(dp_release_half *rel, dp_reader *r)
{
    spatial_release *m = (spatial_release *)rel;
    const dp_spatial_config *c = &m->cfg;
    if (dp_reader_u32(r) != SPATIAL_REL_MAGIC || dp_reader_u32(r) != c->box.d || dp_reader_u32(r) != c->max_depth ||
        dp_reader_u8(r) != (uint8_t)c->variant || dp_reader_u8(r) != (uint8_t)c->delta_output ||
        dp_reader_f64(r) != m->eps_tree ||
        dp_reader_f64(r) != m->eps_count)
        return DP_ECORRUPT;
    m->done = dp_reader_u64(r);
    m->exhausted = dp_reader_u8(r) != 0;
    m->leaves = dp_reader_u64(r);
    m->max_leaf_depth = dp_reader_u64(r);
    m->points = dp_reader_u64(r);
    m->clamped = dp_reader_u8(r) != 0;
    m->truncated = dp_reader_u8(r) != 0;
    if (dp_reader_status(r) != DP_OK || (c->horizon && m->done > c->horizon) || m->max_leaf_depth > c->max_depth ||
        m->points > c->max_release_points)
        return DP_ECORRUPT;
    dp_stats_free(&m->pending);
    dp_stats_init(&m->pending, 0);
    if (dp_stats_load(&m->pending, r) != DP_OK || dp_ledger_load(&m->ledger, r) != DP_OK)
        return DP_ECORRUPT;
    for (size_t i = 0; i < m->pending.n_cells; i++)
        if ((m->pending.keys[i] >> 1) >> c->max_depth != 0 || llabs(m->pending.counts[i]) > ((int64_t)1 << 40))
            return DP_ECORRUPT;
    for (uint32_t v = 0; v < m->tree.n; v++)
        dp_counter_destroy(m->cnt[v]), m->cnt[v] = NULL;
    int rc = dp_ptree_load(&m->tree, r);
    if (rc != DP_OK)
        return rc;
    if ((rc = sp_reserve_nodes(m, m->tree.n)) != DP_OK)
        return rc;
    char why[128];
    double leaf_total = 0;
    for (uint32_t v = 0; v < m->tree.n; v++) {
        const dp_pnode *node = &m->tree.nodes[v];
        m->status[v] = dp_reader_u8(r);
        m->gen[v] = dp_reader_u32(r);
        m->syn[v] = dp_reader_f64(r);
        m->C[v] = dp_reader_i64(r);
        int has = dp_reader_u8(r);
        if (dp_reader_status(r) != DP_OK || m->status[v] > NODE_INTERNAL || !isfinite(m->syn[v]) || m->syn[v] < 0 ||
            m->syn[v] > 1e16 || has > 1 || node->depth > c->max_depth || m->C[v] > ((int64_t)1 << 50) ||
            m->C[v] < -((int64_t)1 << 50) || (m->status[v] == NODE_INTERNAL && node->child == DP_PTREE_NONE))
            return DP_ECORRUPT;
        /* a leaf's released points: a whole number, all leaves within max_release_points */
        if (m->status[v] == NODE_LEAF) {
            if (m->syn[v] != floor(m->syn[v]) || m->syn[v] > (double)c->max_release_points - leaf_total)
                return DP_ECORRUPT;
            leaf_total += m->syn[v];
        }
        if (!has)
            continue;
        size_t len;
        const uint8_t *p = dp_reader_blob(r, &len);
        if (!p || dp_counter_restore_expect(&m->cnt[v], p, len, m->key, &m->ccfg, why, sizeof why) != DP_OK)
            return DP_ECORRUPT;
    }
    sp_extend(m);
    return dp_reader_status(r);
}
