/* spatial.c — the release half of `spatial`: PHDStream (Kumar, Strohmer,
 * Vershynin 2024, seed 002 §4, Alg. 1–2; docs/privacy.md §6).
 *
 * Per release step t (input steps 1..t₀ are release step 1):
 *   c_t   = base_{t-1} + ∇_t on every cell (vertex sums)
 *   T_t   = PrivTree(c_t) grown breadth-first from the root over the box
 *   for each leaf v of T_t: counter_v.count(∇f_t(v))        (selective counting)
 *   g_t   = E(counter outputs): the consistent extension (value a at v
 *           goes to v and all its ancestors, a/2^k to descendants k levels
 *           down), kept per materialised node as A + C + D (seed 002 §4.3's
 *           compute-efficient form: A(child) = (A(v)+C(v))/2, D(v) = Σ_children
 *           (C + D), C = the node's counter output)
 *   release round⁺(g_t(v)) uniform points in each leaf v of T_t.
 *
 * Variants.  PrivTree's privacy proof (Zhang et al. 2016, Thm 4.2) needs
 * c(child) <= c(parent), which negative counter outputs and deletions
 * break.  The published rule feeds base = g_{t-1}, ∇ = ∇f_t (net): it is
 * NOT differentially private as stated, so it runs only under the switch
 * `unsafe_paper_variant: true` (for comparison), and every budget event
 * and the plan say dp 0 beside the mechanism text.  The default ("safe")
 * feeds base = the released synthetic data's measure (round⁺ counts of
 * T_{t-1}'s leaves, spread uniformly below them: non-negative and
 * consistent) and ∇ = ∇f⁺_t, the insertions only (a non-negative
 * measure), so c_t is a non-negative measure and monotone.  The counters
 * count the net ∇f_t in both.
 *
 * Privacy (pure ε per user, s = sensitivity events per user, event-level
 * when s is absent).  Every event is an INSERT or DELETE at one input
 * step, so it changes ∇f_t (and ∇f⁺_t) of one release step by ±1 on one
 * root-to-leaf path; base_{t-1} is post-processing of earlier releases.
 *  - tree: PrivTree at ε_tree = f·ε/s per step costs ε_tree for that event
 *    (Thm 4.2 with fanout β = 2: λ = (2β-1)/((β-1)·ε_tree) = 3/ε_tree,
 *    δ = λ·ln β).  Steps are disjoint in events, so the stream total per
 *    user is s·ε_tree = f·ε.
 *  - counts: the event enters one leaf counter's input once; each counter
 *    is ε_count-DP for a ±1 change of one input (counter.h), ε_count =
 *    (1-f)·ε/s, so s events cost (1-f)·ε.
 * The ledger is kept per step like `marginal`'s: every step spends exactly
 * the budget (2^20 units: f's share to the tree, the rest to the counts),
 * and spent_total is the largest step's, the budget.
 *
 * Exact noise: PrivTree's decision on a 2^16 fixed-point grid with discrete
 * Laplace noise (privtree.h says why that keeps its proof); the counters'
 * noise is discrete Laplace on integers.
 *
 * Points and their ids.  Leaf v's points are drawn in order from a DRBG
 * keyed by (v, gen(v)), gen(v) counting the times v became a leaf, and
 * point j has synthetic id v·2^34 + j: while v stays a leaf its first k
 * points stay the same, so a release can also be a DELTA — for every leaf
 * of the last release that is gone, a removal of each of its points; for a
 * leaf kept with fewer points, removals of the last ones; then the added
 * points.  A removal is a record with the id and an empty Point (no
 * coordinates).  FULL releases carry the same ids and points.
 *
 * Public (docs/privacy.md §1): the configuration, the step boundaries, and
 * everything derived from released outputs — the tree's shape (PrivTree's
 * output), the leaves' noisy counts and the synthetic points. */
#include "synth/spatial/spatial_release.h"

#include "core/counter.h"
#include "core/dp_error.h"
#include "core/ledger_io.h"
#include "core/round.h"
#include "synth/common/privtree.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME "spatial"
#define UNIT_BITS 20
#define LEDGER_UNITS ((uint64_t)1 << UNIT_BITS)

static void spatial_release_destroy(dp_release_half *rel)
{
    spatial_release *m = (spatial_release *)rel;
    if (!m)
        return;
    for (uint32_t v = 0; m->cnt && v < m->tree.n; v++)
        dp_counter_destroy(m->cnt[v]);
    free(m->cnt);
    free(m->C);
    free(m->A);
    free(m->D);
    free(m->syn);
    free(m->status);
    free(m->prev_status);
    free(m->gen);
    free(m->prev_pts);
    free(m->queue);
    free(m->leaf_pts);
    free(m->weights);
    dp_cell_sums_free(&m->net);
    dp_cell_sums_free(&m->added);
    dp_ptree_free(&m->tree);
    dp_stats_free(&m->pending);
    dp_ledger_free(&m->ledger);
    free(m->stream_id);
    free(m);
}

static int plan(spatial_release *m, char *errstr, size_t errstr_size)
{
    const dp_spatial_config *c = &m->cfg;
    uint64_t total = (uint64_t)1 << UNIT_BITS;
    m->tree_units = (uint64_t)floor(c->tree_fraction * (double)total);
    if (m->tree_units < 1)
        m->tree_units = 1;
    if (m->tree_units >= total)
        m->tree_units = total - 1;
    m->count_units = total - m->tree_units;
    int rc =
        dp_ledger_reset_exact(&m->ledger, DP_PRIVACY_PURE, m->cfg.epsilon, LEDGER_UNITS, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    m->eps_tree = dp_ledger_units_value(&m->ledger, m->tree_units) / c->sensitivity;
    m->eps_count = dp_ledger_units_value(&m->ledger, m->count_units) / c->sensitivity;
    /* PrivTree, β = 2 (Zhang et al. 2016 Thm 4.2; seed 002 Alg. 2):
     * λ = (2β-1)/((β-1)ε_tree) = 3/ε_tree, δ = λ·ln β. */
    char why[256] = "";
    if ((rc = dp_privtree_prepare(&m->privtree, m->eps_tree, c->theta, c->max_depth, why, sizeof why)) != DP_OK)
        return dp_err(errstr, errstr_size, rc, NAME ": %s", why);
    m->ccfg = (dp_counter_config){.kind = c->counter_kind,
                                  .horizon = c->horizon ? c->horizon - c->init_steps + 1 : 0,
                                  .block = c->counter_block,
                                  .buffers = c->counter_buffers,
                                  .budget = {DP_PRIVACY_PURE, m->eps_count},
                                  .neighbor_entries = 1,
                                  .max_abs_change = 1};
    dp_counter *probe = NULL;
    dp_noise_source ns = {m->key, m->stream_id, m->stream_id_len, NAME "/probe"};
    if ((rc = dp_counter_create(&probe, &m->ccfg, &ns, why, sizeof why)) != DP_OK)
        return dp_err(errstr, errstr_size, rc, NAME ": counter: %s%s", why,
                      c->horizon ? "" : " (bounded counters need \"horizon\")");
    /* The configuration as a counter keeps it (an unbounded kind drops the
     * horizon): what its snapshots record and what a restore must expect. */
    m->ccfg = *dp_counter_config_of(probe);
    dp_counter_destroy(probe);
    /* The plan per step: tree + counts = exactly the budget (per user). */
    double planned = c->sensitivity * (m->eps_tree + m->eps_count);
    return dp_ledger_check_plan(&m->ledger, (dp_privacy){DP_PRIVACY_PURE, planned}, errstr, errstr_size);
}

static int spatial_release_create(dp_release_half **out, const json_t *config, const dp_synth_env *env,
                                  char *errstr, size_t errstr_size)
{
    *out = NULL;
    spatial_release *m = calloc(1, sizeof *m);
    if (!m)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    int rc = dp_spatial_config_parse(&m->cfg, config, errstr, errstr_size);
    if (rc != DP_OK) {
        free(m);
        return rc;
    }
    m->key = env->key;
    m->stream_id_len = env->stream_id ? env->stream_id_len : 0;
    dp_stats_init(&m->pending, 0);
    dp_cell_sums_init(&m->net, m->cfg.max_depth);
    dp_cell_sums_init(&m->added, m->cfg.max_depth);
    if (!(m->stream_id = malloc(m->stream_id_len + 1)) || dp_ptree_init(&m->tree, m->cfg.max_nodes) != DP_OK ||
        sp_reserve_nodes(m, 1) != DP_OK) {
        spatial_release_destroy((dp_release_half *)m);
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    }
    if (m->stream_id_len)
        memcpy(m->stream_id, env->stream_id, m->stream_id_len);
    m->stream_id[m->stream_id_len] = '\0';
    m->status[0] = NODE_LEAF;   /* before any release: one empty leaf */
    if ((rc = plan(m, errstr, errstr_size)) != DP_OK) {
        spatial_release_destroy((dp_release_half *)m);
        return rc;
    }
    *out = (dp_release_half *)m;
    return DP_OK;
}

/* --- the step's differential data as range sums ---------------------------------- */

static int build_sums(spatial_release *m, const dp_stats *st)
{
    dp_cell_sums_reset(&m->net);
    dp_cell_sums_reset(&m->added);
    int rc = DP_OK;
    for (size_t i = 0; i < st->n_cells && rc == DP_OK; i++)   /* keys ascending: each tag's paths are too */
        rc = dp_cell_sums_add((st->keys[i] & 1) == DP_SPATIAL_TAG_NET ? &m->net : &m->added, st->keys[i] >> 1,
                              st->counts[i]);
    return rc;
}

static int64_t range_sum(const spatial_release *m, const dp_pnode *v, int added)
{
    return dp_cell_sums_range(added ? &m->added : &m->net, v->depth, v->path);
}

/* --- PrivTree (seed 002 Alg. 2) ------------------------------------------------------ */

/* The extension's value at materialised node v: g(v) = A + C + D. */
static double g_of(const spatial_release *m, uint32_t v) { return m->A[v] + (double)m->C[v] + m->D[v]; }

/* base_{t-1}(v): the paper variant's g_{t-1}, the safe variant's released measure. */
static double base_of(const spatial_release *m, uint32_t v)
{
    return m->cfg.variant == DP_SPATIAL_SAFE ? m->syn[v] : g_of(m, v);
}

/* Give v its children, deriving their values from v as the extension and
 * the released measure do for a childless node: A = (A(v)+C(v))/2, the
 * released measure halves. */
static int materialise_children(spatial_release *m, uint32_t v)
{
    if (m->tree.nodes[v].child != DP_PTREE_NONE)
        return DP_OK;
    int rc = dp_ptree_split(&m->tree, v);
    if (rc == DP_OK)
        rc = sp_reserve_nodes(m, m->tree.n);
    if (rc != DP_OK)
        return rc;
    uint32_t c = m->tree.nodes[v].child;
    for (uint32_t j = 0; j < 2; j++) {
        m->A[c + j] = (m->A[v] + (double)m->C[v]) / 2;
        m->C[c + j] = 0;
        m->D[c + j] = 0;
        m->syn[c + j] = m->syn[v] / 2;
        m->status[c + j] = NODE_BELOW;
    }
    return DP_OK;
}

/* Grow T_t breadth-first; marks its nodes LEAF / INTERNAL (the rest of the
 * materialised tree BELOW) and leaves the leaves in m->queue[0..*n_leaves)
 * in BFS order.  The noise is one DRBG stream per step, drawn in BFS order. */
static int grow_tree(spatial_release *m, uint64_t rstep, uint32_t *n_leaves)
{
    const dp_spatial_config *c = &m->cfg;
    int added = c->variant == DP_SPATIAL_SAFE;
    dp_drbg g;
    dp_drbg_init(&g, m->key, m->stream_id, m->stream_id_len, rstep, NAME "/privtree");
    memset(m->status, NODE_BELOW, m->tree.n);
    /* The queue holds the BFS frontier; finished leaves are compacted to its front. */
    uint32_t head = 0, tail = 0, leaves = 0;
    m->queue[tail++] = 0;
    m->truncated = 0;
    int rc = DP_OK;
    while (head < tail && rc == DP_OK) {
        uint32_t v = m->queue[head++];
        const dp_pnode *node = &m->tree.nodes[v];
        int split = dp_privtree_split(&m->privtree, base_of(m, v), range_sum(m, node, added), node->depth, &g);
        if (split) {
            /* Past max_nodes the BFS prefix of PrivTree's output is kept
             * (post-processing of the full output) and flagged. */
            rc = materialise_children(m, v);
            if (rc == DP_ERANGE) {
                m->truncated = 1;
                split = 0;
                rc = DP_OK;
            }
        }
        if (rc != DP_OK)
            break;
        if (split) {
            m->status[v] = NODE_INTERNAL;
            uint32_t ch = m->tree.nodes[v].child;
            m->queue[tail++] = ch;
            m->queue[tail++] = ch + 1;
        } else {
            m->status[v] = NODE_LEAF;
            m->queue[leaves++] = v;   /* leaves <= head - 1: never overwrites the frontier */
        }
    }
    dp_drbg_wipe(&g);
    *n_leaves = leaves;
    return rc;
}

/* --- counting and the extension --------------------------------------------------- */

static int count_leaves(spatial_release *m, uint32_t n_leaves, char *errstr, size_t errstr_size)
{
    for (uint32_t i = 0; i < n_leaves; i++) {
        uint32_t v = m->queue[i];
        if (!m->cnt[v]) {
            char label[64];
            snprintf(label, sizeof label, NAME "/node/%u", v);
            dp_noise_source ns = {m->key, m->stream_id, m->stream_id_len, label};
            char why[256] = "";
            int rc = dp_counter_create(&m->cnt[v], &m->ccfg, &ns, why, sizeof why);
            if (rc != DP_OK)
                return dp_err(errstr, errstr_size, rc, NAME ": counter of node %u: %s", v, why);
        }
        int64_t out;
        int rc = dp_counter_add(m->cnt[v], range_sum(m, &m->tree.nodes[v], 0), &out);
        if (rc != DP_OK)
            return dp_err(errstr, errstr_size, rc, NAME ": counter of node %u refused step %llu", v,
                          (unsigned long long)(dp_counter_steps(m->cnt[v]) + 1));
        m->C[v] = out;
    }
    return DP_OK;
}

/* The paper's release: round⁺(g_t(v)) points in each leaf, cut
 * proportionally at max_release_points.  Every leaf's rounding at 0 adds
 * mass, so the total is biased upwards by about the leaves' noise. */
static void leaf_points_paper(spatial_release *m, uint32_t n_leaves)
{
    double total = 0;
    for (uint32_t i = 0; i < n_leaves; i++) {
        double x = g_of(m, m->queue[i]);
        x = x > 0 ? (x < 1e15 ? (double)llround(x) : 1e15) : 0;
        m->leaf_pts[i] = (uint64_t)x;
        total += x;
    }
    double cap = (double)m->cfg.max_release_points;
    m->clamped = total > cap;
    for (uint32_t i = 0; i < n_leaves && m->clamped; i++)
        m->leaf_pts[i] = (uint64_t)floor((double)m->leaf_pts[i] * cap / total);
}

/* The safe variant's release: g⁺, the non-negative consistent version of
 * g_t on T_t (top-down from max(0, g(root)): each node's value is split
 * between its children in proportion to their clamped values, evenly when
 * both are <= 0 — the Consistency step of seed 004 Alg. 4 on reals), then
 * round(g⁺(root)) points spread over the leaves by systematic rounding.
 * The total is unbiased for g(root) = Σ of all counters; post-processing
 * of the counters' outputs, so free.  syn holds g⁺ on T_t meanwhile. */
static void leaf_points_consistent(spatial_release *m, uint64_t rstep, uint32_t n_leaves)
{
    const dp_ptree *t = &m->tree;
    m->syn[0] = fmax(0, g_of(m, 0));
    for (uint32_t v = 0; v < t->n; v++) {   /* ids: parents first */
        if (m->status[v] != NODE_INTERNAL)
            continue;
        uint32_t c = t->nodes[v].child;
        double a = fmax(0, g_of(m, c)), b = fmax(0, g_of(m, c + 1));
        m->syn[c] = a + b > 0 ? m->syn[v] * (a / (a + b)) : m->syn[v] / 2;
        m->syn[c + 1] = m->syn[v] - m->syn[c];
    }
    double total = m->syn[0] < 1e15 ? rint(m->syn[0]) : 1e15, cap = (double)m->cfg.max_release_points;
    m->clamped = total > cap;
    for (uint32_t i = 0; i < n_leaves; i++)
        m->weights[i] = m->syn[m->queue[i]];
    dp_drbg g;
    dp_drbg_init(&g, m->key, m->stream_id, m->stream_id_len, rstep, NAME "/rounding");
    dp_round_systematic(m->weights, n_leaves, (uint64_t)(m->clamped ? cap : total), &g, m->leaf_pts);
    dp_drbg_wipe(&g);
}

/* The points per leaf, then the released measure of every materialised
 * node: the leaves' counts, their sums above, halved below. */
static void leaf_points(spatial_release *m, uint64_t rstep, uint32_t n_leaves)
{
    if (m->cfg.variant == DP_SPATIAL_SAFE)
        leaf_points_consistent(m, rstep, n_leaves);
    else
        leaf_points_paper(m, n_leaves);
    m->points = 0;
    m->max_leaf_depth = 0;
    for (uint32_t i = 0; i < n_leaves; i++) {
        m->points += m->leaf_pts[i];
        uint32_t v = m->queue[i];
        m->syn[v] = (double)m->leaf_pts[i];
        if (m->tree.nodes[v].depth > m->max_leaf_depth)
            m->max_leaf_depth = m->tree.nodes[v].depth;
    }
    const dp_ptree *t = &m->tree;
    for (uint32_t v = t->n; v-- > 0;)
        if (m->status[v] == NODE_INTERNAL) {
            uint32_t c = t->nodes[v].child;
            m->syn[v] = m->syn[c] + m->syn[c + 1];
        }
    for (uint32_t v = 0; v < t->n; v++) {
        uint32_t c = t->nodes[v].child;
        if (c != DP_PTREE_NONE && m->status[v] != NODE_INTERNAL)
            m->syn[c] = m->syn[c + 1] = m->syn[v] / 2;
    }
    m->leaves = n_leaves;
}

/* Materialised nodes whose next-step base exceeds their parent's: PrivTree's
 * monotonicity c(child) <= c(parent) fails there (the safe variant's base is
 * a non-negative measure: never; the paper's g can be, by negative noisy
 * counts and deletions).  A function of released outputs, so public. */
static uint64_t base_violations(const spatial_release *m)
{
    uint64_t n = 0;
    for (uint32_t v = 0; v < m->tree.n; v++) {
        uint32_t c = m->tree.nodes[v].child;
        if (c == DP_PTREE_NONE)
            continue;
        double p = base_of(m, v), slack = 1e-9 * (fabs(p) > 1 ? fabs(p) : 1);
        n += (base_of(m, c) > p + slack) + (base_of(m, c + 1) > p + slack);
    }
    return n;
}

/* --- output ---------------------------------------------------------------------------- */

#define ID_BITS 34   /* synthetic id = node id · 2^34 + index (max_release_points <= 2^34) */

static int emit_point(spatial_release *m, const dp_release_sink *sink, uint32_t v, uint64_t j, int removal)
{
    dp_synth_record r = {.synthetic_id = (uint64_t)v << ID_BITS | j,
                         .value = {.kind = DP_PAYLOAD_POINT, .point = m->point_buf,
                                   .point_len = removal ? 0 : m->cfg.box.d}};
    m->next_id++;   /* records emitted */
    return sink->record ? sink->record(sink->ctx, &r) : 0;
}

/* Leaf v's points [from, to) (drawn from its first point on). */
static int emit_leaf_points(spatial_release *m, const dp_release_sink *sink, uint32_t v, uint64_t from, uint64_t to)
{
    if (from >= to)
        return 0;
    char label[48];
    snprintf(label, sizeof label, NAME "/points/%u", v);
    dp_drbg g;
    dp_drbg_init(&g, m->key, m->stream_id, m->stream_id_len, m->gen[v], label);
    const dp_pnode *node = &m->tree.nodes[v];
    int rc = 0;
    for (uint64_t j = 0; j < to && rc == 0; j++) {
        dp_partition_sample(&m->cfg.box, node->depth, node->path, &g, m->point_buf);
        if (j >= from)
            rc = emit_point(m, sink, v, j, 0);
    }
    dp_drbg_wipe(&g);
    return rc;
}

/* The release's records (see the header): FULL, or DELTA against the last
 * release, whose leaves are prev_status[v] == NODE_LEAF with prev[v] points;
 * this release's leaves hold syn[v] points (leaf_points). */
static int emit_points(spatial_release *m, uint32_t n_leaves, const uint64_t *prev, const dp_release_sink *sink)
{
    int rc = 0;
    m->next_id = 0;
    for (uint32_t i = 0; i < n_leaves; i++) {   /* a leaf anew gets new points */
        uint32_t v = m->queue[i];
        if (m->prev_status[v] != NODE_LEAF)
            m->gen[v]++;
    }
    if (m->cfg.delta_output) {
        for (uint32_t v = 0; v < m->tree.n && rc == 0; v++) {   /* removals, in node order */
            if (m->prev_status[v] != NODE_LEAF)
                continue;
            uint64_t keep = m->status[v] == NODE_LEAF ? (uint64_t)m->syn[v] : 0;
            for (uint64_t j = keep; j < prev[v] && rc == 0; j++)
                rc = emit_point(m, sink, v, j, 1);
        }
    }
    for (uint32_t i = 0; i < n_leaves && rc == 0; i++) {
        uint32_t v = m->queue[i];
        uint64_t from = m->cfg.delta_output && m->prev_status[v] == NODE_LEAF ? prev[v] : 0;
        rc = emit_leaf_points(m, sink, v, from, m->leaf_pts[i]);
    }
    return rc;
}

/* What the budget events and the plan say (the same words in both). */
static const char *mechanism_of(const dp_spatial_config *c)
{
    return c->variant == DP_SPATIAL_SAFE
               ? NAME "/privtree+discrete_laplace"
               : NAME "/privtree+discrete_laplace (unsafe_paper_variant: NOT covered by PrivTree's privacy proof "
                      "under deletions or negative counts; NOT DIFFERENTIALLY PRIVATE; comparison only)";
}

static const char *unit_of(const dp_spatial_config *c)
{
    return c->event_level ? "event-level: one point inserted or deleted at one step (parallel over steps)"
                          : "user-level: an entity's `sensitivity` point events (parallel over steps)";
}

#define PUBLIC_INPUTS                                                                                              \
    "the configuration (box, budget, tree limits, counter) and the step boundaries; the tree's shape is released; " \
    "the number of points is protected"

static int emit_event(spatial_release *m, uint64_t step, int warming, const dp_release_sink *sink)
{
    const dp_spatial_config *c = &m->cfg;
    dp_kv kv[] = {{"leaves", (double)m->leaves},
                  {"depth", (double)m->max_leaf_depth},
                  {"total", (double)m->points},
                  {"materialised_nodes", (double)m->tree.n},
                  {"tree_truncated", m->truncated},
                  {c->variant == DP_SPATIAL_SAFE ? "variant_safe" : "variant_paper", 1},
                  {"warming_up", warming},
                  {"monotone_violations", (double)base_violations(m)}};
    dp_release_manifest man = {
        .stream_id = m->stream_id,
        .stream_id_len = m->stream_id_len,
        .step = step,
        .synthesizer = NAME,
        .mode = c->delta_output ? DP_RELEASE_DELTA : DP_RELEASE_FULL,
        .record_count = warming ? 0 : m->next_id,
        .clamped = m->clamped,
        .debias = kv,
        .n_debias = sizeof kv / sizeof kv[0],
    };
    int rc = sink->manifest ? sink->manifest(sink->ctx, &man) : 0;
    if (rc != 0)
        return rc;
    dp_kv noise[] = {{"dp", c->variant == DP_SPATIAL_SAFE ? 1 : 0},   /* 0: unsafe_paper_variant */
                     {"privtree_lambda", m->privtree.lambda},
                     {"privtree_delta", dp_privtree_delta(&m->privtree)},
                     {"privtree_theta", dp_privtree_theta(&m->privtree)},
                     {"tree_epsilon", m->eps_tree},
                     {"count_epsilon", m->eps_count},
                     {"sensitivity", (double)c->sensitivity}};
    dp_kv acc[] = {{"leaf_count_scale", 1.0 / m->eps_count}};
    dp_budget_event e = {
        .stream_id = m->stream_id,
        .stream_id_len = m->stream_id_len,
        .step = step,
        .status = m->exhausted ? DP_BUDGET_EXHAUSTED : DP_BUDGET_ACTIVE,
        .mechanism = mechanism_of(c),
        .unit = unit_of(c),
        .neighbors = "add_remove",
        .public_inputs = PUBLIC_INPUTS,
        .model = DP_PRIVACY_PURE,
        .noise = noise,
        .n_noise = sizeof noise / sizeof noise[0],
        .accuracy = acc,
        .n_accuracy = 1,
        .delta = 0,
    };
    dp_budget_event_parallel_steps(&e, &m->ledger, e.delta);
    return sink->budget ? sink->budget(sink->ctx, &e) : 0;
}

static int spatial_release_step(dp_release_half *rel, uint64_t step, const dp_stats *st,
                                const dp_release_sink *sink, char *errstr, size_t errstr_size)
{
    spatial_release *m = (spatial_release *)rel;
    const dp_spatial_config *c = &m->cfg;
    if (m->exhausted)
        return dp_err(errstr, errstr_size, DP_EHORIZON, NAME ": stream exhausted");
    if (step != m->done + 1 || st->step != step || !st->sorted)
        return dp_err(errstr, errstr_size, DP_ESTATE, NAME ": statistics for step %llu, expected %llu",
                      (unsigned long long)st->step, (unsigned long long)(m->done + 1));
    for (size_t i = 0; i < st->n_cells; i++)
        if ((st->keys[i] >> 1) >> c->max_depth != 0 || (c->variant == DP_SPATIAL_PAPER && (st->keys[i] & 1)))
            return dp_err(errstr, errstr_size, DP_EINVAL, NAME ": cell statistic out of range");
    m->pending.step = step;
    int rc = dp_stats_merge(&m->pending, st);
    if (rc != DP_OK)
        return dp_err(errstr, errstr_size, rc, NAME ": merging the step's statistics");
    if (step < c->init_steps) {   /* t₀: nothing is released (or spent) before it */
        m->done = step;
        if ((rc = dp_ledger_reset_exact(&m->ledger, DP_PRIVACY_PURE, m->cfg.epsilon, LEDGER_UNITS, errstr,
                                        errstr_size)) != DP_OK)
            return rc;
        return emit_event(m, step, 1, sink);
    }
    uint64_t rstep = dp_spatial_release_step(c, step);
    uint32_t n_leaves = 0;
    /* the last release's leaves and their points, for a DELTA and for gen */
    memcpy(m->prev_status, m->status, m->tree.n);
    for (uint32_t v = 0; v < m->tree.n; v++)
        m->prev_pts[v] = m->status[v] == NODE_LEAF ? (uint64_t)m->syn[v] : 0;
    if ((rc = dp_ledger_reset_exact(&m->ledger, DP_PRIVACY_PURE, m->cfg.epsilon, LEDGER_UNITS, errstr,
                                    errstr_size)) == DP_OK &&
        (rc = build_sums(m, &m->pending)) == DP_OK &&
        (rc = dp_ledger_spend_units(&m->ledger, step, NAME "/privtree", m->tree_units, errstr, errstr_size)) == DP_OK &&
        (rc = grow_tree(m, rstep, &n_leaves)) == DP_OK &&
        (rc = dp_ledger_spend_units(&m->ledger, step, NAME "/leaf_counters", m->count_units, errstr, errstr_size)) ==
            DP_OK)
        rc = count_leaves(m, n_leaves, errstr, errstr_size);
    if (rc != DP_OK) {
        m->exhausted = 1;   /* fail closed: a half-spent step is not continued */
        return rc == DP_ENOMEM ? dp_err(errstr, errstr_size, rc, NAME ": out of memory at step %llu",
                                        (unsigned long long)step)
                               : rc;
    }
    sp_extend(m);
    leaf_points(m, rstep, n_leaves);
    dp_stats_clear(&m->pending, step);
    if ((rc = emit_points(m, n_leaves, m->prev_pts, sink)) != 0)
        return rc;
    m->done = step;
    if (c->horizon && step >= c->horizon)
        m->exhausted = 1;
    return emit_event(m, step, 0, sink);
}

static int spatial_release_exhausted(const dp_release_half *rel) { return ((const spatial_release *)rel)->exhausted; }

static const dp_ledger *spatial_release_ledger(const dp_release_half *rel)
{
    return &((const spatial_release *)rel)->ledger;
}

static uint64_t spatial_next_step(const dp_release_half *rel) { return ((const spatial_release *)rel)->done + 1; }

/* The last step the plan releases (synth.h): the horizon; spatial exhausts by it alone
 * (and fails closed on a refused step), so an ingest-only bundle of a sharded
 * stream stops where the combined close would (docs/kafka.md §10); 0 when unbounded. */
static uint64_t spatial_last_step(const dp_release_half *rel)
{
    return ((const spatial_release *)rel)->cfg.horizon;
}

/* The plan (synth.h): input steps before init_steps release and spend
 * nothing; from it on every step spends ε on its own point events
 * (PrivTree's share and the leaf counters'), in parallel over steps. */
static int spatial_release_describe(const dp_release_half *rel, dp_synth_plan *out)
{
    const spatial_release *m = (const spatial_release *)rel;
    const dp_spatial_config *c = &m->cfg;
    out->mechanism = mechanism_of(c);
    out->unit = unit_of(c);
    out->neighbors = "add_remove";
    out->public_inputs = PUBLIC_INPUTS;
    dp_plan_budget(out, DP_PRIVACY_PURE, c->epsilon, 0);
    out->horizon = c->horizon;
    out->composition = "parallel";
    out->spend_rule = "input steps before init_steps release and spend nothing; from init_steps on every step spends "
                      "epsilon on its own point events: PrivTree's share and the leaf counters'";
    int rc = DP_OK;
    if (c->init_steps > 1)
        rc = dp_plan_run_add(out, 1, c->init_steps - 1, 0);
    if (rc == DP_OK)
        rc = dp_plan_run_add(out, c->init_steps, c->horizon,
                             dp_ledger_units_value(&m->ledger, m->tree_units + m->count_units));
    dp_plan_kv(out->spend, &out->n_spend, "tree_epsilon", m->eps_tree);
    dp_plan_kv(out->spend, &out->n_spend, "count_epsilon", m->eps_count);
    dp_plan_kv(out->noise, &out->n_noise, "dp", c->variant == DP_SPATIAL_SAFE ? 1 : 0);
    dp_plan_kv(out->noise, &out->n_noise, "privtree_lambda", m->privtree.lambda);
    dp_plan_kv(out->noise, &out->n_noise, "privtree_delta", dp_privtree_delta(&m->privtree));
    dp_plan_kv(out->noise, &out->n_noise, "privtree_theta", dp_privtree_theta(&m->privtree));
    dp_plan_kv(out->noise, &out->n_noise, "sensitivity", (double)c->sensitivity);
    dp_plan_kv(out->accuracy, &out->n_accuracy, "leaf_count_scale", 1.0 / m->eps_count);
    return rc;
}

const dp_synth_ops dp_synth_ops_spatial = {
    .name = NAME,
    .example_config = "{\"epsilon\":1,\"max_depth\":6}",
    .shards_by_entity = 1,
    .update_kind = DP_UPDATE_INSERT,
    .payload_kind = DP_PAYLOAD_POINT,
    .ingest_create = dp_spatial_ingest_create,
    .ingest_update = dp_spatial_ingest_update,
    .ingest_close = dp_spatial_ingest_close,
    .ingest_roster_complete = dp_spatial_ingest_roster_complete,
    .ingest_save = dp_spatial_ingest_save,
    .ingest_load = dp_spatial_ingest_load,
    .ingest_destroy = dp_spatial_ingest_destroy,
    .ingest_open_step = dp_spatial_ingest_open_step,
    .release_create = spatial_release_create,
    .release_step = spatial_release_step,
    .release_exhausted = spatial_release_exhausted,
    .release_save = sp_release_save,
    .release_load = sp_release_load,
    .release_destroy = spatial_release_destroy,
    .release_ledger = spatial_release_ledger,
    .release_next_step = spatial_next_step,
    .release_last_step = spatial_last_step,
    .release_describe = spatial_release_describe,
};
