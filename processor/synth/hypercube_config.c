/* hypercube_config.c — parse and validate `hypercube`'s JSON configuration
 * (keys in hypercube_config.h).  All of it is public (docs/privacy.md §1). */
#include "synth/hypercube_config.h"

#include "synth/config_json.h"

#include "core/dp_error.h"

#include <math.h>
#include <string.h>

#define NAME "hypercube"

static const char *const KEYS[] = {"synthesizer", "dims", "box", "epsilon", "points_per_step", "max_depth",
                                   "output", "max_release_points", "delta", NULL};

int dp_hypercube_config_parse(dp_hypercube_config *c, const json_t *cfg, char *errstr, size_t errstr_size)
{
    memset(c, 0, sizeof *c);
    c->points_per_step = 1;
    c->max_depth = 20;
    c->max_release_points = 10000000;
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
    static const char *const OUTPUTS[] = {"full", "delta", NULL};
    return dp_cfg_choice(json_object_get(cfg, "output"), NAME, "output", OUTPUTS, &c->delta_output, errstr,
                         errstr_size);
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

double dp_hypercube_eps(const dp_hypercube_config *c, unsigned j, unsigned r)
{
    double alpha, C1;
    dp_hypercube_schedule_constants(c, &alpha, &C1);
    if (c->box.d == 1)
        return C1 * c->epsilon / ((double)(j + 1) * (double)(j + 1));
    unsigned rr = r < c->max_depth ? r : c->max_depth;
    return C1 * c->epsilon * pow(alpha, (double)j - (double)rr);
}

double dp_hypercube_eps_point(const dp_hypercube_config *c, unsigned r)
{
    unsigned top = c->box.d == 1 ? c->max_depth : (r < c->max_depth ? r : c->max_depth);
    double s = 0;
    for (unsigned j = 1; j <= top; j++)
        s += dp_hypercube_eps(c, j, r);
    return 2 * s;
}
