/* counter_sparse_inhomogeneous.c — inhomogeneous sparse counting (seed
 * 004 = He et al., Alg. 3), unbounded, pure ε only.
 *
 * Time is cut into levels r = 0, 1, 2, … with level r covering steps
 * [t_r, t_{r+1}), t_r = ceil(2^r/ε) for r >= 1.  As a stand-alone counter
 * the starting level is r0 = 0 and level 0 starts at step 1 (seed 004's
 * d = 1 use: "r0 = 0 … we do not ignore the earlier data"; with t_0 =
 * ceil(1/ε) > 1 for ε < 1 the seed would otherwise drop the first steps).
 * Levels with t_{r+1} <= t_r (ε > 1) are empty and skipped.  Within level r:
 *   - Alg. 2 (counter_sparse.c's engine) with horizon h_r = t_{r+1} - t_r and
 *     privacy parameter ε_r/2 gives c_t, the noisy count of [t_r, t];
 *   - the release is S̃ + c_t;
 *   - at the level's last step S̃ <- S̃ + Σ_{t in level} x_t + Lap_Z(2·entries·Δ/ε_r).
 * Budget schedule: the seed leaves ε_r free (the hypercube sets ε_{j,r}
 * per cell); this kind uses ε_r = ε for every level, the largest schedule
 * that keeps the whole stream ε-DP.
 *
 * Privacy (seed 004 Lemma 3.3).  An entry at time t in level r enters only
 * level r's Alg. 2 (ε_r/2, see counter_sparse.c) and level r's S̃ update
 * (Laplace mechanism, sensitivity entries·Δ, ε_r/2); later levels only add
 * S̃, an earlier release, to their own outputs (post-processing), and
 * their own mechanisms never read x_t.  So the stream is max_r ε_r = ε-DP
 * (parallel composition over the disjoint levels).  With entries = 2 the
 * two changes fall in one level (calibrated for entries·Δ: ε) or in two
 * (each level sees Δ: ε/2 + ε/2).
 *
 * Error bound (variance_is_exact = 0): at t in level r, the S̃ noise of the
 * completed levels is independent of level r's error and has mean 0, so
 *   E[err²] <= Σ_{r' < r, non-empty} Var Lap_Z(2·entries·Δ/ε) + bound_r(t - t_r + 1)
 * with bound_r counter_sparse.c's bound for level r's engine; O(log t / ε)
 * per level, O(log² t / ε²)-ish overall in variance terms.
 *
 * Inputs: integers with |x| <= 2^40 (DP_EINVAL beyond; see counter_sparse.c
 * for signed inputs).  Memory O(log t); time O(log t) per step. */
#include "core/counter_sparse.h"
#include "core/dp_error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define INH_MAX_LEVEL 60u

typedef struct inh_state {
    unsigned      r;          /* current level */
    int           active;     /* engine set up for level r */
    uint64_t      start, end; /* [t_r, t_{r+1}) */
    int64_t       Stil;
    int64_t       level_sum;
    dp_sparse_seg seg;
    dp_dlap       sum_lap;
    double        sum_var;
} inh_state;

/* t_r (level 0 starts at step 1); UINT64_MAX if beyond range. */
static uint64_t inh_level_start(const dp_counter *c, unsigned r)
{
    if (r == 0)
        return 1;
    double v = ceil(ldexp(1.0, (int)r) / c->cfg.budget.value);
    if (!(v < 9.0e18))
        return UINT64_MAX;
    uint64_t s = (uint64_t)v;
    return s < 1 ? 1 : s;
}

static int inh_setup_level(const dp_counter *c, inh_state *s, unsigned r, dp_sparse_seg *seg,
                           uint64_t *start, uint64_t *end, char *errstr, size_t errstr_size)
{
    if (r > INH_MAX_LEVEL)
        return dp_err(errstr, errstr_size, DP_ERANGE, "sparse_inhomogeneous: beyond level %u", INH_MAX_LEVEL);
    *start = inh_level_start(c, r);
    *end = inh_level_start(c, r + 1);
    if (*start == UINT64_MAX || *end == UINT64_MAX)
        return dp_err(errstr, errstr_size, DP_ERANGE, "sparse_inhomogeneous: step range exhausted");
    if (*end <= *start)
        return DP_OK;   /* empty level */
    char prefix[40];
    snprintf(prefix, sizeof prefix, "lvl/%u/", r);
    (void)s;
    return dp_sparse_seg_setup(c, seg, *end - *start, 0.5, prefix, errstr, errstr_size);
}

static int inh_init(dp_counter *c, char *errstr, size_t errstr_size)
{
    inh_state *s = calloc(1, sizeof *s);
    if (!s)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    dp_rational scale;
    int rc = dp_counter_calibrate_dlap(c, 1.0, 0.5, &s->sum_lap, &scale, errstr, errstr_size);
    if (rc != DP_OK) {
        free(s);
        return rc;
    }
    s->sum_var = dp_dlap_variance(scale);
    /* Validate that level 0's engine can be built (catches extreme ε). */
    rc = inh_setup_level(c, s, 0, &s->seg, &s->start, &s->end, errstr, errstr_size);
    if (rc != DP_OK) {
        free(s);
        return rc;
    }
    s->active = 0;
    c->impl = s;
    return DP_OK;
}

/* Make level s->r the (non-empty) level containing step t. */
static int inh_enter(dp_counter *c, inh_state *s, uint64_t t)
{
    char err[128];
    while (!s->active) {
        int rc = inh_setup_level(c, s, s->r, &s->seg, &s->start, &s->end, err, sizeof err);
        if (rc != DP_OK)
            return rc;
        if (s->end > s->start && t < s->end)
            s->active = 1;
        else
            s->r++;
    }
    return DP_OK;
}

static int inh_add(dp_counter *c, int64_t x, int64_t *out)
{
    inh_state *s = c->impl;
    if (x > DP_SPARSE_MAX_INPUT || x < -DP_SPARSE_MAX_INPUT)
        return DP_EINVAL;
    uint64_t t = c->t + 1;
    inh_state saved = *s;
    int rc = inh_enter(c, s, t);
    int64_t ct = 0, sum = 0, o = 0;
    if (rc == DP_OK)
        rc = dp_sparse_seg_add(c, &s->seg, t, x, &ct);
    if (rc == DP_OK)
        rc = dp_cadd(s->level_sum, x, &sum);
    if (rc == DP_OK)
        rc = dp_cadd(s->Stil, ct, &o);
    if (rc == DP_OK && t + 1 == s->end) {
        /* Level complete: fold its noisy total into S̃. */
        char purpose[40];
        snprintf(purpose, sizeof purpose, "lvl/%u/sum", s->r);
        dp_counter_trace_noised(c, t, purpose, sum);
        dp_drbg g;
        dp_counter_drbg(c, &g, t, purpose);
        int64_t noise = dp_dlap_sample(&s->sum_lap, &g);
        dp_drbg_wipe(&g);
        int64_t nst;
        rc = dp_cadd(s->Stil, sum, &nst);
        if (rc == DP_OK)
            rc = dp_cadd(nst, noise, &nst);
        if (rc == DP_OK) {
            s->Stil = nst;
            s->level_sum = 0;
            s->active = 0;
            s->r++;
        }
    } else if (rc == DP_OK) {
        s->level_sum = sum;
    }
    if (rc != DP_OK) {
        *s = saved;
        return rc;
    }
    *out = o;
    return DP_OK;
}

static double inh_variance(const dp_counter *c, uint64_t t)
{
    inh_state *s = c->impl;
    double acc = 0;
    char err[128];
    for (unsigned r = 0; r <= INH_MAX_LEVEL; r++) {
        uint64_t start = inh_level_start(c, r), end = inh_level_start(c, r + 1);
        if (start == UINT64_MAX || end == UINT64_MAX)
            return NAN;
        if (end <= start)
            continue;
        if (t < end) {
            dp_sparse_seg seg;
            if (inh_setup_level(c, s, r, &seg, &start, &end, err, sizeof err) != DP_OK)
                return NAN;
            return acc + dp_sparse_seg_bound(&seg, t - start + 1);
        }
        acc += s->sum_var;
    }
    return NAN;
}

static int inh_sensitivity(const dp_counter *c, double *l1, double *l2sq)
{
    /* Per level: the tree's L p-sums of segment counts (budget ε/4) and the
     * level total (budget ε/2).  Reported: the current level's tree depth
     * plus the level total, in units of that level's own calibration. */
    const inh_state *s = c->impl;
    double L = s->active ? (double)s->seg.tree.levels : (double)(dp_floor_log2(s->end > s->start ? s->end - s->start : 1) + 1);
    *l1 = L + 1.0;
    *l2sq = L + 1.0;
    return DP_OK;
}

static int inh_save(const dp_counter *c, dp_buf *b)
{
    const inh_state *s = c->impl;
    dp_buf_put_u32(b, s->r);
    dp_buf_put_u32(b, (uint32_t)s->active);
    dp_buf_put_i64(b, s->Stil);
    dp_buf_put_i64(b, s->level_sum);
    if (s->active)
        dp_sparse_seg_save(&s->seg, b);
    return dp_buf_status(b);
}

static int inh_load(dp_counter *c, dp_reader *r)
{
    inh_state *s = c->impl;
    s->r = dp_reader_u32(r);
    uint32_t active = dp_reader_u32(r);
    s->Stil = dp_reader_i64(r);
    s->level_sum = dp_reader_i64(r);
    if (dp_reader_status(r) != DP_OK || s->r > INH_MAX_LEVEL || active > 1)
        return DP_ECORRUPT;
    s->active = 0;
    if (active) {
        char err[128];
        if (inh_setup_level(c, s, s->r, &s->seg, &s->start, &s->end, err, sizeof err) != DP_OK ||
            s->end <= s->start)
            return DP_ECORRUPT;
        if (dp_sparse_seg_load(c, &s->seg, r) != DP_OK)
            return DP_ECORRUPT;
        s->active = 1;
        if (c->t + 1 < s->start || c->t + 1 >= s->end)
            return DP_ECORRUPT;
    }
    return dp_reader_status(r);
}

static void inh_fini(dp_counter *c)
{
    free(c->impl);
}

const dp_counter_ops dp_counter_ops_sparse_inhomogeneous = {
    .kind = DP_COUNTER_SPARSE_INHOMOGENEOUS,
    .bounded = 0,
    .supports_pure = 1,
    .supports_zcdp = 0,
    .exact_variance = 0,
    .init = inh_init,
    .add = inh_add,
    .variance = inh_variance,
    .sensitivity = inh_sensitivity,
    .save = inh_save,
    .load = inh_load,
    .fini = inh_fini,
};
