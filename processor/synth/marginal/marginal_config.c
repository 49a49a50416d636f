/* marginal_config.c — parse and validate `marginal`'s JSON configuration
 * (keys in marginal_config.h).  Everything here is public: the attribute
 * list, the workloads, the budget and the plan are the stream's declared
 * configuration (docs/privacy.md §1). */
#include "synth/marginal/marginal_config.h"

#include "synth/common/config_json.h"

#include "core/dp_error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NAME "marginal"

static const char *const KEYS[] = {"synthesizer", "attributes", "workloads", "horizon", "epsilon", "rho",
                                   "selections_per_step", "counter", "method", "fit", "fit_iterations",
                                   "aggregate", "max_rows_per_user", "neighbors", "delta", "max_model_cells",
                                   "max_release_rows", "estimate", "drift_rows_per_step", "forest_edges",
                                   "forest_pair_cells", "forest_select_share", NULL};

/* In dp_marginal_method order. */
static const char *const METHODS[] = {"select_measure_fit", "mwem", "independent", "forest", NULL};

const char *dp_marginal_method_name(dp_marginal_method m)
{
    return (unsigned)m < sizeof METHODS / sizeof METHODS[0] - 1 ? METHODS[m] : "unknown";
}

void dp_marginal_config_free(dp_marginal_config *c)
{
    for (uint32_t i = 0; i < c->n_attrs; i++)
        free(c->names[i]);
    free(c->workloads);
    memset(c, 0, sizeof *c);
}

uint32_t dp_marginal_group(const dp_marginal_config *c)
{
    return (c->max_rows_per_user ? c->max_rows_per_user : 1) * (c->replace ? 2 : 1);
}

static int parse_attributes(dp_marginal_config *c, const json_t *v, char *errstr, size_t errstr_size)
{
    int rc = dp_cfg_attributes(v, NAME, DP_MARGINAL_MAX_ATTRS, DP_MARGINAL_MAX_CATEGORIES, c->names, c->sizes,
                               &c->n_attrs, errstr, errstr_size);
    c->domain_cells = 1;
    for (uint32_t i = 0; i < c->n_attrs; i++)
        c->domain_cells *= (double)c->sizes[i];
    return rc;
}

static int attr_index(const dp_marginal_config *c, const char *name)
{
    for (uint32_t i = 0; i < c->n_attrs; i++)
        if (strcmp(c->names[i], name) == 0)
            return (int)i;
    return -1;
}

static int add_workload(dp_marginal_config *c, size_t *cap, const uint32_t *attrs, uint32_t k, const char *path,
                        char *errstr, size_t errstr_size)
{
    dp_marginal_workload w = {.k = k, .cells = 1};
    memcpy(w.attrs, attrs, k * sizeof *attrs);
    /* ascending attribute order: the cell layout is then canonical */
    for (uint32_t i = 1; i < k; i++)
        for (uint32_t j = i; j > 0 && w.attrs[j - 1] > w.attrs[j]; j--) {
            uint32_t t = w.attrs[j];
            w.attrs[j] = w.attrs[j - 1];
            w.attrs[j - 1] = t;
        }
    for (uint32_t i = 0; i < k; i++) {
        if (i && w.attrs[i] == w.attrs[i - 1])
            return dp_err(errstr, errstr_size, DP_EINVAL, NAME ": %s names attribute \"%s\" twice", path,
                          c->names[w.attrs[i]]);
        w.cells *= c->sizes[w.attrs[i]];
    }
    if (w.cells > DP_MARGINAL_MAX_WORKLOAD_CELLS)
        return dp_err(errstr, errstr_size, DP_ERANGE, NAME ": %s has %llu cells, over the limit of 2^24", path,
                      (unsigned long long)w.cells);
    for (size_t i = 0; i < c->n_workloads; i++)
        if (c->workloads[i].k == k && memcmp(c->workloads[i].attrs, w.attrs, k * sizeof *attrs) == 0)
            return dp_err(errstr, errstr_size, DP_EINVAL, NAME ": %s repeats workloads[%zu]", path, i);
    if (c->n_workloads == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        dp_marginal_workload *nw = realloc(c->workloads, nc * sizeof *nw);
        if (!nw)
            return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
        c->workloads = nw;
        *cap = nc;
    }
    w.offset = c->total_cells;
    c->total_cells += w.cells;
    if (c->total_cells > ((uint64_t)1 << 40))
        return dp_err(errstr, errstr_size, DP_ERANGE, NAME ": the workloads have more than 2^40 cells in total");
    c->workloads[c->n_workloads++] = w;
    return DP_OK;
}

static int parse_workloads(dp_marginal_config *c, const json_t *v, char *errstr, size_t errstr_size)
{
    size_t cap = 0;
    uint32_t a[DP_MARGINAL_MAX_WAY];
    int rc = DP_OK;
    if (!v || json_is_string(v)) {
        const char *s = v ? json_string_value(v) : "all_2way";
        uint32_t way = strcmp(s, "all_2way") == 0 ? 2 : strcmp(s, "all_3way") == 0 ? 3 : 0;
        if (!way)
            return dp_err(errstr, errstr_size, DP_EINVAL,
                          NAME ": workloads must be \"all_2way\", \"all_3way\" or a list of attribute-name lists");
        if (c->n_attrs < way)
            return dp_err(errstr, errstr_size, DP_EINVAL, NAME ": workloads \"%s\" needs at least %u attributes", s,
                          way);
        /* lexicographic order of the attribute tuples: the workload index is public */
        for (a[0] = 0; a[0] < c->n_attrs && rc == DP_OK; a[0]++)
            for (a[1] = a[0] + 1; a[1] < c->n_attrs && rc == DP_OK; a[1]++) {
                if (way == 2) {
                    rc = add_workload(c, &cap, a, 2, "workloads", errstr, errstr_size);
                    continue;
                }
                for (a[2] = a[1] + 1; a[2] < c->n_attrs && rc == DP_OK; a[2]++)
                    rc = add_workload(c, &cap, a, 3, "workloads", errstr, errstr_size);
            }
        return rc;
    }
    if (!json_is_array(v) || json_array_size(v) == 0)
        return dp_err(errstr, errstr_size, DP_EINVAL, NAME ": workloads must be a non-empty list");
    for (size_t i = 0; i < json_array_size(v) && rc == DP_OK; i++) {
        const json_t *t = json_array_get(v, i);
        char path[48];
        snprintf(path, sizeof path, "workloads[%zu]", i);
        if (!json_is_array(t) || json_array_size(t) < 1 || json_array_size(t) > DP_MARGINAL_MAX_WAY)
            return dp_err(errstr, errstr_size, DP_EINVAL, NAME ": %s must list 1..%d attribute names", path,
                          DP_MARGINAL_MAX_WAY);
        for (size_t j = 0; j < json_array_size(t); j++) {
            const json_t *n = json_array_get(t, j);
            int idx = json_is_string(n) ? attr_index(c, json_string_value(n)) : -1;
            if (idx < 0)
                return dp_err(errstr, errstr_size, DP_EINVAL, NAME ": %s[%zu] is not an attribute name", path, j);
            a[j] = (uint32_t)idx;
        }
        rc = add_workload(c, &cap, a, (uint32_t)json_array_size(t), path, errstr, errstr_size);
    }
    return rc;
}

/* Method independent reads attribute a's 1-way marginal of ∇f_t off the
 * first workload that holds a (the ingest half's statistics are the
 * workloads' cells): every attribute must be in some workload. */
static int one_way_sources(dp_marginal_config *c, char *errstr, size_t errstr_size)
{
    for (uint32_t a = 0; a < c->n_attrs; a++) {
        size_t i = 0;
        while (i < c->n_workloads && !dp_marginal_workload_has(&c->workloads[i], a))
            i++;
        if (i == c->n_workloads)
            return dp_err(errstr, errstr_size, DP_EINVAL,
                          NAME ": method \"%s\" reads attribute \"%s\"'s 1-way marginal from a workload "
                          "holding it, and no workload does",
                          c->method == DP_MARGINAL_FOREST ? "forest" : "independent", c->names[a]);
        c->one_way_source[a] = (uint32_t)i;
    }
    return DP_OK;
}

/* The keys only methods select_measure_fit (Alg. 3) and mwem read: the selections, the fit and its model (the
 * first ALG3_MWEM_KEYS); then "drift_rows_per_step" and "estimate", select_measure_fit's alone (parse_estimate
 * refuses them under the other methods with its own message). */
static const char *const ALG3_KEYS[] = {"selections_per_step", "fit", "fit_iterations", "aggregate",
                                        "max_model_cells", "drift_rows_per_step", "estimate", NULL};
#define ALG3_MWEM_KEYS 5

/* The default method is "forest" since 2026-11-28 (it was "select_measure_fit"; bench/RESULTS.md, README
 * "marginal's keys"): a configuration that names no method but sets a key of Alg. 3 or mwem was written for
 * the old default, and is refused rather than run as another method — fail closed; a stream's state written
 * under it is refused as well (marginal_snapshot.c).  Under an explicit "independent" or "forest" those keys
 * would be read by nothing: refused too, as the forest keys are under the other methods (parse_forest). */
static int method_keys(const dp_marginal_config *c, const json_t *cfg, int named, char *errstr,
                       size_t errstr_size)
{
    for (size_t i = 0; ALG3_KEYS[i]; i++) {
        if (!json_object_get(cfg, ALG3_KEYS[i]))
            continue;
        if (!named)
            return dp_err(errstr, errstr_size, DP_EINVAL,
                          NAME ": %s is a key of methods \"select_measure_fit\" and \"mwem\" and the configuration "
                          "names no method: the default method changed to \"forest\" (2026-11-28; it was "
                          "\"select_measure_fit\"). Set \"method\": \"select_measure_fit\" to keep the paper's "
                          "Alg. 3 (a stream started under the old default continues only so), or drop %s",
                          ALG3_KEYS[i], ALG3_KEYS[i]);
        if ((c->method == DP_MARGINAL_INDEPENDENT || c->method == DP_MARGINAL_FOREST) && i < ALG3_MWEM_KEYS)
            return dp_err(errstr, errstr_size, DP_EINVAL,
                          NAME ": %s is a key of methods \"select_measure_fit\" and \"mwem\" only; method \"%s\" "
                          "does not read it", ALG3_KEYS[i], dp_marginal_method_name(c->method));
    }
    return DP_OK;
}

/* "estimate" and "drift_rows_per_step" (marginal_estimate.c): only select_measure_fit has measurements to keep. */
static int parse_estimate(dp_marginal_config *c, const json_t *cfg, char *errstr, size_t errstr_size)
{
    static const char *const ESTIMATES[] = {"selected", "all_measurements", NULL};
    int est = 0;
    int rc = dp_cfg_choice(json_object_get(cfg, "estimate"), NAME, "estimate", ESTIMATES, &est, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    c->estimate = (dp_marginal_estimate)est;
    if (c->estimate == DP_MARGINAL_EST_ALL && c->method != DP_MARGINAL_SMF)
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      NAME ": estimate \"all_measurements\" refits select_measure_fit's measurements; method \"%s\" "
                      "keeps none", c->method == DP_MARGINAL_MWEM ? "mwem"
                                    : c->method == DP_MARGINAL_FOREST ? "forest" : "independent");
    const json_t *v = json_object_get(cfg, "drift_rows_per_step");
    if (!v)
        return DP_OK;
    if (c->estimate != DP_MARGINAL_EST_ALL)
        return dp_err(errstr, errstr_size, DP_EINVAL,
                      NAME ": drift_rows_per_step bounds the age discount of estimate \"all_measurements\" only");
    if ((rc = dp_cfg_real(v, NAME, "drift_rows_per_step", &c->drift_rows_per_step, errstr, errstr_size)) != DP_OK)
        return rc;
    if (!(c->drift_rows_per_step > 0) || c->drift_rows_per_step > 1e12)
        return dp_err(errstr, errstr_size, DP_ERANGE, NAME ": drift_rows_per_step must be in (0, 1e12]");
    return DP_OK;
}

/* "forest_edges", "forest_pair_cells", "forest_select_share" (marginal_forest.c): method forest only.
 * Defaults (bench/RESULTS.md): k = 8 edges of at most 100 cells (bench/accuracy_marginal/forest_sim.py:
 * pairs of at most 100 cells did best on Adult; all 13 tree edges did worse), s = 0.1. */
static int parse_forest(dp_marginal_config *c, const json_t *cfg, char *errstr, size_t errstr_size)
{
    static const char *const FKEYS[] = {"forest_edges", "forest_pair_cells", "forest_select_share"};
    int forest = c->method == DP_MARGINAL_FOREST;
    for (size_t i = 0; i < 3; i++)
        if (!forest && json_object_get(cfg, FKEYS[i]))
            return dp_err(errstr, errstr_size, DP_EINVAL, NAME ": %s is a key of method \"forest\" only", FKEYS[i]);
    if (!forest)
        return DP_OK;
    uint64_t u = 8;
    const json_t *v;
    int rc = DP_OK;
    if ((v = json_object_get(cfg, "forest_edges")) &&
        (rc = dp_cfg_uint(v, NAME, "forest_edges", 0, DP_MARGINAL_FOREST_MAX_EDGES, &u, errstr, errstr_size)))
        return rc;
    c->forest_edges = (uint32_t)u;
    c->forest_pair_cells = 100;
    if ((v = json_object_get(cfg, "forest_pair_cells")) &&
        (rc = dp_cfg_uint(v, NAME, "forest_pair_cells", 1, DP_MARGINAL_MAX_WORKLOAD_CELLS, &c->forest_pair_cells,
                          errstr, errstr_size)))
        return rc;
    c->forest_select_share = 0.1;
    if ((v = json_object_get(cfg, "forest_select_share"))) {
        if ((rc = dp_cfg_real(v, NAME, "forest_select_share", &c->forest_select_share, errstr, errstr_size)))
            return rc;
        if (!(c->forest_select_share > 0 && c->forest_select_share < 1))
            return dp_err(errstr, errstr_size, DP_ERANGE, NAME ": forest_select_share must be in (0, 1)");
    }
    if (c->forest_edges == 0)
        c->forest_select_share = 0;
    return DP_OK;
}

int dp_marginal_config_parse(dp_marginal_config *c, const json_t *cfg, char *errstr, size_t errstr_size)
{
    memset(c, 0, sizeof *c);
    c->counter_kind = DP_COUNTER_SIMPLE;
    c->fit_iterations = 10;
    c->delta = 1e-6;
    c->max_model_cells = (uint64_t)1 << 20;
    c->max_release_rows = 100000000;
    int rc = dp_cfg_check_object(cfg, NAME, KEYS, errstr, errstr_size);
    if (rc != DP_OK)
        return rc;
    json_t *v;
    uint64_t u;
    if (!(v = json_object_get(cfg, "attributes")))
        return dp_err(errstr, errstr_size, DP_EINVAL, NAME ": \"attributes\" is required");
    if ((rc = parse_attributes(c, v, errstr, errstr_size)) != DP_OK ||
        (rc = parse_workloads(c, json_object_get(cfg, "workloads"), errstr, errstr_size)) != DP_OK)
        goto fail;
    c->min_cells = UINT64_MAX;
    for (size_t i = 0; i < c->n_workloads; i++)
        if (c->workloads[i].cells < c->min_cells)
            c->min_cells = c->workloads[i].cells;
    if (!(v = json_object_get(cfg, "horizon"))) {
        rc = dp_err(errstr, errstr_size, DP_EINVAL, NAME ": \"horizon\" (T) is required");
        goto fail;
    }
    if ((rc = dp_cfg_uint(v, NAME, "horizon", 1, DP_MARGINAL_MAX_HORIZON, &c->horizon, errstr, errstr_size)))
        goto fail;
    const json_t *eps = json_object_get(cfg, "epsilon"), *rho = json_object_get(cfg, "rho");
    if (!!eps == !!rho) {
        rc = dp_err(errstr, errstr_size, DP_EINVAL, NAME ": give exactly one of \"epsilon\" (pure ε-DP) or \"rho\" (zCDP)");
        goto fail;
    }
    c->model = eps ? DP_PRIVACY_PURE : DP_PRIVACY_ZCDP;
    if ((rc = dp_cfg_real(eps ? eps : rho, NAME, eps ? "epsilon" : "rho", &c->budget, errstr, errstr_size)))
        goto fail;
    if (!(c->budget > 0) || c->budget > 1e6) {
        rc = dp_err(errstr, errstr_size, DP_ERANGE, NAME ": %s must be in (0, 1e6]", eps ? "epsilon" : "rho");
        goto fail;
    }
    /* Default K = 4 (at most the number of workloads), measured (bench/RESULTS.md): on 7 Adult attributes
     * with fit mw, K = 1 / 2 / 4 / 8 gave AvgWE 0.0463 / 0.0196 / 0.0078 / 0.0094; on the full Adult with
     * pgm, K = 4 was the best of 2 / 4 / 8 or within 4 % of it wherever ε·rows a step < 400, except on the
     * age-sorted streams at ε ≥ 1, where K = 8 was 8–30 % lower (the README's guidance).  A public choice. */
    c->selections = c->n_workloads < DP_MARGINAL_DEFAULT_SELECTIONS ? (uint32_t)c->n_workloads
                                                                    : DP_MARGINAL_DEFAULT_SELECTIONS;
    if ((v = json_object_get(cfg, "selections_per_step"))) {
        if ((rc = dp_cfg_uint(v, NAME, "selections_per_step", 1, c->n_workloads, &u, errstr, errstr_size)))
            goto fail;
        c->selections = (uint32_t)u;
    }
    if ((v = json_object_get(cfg, "counter"))) {
        dp_cfg_counter k = {c->counter_kind, 0, 0};
        if ((rc = dp_cfg_counter_parse(v, NAME, &k, errstr, errstr_size)))
            goto fail;
        c->counter_kind = k.kind;
        c->counter_block = k.block;
        c->counter_buffers = k.buffers;
    }
    static const char *const FITS[] = {"mw", "pgm", "auto", NULL};
    static const char *const NEIGHBORS[] = {"add_remove", "replace", NULL};
    static const char *const AGGREGATES[] = {"mean", "last", NULL};
    int method = DP_MARGINAL_FOREST, fit = 2, nb = 0, agg = -1;   /* the default: method_keys */
    if ((rc = dp_cfg_choice(json_object_get(cfg, "method"), NAME, "method", METHODS, &method, errstr, errstr_size)) ||
        (rc = dp_cfg_choice(json_object_get(cfg, "fit"), NAME, "fit", FITS, &fit, errstr, errstr_size)) ||
        (rc = dp_cfg_choice(json_object_get(cfg, "neighbors"), NAME, "neighbors", NEIGHBORS, &nb, errstr, errstr_size)) ||
        (rc = dp_cfg_choice(json_object_get(cfg, "aggregate"), NAME, "aggregate", AGGREGATES, &agg, errstr, errstr_size)))
        goto fail;
    c->method = (dp_marginal_method)method;
    /* a configuration without "method" is checked for the old default's keys first (the cause of any
     * later refusal); one naming its method after its own keys' checks (whose messages are more specific) */
    c->method_named = json_object_get(cfg, "method") != NULL;
    if (!c->method_named && (rc = method_keys(c, cfg, 0, errstr, errstr_size)) != DP_OK)
        goto fail;
    if ((c->method == DP_MARGINAL_INDEPENDENT || c->method == DP_MARGINAL_FOREST) &&
        (rc = one_way_sources(c, errstr, errstr_size)) != DP_OK)
        goto fail;
    if ((rc = parse_forest(c, cfg, errstr, errstr_size)) != DP_OK)
        goto fail;
    if ((rc = parse_estimate(c, cfg, errstr, errstr_size)) != DP_OK ||
        (c->method_named && (rc = method_keys(c, cfg, 1, errstr, errstr_size)) != DP_OK))
        goto fail;
    c->replace = nb == 1;
    c->fit_auto = fit == 2;
    c->fit = fit == 2 ? (c->domain_cells <= (double)DP_MARGINAL_MW_MAX_CELLS ? DP_MARGINAL_FIT_MW : DP_MARGINAL_FIT_PGM)
                      : (dp_marginal_fit)fit;
    if (c->fit == DP_MARGINAL_FIT_MW && c->domain_cells > (double)DP_MARGINAL_MW_MAX_CELLS) {
        rc = dp_err(errstr, errstr_size, DP_ERANGE,
                    NAME ": fit \"mw\" keeps a weight per domain cell and the domain has %.4g cells, over 2^22; use "
                    "\"pgm\" (or \"auto\")", c->domain_cells);
        goto fail;
    }
    /* A graphical model cannot average: the mean of two models' tables is a
     * mixture, outside the family; pgm takes h_{t,K}. */
    if (c->fit == DP_MARGINAL_FIT_PGM && agg == DP_MARGINAL_AGG_MEAN) {
        rc = dp_err(errstr, errstr_size, DP_EINVAL,
                    NAME ": aggregate \"mean\" averages fitted tables over the full domain, which needs fit \"mw\"; "
                    "fit \"pgm\" takes \"last\"");
        goto fail;
    }
    c->aggregate = agg >= 0 ? (dp_marginal_aggregate)agg
                            : c->fit == DP_MARGINAL_FIT_PGM ? DP_MARGINAL_AGG_LAST : DP_MARGINAL_AGG_MEAN;
    if (c->fit == DP_MARGINAL_FIT_PGM) {
        for (size_t i = 0; i < c->n_workloads; i++)
            if (c->workloads[i].k > 2) {
                rc = dp_err(errstr, errstr_size, DP_EINVAL,
                            NAME ": workloads[%zu]: fit \"pgm\" takes workloads of at most 2 attributes (the domain has "
                            "%.4g cells)", i, c->domain_cells);
                goto fail;
            }
    }
    if ((v = json_object_get(cfg, "fit_iterations"))) {
        if ((rc = dp_cfg_uint(v, NAME, "fit_iterations", 1, 10000, &u, errstr, errstr_size)))
            goto fail;
        c->fit_iterations = (uint32_t)u;
    }
    if ((v = json_object_get(cfg, "max_rows_per_user"))) {
        if ((rc = dp_cfg_uint(v, NAME, "max_rows_per_user", 1, 1000, &u, errstr, errstr_size)))
            goto fail;
        c->max_rows_per_user = (uint32_t)u;
    }
    if ((v = json_object_get(cfg, "delta"))) {
        if ((rc = dp_cfg_real(v, NAME, "delta", &c->delta, errstr, errstr_size)))
            goto fail;
        if (!(c->delta > 0 && c->delta < 1)) {
            rc = dp_err(errstr, errstr_size, DP_ERANGE, NAME ": delta must be in (0, 1)");
            goto fail;
        }
    }
    if ((v = json_object_get(cfg, "max_model_cells")) &&
        (rc = dp_cfg_uint(v, NAME, "max_model_cells", 1024, (uint64_t)1 << 30, &c->max_model_cells, errstr,
                          errstr_size)))
        goto fail;
    if ((v = json_object_get(cfg, "max_release_rows")) &&
        (rc = dp_cfg_uint(v, NAME, "max_release_rows", 1, (uint64_t)1 << 40, &c->max_release_rows, errstr,
                          errstr_size)))
        goto fail;
    return DP_OK;
fail:
    dp_marginal_config_free(c);
    return rc;
}
