/* marginal_pgm.c — the `pgm` fit of `marginal`: the synthetic data as a
 * graphical model (seed 001 §4.2.2; McKenna, Sheldon, Miklau 2019), for
 * domains far too large to hold (Adult: 6.4·10^17 cells).
 *
 * The model is p(x) ∝ exp(Σ_C θ_C(x_C)) with one log-potential table θ_C
 * per measured workload C (its "clique"), times a total N.  Inference is
 * exact, on the junction tree of the cliques (marginal_factor.c).  Cliques
 * are added the first time their workload is measured, as long as the
 * junction tree stays within max_model_cells (the measurement is left out
 * of the fit otherwise — AIM's model-size rule, McKenna et al. 2022).
 *
 * The fit is the same update as `mw`, applied to the factors: for a
 * measurement y on clique C, θ_C += ln((y⁺ + ½)/(μ_C + ½)) with μ_C the
 * model's current marginal (× N), cycling over the step's measurements
 * `iterations` times — iterative proportional fitting of a log-linear model
 * (Deming & Stephan 1940), whose fixed point is the maximum-entropy model
 * matching the measurements; warm-started from h_{t,l-1}'s potentials.  On
 * a domain small enough for both, `pgm` and `mw` therefore agree
 * (tests/unit/test_marginal_pgm.c).  Private-PGM itself minimises an L2
 * loss by mirror descent, which weighs inconsistent noisy measurements by
 * their variances; that is a possible refinement, not this file.
 *
 * Workload marginals of pairs in different cliques are exact too
 * (dp_jtree_marginal); 3-attribute workloads must lie inside one clique, so
 * `fit: pgm` takes workloads of at most 2 attributes (marginal_config.c).
 *
 * Rows: n rows drawn clique by clique from the root of the junction tree —
 * the root's cells get n·b(x) rows by systematic rounding; every later
 * clique groups the rows by their separator value s and gives each group
 * n_s·b(new | s) rows of the new attributes (systematic rounding, assigned
 * after a uniform shuffle of the group so no spurious dependence on earlier
 * attributes is introduced) — then sorted.  Everything here is
 * post-processing of charged outputs; doubles are fine, all loops run in a
 * fixed order, randomness comes from the DRBG only. */
#include "synth/marginal/marginal.h"
#include "core/round.h"
#include "synth/marginal/marginal_factor.h"

#include "core/dp_error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PGM_MAX_ROWS ((uint64_t)1 << 28)

struct dp_mmodel {
    const dp_marginal_config *cfg;
    uint32_t   n_factors;
    dp_factor *theta;       /* per clique, in the order they were added */
    dp_jtree   jt;
    int32_t   *home;        /* per factor: the junction-tree clique holding it */
    int        calibrated;
    double     total;
    /* W(p) per configured workload since the potentials last changed (a
     * cache: selection asks for every workload's marginal K + 1 times a step) */
    double   **wcache;
    uint8_t   *wvalid;
    /* per configured workload, for the current cliques: 0 not yet asked,
     * 1 a measurement of it would enter the fit, 2 it would not (a cache of
     * the structure, cleared whenever the tree is rebuilt) */
    uint8_t   *admit;
};

static void invalidate(dp_mmodel *m)
{
    m->calibrated = 0;
    if (m->wvalid)
        memset(m->wvalid, 0, m->cfg->n_workloads);
}

static void clear(dp_mmodel *m)
{
    for (uint32_t i = 0; i < m->n_factors; i++)
        dp_factor_free(&m->theta[i]);
    free(m->theta);
    free(m->home);
    dp_jtree_free(&m->jt);
    m->theta = NULL;
    m->home = NULL;
    m->n_factors = 0;
    invalidate(m);
}

/* Clique q's log-potential = the sum of the factors homed there, added in
 * factor order.  Always summed afresh (never updated by a fit's delta): a
 * model restored from its factors must hold the same bits as the running
 * one, or calibration differs in the last place and a restored stream's
 * releases drift from the uninterrupted stream's. */
static void sum_logpot(dp_mmodel *m, int32_t q)
{
    dp_factor *lp = &m->jt.logpot[q];
    memset(lp->v, 0, lp->cells * sizeof *lp->v);
    for (uint32_t i = 0; i < m->n_factors; i++)
        if (m->home[i] == q)
            dp_factor_add(lp, &m->theta[i], m->cfg->sizes);
}

/* Junction tree of the current factors, their potentials summed into it. */
static int rebuild(dp_mmodel *m)
{
    const dp_marginal_config *c = m->cfg;
    const uint32_t *attrs[DP_MARGINAL_MAX_ATTRS * DP_MARGINAL_MAX_ATTRS];
    uint32_t k[DP_MARGINAL_MAX_ATTRS * DP_MARGINAL_MAX_ATTRS];
    for (uint32_t i = 0; i < m->n_factors; i++) {
        attrs[i] = m->theta[i].attrs;
        k[i] = m->theta[i].k;
    }
    dp_jtree_free(&m->jt);
    uint64_t cells;
    int rc = dp_jtree_build(&m->jt, c->n_attrs, c->sizes, m->n_factors, attrs, k, c->max_model_cells, &cells);
    if (rc != DP_OK)
        return rc;
    int32_t *home = realloc(m->home, (m->n_factors ? m->n_factors : 1) * sizeof *home);
    if (!home)
        return DP_ENOMEM;
    m->home = home;
    for (uint32_t i = 0; i < m->n_factors; i++) {
        m->home[i] = dp_jtree_find(&m->jt, m->theta[i].attrs, m->theta[i].k);
        if (m->home[i] < 0)
            return DP_ESTATE;
    }
    for (uint32_t q = 0; q < m->jt.n_cliques; q++)
        sum_logpot(m, (int32_t)q);
    invalidate(m);
    if (m->admit)
        memset(m->admit, 0, c->n_workloads);
    return DP_OK;
}

static int calibrate(dp_mmodel *m)
{
    if (m->calibrated)
        return DP_OK;
    int rc = dp_jtree_calibrate(&m->jt, m->cfg->sizes);
    m->calibrated = rc == DP_OK;
    return rc;
}

static void pgm_destroy_parts(dp_mmodel *m)
{
    clear(m);
    if (m->wcache)
        for (size_t i = 0; i < m->cfg->n_workloads; i++)
            free(m->wcache[i]);
    free(m->wcache);
    free(m->wvalid);
    free(m->admit);
    free(m);
}

static int pgm_create(dp_mmodel **out, const dp_marginal_config *c, char *errstr, size_t errstr_size)
{
    *out = NULL;
    dp_mmodel *m = calloc(1, sizeof *m);
    if (!m)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    m->cfg = c;
    m->wcache = calloc(c->n_workloads, sizeof *m->wcache);
    m->wvalid = calloc(c->n_workloads, 1);
    m->admit = calloc(c->n_workloads, 1);
    int rc = m->wcache && m->wvalid && m->admit ? rebuild(m) : DP_ENOMEM;   /* no factors: independent uniform attributes */
    if (rc != DP_OK) {
        pgm_destroy_parts(m);
        return dp_err(errstr, errstr_size, rc, "marginal: cannot build the pgm model");
    }
    *out = m;
    return DP_OK;
}

static void pgm_destroy(dp_mmodel *m)
{
    if (m)
        pgm_destroy_parts(m);
}

static int same_structure(const dp_mmodel *a, const dp_mmodel *b)
{
    if (a->n_factors != b->n_factors || a->jt.n_cliques != b->jt.n_cliques)
        return 0;
    for (uint32_t i = 0; i < a->n_factors; i++)
        if (a->theta[i].k != b->theta[i].k ||
            memcmp(a->theta[i].attrs, b->theta[i].attrs, a->theta[i].k * sizeof *a->theta[i].attrs) != 0)
            return 0;
    return 1;
}

static void copy_values(dp_factor *dst, const dp_factor *src)
{
    memcpy(dst->v, src->v, src->cells * sizeof *src->v);
}

static int pgm_copy(dp_mmodel *dst, const dp_mmodel *src)
{
    if (same_structure(dst, src)) {
        /* the common case (h = g each step, g = h at its end): same cliques,
         * so the same junction tree — copy values, keep the calibration, and
         * forget dst's memoised conditionals: they were its old beliefs'
         * (kept, every pair query across cliques on g after g = h mixed
         * g_{t-1}'s conditionals into g_t's marginals) */
        for (uint32_t i = 0; i < src->n_factors; i++)
            copy_values(&dst->theta[i], &src->theta[i]);
        for (uint32_t i = 0; i < src->jt.n_cliques; i++) {
            copy_values(&dst->jt.logpot[i], &src->jt.logpot[i]);
            copy_values(&dst->jt.belief[i], &src->jt.belief[i]);
            copy_values(&dst->jt.up[i], &src->jt.up[i]);
        }
        dp_jtree_beliefs_replaced(&dst->jt, src->jt.focus);
        dst->calibrated = src->calibrated;
        dst->total = src->total;
        memcpy(dst->wvalid, src->wvalid, src->cfg->n_workloads);
        for (size_t w = 0; w < src->cfg->n_workloads; w++) {
            if (!src->wvalid[w])
                continue;
            if (!dst->wcache[w] && !(dst->wcache[w] = malloc(src->cfg->workloads[w].cells * sizeof(double)))) {
                dst->wvalid[w] = 0;
                continue;
            }
            memcpy(dst->wcache[w], src->wcache[w], src->cfg->workloads[w].cells * sizeof(double));
        }
        return DP_OK;
    }
    clear(dst);
    dst->total = src->total;
    if (src->n_factors && !(dst->theta = calloc(src->n_factors, sizeof *dst->theta)))
        return DP_ENOMEM;
    for (uint32_t i = 0; i < src->n_factors; i++) {
        int rc = dp_factor_init(&dst->theta[i], src->theta[i].attrs, src->theta[i].k, dst->cfg->sizes);
        if (rc != DP_OK)
            return rc;
        dst->n_factors++;
        memcpy(dst->theta[i].v, src->theta[i].v, src->theta[i].cells * sizeof *src->theta[i].v);
    }
    int rc = rebuild(dst);
    /* the same potentials: the same workload marginals */
    for (size_t w = 0; w < src->cfg->n_workloads && rc == DP_OK; w++) {
        if (!src->wvalid[w])
            continue;
        if (!dst->wcache[w] && !(dst->wcache[w] = malloc(src->cfg->workloads[w].cells * sizeof(double))))
            return DP_ENOMEM;
        memcpy(dst->wcache[w], src->wcache[w], src->cfg->workloads[w].cells * sizeof(double));
        dst->wvalid[w] = 1;
    }
    return rc;
}

static double pgm_total(const dp_mmodel *m) { return m->total; }

/* The attribute dp_jtree_marginal carries along the path for a pair (the one
 * with fewer categories; the first on a tie). */
static uint32_t carried(const dp_marginal_config *c, const dp_marginal_workload *w)
{
    return c->sizes[w->attrs[1]] < c->sizes[w->attrs[0]] ? w->attrs[1] : w->attrs[0];
}

typedef struct pair_fill {
    dp_mmodel *m;
    uint32_t   a;
    size_t     wi_of[DP_MARGINAL_MAX_ATTRS];   /* per b: the workload {a, b} */
} pair_fill;

static int fill_pair(void *ctx, uint32_t b, const double *p)
{
    pair_fill *f = ctx;
    dp_mmodel *m = f->m;
    size_t wi = f->wi_of[b];
    uint64_t cells = m->cfg->workloads[wi].cells;
    if (!m->wcache[wi] && !(m->wcache[wi] = malloc(cells * sizeof *p)))
        return DP_ENOMEM;
    memcpy(m->wcache[wi], p, cells * sizeof *p);
    m->wvalid[wi] = 1;
    return DP_OK;
}

/* Every uncached cross-clique pair workload carrying the same attribute as
 * w, in one traversal of the tree (dp_jtree_pairs_of: the same tables as
 * one dp_jtree_marginal per pair, with the common path prefixes computed
 * once; selection asks for all of them K + 1 times a step). */
static int fill_pairs_like(dp_mmodel *m, const dp_marginal_workload *w)
{
    const dp_marginal_config *c = m->cfg;
    pair_fill f = {.m = m, .a = carried(c, w)};
    uint8_t want[DP_MARGINAL_MAX_ATTRS] = {0};
    for (size_t i = 0; i < c->n_workloads; i++) {
        const dp_marginal_workload *x = &c->workloads[i];
        if (x->k != 2 || m->wvalid[i] || carried(c, x) != f.a || dp_jtree_find(&m->jt, x->attrs, 2) >= 0)
            continue;
        uint32_t b = x->attrs[0] == f.a ? x->attrs[1] : x->attrs[0];
        want[b] = 1;
        f.wi_of[b] = i;
    }
    return dp_jtree_pairs_of(&m->jt, c->sizes, f.a, want, fill_pair, &f);
}

static int pgm_marginal(const dp_mmodel *cm, const dp_marginal_workload *w, double *out)
{
    dp_mmodel *m = (dp_mmodel *)cm;   /* calibration and wcache are caches of the potentials */
    size_t wi = (size_t)(w - m->cfg->workloads);
    int cached = wi < m->cfg->n_workloads;
    if (cached && !m->wvalid[wi] && w->k == 2) {
        int rc = calibrate(m);
        if (rc == DP_OK && dp_jtree_find(&m->jt, w->attrs, 2) < 0)
            rc = fill_pairs_like(m, w);
        if (rc != DP_OK)
            return rc;
    }
    if (cached && m->wvalid[wi]) {
        memcpy(out, m->wcache[wi], w->cells * sizeof *out);
    } else {
        int rc = calibrate(m);
        if (rc == DP_OK)
            rc = dp_jtree_marginal(&m->jt, m->cfg->sizes, w->attrs, w->k, out);
        if (rc != DP_OK)
            return rc;
        if (cached && (m->wcache[wi] || (m->wcache[wi] = malloc(w->cells * sizeof *out)))) {
            memcpy(m->wcache[wi], out, w->cells * sizeof *out);
            m->wvalid[wi] = 1;
        }
    }
    for (uint64_t c = 0; c < w->cells; c++)
        out[c] *= m->total;
    return DP_OK;
}

/* The index of workload w's factor, or -1 if it has none yet. */
static int existing_factor(const dp_mmodel *m, const dp_marginal_workload *w)
{
    for (uint32_t i = 0; i < m->n_factors; i++)
        if (m->theta[i].k == w->k && memcmp(m->theta[i].attrs, w->attrs, w->k * sizeof *w->attrs) == 0)
            return (int)i;
    return -1;
}

/* Would the junction tree of the current factors plus w's stay within
 * max_model_cells (AIM's model-size rule)? */
static int room_for(const dp_mmodel *m, const dp_marginal_workload *w)
{
    const uint32_t *attrs[DP_MARGINAL_MAX_ATTRS * DP_MARGINAL_MAX_ATTRS + 1];
    uint32_t k[DP_MARGINAL_MAX_ATTRS * DP_MARGINAL_MAX_ATTRS + 1];
    if (m->n_factors >= DP_MARGINAL_MAX_ATTRS * DP_MARGINAL_MAX_ATTRS)
        return 0;
    for (uint32_t i = 0; i < m->n_factors; i++) {
        attrs[i] = m->theta[i].attrs;
        k[i] = m->theta[i].k;
    }
    attrs[m->n_factors] = w->attrs;
    k[m->n_factors] = w->k;
    uint64_t cells;
    return dp_jtree_build(NULL, m->cfg->n_attrs, m->cfg->sizes, m->n_factors + 1, attrs, k, m->cfg->max_model_cells,
                          &cells) == DP_OK;
}

/* 1 if a measurement of w would enter the fit (its factor exists or fits). */
static int pgm_admits(const dp_mmodel *cm, const dp_marginal_workload *w)
{
    dp_mmodel *m = (dp_mmodel *)cm;   /* admit is a cache of the structure */
    size_t wi = (size_t)(w - m->cfg->workloads);
    if (wi >= m->cfg->n_workloads)
        return existing_factor(m, w) >= 0 || room_for(m, w);
    if (!m->admit[wi])
        m->admit[wi] = existing_factor(m, w) >= 0 || room_for(m, w) ? 1 : 2;
    return m->admit[wi] == 1;
}

/* The factor of workload w, added (and the tree rebuilt) if it fits; -1 if not. */
static int factor_of(dp_mmodel *m, const dp_marginal_workload *w, int *idx)
{
    if ((*idx = existing_factor(m, w)) >= 0)
        return DP_OK;
    if (!room_for(m, w))
        return DP_OK;   /* too big: left out of the fit (*idx = -1) */
    dp_factor *t = realloc(m->theta, (m->n_factors + 1) * sizeof *t);
    if (!t)
        return DP_ENOMEM;
    m->theta = t;
    int rc = dp_factor_init(&m->theta[m->n_factors], w->attrs, w->k, m->cfg->sizes);
    if (rc != DP_OK)
        return rc;
    *idx = (int)m->n_factors++;
    return rebuild(m);
}

static int pgm_fit(dp_mmodel *m, const dp_mmeasure *ms, size_t n, double total, uint32_t iterations)
{
    m->total = total > 0 ? total : 0;
    if (m->wvalid)   /* cached marginals are scaled by the total */
        memset(m->wvalid, 0, m->cfg->n_workloads);
    double scale = m->total > 1 ? m->total : 1;
    int *idx = malloc((n ? n : 1) * sizeof *idx);
    if (!idx)
        return DP_ENOMEM;
    int rc = DP_OK;
    for (size_t i = 0; i < n && rc == DP_OK; i++)
        rc = factor_of(m, ms[i].w, &idx[i]);
    /* One calibration, then each update moves the tree's focus to the
     * measurement's clique and scales that clique's belief by the same
     * ratio its factor gets (dp_jtree_scale): the marginals the cycle reads
     * are those a full calibration would give, up to rounding.  The model
     * released is calibrated afresh from the summed potentials below, as a
     * restored model is (sum_logpot). */
    if (rc == DP_OK)
        rc = calibrate(m);
    uint8_t dirty[64] = {0};   /* cliques whose factors changed (≤ 64: one per attribute at most) */
    for (uint32_t it = 0; it < iterations && rc == DP_OK; it++)
        for (size_t i = 0; i < n && rc == DP_OK; i++) {
            if (idx[i] < 0)
                continue;
            const dp_marginal_workload *w = ms[i].w;
            uint32_t q = (uint32_t)m->home[idx[i]];
            dp_factor ratio;
            if ((rc = dp_factor_init(&ratio, w->attrs, w->k, m->cfg->sizes)) != DP_OK)
                break;
            if ((rc = dp_jtree_move_focus(&m->jt, m->cfg->sizes, q)) == DP_OK) {
                dp_factor_sum_into(&m->jt.belief[q], &ratio, m->cfg->sizes);   /* μ_C / N */
                for (uint64_t c = 0; c < w->cells; c++) {
                    double y = ms[i].values[c] > 0 ? ms[i].values[c] : 0;
                    double d = log((y + 0.5) / (ratio.v[c] * scale + 0.5));
                    d = d > 30 ? 30 : d < -30 ? -30 : d;
                    if (ms[i].damp > 0)
                        d *= ms[i].damp;   /* a damped step (marginal_estimate.c) */
                    m->theta[idx[i]].v[c] += d;
                    ratio.v[c] = exp(d);
                }
                dirty[q] = 1;
                invalidate(m);
                rc = dp_jtree_scale(&m->jt, m->cfg->sizes, q, &ratio);
            }
            dp_factor_free(&ratio);
        }
    /* the cycle reads beliefs only: the cliques' summed potentials are
     * brought up to date once, for the final calibration */
    for (uint32_t q = 0; q < m->jt.n_cliques; q++)
        if (dirty[q])
            sum_logpot(m, (int32_t)q);
    free(idx);
    return rc == DP_OK ? calibrate(m) : rc;
}

static int pgm_average(dp_mmodel *acc, const dp_mmodel *h, uint32_t l)
{
    (void)l;   /* models do not average: g_t = h_{t,K} (header) */
    return pgm_copy(acc, h);
}

static int row_lex_cmp(const int32_t *x, const int32_t *y, uint32_t p)
{
    for (uint32_t i = 0; i < p; i++)
        if (x[i] != y[i])
            return x[i] < y[i] ? -1 : 1;
    return 0;
}

static uint32_t g_sort_p;
static int rows_cmp(const void *a, const void *b) { return row_lex_cmp(a, b, g_sort_p); }

static int pgm_rows(const dp_mmodel *cm, uint64_t n, dp_drbg *g, dp_mrow_fn emit, void *ctx)
{
    dp_mmodel *m = (dp_mmodel *)cm;
    const dp_marginal_config *c = m->cfg;
    const uint32_t p = c->n_attrs;
    if (n == 0)
        return DP_OK;
    if (n > PGM_MAX_ROWS)
        return DP_ERANGE;
    int rc = calibrate(m);
    if (rc != DP_OK)
        return rc;
    int32_t *rows = malloc(n * p * sizeof *rows);
    uint64_t *sep_of = malloc(n * sizeof *sep_of), *perm = malloc(n * sizeof *perm), *cnt = NULL, *start = NULL;
    uint64_t *counts = NULL;
    double *cond = NULL;
    if (!rows || !sep_of || !perm) {
        rc = DP_ENOMEM;
        goto out;
    }
    const dp_jtree *jt = &m->jt;
    /* root */
    const dp_factor *root = &jt->belief[jt->order[0]];
    if (!(counts = malloc(root->cells * sizeof *counts))) {
        rc = DP_ENOMEM;
        goto out;
    }
    dp_round_systematic(root->v, root->cells, n, g, counts);
    uint64_t r = 0;
    for (uint64_t x = 0; x < root->cells; x++) {
        uint64_t rest = x;
        int32_t vals[DP_FACTOR_MAX_ATTRS];
        for (uint32_t j = root->k; j-- > 0;) {
            vals[j] = (int32_t)(rest % c->sizes[root->attrs[j]]);
            rest /= c->sizes[root->attrs[j]];
        }
        for (uint64_t q = 0; q < counts[x]; q++, r++)
            for (uint32_t j = 0; j < root->k; j++)
                rows[r * p + root->attrs[j]] = vals[j];
    }
    free(counts);
    counts = NULL;
    for (uint32_t o = 1; o < jt->n_cliques; o++) {
        uint32_t K = jt->order[o];
        const dp_factor *b = &jt->belief[K], *sep = &jt->up[K];
        /* new attributes of K (not in its separator), and their block size */
        uint32_t nw[DP_FACTOR_MAX_ATTRS], knew = 0;
        uint64_t new_cells = 1;
        for (uint32_t j = 0; j < b->k; j++)
            if (!dp_factor_subset(&b->attrs[j], 1, sep->attrs, sep->k)) {
                nw[knew++] = b->attrs[j];
                new_cells *= c->sizes[b->attrs[j]];
            }
        /* group the rows by separator value (counting sort: stable, row order) */
        free(cnt);
        free(start);
        cnt = calloc(sep->cells + 1, sizeof *cnt);
        start = calloc(sep->cells + 1, sizeof *start);
        free(cond);
        free(counts);
        cond = malloc(b->cells * sizeof *cond);
        counts = malloc(new_cells * sizeof *counts);
        if (!cnt || !start || !cond || !counts) {
            rc = DP_ENOMEM;
            goto out;
        }
        for (uint64_t i = 0; i < n; i++) {
            uint64_t s = 0;
            for (uint32_t j = 0; j < sep->k; j++)
                s = s * c->sizes[sep->attrs[j]] + (uint64_t)rows[i * p + sep->attrs[j]];
            sep_of[i] = s;
            cnt[s + 1]++;
        }
        for (uint64_t s = 0; s < sep->cells; s++)
            cnt[s + 1] += cnt[s];
        memcpy(start, cnt, (sep->cells + 1) * sizeof *start);
        for (uint64_t i = 0; i < n; i++)
            perm[start[sep_of[i]]++] = i;
        /* b rearranged as [separator value][new attributes' value], one pass */
        for (uint64_t x = 0; x < b->cells; x++) {
            uint64_t rest = x, sv = 0, nv = 0, smul = 1, nmul = 1;
            for (uint32_t j = b->k; j-- > 0;) {
                uint64_t digit = rest % c->sizes[b->attrs[j]];
                rest /= c->sizes[b->attrs[j]];
                if (dp_factor_subset(&b->attrs[j], 1, sep->attrs, sep->k)) {
                    sv += digit * smul;
                    smul *= c->sizes[b->attrs[j]];
                } else {
                    nv += digit * nmul;
                    nmul *= c->sizes[b->attrs[j]];
                }
            }
            cond[sv * new_cells + nv] = b->v[x];
        }
        /* per separator value: b(new | s), rounded counts, shuffled assignment */
        for (uint64_t s = 0; s < sep->cells; s++) {
            uint64_t lo = cnt[s], hi = cnt[s + 1], ns = hi - lo;
            if (ns == 0)
                continue;
            dp_round_systematic(cond + s * new_cells, new_cells, ns, g, counts);
            for (uint64_t i = ns; i > 1; i--) {   /* Fisher–Yates over the group */
                uint64_t j = dp_drbg_uniform(g, i);
                uint64_t t = perm[lo + i - 1];
                perm[lo + i - 1] = perm[lo + j];
                perm[lo + j] = t;
            }
            uint64_t at = lo;
            for (uint64_t v = 0; v < new_cells; v++)
                for (uint64_t q = 0; q < counts[v]; q++, at++) {
                    uint64_t rest = v;
                    for (uint32_t j = knew; j-- > 0;) {
                        rows[perm[at] * p + nw[j]] = (int32_t)(rest % c->sizes[nw[j]]);
                        rest /= c->sizes[nw[j]];
                    }
                }
        }
    }
    g_sort_p = p;
    qsort(rows, n, p * sizeof *rows, rows_cmp);
    for (uint64_t i = 0; i < n && rc == DP_OK; i++)
        rc = emit(ctx, rows + i * p);
out:
    free(rows);
    free(sep_of);
    free(perm);
    free(cnt);
    free(start);
    free(counts);
    free(cond);
    return rc;
}

static int pgm_save(const dp_mmodel *m, dp_buf *b)
{
    dp_buf_put_f64(b, m->total);
    dp_buf_put_u32(b, m->n_factors);
    for (uint32_t i = 0; i < m->n_factors; i++) {
        const dp_factor *f = &m->theta[i];
        dp_buf_put_u32(b, f->k);
        for (uint32_t j = 0; j < f->k; j++)
            dp_buf_put_u32(b, f->attrs[j]);
        for (uint64_t c = 0; c < f->cells; c++)
            dp_buf_put_f64(b, f->v[c]);
    }
    return dp_buf_status(b);
}

static int pgm_load(dp_mmodel *m, dp_reader *r)
{
    const dp_marginal_config *c = m->cfg;
    clear(m);
    m->total = dp_reader_f64(r);
    uint32_t nf = dp_reader_u32(r);
    if (dp_reader_status(r) != DP_OK || !isfinite(m->total) || m->total < 0 || nf > c->n_workloads)
        return DP_ECORRUPT;
    if (nf && !(m->theta = calloc(nf, sizeof *m->theta)))
        return DP_ENOMEM;
    for (uint32_t i = 0; i < nf; i++) {
        uint32_t k = dp_reader_u32(r), attrs[DP_MARGINAL_MAX_WAY];
        if (dp_reader_status(r) != DP_OK || k < 1 || k > DP_MARGINAL_MAX_WAY)
            return DP_ECORRUPT;
        for (uint32_t j = 0; j < k; j++) {
            attrs[j] = dp_reader_u32(r);
            if (attrs[j] >= c->n_attrs || (j && attrs[j] <= attrs[j - 1]))
                return DP_ECORRUPT;
        }
        /* a clique is one of the configured workloads */
        int known = 0;
        for (size_t w = 0; w < c->n_workloads && !known; w++)
            known = c->workloads[w].k == k && memcmp(c->workloads[w].attrs, attrs, k * sizeof *attrs) == 0;
        if (!known || dp_factor_init(&m->theta[i], attrs, k, c->sizes) != DP_OK)
            return DP_ECORRUPT;
        m->n_factors++;
        for (uint64_t x = 0; x < m->theta[i].cells; x++)
            if (!isfinite(m->theta[i].v[x] = dp_reader_f64(r)))
                return DP_ECORRUPT;
    }
    if (dp_reader_status(r) != DP_OK)
        return DP_ECORRUPT;
    return rebuild(m) == DP_OK ? DP_OK : DP_ECORRUPT;
}

const dp_mmodel_ops dp_mmodel_pgm = {
    .name = "pgm",
    .create = pgm_create,
    .destroy = pgm_destroy,
    .copy = pgm_copy,
    .total = pgm_total,
    .marginal = pgm_marginal,
    .fit = pgm_fit,
    .average = pgm_average,
    .rows = pgm_rows,
    .save = pgm_save,
    .load = pgm_load,
    .admits = pgm_admits,
};
