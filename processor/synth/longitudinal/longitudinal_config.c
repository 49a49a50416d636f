/* longitudinal_config.c — parse and validate the JSON configuration of
 * `window` / `cumulative`; shared budget-event helpers. */
#include "synth/longitudinal/longitudinal_config.h"
#include "synth/common/config_json.h"

#include "core/dp_error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const WINDOW_KEYS[] = {"synthesizer", "horizon", "k", "categories", "rho", "epsilon", "neighbors",
                                    "beta", "n_pad", "max_padding_records", "impute", "delta",
                                    NULL};
static const char *const CUMULATIVE_KEYS[] = {"synthesizer", "horizon", "categories", "rho", "epsilon", "neighbors",
                                        "assume_public_n", "beta", "impute", "delta", "counter", NULL};

static int parse_counter(dp_long_config *c, const char *name, const json_t *v, char *errstr,
                         size_t errstr_size)
{
    dp_cfg_counter k = {c->counter_kind, c->counter_block, c->counter_buffers};
    int rc = dp_cfg_counter_parse(v, name, &k, errstr, errstr_size);
    if (rc == DP_OK) {
        c->counter_kind = k.kind;
        c->counter_block = k.block;
        c->counter_buffers = k.buffers;
    }
    return rc;
}

/* horizon, k, categories: the stream's shape (window: categories^k pattern bins). */
static int parse_shape(dp_long_config *c, const char *name, const json_t *cfg, char *errstr, size_t errstr_size)
{
    int rc;
    uint64_t u;
    const json_t *v;
    if (!(v = json_object_get(cfg, "horizon")))
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s: \"horizon\" (T) is required", name);
    uint64_t tmax = c->is_window ? ((uint64_t)1 << 32) : DP_CUMULATIVE_MAX_HORIZON;
    if ((rc = dp_cfg_uint(v, name, "horizon", 1, tmax, &c->horizon, errstr, errstr_size)) != DP_OK)
        return rc;
    if (c->is_window) {
        if (!(v = json_object_get(cfg, "k")))
            return dp_err(errstr, errstr_size, DP_EINVAL, "%s: \"k\" (window length) is required", name);
        if ((rc = dp_cfg_uint(v, name, "k", 1, c->horizon < 64 ? c->horizon : 64, &u, errstr,
                           errstr_size)) != DP_OK)
            return rc;
        c->k = (uint32_t)u;
    }
    if ((v = json_object_get(cfg, "categories"))) {
        if ((rc = dp_cfg_uint(v, name, "categories", 2, c->is_window ? DP_WINDOW_MAX_BINS : 2, &u, errstr,
                           errstr_size)) != DP_OK)
            return rc;
        c->categories = (uint32_t)u;
    }
    if (c->is_window) {
        uint64_t bins = 1;
        for (uint32_t i = 0; i < c->k; i++) {
            bins *= c->categories;
            if (bins > DP_WINDOW_MAX_BINS)
                return dp_err(errstr, errstr_size, DP_ERANGE,
                              "%s: categories^k = %u^%u exceeds the supported 2^24 pattern bins", name,
                              c->categories, c->k);
        }
    }
    return DP_OK;
}

/* neighbors and assume_public_n. */
static int parse_neighbors(dp_long_config *c, const char *name, const json_t *cfg, char *errstr, size_t errstr_size)
{
    const json_t *v;
    if ((v = json_object_get(cfg, "neighbors"))) {
        const char *s = json_string_value(v);
        if (s && strcmp(s, "replace") == 0)
            c->replace = 1;
        else if (s && strcmp(s, "add_remove") == 0)
            c->replace = 0;
        else
            return dp_err(errstr, errstr_size, DP_EINVAL,
                          "%s: neighbors must be \"replace\" or \"add_remove\"", name);
    }
    int rc = dp_cfg_bool(json_object_get(cfg, "assume_public_n"), name, "assume_public_n", &c->assume_public_n,
                         errstr, errstr_size);
    if (rc)
        return rc;
    /* cumulative releases exactly n records (record_count and
     * debias.population = n), so n is in every release.  Under replace
     * neighbours n is fixed and public; add/remove neighbours protect it,
     * so that claim would be false (docs/privacy.md §1) unless the operator
     * declares n public, as seed 000 does.  window is different: its n* =
     * the sum of the charged noisy pattern counts (plus the public padding),
     * so n leaves it only through that noise and add/remove is allowed. */
    if (!c->is_window && !c->replace && !c->assume_public_n)
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      "%s: neighbors \"add_remove\" is refused: every release reveals the roster size n exactly "
                      "(record_count, debias.population), which add/remove neighbours protect; use \"replace\" "
                      "(n public), or set \"assume_public_n\": true to use the paper's calibration with n declared "
                      "public (stated in every budget event)", name);
    if (c->replace && c->assume_public_n)
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      "%s: assume_public_n applies to neighbors \"add_remove\" only (n is public under replace)", name);
    return DP_OK;
}

/* A real in (0, 1) under `key`, if given. */
static int unit_interval(const json_t *cfg, const char *name, const char *key, double *out, char *errstr,
                         size_t errstr_size)
{
    const json_t *v = json_object_get(cfg, key);
    if (!v)
        return DP_OK;
    int rc = dp_cfg_real(v, name, key, out, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    if (!(*out > 0 && *out < 1))
        return dp_err(errstr, errstr_size, DP_ERANGE, "%s: %s must be in (0, 1)", name, key);
    return DP_OK;
}

/* The budget: ρ, or (ε, δ) as people usually state it, turned into the
 * largest ρ whose CKS conversion stays within ε at this stream's δ — the
 * conversion every budget event reports, so the last event of the horizon
 * says eps_cks <= epsilon.  (delta is parsed before.) */
static int parse_budget(dp_long_config *c, const char *name, const json_t *cfg, char *errstr, size_t errstr_size)
{
    int rc;
    const json_t *jrho = json_object_get(cfg, "rho"), *jeps = json_object_get(cfg, "epsilon");
    if (jrho && jeps)
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      "%s: give the budget as \"rho\" or as \"epsilon\" (at \"delta\"), not both", name);
    if (!jrho && !jeps)
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      "%s: a budget is required: \"rho\" (total zCDP budget) or \"epsilon\" (total ε at "
                      "\"delta\", converted to the largest ρ within it)", name);
    if (jrho) {
        if ((rc = dp_cfg_real(jrho, name, "rho", &c->rho, errstr, errstr_size)) != DP_OK)
            return rc;
        if (!(c->rho > 0))
            return dp_err(errstr, errstr_size, DP_ERANGE, "%s: rho must be > 0", name);
        return DP_OK;
    }
    if ((rc = dp_cfg_real(jeps, name, "epsilon", &c->epsilon, errstr, errstr_size)) != DP_OK)
        return rc;
    if (!(c->epsilon > 0))
        return dp_err(errstr, errstr_size, DP_ERANGE, "%s: epsilon must be > 0", name);
    if (dp_zcdp_rho_for_eps_cks(c->epsilon, c->delta, &c->rho) != DP_OK)
        return dp_err(errstr, errstr_size, DP_ERANGE,
                      "%s: epsilon = %g at delta = %g cannot be converted to a zCDP budget rho", name, c->epsilon,
                      c->delta);
    return DP_OK;
}

/* impute: {"policy": "carry_forward"} or {"policy": "fixed", "value": v}. */
static int parse_impute(dp_long_config *c, const char *name, const json_t *v, char *errstr, size_t errstr_size)
{
    const json_t *p = json_object_get(v, "policy");
    const char *ps = json_string_value(p), *key;
    if (!json_is_object(v) || !ps)
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      "%s: impute must be {\"policy\":\"carry_forward\"} or "
                      "{\"policy\":\"fixed\",\"value\":v}", name);
    json_object_foreach((json_t *)v, key, p) {
        if (strcmp(key, "policy") && strcmp(key, "value"))
            return dp_err(errstr, errstr_size, DP_EINVAL, "%s: unknown impute key \"%s\"", name, key);
    }
    const json_t *val = json_object_get(v, "value");
    if (strcmp(ps, "carry_forward") == 0) {
        if (val)
            return dp_err(errstr, errstr_size, DP_EINVAL, "%s: carry_forward takes no value", name);
        c->impute = DP_IMPUTE_CARRY_FORWARD;
        return DP_OK;
    }
    if (strcmp(ps, "fixed") != 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s: impute policy must be carry_forward or fixed", name);
    if (!val)
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s: impute policy fixed needs a value", name);
    uint64_t u;
    int rc = dp_cfg_uint(val, name, "impute.value", 0, c->categories - 1, &u, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    c->impute = DP_IMPUTE_FIXED;
    c->impute_value = (uint32_t)u;
    return DP_OK;
}

int dp_long_config_parse(dp_long_config *c, const char *name, const json_t *cfg, int is_window,
                         char *errstr, size_t errstr_size)
{
    memset(c, 0, sizeof *c);
    c->is_window = is_window;
    c->categories = 2;
    c->k = 1;
    c->replace = 1;
    c->beta = 0.05;
    c->delta = 1e-6;
    c->impute = DP_IMPUTE_CARRY_FORWARD;
    c->counter_kind = DP_COUNTER_TREE;
    if (!json_is_object(cfg))
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s: config must be a JSON object", name);
    const char *const *keys = is_window ? WINDOW_KEYS : CUMULATIVE_KEYS;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)cfg, key, v) {
        if (!dp_cfg_key_known(key, keys))
            return dp_err(errstr, errstr_size, DP_EINVAL, "%s: unknown config key \"%s\"", name, key);
    }
    int rc;
    if ((v = json_object_get(cfg, "synthesizer")) &&
        (!json_is_string(v) || strcmp(json_string_value(v), name) != 0))
        return dp_err(errstr, errstr_size, DP_EINVAL, "%s: config \"synthesizer\" names another synthesizer",
                      name);
    if ((rc = parse_shape(c, name, cfg, errstr, errstr_size)) != DP_OK ||
        (rc = parse_neighbors(c, name, cfg, errstr, errstr_size)) != DP_OK ||
        (rc = unit_interval(cfg, name, "beta", &c->beta, errstr, errstr_size)) != DP_OK ||
        (rc = unit_interval(cfg, name, "delta", &c->delta, errstr, errstr_size)) != DP_OK ||
        (rc = parse_budget(c, name, cfg, errstr, errstr_size)) != DP_OK)
        return rc;
    c->max_padding_records = DP_WINDOW_DEFAULT_MAX_PADDING;
    if ((v = json_object_get(cfg, "max_padding_records")) &&
        (rc = dp_cfg_uint(v, name, "max_padding_records", 1, (uint64_t)1 << 40, &c->max_padding_records, errstr,
                       errstr_size)) != DP_OK)
        return rc;
    if ((v = json_object_get(cfg, "n_pad")) && !json_is_null(v)) {
        if ((rc = dp_cfg_uint(v, name, "n_pad", 0, (uint64_t)1 << 40, &c->n_pad, errstr, errstr_size)) != DP_OK)
            return rc;
        c->n_pad_given = 1;
    }
    if ((v = json_object_get(cfg, "impute")) && (rc = parse_impute(c, name, v, errstr, errstr_size)) != DP_OK)
        return rc;
    if (!is_window && (v = json_object_get(cfg, "counter")))
        if ((rc = parse_counter(c, name, v, errstr, errstr_size)) != DP_OK)
            return rc;
    return DP_OK;
}

const char *dp_long_neighbors_name(const dp_long_config *c)
{
    return c->replace ? "replace" : "add_remove";
}

const char *dp_long_public_inputs(const dp_long_config *c)
{
    if (c->is_window)
        return c->replace
                   ? "replace neighbours (one person's whole sequence changes): public are the roster (who "
                     "reported at step 1) and its size n, the configuration (T, k, categories, n_pad, sigma2) and "
                     "the step boundaries; the synthetic records and the clamped flag come from the charged "
                     "discrete Gaussian pattern counts"
                   : "add/remove neighbours (one person's whole sequence is there or not): public are the "
                     "configuration (T, k, categories, n_pad, sigma2) and the step boundaries; the number of "
                     "synthetic individuals is the sum of the charged noisy pattern counts plus the padding, so "
                     "neither n nor the roster is released exactly";
    return c->replace
               ? "replace neighbours (one person's whole sequence changes): public are the roster (who reported at "
                 "step 1) and its size n, the configuration (T, counter, sigma2) and the step boundaries; the "
                 "synthetic bits come from the charged discrete Gaussian counters"
               : "add/remove neighbours with n declared public (assume_public_n, seed 000's calibration): the record "
                 "count reveals the roster size n exactly, which add/remove neighbours would protect; public also "
                 "the configuration (T, counter, sigma2) and the step boundaries";
}

void dp_long_fill_budget(dp_budget_event *e, const dp_ledger *l, double delta)
{
    e->model = DP_PRIVACY_ZCDP;
    e->spent_total = l->spent;
    e->budget_total = l->budget;
    e->delta = delta;
    /* The exact ledger's figures: this step's charge is its last entry. */
    const dp_ledger_entry *last = l->n_entries ? &l->entries[l->n_entries - 1] : NULL;
    int spent_now = last && last->step == e->step;
    e->spent_step = spent_now ? last->amount : 0.0;
    e->spent_units_step = spent_now ? last->units : 0;
    e->spent_units_total = l->units_spent;
    e->budget_units = l->units_total;
    if (l->spent <= 0) {
        e->eps_simple = 0;
        e->eps_cks = 0;
        return;
    }
    e->eps_simple = dp_zcdp_to_eps_simple(l->spent, delta);
    double eps;
    e->eps_cks = dp_zcdp_to_eps_cks(l->spent, delta, &eps) == DP_OK ? eps : NAN;
}
