/* hypercube_config.c — parse and validate `hypercube`'s JSON configuration
 * (keys in hypercube_config.h).  All of it is public (docs/privacy.md §1). */
#include "synth/hypercube/hypercube_config.h"

#include "synth/common/config_json.h"

#include "core/dp_error.h"

#include <math.h>
#include <string.h>

#define NAME "hypercube"
#define DENSE_SLACK 1e-12

static const char *const KEYS[] = {"synthesizer", "dims", "box", "epsilon", "points_per_step", "max_depth",
                                   "output", "max_release_points", "delta", "variant", "epochs_per_level",
                                   "depth_snr", "split_threshold", NULL};

/* "dense"'s two constants (public; refused with the paper's rule, which has none). */
static int parse_dense(dp_hypercube_config *c, const json_t *cfg, char *errstr, size_t errstr_size)
{
    c->epochs_per_level = 4;
    /* d = 1: c = 2.  Its series falls with j (ε_j ∝ (j+1)^-2), so the finest
     * cells are the noisiest relative to their share; c = 1 left clmfires' x
     * coordinate 2 % above the uniform at t = 300, c = 2 is below it at every
     * step and better at the last (bench/RESULTS.md, "hypercube at small t"). */
    c->depth_snr = c->box.d == 1 ? 2 : 1;
    c->split_threshold = 2;
    json_t *q = json_object_get(cfg, "epochs_per_level"), *snr = json_object_get(cfg, "depth_snr"),
           *kappa = json_object_get(cfg, "split_threshold");
    if (c->variant != DP_HYPERCUBE_DENSE && (q || snr || kappa))
        return dp_err(errstr, errstr_size, DP_EINVAL, NAME ": \"%s\" needs \"variant\": \"dense\"",
                      q ? "epochs_per_level" : snr ? "depth_snr" : "split_threshold");
    uint64_t u;
    int rc;
    if (q) {
        if ((rc = dp_cfg_uint(q, NAME, "epochs_per_level", 1, 64, &u, errstr, errstr_size)))
            return rc;
        c->epochs_per_level = (uint32_t)u;
    }
    if (snr) {
        if ((rc = dp_cfg_real(snr, NAME, "depth_snr", &c->depth_snr, errstr, errstr_size)))
            return rc;
        if (!(c->depth_snr > 0) || c->depth_snr > 1e6)
            return dp_err(errstr, errstr_size, DP_ERANGE, NAME ": depth_snr must be in (0, 10^6]");
    }
    if (kappa) {
        if ((rc = dp_cfg_real(kappa, NAME, "split_threshold", &c->split_threshold, errstr, errstr_size)))
            return rc;
        if (!(c->split_threshold >= 0) || c->split_threshold > 100)
            return dp_err(errstr, errstr_size, DP_ERANGE, NAME ": split_threshold must be in [0, 100]");
    }
    return DP_OK;
}

int dp_hypercube_config_parse(dp_hypercube_config *c, const json_t *cfg, char *errstr, size_t errstr_size)
{
    memset(c, 0, sizeof *c);
    c->points_per_step = 1;
    c->max_depth = 20;
    c->max_release_points = 10000000;
    c->variant = DP_HYPERCUBE_DENSE;   /* issue 38: it wins at every t measured (docs/privacy.md §8.1) */
    int rc = dp_cfg_check_object(cfg, NAME, KEYS, errstr, errstr_size);
    if (rc != DP_OK || (rc = dp_cfg_unused_delta(cfg, NAME, errstr, errstr_size)) != DP_OK)
        return rc;
    json_t *v;
    uint64_t u, dims = 0;
    if ((v = json_object_get(cfg, "dims")) &&
        (rc = dp_cfg_uint(v, NAME, "dims", 1, DP_PARTITION_MAX_DIM, &dims, errstr, errstr_size)))
        return rc;
    if ((v = json_object_get(cfg, "box"))) {
        if ((rc = dp_cfg_box(v, NAME, &c->box, errstr, errstr_size)))
            return rc;
        if (dims && dims != c->box.d)
            return dp_err(errstr, errstr_size, DP_EINVAL, NAME ": dims (%llu) differs from the box's %u pairs",
                          (unsigned long long)dims, c->box.d);
    } else {
        c->box.d = dims ? (uint32_t)dims : 2;
        for (uint32_t i = 0; i < c->box.d; i++)
            c->box.hi[i] = 1;
    }
    if (!(v = json_object_get(cfg, "epsilon")))
        return dp_err(errstr, errstr_size, DP_EINVAL, NAME ": \"epsilon\" is required (pure ε-DP)");
    if ((rc = dp_cfg_real(v, NAME, "epsilon", &c->epsilon, errstr, errstr_size)))
        return rc;
    if (!(c->epsilon > 0) || c->epsilon > 1e3)
        return dp_err(errstr, errstr_size, DP_ERANGE, NAME ": epsilon must be in (0, 1000]");
    if ((v = json_object_get(cfg, "points_per_step")) &&
        (rc = dp_cfg_uint(v, NAME, "points_per_step", 1, DP_HYPERCUBE_MAX_POINTS_PER_STEP, &c->points_per_step,
                          errstr, errstr_size)))
        return rc;
    if ((v = json_object_get(cfg, "max_depth"))) {
        if ((rc = dp_cfg_uint(v, NAME, "max_depth", 1, DP_HYPERCUBE_MAX_DEPTH, &u, errstr, errstr_size)))
            return rc;
        c->max_depth = (uint32_t)u;
    }
    if ((v = json_object_get(cfg, "max_release_points")) &&
        (rc = dp_cfg_uint(v, NAME, "max_release_points", 1, (uint64_t)1 << 34, &c->max_release_points, errstr,
                          errstr_size)))
        return rc;
    static const char *const OUTPUTS[] = {"full", "delta", NULL}, *const VARIANTS[] = {"paper", "dense", NULL};
    if ((rc = dp_cfg_choice(json_object_get(cfg, "output"), NAME, "output", OUTPUTS, &c->delta_output, errstr,
                            errstr_size)) ||
        (rc = dp_cfg_choice(json_object_get(cfg, "variant"), NAME, "variant", VARIANTS, &c->variant, errstr,
                            errstr_size)))
        return rc;
    c->variant_explicit = json_object_get(cfg, "variant") != NULL;
    return parse_dense(c, cfg, errstr, errstr_size);
}

void dp_hypercube_schedule_constants(const dp_hypercube_config *c, double *alpha, double *C1)
{
    if (c->box.d == 1) {
        *alpha = 1;
        *C1 = 3.0 / (M_PI * M_PI);
        return;
    }
    *alpha = pow(2.0, (1.0 - 1.0 / (double)c->box.d) / 2.0);
    *C1 = (1.0 - 1.0 / *alpha) / 2.0;
}

/* ε_{j,·}/ε for depth j of a tree `deep` deep (seed 004 eq. 4.1, 5.1).
 * "dense" scales the series so that it sums to exactly 1/2 over the depths a
 * point can reach (1..deep for d >= 2, 1..D for d = 1, where new cells replay
 * the history): the paper's sum Σ_{j<=deep} C₁α^{j−deep} = (1 − α^{−deep})/2
 * leaves α^{−deep}/2 unspent (60 % at deep = 3, d = 2), and Prop. 4.1 needs
 * only sup_r Σ_j ε_{j,r} <= ε/2.  The scaled series sums to (1 − 10^-12)/2,
 * so floating-point rounding never reports more than ε to the ledger. */
static double share(const dp_hypercube_config *c, unsigned j, unsigned deep)
{
    double alpha, C1;
    dp_hypercube_schedule_constants(c, &alpha, &C1);
    int dense = c->variant == DP_HYPERCUBE_DENSE;
    if (c->box.d == 1) {
        double w = C1 / ((double)(j + 1) * (double)(j + 1)), sum = 0;
        if (!dense)
            return w;
        for (unsigned i = 1; i <= c->max_depth; i++)
            sum += C1 / ((double)(i + 1) * (double)(i + 1));
        return 0.5 * (1 - DENSE_SLACK) * w / sum;
    }
    double w = C1 * pow(alpha, (double)j - (double)deep);
    return dense ? (1 - DENSE_SLACK) * w / (1.0 - pow(alpha, -(double)deep)) : w;
}

double dp_hypercube_eps(const dp_hypercube_config *c, unsigned j, unsigned r)
{
    if (c->variant == DP_HYPERCUBE_DENSE)
        return c->epsilon * share(c, j, dp_hypercube_depth(c, r));
    /* the paper's, in the same floating-point steps as always (its noise scales, hence its releases, unchanged) */
    double alpha, C1;
    dp_hypercube_schedule_constants(c, &alpha, &C1);
    if (c->box.d == 1)
        return C1 * c->epsilon / ((double)(j + 1) * (double)(j + 1));
    unsigned rr = r < c->max_depth ? r : c->max_depth;
    return C1 * c->epsilon * pow(alpha, (double)j - (double)rr);
}

unsigned dp_hypercube_depth(const dp_hypercube_config *c, unsigned r)
{
    unsigned top = r < c->max_depth ? r : c->max_depth;
    if (c->variant != DP_HYPERCUBE_DENSE)
        return top;
    /* 2^(r−j) >= c·√2/η_j with η_j = share(j, j), the finest depth's share (see the header) */
    for (unsigned j = top; j > 0; j--)
        if (ldexp(1.0, (int)(r - j)) >= c->depth_snr * M_SQRT2 / share(c, j, j))
            return j;
    return 0;
}

double dp_hypercube_eps_point(const dp_hypercube_config *c, unsigned r)
{
    unsigned top = c->box.d == 1 ? c->max_depth : dp_hypercube_depth(c, r);
    double s = 0;
    for (unsigned j = 1; j <= top; j++)
        s += dp_hypercube_eps(c, j, r);
    return 2 * s;
}
