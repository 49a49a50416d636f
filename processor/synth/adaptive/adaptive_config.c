/* adaptive_config.c — parse and validate `adaptive`'s JSON configuration
 * (keys in adaptive_config.h).  All of it is public (docs/privacy.md §1),
 * n_min included: it is the stream's declared lower bound, not a measured
 * count. */
#include "synth/adaptive/adaptive_config.h"

#include "synth/common/config_json.h"

#include "core/dp_error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NAME "adaptive"

static const char *const KEYS[] = {"synthesizer", "categories", "attributes", "method", "epsilon", "privacy", "w", "snapshot", "horizon",
                                   "max_releases", "decision_fraction", "n_min", "threshold", "theta_p",
                                   "delta_sp", "burn_in", "test_fraction", "unsafe_paper_variant", "delta", NULL};

static int unit_real(const json_t *cfg, const char *key, double lo, double hi, double *out, char *errstr,
                     size_t errstr_size)
{
    const json_t *v = json_object_get(cfg, key);
    if (!v)
        return DP_OK;
    int rc = dp_cfg_real(v, NAME, key, out, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    if (!(*out > lo && *out < hi))
        return dp_err(errstr, errstr_size, DP_ERANGE, NAME ": %s must be in (%g, %g)", key, lo, hi);
    return DP_OK;
}

int dp_adaptive_config_parse(dp_adaptive_config *c, const json_t *cfg, char *errstr, size_t errstr_size)
{
    memset(c, 0, sizeof *c);
    c->decision_fraction = 0.05;
    c->threshold = 0.025;
    c->theta_p = 0.5;
    c->delta_sp = 0.05;
    c->burn_in = 2;
    c->test_fraction = 0.5;
    int rc = dp_cfg_check_object(cfg, NAME, KEYS, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    json_t *v;
    uint64_t u;
    if ((rc = dp_cfg_unused_delta(cfg, NAME, errstr, errstr_size)) != DP_OK)   /* pure ε */
        return rc;
    const json_t *attrs = json_object_get(cfg, "attributes");
    v = json_object_get(cfg, "categories");
    if (!!v == !!attrs)
        return dp_err(errstr, errstr_size, DP_EINVAL, NAME ": give exactly one of \"categories\" (U bins) or "
                                                      "\"attributes\"");
    if (v) {
        if ((rc = dp_cfg_uint(v, NAME, "categories", 2, DP_ADAPTIVE_MAX_CATEGORIES, &u, errstr, errstr_size)))
            return rc;
        c->categories = (uint32_t)u;
    } else {
        char *names[DP_ADAPTIVE_MAX_ATTRS] = {0};
        rc = dp_cfg_attributes(attrs, NAME, DP_ADAPTIVE_MAX_ATTRS, DP_ADAPTIVE_MAX_CATEGORIES, names, c->sizes,
                               &c->n_attrs, errstr, errstr_size);
        for (uint32_t i = 0; i < c->n_attrs; i++)   /* only the sizes are kept: rows are indices */
            free(names[i]);
        if (rc != DP_OK)
            return rc;
        double cells = 1;
        for (uint32_t i = 0; i < c->n_attrs; i++)
            cells *= c->sizes[i];
        if (cells < 2 || cells > DP_ADAPTIVE_MAX_CATEGORIES)
            return dp_err(errstr, errstr_size, DP_ERANGE, NAME ": attributes make %.0f bins; 2..%u are supported",
                          cells, DP_ADAPTIVE_MAX_CATEGORIES);
        c->categories = (uint32_t)cells;
    }
    static const char *const METHODS[] = {"dsat", "dsft", "bd", "ba", NULL};
    int method = 0;
    if ((rc = dp_cfg_choice(json_object_get(cfg, "method"), NAME, "method", METHODS, &method, errstr, errstr_size)))
        return rc;
    c->method = (dp_adaptive_method)method;
    if (!(v = json_object_get(cfg, "epsilon")))
        return dp_err(errstr, errstr_size, DP_EINVAL, NAME ": \"epsilon\" is required (pure ε-DP)");
    if ((rc = dp_cfg_real(v, NAME, "epsilon", &c->epsilon, errstr, errstr_size)))
        return rc;
    if (!(c->epsilon > 0) || c->epsilon > 1e4)
        return dp_err(errstr, errstr_size, DP_ERANGE, NAME ": epsilon must be in (0, 1e4]");
    if (!(v = json_object_get(cfg, "horizon")))
        return dp_err(errstr, errstr_size, DP_EINVAL, NAME ": \"horizon\" (N) is required");
    if ((rc = dp_cfg_uint(v, NAME, "horizon", 1, DP_ADAPTIVE_MAX_HORIZON, &c->horizon, errstr, errstr_size)))
        return rc;
    static const char *const PRIVACY[] = {"user", "w_event", NULL};
    int window = c->method >= DP_ADAPTIVE_BD;
    if ((rc = dp_cfg_choice(json_object_get(cfg, "privacy"), NAME, "privacy", PRIVACY, &window, errstr, errstr_size)))
        return rc;
    c->w_event = window;
    if (!c->w_event && c->method >= DP_ADAPTIVE_BD)
        return dp_err(errstr, errstr_size, DP_EINVAL, NAME ": methods \"bd\" and \"ba\" are w-event mechanisms: "
                                                      "set \"privacy\": \"w_event\" and \"w\"");
    if ((v = json_object_get(cfg, "w"))) {
        if (!c->w_event)
            return dp_err(errstr, errstr_size, DP_EINVAL, NAME ": \"w\" goes with \"privacy\": \"w_event\"");
        if ((rc = dp_cfg_uint(v, NAME, "w", 1, 1u << 20, &u, errstr, errstr_size)))
            return rc;
        c->w = (uint32_t)u;
    } else if (c->w_event) {
        return dp_err(errstr, errstr_size, DP_EINVAL, NAME ": \"privacy\": \"w_event\" needs \"w\"");
    }
    /* The snapshot: per-step reports by default under w-event, where a
     * carried-forward value would put one report into every later D_i and
     * out of the window the unit protects (docs/privacy.md §7). */
    static const char *const SNAPSHOTS[] = {"step_reports", "standing_values", NULL};
    int standing = !c->w_event;
    if ((rc = dp_cfg_choice(json_object_get(cfg, "snapshot"), NAME, "snapshot", SNAPSHOTS, &standing, errstr,
                            errstr_size)))
        return rc;
    c->standing = standing;
    c->sensitivity = c->w_event && c->standing ? 2 : 1;
    /* C: per horizon (user-level) or per window (w-event) */
    uint64_t span = c->w_event ? c->w : c->horizon;
    c->max_releases = span / 10 > 2 ? span / 10 : 2;
    if (c->max_releases > span)
        c->max_releases = span;
    if ((v = json_object_get(cfg, "max_releases")) &&
        (rc = dp_cfg_uint(v, NAME, "max_releases", 1, span, &c->max_releases, errstr, errstr_size)))
        return rc;
    if ((rc = unit_real(cfg, "decision_fraction", 0, 1, &c->decision_fraction, errstr, errstr_size)) ||
        (rc = unit_real(cfg, "threshold", 0, 2, &c->threshold, errstr, errstr_size)) ||
        (rc = unit_real(cfg, "theta_p", 0, 100, &c->theta_p, errstr, errstr_size)) ||
        (rc = unit_real(cfg, "delta_sp", 0, 1, &c->delta_sp, errstr, errstr_size)) ||
        (rc = unit_real(cfg, "test_fraction", 0, 1, &c->test_fraction, errstr, errstr_size)))
        return rc;
    if (json_object_get(cfg, "test_fraction") && !c->w_event)
        return dp_err(errstr, errstr_size, DP_EINVAL, NAME ": \"test_fraction\" is for methods \"bd\" and \"ba\"");
    if ((v = json_object_get(cfg, "burn_in"))) {
        if ((rc = dp_cfg_uint(v, NAME, "burn_in", 0, c->horizon, &u, errstr, errstr_size)))
            return rc;
        c->burn_in = (uint32_t)u;
    }
    if ((rc = dp_cfg_bool(json_object_get(cfg, "unsafe_paper_variant"), NAME, "unsafe_paper_variant",
                          &c->unsafe_paper, errstr, errstr_size)))
        return rc;
    if (c->unsafe_paper && (c->w_event || c->method >= DP_ADAPTIVE_BD))
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      NAME ": unsafe_paper_variant is for dsat and dsft under user-level privacy");
    if ((v = json_object_get(cfg, "n_min"))) {
        if ((rc = dp_cfg_uint(v, NAME, "n_min", 1, (uint64_t)1 << 40, &c->n_min, errstr, errstr_size)))
            return rc;
    } else if (c->method < DP_ADAPTIVE_BD) {
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      NAME ": \"n_min\" is required: a public lower bound on the snapshot size (the distance's "
                           "sensitivity is 2/n_min)");
    }
    return DP_OK;
}
