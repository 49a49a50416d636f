/* panel_gen.c — the deterministic Markov panel of panel_gen.h. */
#include "connectors/panel/panel_gen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/dp_error.h"

#define TWO53 9007199254740992.0   /* 2^53 */

void dp_panel_gen_initial_law(const dp_panel_params *p, double *out)
{
    uint32_t c = p->categories;
    if (p->has_initial) {
        memcpy(out, p->initial, c * sizeof *out);
        return;
    }
    int all_mix = 1;
    for (uint32_t j = 0; j < c; j++)
        if (!(p->stay[j] < 1.0))
            all_mix = 0;
    double sum = 0;
    for (uint32_t j = 0; j < c; j++) {
        out[j] = all_mix ? 1.0 / (1.0 - p->stay[j]) : 1.0;
        sum += out[j];
    }
    for (uint32_t j = 0; j < c; j++)
        out[j] /= sum;
}

static uint64_t prob_threshold(double prob)
{
    if (prob <= 0)
        return 0;
    if (prob >= 1)
        return (uint64_t)1 << 53;
    return (uint64_t)floor(prob * TWO53);
}

int dp_panel_gen_init(dp_panel_gen *g, const dp_panel_params *p, char *errstr, size_t errstr_size)
{
    memset(g, 0, sizeof *g);
    if (p->n < 1)
        return dp_err(errstr, errstr_size, DP_EINVAL, "panel: n must be >= 1");
    if (p->steps < 1)
        return dp_err(errstr, errstr_size, DP_EINVAL, "panel: steps must be >= 1");
    if (p->categories < 2 || p->categories > DP_PANEL_MAX_CATEGORIES)
        return dp_err(errstr, errstr_size, DP_EINVAL, "panel: categories must be in 2..%d", DP_PANEL_MAX_CATEGORIES);
    if (p->n > SIZE_MAX)
        return dp_err(errstr, errstr_size, DP_ERANGE, "panel: n too large for this machine");
    uint32_t c = p->categories;
    for (uint32_t j = 0; j < c; j++)
        if (!(p->stay[j] >= 0.0 && p->stay[j] <= 1.0))
            return dp_err(errstr, errstr_size, DP_EINVAL, "panel: stay probability of category %u must be in [0, 1]", j);
    if (p->has_initial) {
        double s = 0;
        for (uint32_t j = 0; j < c; j++) {
            if (!(p->initial[j] >= 0.0 && p->initial[j] <= 1.0))
                return dp_err(errstr, errstr_size, DP_EINVAL, "panel: initial probability of category %u must be in [0, 1]", j);
            s += p->initial[j];
        }
        if (fabs(s - 1.0) > 1e-9)
            return dp_err(errstr, errstr_size, DP_EINVAL, "panel: initial probabilities sum to %.12g, not 1", s);
    }
    g->p = *p;
    double law[DP_PANEL_MAX_CATEGORIES];
    dp_panel_gen_initial_law(p, law);
    double cum = 0;
    for (uint32_t j = 0; j < c; j++) {
        g->stay_thr[j] = prob_threshold(p->stay[j]);
        cum += law[j];
        g->init_cdf[j] = prob_threshold(cum);
    }
    g->init_cdf[c - 1] = (uint64_t)1 << 53;   /* rounding never leaves mass unassigned */
    g->value = malloc((size_t)p->n);
    if (!g->value)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "panel: out of memory for %llu individuals",
                      (unsigned long long)p->n);
    return DP_OK;
}

void dp_panel_gen_free(dp_panel_gen *g)
{
    free(g->value);
    g->value = NULL;
}

int dp_panel_gen_next(dp_panel_gen *g)
{
    if (g->step >= g->p.steps)
        return DP_EHORIZON;
    uint64_t t = ++g->step;
    uint32_t c = g->p.categories;
    dp_drbg rng;
    dp_drbg_init(&rng, &g->p.seed, "", 0, t, "panel_gen/markov/v1");
    if (t == 1) {
        for (uint64_t i = 0; i < g->p.n; i++) {
            uint64_t u = dp_drbg_u64(&rng) >> 11;
            uint32_t j = 0;
            while (u >= g->init_cdf[j])
                j++;
            g->value[i] = (uint8_t)j;
        }
    } else {
        for (uint64_t i = 0; i < g->p.n; i++) {
            uint32_t cur = g->value[i];
            uint64_t u = dp_drbg_u64(&rng) >> 11;
            if (u < g->stay_thr[cur])
                continue;
            /* move to one of the c-1 other categories, uniformly */
            uint32_t k = (uint32_t)dp_drbg_uniform(&rng, c - 1);
            g->value[i] = (uint8_t)(k >= cur ? k + 1 : k);
        }
    }
    dp_drbg_wipe(&rng);
    return DP_OK;
}
