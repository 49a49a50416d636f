/* hypercube.c — the release half of `hypercube`: online DP synthetic data
 * on [0,1]^d (He, Vershynin, Zhu 2024, seed 004, Alg. 1, 3, 4;
 * docs/privacy.md §8).
 *
 * Time.  The paper's time t is the number of points so far: a step with k
 * points is the paper's times t+1..t+k (points_per_step bounds k).  Levels
 * t_j = ceil(2^j/ε); level(t) = max{j >= 0 : t >= t_j} (0 before t_0).  The
 * tree has depth min(level(t), max_depth): the split creating depth j
 * halves coordinate (j−1) mod d (partition.h), and the depth-j cells appear
 * at the first step whose t reaches t_j — the paper's loop "while t >=
 * 2^r/ε: r <- r+1" creates them one level early, the slip docs/privacy.md §8
 * corrects.  A step is one step of every counter (its input: the step's
 * points in the cell); a step with no points is not a time of the paper:
 * no counter moves and the release repeats.
 *
 * Counting (Alg. 1's Perturbation).  Every cell θ of depth 1..depth runs
 * the inhomogeneous sparse counter of core/counter_sparse_cell.h with
 * budgets ε_{|θ|,r} at level r (seed 004 eq. 4.1 and 5.1):
 *   d >= 2: ε_{j,r} = C₁·ε·α^{j−r}, α = 2^{(1−1/d)/2}, C₁ = (1 − 1/α)/2,
 *           starting level r₀ = j: a cell counts only the points from its
 *           creation on (Alg. 1, "will not load the historical data");
 *   d = 1:  ε_{j,r} = 3ε/(π²(j+1)²), r₀ = 0: a new cell replays the stored
 *           history of steps from step 1 (the same keyed draws it would have
 *           made had it existed; nothing of the replay is released).
 * The root has no counter: its count t is public.  Past max_depth the tree
 * stops refining; levels go on (each counter level has a finite horizon)
 * and, for d >= 2, level r > max_depth uses the schedule of level
 * max_depth, ε_{j,min(r,D)} — Prop. 4.1 needs sup_s Σ_j ε_{j,s} <= ε/2
 * only, and the paper's ε_{j,r} for r > D would leave budget unspent.
 *
 * Privacy (pure ε, event-level, replacement neighbours: one point replaced
 * at one time; seed 004 Prop. 4.1 / 5.1).  The replaced point and its
 * replacement each lie on one root-to-leaf path; a point of a step at
 * level r enters the counters of its path's cells at depths 1..min(r,D)
 * (d = 1: all depths up to D, counting the cells created later that replay
 * it), each ε_{j,r}-DP for it (Lemma 3.3).  Cost per point:
 *   d >= 2: 2·Σ_{j=1..r'} C₁εα^{j−r'} = ε(1 − α^{−r'}) < ε,  r' = min(r, D)
 *   d = 1:  2·Σ_{j=1..D} 3ε/(π²(j+1)²) < ε(1 − 6/π²) ≈ 0.39ε
 * (the seed's d = 1 series is written for j >= 0; our cells start at
 * j = 1, so the spend stays below ε — the ledger records what is spent).
 * Different steps' points are different events, so the ledger is kept per
 * step (like `marginal`'s) and spent_total is the current step's cost, the
 * largest so far: it rises with the level towards the series' sum <= ε,
 * never past it, over an infinite horizon.
 *
 * Variant "dense" (issue 38, the default since; docs/privacy.md §8.1 derives
 * and measures it; "paper" is all of the above unchanged).  Three changes, each
 * public or post-processing, with the proof above intact:
 *   depth     depth(r) = dp_hypercube_depth(): the largest j <= min(r, D)
 *             whose cells hold, under the uniform at t_r, c standard
 *             deviations of one epoch's noise (r − 4 or r − 5 at d = 2) —
 *             a function of r and the configuration;
 *   counting  each cell adds its inputs and folds them at the end of a
 *             public epoch (grid ceil(2^(k/q)/ε), level starts included;
 *             hc_epoch_ends) with one Lap_Z(1/ε_{j,r}): sensitivity 1, so
 *             ε_{j,r}-DP for an input of level r, as Lemma 3.3's counter;
 *   budget    ε_{j,r} scaled so that 2·Σ_{j<=depth(r)} ε_{j,r} = ε(1 − 10^-12)
 *             (d = 1: over j <= D, the replayed depths), the supremum
 *             Prop. 4.1 allows, reached; the consistency split subtracts
 *             κ·sd from both children first (split_threshold).
 * Cost per point: ε(1 − 10^-12) once depth(r) >= 1 (0 before: nothing is
 * counted and the release is uniform).
 *
 * Consistency (Alg. 4, over |θ| <= depth: the paper's text stops at
 * |θ| < r, the second slip).  m_root = t; top-down, each cell's m splits
 * between its children in proportion to their clamped counts a, b >= 0:
 * m₀ = floor(m·a/(a+b)), m₁ = m − m₀ (m₀ = floor(m/2) if a = b = 0), which
 * satisfies (m₀ − a)(m₁ − b) >= 0.  Output: m_θ uniform points in each
 * depth-`depth` cell — exactly t points.
 *
 * Points and ids.  Cell (k, path)'s points are drawn in order from a DRBG
 * keyed by the cell, point i has id (2^k + path)·2^34 + i; while the depth
 * stays, a cell's first m points stay, so a DELTA release is: removals
 * (the id, no coordinates) of the points a cell lost, then the added ones;
 * when the depth grows every old point is removed and the new cells' added.
 *
 * Cost.  The whole tree up to the current depth is materialised, because
 * every cell draws its test noise at every step whether or not a point
 * arrived (AboveThreshold must look at every step; skipping quiet cells
 * would reveal which cells got points).  Memory ~48 bytes per cell, 2^(depth+1)
 * cells ~ 2·ε·t: about 100·ε·t bytes (plus 16 bytes per point of history
 * for d = 1); time per step O(cells) noise draws plus O(t) output points. */
#include "synth/hypercube/hypercube_release.h"
#include "core/ledger_io.h"

#include "core/counter_sparse_cell.h"
#include "core/dp_error.h"
#include "core/round.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME "hypercube"
#define UNIT_BITS 20
#define LEDGER_UNITS ((uint64_t)1 << UNIT_BITS)
#define ID_BITS 34

/* The level schedule, the scratch arrays and the d = 1 history are in
 * hypercube_state.c; snapshots in hypercube_snapshot.c. */

static double eps_step(const hc_release *m, unsigned r) { return dp_hypercube_eps_point(&m->cfg, r); }

/* --- lifecycle ----------------------------------------------------------------------------- */

static void history_free(hc_history *h)
{
    free(h->t);
    free(h->off);
    free(h->keys);
    free(h->counts);
    memset(h, 0, sizeof *h);
}

static void hc_release_destroy(dp_release_half *rel)
{
    hc_release *m = (hc_release *)rel;
    if (!m)
        return;
    for (unsigned j = 0; j <= DP_HYPERCUBE_MAX_DEPTH; j++)
        free(m->cells[j]);
    free(m->lv);
    free(m->lv_ready);
    free(m->prev);
    free(m->m);
    free(m->m_next);
    free(m->weights);
    free(m->cut);
    history_free(&m->hist);
    dp_ledger_free(&m->ledger);
    free(m->stream_id);
    free(m);
}

/* The step's spend in ledger units, rounded up (never under-reports). */
static uint64_t step_units(const hc_release *m, unsigned r)
{
    return (uint64_t)ceil(eps_step(m, r) / m->cfg.epsilon * (double)((uint64_t)1 << UNIT_BITS));
}

static int hc_release_create(dp_release_half **out, const json_t *config, const dp_synth_env *env, char *errstr,
                             size_t errstr_size)
{
    *out = NULL;
    hc_release *m = calloc(1, sizeof *m);
    if (!m)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    int rc = dp_hypercube_config_parse(&m->cfg, config, errstr, errstr_size);
    if (rc != DP_OK) {
        free(m);
        return rc;
    }
    m->key = env->key;
    m->stream_id_len = env->stream_id ? env->stream_id_len : 0;
    size_t nl = (size_t)(m->cfg.max_depth + 1) * (MAX_LEVEL + 1);
    if (!(m->stream_id = malloc(m->stream_id_len + 1)) || !(m->lv = calloc(nl, sizeof *m->lv)) ||
        !(m->lv_ready = calloc(nl, 1)) || !(m->prev = calloc(1, sizeof *m->prev)) || hc_grow_scratch(m, 0) != DP_OK) {
        hc_release_destroy((dp_release_half *)m);
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    }
    if (m->stream_id_len)
        memcpy(m->stream_id, env->stream_id, m->stream_id_len);
    m->stream_id[m->stream_id_len] = '\0';
    dp_hypercube_schedule_constants(&m->cfg, &m->alpha, &m->C1);
    /* The plan: the series' supremum (every level's spend is below it). */
    double sup = m->cfg.box.d == 1 ? eps_step(m, 0) : m->cfg.epsilon;
    if ((rc = dp_ledger_reset_exact(&m->ledger, DP_PRIVACY_PURE, m->cfg.epsilon, LEDGER_UNITS, errstr,
                                    errstr_size)) != DP_OK ||
        (rc = dp_ledger_check_plan(&m->ledger, (dp_privacy){DP_PRIVACY_PURE, sup}, errstr, errstr_size)) != DP_OK) {
        hc_release_destroy((dp_release_half *)m);
        return rc;
    }
    *out = (dp_release_half *)m;
    return DP_OK;
}

/* --- counting ------------------------------------------------------------------------------- */

/* "dense": every depth-j cell adds the step's points in it to its open
 * epoch (no draw: nothing is released until the epoch's fold). */
static int accumulate_depth(hc_release *m, unsigned j, const uint64_t *keys, const int64_t *counts, size_t n,
                            char *errstr, size_t errstr_size)
{
    unsigned shift = m->cfg.max_depth - j;
    for (size_t i = 0; i < n;) {
        uint64_t p = keys[i] >> shift;
        int64_t x = 0;
        while (i < n && (keys[i] >> shift) == p)
            x += counts[i++];
        if (dp_isc_add(&m->cells[j][p], x) != DP_OK)
            return dp_err(errstr, errstr_size, DP_ERANGE, NAME ": counter of cell %u/%llu overflows", j,
                          (unsigned long long)p);
    }
    return DP_OK;
}

/* One counter step for every depth-j cell: inputs from the step's finest
 * cells (keys ascending), test noise from one stream per (step, depth). */
static int count_depth(hc_release *m, unsigned j, unsigned r, uint64_t cstep, const uint64_t *keys,
                       const int64_t *counts, size_t n, char *errstr, size_t errstr_size)
{
    const dp_isc_level *lv;
    int rc = hc_level_params(m, j, r, &lv, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    if (m->cfg.variant == DP_HYPERCUBE_DENSE)
        return accumulate_depth(m, j, keys, counts, n, errstr, errstr_size);
    char qlabel[48];
    snprintf(qlabel, sizeof qlabel, NAME "/q/%u", j);
    dp_drbg qg;
    dp_drbg_init(&qg, m->key, m->stream_id, m->stream_id_len, cstep, qlabel);
    unsigned shift = m->cfg.max_depth - j;
    size_t i = 0;
    uint64_t cells = (uint64_t)1 << j;
    for (uint64_t p = 0; p < cells && rc == DP_OK; p++) {
        int64_t x = 0;
        while (i < n && (keys[i] >> shift) == p)
            x += counts[i++];
        dp_isc_keys k = {m->key, m->stream_id, m->stream_id_len, NAME, j, p};
        rc = dp_isc_step(&m->cells[j][p], lv, r, x, &qg, &k);
        if (rc != DP_OK)
            rc = dp_err(errstr, errstr_size, rc, NAME ": counter of cell %u/%llu refused step %llu", j,
                        (unsigned long long)p, (unsigned long long)cstep);
    }
    dp_drbg_wipe(&qg);
    return rc;
}

/* Level r ended: fold every depth-j cell (one stream per (level, depth)).
 * "dense": an epoch of level r ended with counter step `cstep` — one stream
 * per (epoch, depth), keyed by the epoch's last counter step (distinct
 * epochs end at distinct steps, so no draw is reused). */
static int fold_depth(hc_release *m, unsigned j, unsigned r, uint64_t cstep, char *errstr, size_t errstr_size)
{
    const dp_isc_level *lv;
    int rc = hc_level_params(m, j, r, &lv, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    int dense = m->cfg.variant == DP_HYPERCUBE_DENSE;
    char label[48];
    snprintf(label, sizeof label, dense ? NAME "/epoch/%u" : NAME "/fold/%u", j);
    dp_drbg g;
    dp_drbg_init(&g, m->key, m->stream_id, m->stream_id_len, dense ? cstep : r, label);
    uint64_t cells = (uint64_t)1 << j;
    for (uint64_t p = 0; p < cells && rc == DP_OK; p++)
        rc = dense ? dp_isc_fold_dense(&m->cells[j][p], lv, &g) : dp_isc_fold(&m->cells[j][p], lv, &g);
    dp_drbg_wipe(&g);
    return rc == DP_OK ? DP_OK : dp_err(errstr, errstr_size, rc, NAME ": folding level %u at depth %u", r, j);
}

/* d = 1: the new depth-j cells replay counter steps 1..steps of the history
 * (r₀ = 0), folding where levels ended, as if they had run from step 1. */
static int replay_depth(hc_release *m, unsigned j, unsigned r_now, char *errstr, size_t errstr_size)
{
    const hc_history *h = &m->hist;
    int rc = DP_OK, dense = m->cfg.variant == DP_HYPERCUBE_DENSE;
    uint64_t open = 0;   /* dense: steps in the replayed open epoch */
    for (uint64_t s = 0; s < h->steps && rc == DP_OK; s++) {
        unsigned r = hc_level_of(m, h->t[s]);
        if (s > 0) {
            unsigned prev = hc_level_of(m, h->t[s - 1]);
            if (r != prev && (!dense || open) && (rc = fold_depth(m, j, prev, s, errstr, errstr_size)) != DP_OK)
                break;
            open = r != prev ? 0 : open;
        }
        rc = count_depth(m, j, r, s + 1, h->keys + h->off[s], h->counts + h->off[s],
                         (size_t)(h->off[s + 1] - h->off[s]), errstr, errstr_size);
        open++;
        if (rc == DP_OK && dense && hc_epoch_ends(m, s ? h->t[s - 1] : 0, h->t[s])) {
            rc = fold_depth(m, j, r, s + 1, errstr, errstr_size);
            open = 0;
        }
    }
    /* the level of the last stored step may have ended with it */
    if (rc == DP_OK && h->steps && hc_level_of(m, h->t[h->steps - 1]) != r_now && (!dense || open))
        rc = fold_depth(m, j, hc_level_of(m, h->t[h->steps - 1]), h->steps, errstr, errstr_size);
    return rc;
}

/* The step's counting: advance the level (fold, new cells), then one
 * counter step of every cell. */
static int count_step(hc_release *m, const dp_stats *st, char *errstr, size_t errstr_size)
{
    unsigned r = hc_level_of(m, m->t);
    if (r > MAX_LEVEL)
        return dp_err(errstr, errstr_size, DP_ERANGE, NAME ": t = %llu is past the last level",
                      (unsigned long long)m->t);
    int rc = DP_OK, dense = m->cfg.variant == DP_HYPERCUBE_DENSE;
    if (m->cstep > 0 && r != m->level && (!dense || m->open_steps)) {
        for (unsigned j = 1; j <= m->depth && rc == DP_OK; j++)
            rc = fold_depth(m, j, m->level, m->cstep, errstr, errstr_size);
        m->open_steps = 0;
    }
    unsigned depth = dp_hypercube_depth(&m->cfg, r);
    if (rc == DP_OK && depth > m->depth && (rc = hc_grow_scratch(m, depth)) != DP_OK)
        return dp_err(errstr, errstr_size, rc, NAME ": out of memory for depth %u", depth);
    for (unsigned j = m->depth + 1; j <= depth && rc == DP_OK; j++) {
        if (!(m->cells[j] = calloc((size_t)1 << j, sizeof *m->cells[j])))
            return dp_err(errstr, errstr_size, DP_ENOMEM, NAME ": out of memory for %llu cells at depth %u",
                          (unsigned long long)1 << j, j);
        if (m->cfg.box.d == 1)
            rc = replay_depth(m, j, r, errstr, errstr_size);
        m->depth = j;
    }
    m->level = r;
    m->cstep++;
    for (unsigned j = 1; j <= m->depth && rc == DP_OK; j++)
        rc = count_depth(m, j, r, m->cstep, st->keys, st->counts, st->n_cells, errstr, errstr_size);
    m->open_steps++;
    if (rc == DP_OK && dense && hc_epoch_ends(m, m->t - (uint64_t)st->scalars[DP_HYPERCUBE_SCALAR_POINTS], m->t)) {
        for (unsigned j = 1; j <= m->depth && rc == DP_OK; j++)
            rc = fold_depth(m, j, r, m->cstep, errstr, errstr_size);
        m->open_steps = 0;
    }
    if (rc == DP_OK && m->cfg.box.d == 1 && (rc = hc_history_append(&m->hist, m->t, st)) != DP_OK)
        return dp_err(errstr, errstr_size, rc, NAME ": out of memory for the history");
    return rc;
}

/* --- consistency and output ---------------------------------------------------------------- */

/* "dense": the split subtracts τ_j = κ·sd from both children's counts
 * before clamping, sd the standard deviation of one epoch's noise at depth j
 * in the current level (≈ √2·b for Lap_Z(b), b = 1/ε_{j,r}; public).  A
 * child with no points gets mass only if its noise exceeds κ sd
 * (probability e^{−κ√2}/2 ≈ 3 % at κ = 2 instead of 1/2), so less mass
 * leaks into empty cells — the "moving mass into wrong cells" of
 * docs/privacy.md §8.1; a cell of hundreds loses τ.  Post-processing of
 * public values and released counts. */
static int64_t split_threshold(hc_release *m, unsigned j)
{
    const dp_isc_level *lv;
    char why[8];
    if (m->cfg.variant != DP_HYPERCUBE_DENSE || hc_level_params(m, j, m->level, &lv, why, sizeof why) != DP_OK)
        return 0;
    return (int64_t)llround(m->cfg.split_threshold * sqrt(lv->var_dense));
}

/* m->m[path] = the consistent count of every depth-`depth` cell. */
static void consistency(hc_release *m)
{
    m->m[0] = m->t;
    for (unsigned j = 0; j < m->depth; j++) {
        const dp_isc_cell *ch = m->cells[j + 1];
        uint64_t cells = (uint64_t)1 << j;
        int64_t tau = split_threshold(m, j + 1);
        for (uint64_t p = 0; p < cells; p++)
            dp_partition_split_count(m->m[p], dp_isc_output(&ch[2 * p]) - tau, dp_isc_output(&ch[2 * p + 1]) - tau, &m->m_next[2 * p],
                  &m->m_next[2 * p + 1]);
        uint64_t *tmp = m->m;
        m->m = m->m_next;
        m->m_next = tmp;
    }
}

static int emit_point(hc_release *m, const dp_release_sink *sink, unsigned k, uint64_t path, uint64_t i,
                      int removal)
{
    dp_synth_record r = {.synthetic_id = ((((uint64_t)1 << k) | path) << ID_BITS) | i,
                         .value = {.kind = DP_PAYLOAD_POINT, .point = m->point_buf,
                                   .point_len = removal ? 0 : m->cfg.box.d}};
    m->n_records++;
    return sink->record ? sink->record(sink->ctx, &r) : 0;
}

/* Cell (k, path)'s points [from, to), drawn from its first point on. */
static int emit_cell(hc_release *m, const dp_release_sink *sink, unsigned k, uint64_t path, uint64_t from,
                     uint64_t to)
{
    if (from >= to)
        return 0;
    char label[64];
    snprintf(label, sizeof label, NAME "/points/%u/%llu", k, (unsigned long long)path);
    dp_drbg g;
    dp_drbg_init(&g, m->key, m->stream_id, m->stream_id_len, 0, label);
    double lo[DP_PARTITION_MAX_DIM], hi[DP_PARTITION_MAX_DIM];
    dp_partition_region(&m->cfg.box, k, path, lo, hi);
    int rc = 0;
    for (uint64_t i = 0; i < to && rc == 0; i++) {
        dp_partition_sample_region(m->cfg.box.d, lo, hi, &g, m->point_buf);
        if (i >= from)
            rc = emit_point(m, sink, k, path, i, 0);
    }
    dp_drbg_wipe(&g);
    return rc;
}

/* The release's points per cell: m, or past max_release_points a
 * systematic-rounding cut to it (flagged). */
static const uint64_t *release_counts(hc_release *m, uint64_t step)
{
    uint64_t cells = (uint64_t)1 << m->depth, cap = m->cfg.max_release_points;
    m->clamped = m->t > cap;
    if (!m->clamped)
        return m->m;
    for (uint64_t p = 0; p < cells; p++)
        m->weights[p] = (double)m->m[p];
    dp_drbg g;
    dp_drbg_init(&g, m->key, m->stream_id, m->stream_id_len, step, NAME "/rounding");
    dp_round_systematic(m->weights, (size_t)cells, cap, &g, m->cut);
    dp_drbg_wipe(&g);
    return m->cut;
}

static int emit_points(hc_release *m, const uint64_t *cnt, const dp_release_sink *sink)
{
    uint64_t cells = (uint64_t)1 << m->depth, prev_cells = (uint64_t)1 << m->prev_depth;
    int delta = m->cfg.delta_output, same = m->prev_depth == m->depth;
    int rc = 0;
    m->n_records = 0;
    if (delta)   /* removals first, in cell order */
        for (uint64_t p = 0; p < prev_cells && rc == 0; p++)
            for (uint64_t i = same ? cnt[p] : 0; i < m->prev[p] && rc == 0; i++)
                rc = emit_point(m, sink, m->prev_depth, p, i, 1);
    for (uint64_t p = 0; p < cells && rc == 0; p++)
        rc = emit_cell(m, sink, m->depth, p, delta && same ? m->prev[p] : 0, cnt[p]);
    return rc;
}

static int remember(hc_release *m, const uint64_t *cnt)
{
    uint64_t cells = (uint64_t)1 << m->depth;
    if (m->depth != m->prev_depth) {
        uint64_t *p = realloc(m->prev, cells * sizeof *p);
        if (!p)
            return DP_ENOMEM;
        m->prev = p;
        m->prev_depth = m->depth;
    }
    memcpy(m->prev, cnt, cells * sizeof *cnt);
    m->released = 0;
    for (uint64_t p = 0; p < cells; p++)
        m->released += cnt[p];
    return DP_OK;
}

static const char *mechanism(const dp_hypercube_config *c)
{
    return c->variant == DP_HYPERCUBE_DENSE ? NAME "/dense_epoch_counting+discrete_laplace"
                                            : NAME "/inhomogeneous_sparse_counting+discrete_laplace";
}

static int emit_event(hc_release *m, uint64_t step, int counted, const dp_release_sink *sink)
{
    const dp_hypercube_config *c = &m->cfg;
    double diam = ldexp(1.0, -(int)(m->depth / c->box.d));   /* the finest cells' side on [0,1]^d (ℓ∞) */
    dp_kv kv[] = {{"depth", (double)m->depth},
                  {"level", (double)m->level},
                  {"cells", (double)(((uint64_t)2 << m->depth) - 1)},
                  {"t", (double)m->t},
                  {"total", (double)m->released},
                  {"finest_cell_side", diam}};
    dp_release_manifest man = {
        .stream_id = m->stream_id,
        .stream_id_len = m->stream_id_len,
        .step = step,
        .synthesizer = NAME,
        .mode = c->delta_output ? DP_RELEASE_DELTA : DP_RELEASE_FULL,
        .record_count = m->n_records,
        .clamped = m->clamped,
        .debias = kv,
        .n_debias = sizeof kv / sizeof kv[0],
    };
    int rc = sink->manifest ? sink->manifest(sink->ctx, &man) : 0;
    if (rc != 0)
        return rc;
    dp_kv noise[] = {{"epsilon_point", m->eps_step},
                     {"series_sum", c->box.d == 1 ? eps_step(m, 0) : c->epsilon},
                     {"C1", m->C1},
                     {"alpha", m->alpha},
                     {"dims", (double)c->box.d},
                     {"points_per_step", (double)c->points_per_step},
                     {"dense", (double)(c->variant == DP_HYPERCUBE_DENSE)}};
    dp_budget_event e = {
        .stream_id = m->stream_id,
        .stream_id_len = m->stream_id_len,
        .step = step,
        .status = m->broken ? DP_BUDGET_EXHAUSTED : DP_BUDGET_ACTIVE,
        .mechanism = mechanism(c),
        .unit = "event-level: one point replaced at one time (parallel over steps)",
        .neighbors = "replace",
        .public_inputs = "the configuration (box, budget, depth limit), the step boundaries and each step's number "
                         "of points (fixed under replacement neighbours); t, the level, the depth and the cells "
                         "follow from them",
        .model = DP_PRIVACY_PURE,
        .noise = noise,
        .n_noise = sizeof noise / sizeof noise[0],
        .delta = 0,
    };
    dp_budget_event_parallel_steps(&e, &m->ledger, e.delta);
    if (!counted)
        e.spent_step = 0, e.spent_units_step = 0;
    return sink->budget ? sink->budget(sink->ctx, &e) : 0;
}

static int check_stats(const hc_release *m, uint64_t step, const dp_stats *st, char *errstr, size_t errstr_size)
{
    if (step != m->done + 1 || st->step != step || !st->sorted)
        return dp_err(errstr, errstr_size, DP_ESTATE, NAME ": statistics for step %llu, expected %llu",
                      (unsigned long long)st->step, (unsigned long long)(m->done + 1));
    int64_t n = st->scalars[DP_HYPERCUBE_SCALAR_POINTS], sum = 0;
    for (size_t i = 0; i < st->n_cells; i++) {
        if (st->keys[i] >> m->cfg.max_depth || st->counts[i] <= 0 || st->counts[i] > DP_ISC_MAX_INPUT)
            return dp_err(errstr, errstr_size, DP_EINVAL, NAME ": cell statistic out of range");
        sum += st->counts[i];
    }
    if (n != sum || n > DP_ISC_MAX_INPUT || m->t + (uint64_t)n < m->t)
        return dp_err(errstr, errstr_size, DP_EINVAL, NAME ": the step's point count does not match its cells");
    return DP_OK;
}

static int hc_release_step(dp_release_half *rel, uint64_t step, const dp_stats *st, const dp_release_sink *sink,
                           char *errstr, size_t errstr_size)
{
    hc_release *m = (hc_release *)rel;
    if (m->broken)
        return dp_err(errstr, errstr_size, DP_EHORIZON, NAME ": stream stopped after a failed step");
    int rc = check_stats(m, step, st, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    int64_t n = st->scalars[DP_HYPERCUBE_SCALAR_POINTS];
    /* A step without points reads nobody's data and keeps the last
     * step's ledger (its spend is the total so far; the event says 0 for
     * the step itself). */
    if (n > 0) {
        if ((rc = dp_ledger_reset_exact(&m->ledger, DP_PRIVACY_PURE, m->cfg.epsilon, LEDGER_UNITS, errstr,
                                        errstr_size)) != DP_OK)
            return rc;
        m->t += (uint64_t)n;
        unsigned r = hc_level_of(m, m->t);
        uint64_t units = step_units(m, r);
        m->eps_step = eps_step(m, r);
        if (units && (rc = dp_ledger_spend_units(&m->ledger, step, NAME "/sparse_counting", units, errstr,
                                                 errstr_size)) != DP_OK)
            return rc;
        if ((rc = count_step(m, st, errstr, errstr_size)) != DP_OK) {
            m->broken = 1;   /* a half-counted step is not continued; restore from a snapshot */
            return rc;
        }
    }
    consistency(m);
    const uint64_t *cnt = release_counts(m, step);
    if ((rc = emit_points(m, cnt, sink)) != 0)
        return rc;
    if ((rc = remember(m, cnt)) != DP_OK)
        return dp_err(errstr, errstr_size, rc, NAME ": out of memory");
    m->done = step;
    return emit_event(m, step, n > 0, sink);
}

/* Never by budget: the series' sum is within it over an infinite horizon. */
static int hc_release_exhausted(const dp_release_half *rel) { return ((const hc_release *)rel)->broken; }

static const dp_ledger *hc_release_ledger(const dp_release_half *rel) { return &((const hc_release *)rel)->ledger; }

static uint64_t hc_next_step(const dp_release_half *rel) { return ((const hc_release *)rel)->done + 1; }

int dp_hypercube_counts(const dp_release_half *rel, unsigned j, int64_t *out, uint64_t n)
{
    const hc_release *m = (const hc_release *)rel;
    if (j == 0 || j > m->depth || n != ((uint64_t)1 << j))
        return DP_EINVAL;
    for (uint64_t p = 0; p < n; p++)
        out[p] = dp_isc_output(&m->cells[j][p]);
    return DP_OK;
}

/* The plan (synth.h): what a step spends depends on the level its points
 * reach (t, the points so far, which the data decide), so no per-step
 * runs: the series' supremum bounds every step and the stream's total. */
static int hc_release_describe(const dp_release_half *rel, dp_synth_plan *out)
{
    const hc_release *m = (const hc_release *)rel;
    const dp_hypercube_config *c = &m->cfg;
    out->mechanism = mechanism(c);
    out->unit = "event-level: one point replaced at one time (parallel over steps)";
    out->neighbors = "replace";
    out->public_inputs = "the configuration (box, budget, depth limit), the step boundaries and each step's number "
                         "of points (fixed under replacement neighbours); t, the level, the depth and the cells "
                         "follow from them";
    dp_plan_budget(out, DP_PRIVACY_PURE, c->epsilon, 0);
    out->horizon = 0;
    out->composition = "parallel";
    out->spend_rule = "a step with points at level r (t >= ceil(2^r/epsilon) points so far) spends epsilon_point(r), "
                      "rising with the level towards series_sum <= epsilon and never past it; a step without points "
                      "spends nothing; the horizon is infinite";
    dp_plan_kv(out->spend, &out->n_spend, "series_sum", c->box.d == 1 ? eps_step(m, 0) : c->epsilon);
    dp_plan_kv(out->spend, &out->n_spend, "level_1_at_t", (double)hc_level_start(m, 1));
    dp_plan_kv(out->noise, &out->n_noise, "C1", m->C1);
    dp_plan_kv(out->noise, &out->n_noise, "alpha", m->alpha);
    dp_plan_kv(out->noise, &out->n_noise, "dims", (double)c->box.d);
    dp_plan_kv(out->noise, &out->n_noise, "points_per_step", (double)c->points_per_step);
    dp_plan_kv(out->noise, &out->n_noise, "max_depth", (double)c->max_depth);
    return DP_OK;
}

const dp_synth_ops dp_synth_ops_hypercube = {
    .name = NAME,
    .example_config = "{\"epsilon\":2,\"points_per_step\":5,\"max_depth\":6}",
    .update_kind = DP_UPDATE_REPORT,
    .payload_kind = DP_PAYLOAD_POINT,
    .ingest_create = dp_hypercube_ingest_create,
    .ingest_update = dp_hypercube_ingest_update,
    .ingest_close = dp_hypercube_ingest_close,
    .ingest_roster_complete = dp_hypercube_ingest_roster_complete,
    .ingest_save = dp_hypercube_ingest_save,
    .ingest_load = dp_hypercube_ingest_load,
    .ingest_destroy = dp_hypercube_ingest_destroy,
    .ingest_open_step = dp_hypercube_ingest_open_step,
    .release_create = hc_release_create,
    .release_step = hc_release_step,
    .release_exhausted = hc_release_exhausted,
    .release_save = hc_release_save,
    .release_load = hc_release_load,
    .release_destroy = hc_release_destroy,
    .release_ledger = hc_release_ledger,
    .release_next_step = hc_next_step,
    .release_describe = hc_release_describe,
};
