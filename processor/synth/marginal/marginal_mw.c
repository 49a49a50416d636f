/* marginal_mw.c — the `mw` fit of `marginal`: multiplicative weights over
 * the full domain (Hardt, Ligett, McSherry 2012; seed 001 §4.2.1), for
 * domains of at most 2^22 cells (docs/privacy.md §5).
 *
 * The model is g = N·p: a total N and a distribution p > 0 with one weight
 * per domain cell (mixed radix, attribute 0 most significant).  Each update
 * multiplies the weights of a measured workload's cell c (every cell of a
 * workload is one marginal query; its cells partition X) by exp(η_c):
 *
 *     p(x) ∝ p(x) · exp(η_c),   c = the cell of x in W.
 *
 * Seed 001 §4.2.1 takes η_c = (m_c − W(g)_c)/(2N).  Measured on Adult
 * (bench/accuracy_marginal), that step barely moves a 10^5-cell domain in
 * the few updates a stream can afford per step (a cell 0.01 off moves by
 * e^0.005), so the releases stayed near uniform.  We take the largest step
 * of the family instead, η_c = ln((m_c⁺ + ½)/(W(g)_c + ½)): after the update
 * W(g) equals the measurement (clamped at 0, smoothed by ½ a row), i.e. the
 * information projection of the previous model onto that measurement, and
 * cycling over the measured workloads `iterations` times is iterative
 * proportional fitting (Deming & Stephan 1940) warm-started from h_{t,l-1}.
 * Everything here is post-processing of charged outputs; doubles are fine,
 * and all loops run in a fixed order (deterministic). */
#include "synth/marginal/marginal.h"
#include "core/round.h"

#include "core/dp_error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Multiplicative steps are clamped to e^±30 per update: a noisy
 * measurement against a tiny total must not overflow the weights. */
#define MW_MAX_EXPONENT 30.0
#define MW_MIN_WEIGHT 1e-280

struct dp_mmodel {
    const dp_marginal_config *cfg;
    uint64_t cells;       /* |X| */
    double   total;       /* N */
    double  *p;           /* distribution over X */
    double  *scratch;     /* a workload's cells */
    uint64_t scratch_cap;
};

static uint64_t domain_cells(const dp_marginal_config *c) { return (uint64_t)c->domain_cells; }

static int mw_create(dp_mmodel **out, const dp_marginal_config *c, char *errstr, size_t errstr_size)
{
    *out = NULL;
    if (c->domain_cells > (double)DP_MARGINAL_MW_MAX_CELLS)
        return dp_err(errstr, errstr_size, DP_ERANGE, "marginal: the mw fit needs a domain of at most 2^22 cells");
    dp_mmodel *m = calloc(1, sizeof *m);
    if (!m)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    m->cfg = c;
    m->cells = domain_cells(c);
    uint64_t wmax = 1;
    for (size_t i = 0; i < c->n_workloads; i++)
        if (c->workloads[i].cells > wmax)
            wmax = c->workloads[i].cells;
    m->scratch_cap = wmax;
    m->p = malloc(m->cells * sizeof *m->p);
    m->scratch = malloc(wmax * sizeof *m->scratch);
    if (!m->p || !m->scratch) {
        free(m->p);
        free(m->scratch);
        free(m);
        return dp_err(errstr, errstr_size, DP_ENOMEM, "marginal: out of memory for %llu domain weights",
                      (unsigned long long)domain_cells(c));
    }
    /* g_0: seed 001 Alg. 2/3 line 3 start from the uniform distribution; the
     * total starts at 0 (no rows before the first step). */
    for (uint64_t x = 0; x < m->cells; x++)
        m->p[x] = 1.0 / (double)m->cells;
    *out = m;
    return DP_OK;
}

static void mw_destroy(dp_mmodel *m)
{
    if (!m)
        return;
    free(m->p);
    free(m->scratch);
    free(m);
}

static int mw_copy(dp_mmodel *dst, const dp_mmodel *src)
{
    memcpy(dst->p, src->p, src->cells * sizeof *src->p);
    dst->total = src->total;
    return DP_OK;
}

static double mw_total(const dp_mmodel *m) { return m->total; }

/* A workload's cells as blocks of the domain (mixed radix, attribute 0
 * most significant; workload attributes ascending).  Past the workload's
 * last attribute L the remaining attributes form a contiguous run of
 * `inner` weights that all fall in the same workload cell, and within one
 * value of attributes 0..L−1 the L-th digit steps the cell by mult[L].  So
 * a pass over the domain is a short odometer over the prefix digits, a
 * loop over L's values, and a contiguous inner run — no per-weight digit
 * arithmetic.  This is where `mw` spends its time (every fit update and
 * every selection reads or rescales all |X| weights), so it is written to
 * stream memory once per pass. */
typedef struct wblocks {
    uint64_t prefixes;                      /* values of attributes 0..L−1 */
    uint32_t n_last;                        /* |attribute L| */
    uint64_t inner;                         /* weights per (prefix, L-value) block */
    uint64_t mult[DP_MARGINAL_MAX_ATTRS];   /* weight of attribute a in w's cell index (0 if not in w) */
} wblocks;

static void wblocks_init(wblocks *b, const dp_marginal_config *c, const dp_marginal_workload *w)
{
    memset(b, 0, sizeof *b);
    uint64_t mul = 1;
    for (uint32_t j = w->k; j-- > 0;) {
        b->mult[w->attrs[j]] = mul;
        mul *= c->sizes[w->attrs[j]];
    }
    uint32_t last = w->attrs[w->k - 1];
    b->prefixes = 1;
    for (uint32_t a = 0; a < last; a++)
        b->prefixes *= c->sizes[a];
    b->n_last = c->sizes[last];
    b->inner = 1;
    for (uint32_t a = last + 1; a < c->n_attrs; a++)
        b->inner *= c->sizes[a];
}

/* The next prefix's base cell: odometer over attributes L−1..0. */
static inline uint64_t wblocks_next(const wblocks *b, const dp_marginal_config *c, const dp_marginal_workload *w,
                                    uint32_t *digit, uint64_t base)
{
    for (uint32_t a = w->attrs[w->k - 1]; a-- > 0;) {
        if (++digit[a] < c->sizes[a])
            return base + b->mult[a];
        base -= b->mult[a] * (c->sizes[a] - 1);
        digit[a] = 0;
    }
    return base;
}

static inline double sum_run(const double *x, uint64_t n)
{
    /* four partial sums: a fixed order, so still deterministic */
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    uint64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += x[i];
        s1 += x[i + 1];
        s2 += x[i + 2];
        s3 += x[i + 3];
    }
    for (; i < n; i++)
        s0 += x[i];
    return (s0 + s1) + (s2 + s3);
}

void dp_marginal_dense_marginal(const dp_marginal_config *c, const double *counts, const dp_marginal_workload *w,
                                double *out)
{
    memset(out, 0, w->cells * sizeof *out);
    wblocks b;
    wblocks_init(&b, c, w);
    uint32_t digit[DP_MARGINAL_MAX_ATTRS] = {0};
    uint64_t base = 0, step = b.mult[w->attrs[w->k - 1]];
    const double *x = counts;
    for (uint64_t p = 0; p < b.prefixes; p++) {
        for (uint32_t d = 0; d < b.n_last; d++, x += b.inner)
            out[base + d * step] += b.inner == 1 ? x[0] : sum_run(x, b.inner);
        base = wblocks_next(&b, c, w, digit, base);
    }
}

/* p(x) ← max(p(x)·f[cell of x in w], floor), one pass. */
static void scale_by_workload(const dp_marginal_config *c, double *p, const dp_marginal_workload *w,
                              const double *f, double floor)
{
    wblocks b;
    wblocks_init(&b, c, w);
    uint32_t digit[DP_MARGINAL_MAX_ATTRS] = {0};
    uint64_t base = 0, step = b.mult[w->attrs[w->k - 1]];
    double *x = p;
    for (uint64_t q = 0; q < b.prefixes; q++) {
        for (uint32_t d = 0; d < b.n_last; d++, x += b.inner) {
            double fd = f[base + d * step];
            for (uint64_t i = 0; i < b.inner; i++) {
                double v = x[i] * fd;
                x[i] = v < floor ? floor : v;
            }
        }
        base = wblocks_next(&b, c, w, digit, base);
    }
}

static int mw_marginal(const dp_mmodel *m, const dp_marginal_workload *w, double *out)
{
    dp_marginal_dense_marginal(m->cfg, m->p, w, out);
    for (uint64_t c = 0; c < w->cells; c++)
        out[c] *= m->total;
    return DP_OK;
}

static void normalize(dp_mmodel *m)
{
    double s = 0;
    for (uint64_t x = 0; x < m->cells; x++)
        s += m->p[x];
    for (uint64_t x = 0; x < m->cells; x++) {
        m->p[x] /= s;
        if (m->p[x] < MW_MIN_WEIGHT)
            m->p[x] = MW_MIN_WEIGHT;
    }
}

static int mw_fit(dp_mmodel *m, const dp_mmeasure *ms, size_t n, double total, uint32_t iterations)
{
    m->total = total > 0 ? total : 0;
    /* Fit as if there were at least one row: with N = 0 the ratios would
     * be meaningless, and p stays a distribution. */
    double scale = m->total > 1 ? m->total : 1;
    for (uint32_t it = 0; it < iterations; it++)
        for (size_t i = 0; i < n; i++) {
            const dp_marginal_workload *w = ms[i].w;
            double *q = m->scratch;
            dp_marginal_dense_marginal(m->cfg, m->p, w, q);
            /* The factors' normaliser is known from the marginal: after
             * p(x)·f_c the mass is Σ_c q_c·f_c, so dividing f by it keeps p
             * a distribution without a second pass over the domain. */
            double mass = 0;
            for (uint64_t c = 0; c < w->cells; c++) {
                double target = ms[i].values[c] > 0 ? ms[i].values[c] : 0;
                double e = log((target + 0.5) / (q[c] * scale + 0.5));
                if (ms[i].damp > 0)
                    e *= ms[i].damp;   /* a damped step (marginal_estimate.c) */
                double f = exp(e > MW_MAX_EXPONENT ? MW_MAX_EXPONENT : e < -MW_MAX_EXPONENT ? -MW_MAX_EXPONENT : e);
                mass += q[c] * f;
                q[c] = f;
            }
            for (uint64_t c = 0; c < w->cells; c++)
                q[c] /= mass;
            scale_by_workload(m->cfg, m->p, w, q, MW_MIN_WEIGHT);
        }
    return DP_OK;
}

static int mw_average(dp_mmodel *acc, const dp_mmodel *h, uint32_t l)
{
    if (l <= 1)
        return mw_copy(acc, h);
    double a = (double)(l - 1) / l, b = 1.0 / l;
    double total = a * acc->total + b * h->total;
    for (uint64_t x = 0; x < acc->cells; x++) {
        /* the mean of the datasets N·p, renormalised; with no rows, the mean of the distributions */
        acc->p[x] = total > 0 ? (a * acc->total * acc->p[x] + b * h->total * h->p[x]) / total
                              : a * acc->p[x] + b * h->p[x];
    }
    acc->total = total;
    normalize(acc);
    return DP_OK;
}

int dp_marginal_rows_from_counts(const dp_marginal_config *c, const double *counts, uint64_t n, dp_drbg *g,
                                 dp_mrow_fn emit, void *ctx)
{
    uint64_t cells = domain_cells(c);
    if (n == 0)
        return DP_OK;
    uint64_t *k = malloc(cells * sizeof *k);
    if (!k)
        return DP_ENOMEM;
    dp_round_systematic(counts, cells, n, g, k);
    int32_t row[DP_MARGINAL_MAX_ATTRS] = {0};
    int rc = 0;
    for (uint64_t x = 0; x < cells && rc == 0; x++) {
        for (uint64_t j = 0; j < k[x] && rc == 0; j++)
            rc = emit(ctx, row);
        for (uint32_t a = c->n_attrs; a-- > 0;) {   /* row = digits of x + 1 */
            if ((uint32_t)++row[a] < c->sizes[a])
                break;
            row[a] = 0;
        }
    }
    free(k);
    return rc;
}

static int mw_rows(const dp_mmodel *m, uint64_t n, dp_drbg *g, dp_mrow_fn emit, void *ctx)
{
    return dp_marginal_rows_from_counts(m->cfg, m->p, n, g, emit, ctx);
}

int dp_mmodel_mw_counts(const dp_mmodel *m, double *out)
{
    for (uint64_t x = 0; x < m->cells; x++)
        out[x] = m->total * m->p[x];
    return DP_OK;
}

static int mw_save(const dp_mmodel *m, dp_buf *b)
{
    dp_buf_put_u64(b, m->cells);
    dp_buf_put_f64(b, m->total);
    for (uint64_t x = 0; x < m->cells; x++)
        dp_buf_put_f64(b, m->p[x]);
    return dp_buf_status(b);
}

static int mw_load(dp_mmodel *m, dp_reader *r)
{
    if (dp_reader_u64(r) != m->cells)
        return DP_ECORRUPT;
    m->total = dp_reader_f64(r);
    if (!isfinite(m->total) || m->total < 0)
        return DP_ECORRUPT;
    double s = 0;
    for (uint64_t x = 0; x < m->cells; x++) {
        m->p[x] = dp_reader_f64(r);
        if (!(m->p[x] > 0) || !isfinite(m->p[x]))
            return DP_ECORRUPT;
        s += m->p[x];
    }
    if (dp_reader_status(r) != DP_OK || fabs(s - 1.0) > 1e-6)
        return DP_ECORRUPT;
    return DP_OK;
}

const dp_mmodel_ops dp_mmodel_mw = {
    .name = "mw",
    .create = mw_create,
    .destroy = mw_destroy,
    .copy = mw_copy,
    .total = mw_total,
    .marginal = mw_marginal,
    .fit = mw_fit,
    .average = mw_average,
    .rows = mw_rows,
    .save = mw_save,
    .load = mw_load,
};
