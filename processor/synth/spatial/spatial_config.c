/* spatial_config.c — parse and validate `spatial`'s JSON configuration
 * (keys in spatial_config.h).  All of it is public (docs/privacy.md §1): the
 * box, the budget and the tree's limits are the stream's declaration. */
#include "synth/spatial/spatial_config.h"

#include "synth/common/config_json.h"

#include "core/dp_error.h"

#include <math.h>
#include <string.h>

#define NAME "spatial"

static const char *const KEYS[] = {"synthesizer", "box", "epsilon", "sensitivity", "tree_budget_fraction",
                                   "fanout", "max_depth", "theta", "init_steps", "counter", "variant",
                                   "unsafe_paper_variant", "horizon", "max_nodes", "max_release_points", "output", "delta", NULL};

int dp_spatial_config_parse(dp_spatial_config *c, const json_t *cfg, char *errstr, size_t errstr_size)
{
    memset(c, 0, sizeof *c);
    c->box.d = 2;
    c->box.hi[0] = c->box.hi[1] = 1;
    c->sensitivity = 1;
    c->tree_fraction = 0.5;
    c->max_depth = 20;
    c->init_steps = 1;
    c->counter_kind = DP_COUNTER_SIMPLE;
    c->max_nodes = 1u << 22;
    c->max_release_points = 10000000;
    c->event_level = 1;
    int rc = dp_cfg_check_object(cfg, NAME, KEYS, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    json_t *v;
    uint64_t u;
    if ((rc = dp_cfg_unused_delta(cfg, NAME, errstr, errstr_size)) != DP_OK)   /* pure ε */
        return rc;
    if ((v = json_object_get(cfg, "box")) && (rc = dp_cfg_box(v, NAME, &c->box, errstr, errstr_size)))
        return rc;
    if (!(v = json_object_get(cfg, "epsilon")))
        return dp_err(errstr, errstr_size, DP_EINVAL, NAME ": \"epsilon\" is required (pure ε-DP)");
    if ((rc = dp_cfg_real(v, NAME, "epsilon", &c->epsilon, errstr, errstr_size)))
        return rc;
    if (!(c->epsilon > 0) || c->epsilon > 1e4)
        return dp_err(errstr, errstr_size, DP_ERANGE, NAME ": epsilon must be in (0, 1e4]");
    if ((v = json_object_get(cfg, "sensitivity"))) {
        if ((rc = dp_cfg_uint(v, NAME, "sensitivity", 1, 1000000, &u, errstr, errstr_size)))
            return rc;
        c->sensitivity = (uint32_t)u;
        c->event_level = 0;
    }
    if ((v = json_object_get(cfg, "tree_budget_fraction"))) {
        if ((rc = dp_cfg_real(v, NAME, "tree_budget_fraction", &c->tree_fraction, errstr, errstr_size)))
            return rc;
        if (!(c->tree_fraction > 0 && c->tree_fraction < 1))
            return dp_err(errstr, errstr_size, DP_ERANGE, NAME ": tree_budget_fraction must be in (0, 1)");
    }
    if ((v = json_object_get(cfg, "fanout"))) {
        if ((rc = dp_cfg_uint(v, NAME, "fanout", 2, 2, &u, errstr, errstr_size)))
            return dp_err(errstr, errstr_size, DP_EINVAL,
                          NAME ": fanout must be 2 (each split halves one coordinate, as in the paper's runs)");
    }
    if ((v = json_object_get(cfg, "max_depth"))) {
        if ((rc = dp_cfg_uint(v, NAME, "max_depth", 0, DP_PARTITION_MAX_DEPTH, &u, errstr, errstr_size)))
            return rc;
        c->max_depth = (uint32_t)u;
    }
    if ((v = json_object_get(cfg, "theta"))) {
        if ((rc = dp_cfg_real(v, NAME, "theta", &c->theta, errstr, errstr_size)))
            return rc;
        if (fabs(c->theta) > 1e9)
            return dp_err(errstr, errstr_size, DP_ERANGE, NAME ": theta must be in [-1e9, 1e9]");
    }
    if ((v = json_object_get(cfg, "counter"))) {
        dp_cfg_counter k = {c->counter_kind, 0, 0};
        if ((rc = dp_cfg_counter_parse(v, NAME, &k, errstr, errstr_size)))
            return rc;
        c->counter_kind = k.kind;
        c->counter_block = k.block;
        c->counter_buffers = k.buffers;
    }
    /* The published rule is not differentially private under deletions, so
     * it is not a "variant" among equals: like adaptive's, it takes a switch
     * whose name says so, and "variant" keeps only "safe" (old configs). */
    v = json_object_get(cfg, "variant");
    if (json_is_string(v) && strcmp(json_string_value(v), "paper") == 0)
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      NAME ": \"variant\": \"paper\" is now written \"unsafe_paper_variant\": true (the published "
                           "rule is NOT differentially private under deletions; for comparison only)");
    static const char *const VARIANTS[] = {"safe", NULL};
    int variant = 0;
    if ((rc = dp_cfg_choice(v, NAME, "variant", VARIANTS, &variant, errstr, errstr_size)))
        return rc;
    int unsafe = 0;
    if ((rc = dp_cfg_bool(json_object_get(cfg, "unsafe_paper_variant"), NAME, "unsafe_paper_variant", &unsafe, errstr,
                          errstr_size)))
        return rc;
    c->variant = unsafe ? DP_SPATIAL_PAPER : DP_SPATIAL_SAFE;
    if ((v = json_object_get(cfg, "horizon")) &&
        (rc = dp_cfg_uint(v, NAME, "horizon", 1, DP_SPATIAL_MAX_HORIZON, &c->horizon, errstr, errstr_size)))
        return rc;
    if ((v = json_object_get(cfg, "init_steps")) &&
        (rc = dp_cfg_uint(v, NAME, "init_steps", 1, DP_SPATIAL_MAX_HORIZON, &c->init_steps, errstr, errstr_size)))
        return rc;
    if (c->horizon && c->init_steps > c->horizon)
        return dp_err(errstr, errstr_size, DP_ERANGE, NAME ": init_steps (%llu) exceeds the horizon (%llu)",
                      (unsigned long long)c->init_steps, (unsigned long long)c->horizon);
    if ((v = json_object_get(cfg, "max_nodes"))) {
        if ((rc = dp_cfg_uint(v, NAME, "max_nodes", 3, (uint64_t)1 << 30, &u, errstr, errstr_size)))
            return rc;
        c->max_nodes = (uint32_t)u;
    }
    if ((v = json_object_get(cfg, "max_release_points")) &&
        (rc = dp_cfg_uint(v, NAME, "max_release_points", 1, (uint64_t)1 << 34, &c->max_release_points, errstr,
                          errstr_size)))
        return rc;
    static const char *const OUTPUTS[] = {"full", "delta", NULL};
    if ((rc = dp_cfg_choice(json_object_get(cfg, "output"), NAME, "output", OUTPUTS, &c->delta_output, errstr,
                            errstr_size)))
        return rc;
    return DP_OK;
}
