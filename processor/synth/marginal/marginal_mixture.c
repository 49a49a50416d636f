/* marginal_mixture.c — the StreamingMWEM baseline's synthetic data with
 * fit "pgm": g_t = Σ_τ≤t (the model fitted at step τ), kept as the list of
 * those models (a mixture) because a graphical model over Adult's 6.4·10^17
 * cells cannot be added up cell by cell as fit "mw" does (marginal_method.c,
 * step_mwem's G).
 *
 * Seed 001 Alg. 2 adds each step's fitted table to g with the sign of the
 * step's change.  A mixture can only add: with fit "pgm" the ingest half
 * rejects DELETE (WRONG_KIND, marginal_ingest.c: a decision on the update's
 * own kind and the public config), and a step whose noisy total is not
 * positive — a small batch and unlucky noise — adds nothing.  Both stated
 * in the README.
 *
 * Memory and snapshot grow by one model a step (K pair cliques; a few
 * hundred KB at Adult scale), bounded by the horizon.  Rows: the release's
 * n rows are spread over the steps' models by systematic rounding of their
 * totals, then drawn from each model in step order.  Post-processing of
 * charged outputs only; no privacy cost. */
#include "synth/marginal/marginal_release.h"

#include "core/dp_error.h"
#include "core/round.h"

#include <math.h>
#include <stdlib.h>

/* Appends part (owned from now on). */
static int append(marginal_release *m, dp_mmodel *part)
{
    if (m->n_parts == m->cap_parts) {
        size_t cap = m->cap_parts ? 2 * m->cap_parts : 16;
        dp_mmodel **p = realloc(m->parts, cap * sizeof *p);
        if (!p)
            return DP_ENOMEM;
        m->parts = p;
        m->cap_parts = cap;
    }
    m->parts[m->n_parts++] = part;
    return DP_OK;
}

int dp_marginal_mixture_add(marginal_release *m, const dp_mmodel *part)
{
    if (!(m->mops->total(part) > 0))
        return DP_OK;
    dp_mmodel *copy;
    char err[128];
    int rc = m->mops->create(&copy, &m->cfg, err, sizeof err);
    if (rc != DP_OK)
        return rc;
    if ((rc = m->mops->copy(copy, part)) != DP_OK || (rc = append(m, copy)) != DP_OK)
        m->mops->destroy(copy);
    return rc;
}

double dp_marginal_mixture_total(const marginal_release *m)
{
    double s = 0;
    for (size_t i = 0; i < m->n_parts; i++)
        s += m->mops->total(m->parts[i]);
    return s;
}

int dp_marginal_mixture_rows(const marginal_release *m, uint64_t n, dp_drbg *g, dp_mrow_fn emit, void *ctx)
{
    if (n == 0 || m->n_parts == 0)
        return DP_OK;
    double *w = malloc(m->n_parts * sizeof *w);
    uint64_t *k = malloc(m->n_parts * sizeof *k);
    int rc = w && k ? DP_OK : DP_ENOMEM;
    if (rc == DP_OK) {
        for (size_t i = 0; i < m->n_parts; i++)
            w[i] = m->mops->total(m->parts[i]);
        dp_round_systematic(w, m->n_parts, n, g, k);
        for (size_t i = 0; i < m->n_parts && rc == DP_OK; i++)
            rc = m->mops->rows(m->parts[i], k[i], g, emit, ctx);
    }
    free(w);
    free(k);
    return rc;
}

void dp_marginal_mixture_free(marginal_release *m)
{
    for (size_t i = 0; i < m->n_parts; i++)
        m->mops->destroy(m->parts[i]);
    free(m->parts);
    m->parts = NULL;
    m->n_parts = m->cap_parts = 0;
}

void dp_marginal_mixture_save(const marginal_release *m, dp_buf *b)
{
    dp_buf_put_u64(b, m->n_parts);
    for (size_t i = 0; i < m->n_parts; i++)
        m->mops->save(m->parts[i], b);
}

int dp_marginal_mixture_load(marginal_release *m, dp_reader *r)
{
    uint64_t n = dp_reader_u64(r);
    if (dp_reader_status(r) != DP_OK || n > m->done)
        return DP_ECORRUPT;
    dp_marginal_mixture_free(m);
    for (uint64_t i = 0; i < n; i++) {
        dp_mmodel *part;
        char err[128];
        int rc = m->mops->create(&part, &m->cfg, err, sizeof err);
        if (rc != DP_OK)
            return rc;
        if ((rc = m->mops->load(part, r)) != DP_OK || !(m->mops->total(part) > 0) || (rc = append(m, part)) != DP_OK) {
            m->mops->destroy(part);
            return rc == DP_ENOMEM ? rc : DP_ECORRUPT;
        }
    }
    return DP_OK;
}
