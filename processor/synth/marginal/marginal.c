/* marginal.c — `marginal`: streaming synthetic tabular data (seed 001;
 * docs/privacy.md §5).  Owns the release half's lifecycle: create (the
 * configuration, the models, the scratch), destroy, one step's frame (the
 * workload statistics in, the ledger reset, the row count cut at
 * max_release_rows, the manifest and budget event out), the plan a stream
 * describes, and the dp_synth_ops table.  Calls marginal_config.c (the
 * configuration), marginal_method.c (the plan, the step and the rows of
 * each method: select_measure_fit = Alg. 3 and mwem = Alg. 2 there,
 * independent and forest in their own files), marginal_estimate.c,
 * marginal_mixture.c, marginal_forest.c (free, describe), the models
 * (marginal_mw.c, marginal_pgm.c) and the ledger.
 *
 * What is public and what is protected, in plain words: every row event
 * (one row inserted or deleted at one step) is protected — event-level
 * ε-DP (or ρ-zCDP) over the whole stream; with max_rows_per_user = s, every
 * entity's up to s events together.  Public are the configuration
 * (attributes, workloads, budget, horizon, method, fit, aggregate) and the step
 * boundaries.  The number of rows is NOT public: the release's row count is
 * the rounded noisy total (an average of charged measurements), and every
 * record is post-processing of charged outputs. */
#include "synth/marginal/marginal_release.h"

#include "core/dp_error.h"
#include "core/ledger_io.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a budget event names as public (docs/privacy.md §1): configuration and step boundaries. */
#define PUBLIC_INPUTS                                                                                            \
    "the configuration (attributes, workloads, budget, horizon, method, fit, aggregate) and the step "            \
    "boundaries; the number of rows is protected"

static void wl_free(marginal_release *m)
{
    if (!m->wl)
        return;
    for (size_t i = 0; i < m->cfg.n_workloads; i++) {
        wl_state *w = &m->wl[i];
        if (w->cnt)
            for (uint64_t c = 0; c < m->cfg.workloads[i].cells; c++)
                dp_counter_destroy(w->cnt[c]);
        free(w->cnt);
        free(w->c_last);
        free(w->r);
    }
    free(m->wl);
    m->wl = NULL;
}

static void marginal_release_destroy(dp_release_half *rel)
{
    marginal_release *m = (marginal_release *)rel;
    if (!m)
        return;
    wl_free(m);
    if (m->mops) {
        m->mops->destroy(m->g);
        m->mops->destroy(m->h);
        m->mops->destroy(m->avg);
        m->mops->destroy(m->fresh);
        dp_marginal_mixture_free(m);
        dp_marginal_indep_free(m);
        dp_marginal_forest_free(m);
    }
    dp_marginal_est_free(m);
    dp_ledger_free(&m->ledger);
    dp_marginal_config_free(&m->cfg);
    free(m->stream_id);
    free(m->G);
    free(m->d);
    free(m->base);
    free(m->base_ok);
    free(m->q);
    free(m->mvals);
    free(m->util);
    free(m->cand);
    free(m->sel);
    free(m->sel_sd);
    free(m->ms);
    free(m->sel_names);
    free(m->debias);
    free(m->row_buf);
    free(m);
}


static int marginal_release_create(dp_release_half **out, const json_t *config, const dp_synth_env *env,
                                   char *errstr, size_t errstr_size)
{
    *out = NULL;
    marginal_release *m = calloc(1, sizeof *m);
    if (!m)
        return dp_err(errstr, errstr_size, DP_ENOMEM, "out of memory");
    int rc = dp_marginal_config_parse(&m->cfg, config, errstr, errstr_size);
    if (rc != DP_OK) {
        free(m);
        return rc;
    }
    const dp_marginal_config *c = &m->cfg;
    m->key = env->key;
    m->stream_id_len = env->stream_id ? env->stream_id_len : 0;
    if (!(m->stream_id = malloc(m->stream_id_len + 1)))
        goto nomem;
    if (m->stream_id_len)
        memcpy(m->stream_id, env->stream_id, m->stream_id_len);
    m->stream_id[m->stream_id_len] = '\0';
    m->mops = c->fit == DP_MARGINAL_FIT_PGM ? &dp_mmodel_pgm : &dp_mmodel_mw;
    if ((rc = m->mops->create(&m->g, c, errstr, errstr_size)) != DP_OK ||
        (rc = m->mops->create(&m->h, c, errstr, errstr_size)) != DP_OK ||
        (rc = m->mops->create(&m->avg, c, errstr, errstr_size)) != DP_OK ||
        (rc = m->mops->create(&m->fresh, c, errstr, errstr_size)) != DP_OK)
        goto fail;
    m->wmax = 1;
    for (size_t i = 0; i < c->n_workloads; i++)
        if (c->workloads[i].cells > m->wmax)
            m->wmax = c->workloads[i].cells;
    size_t K = c->selections, nw = c->n_workloads;
    m->wl = calloc(nw, sizeof *m->wl);
    m->d = malloc(c->total_cells * sizeof *m->d);
    m->base = malloc(c->total_cells * sizeof *m->base);
    m->base_ok = calloc(nw, 1);
    m->q = malloc(m->wmax * sizeof *m->q);
    m->mvals = malloc(K * m->wmax * sizeof *m->mvals);
    m->util = malloc(nw * sizeof *m->util);
    m->cand = malloc(nw * sizeof *m->cand);
    m->sel = calloc(K, sizeof *m->sel);   /* saved by a step-0 snapshot too */
    m->sel_sd = calloc(K, sizeof *m->sel_sd);
    m->ms = malloc(K * sizeof *m->ms);
    m->sel_names = malloc(K * sizeof *m->sel_names);
    m->debias = malloc((8 + 2 * K) * sizeof *m->debias);
    m->row_buf = malloc(c->n_attrs * sizeof *m->row_buf);
    if (!m->wl || !m->d || !m->base || !m->base_ok || !m->q || !m->mvals || !m->util || !m->cand || !m->sel || !m->sel_sd ||
        !m->ms || !m->sel_names || !m->debias || !m->row_buf)
        goto nomem;
    for (size_t i = 0; i < nw; i++)
        if (!(m->wl[i].r = calloc(c->workloads[i].cells, sizeof *m->wl[i].r)))
            goto nomem;
    if (c->method == DP_MARGINAL_MWEM && c->fit == DP_MARGINAL_FIT_MW &&
        !(m->G = calloc((size_t)c->domain_cells, sizeof *m->G)))
        goto nomem;
    for (size_t l = 0; l < K; l++) {
        snprintf(m->sel_names[l][0], sizeof m->sel_names[l][0], "selected.%zu", l);
        snprintf(m->sel_names[l][1], sizeof m->sel_names[l][1], "selected_sd.%zu", l);
    }
    if (dp_marginal_est_alloc(m) != DP_OK)
        goto nomem;
    if ((rc = dp_marginal_plan(m, errstr, errstr_size)) != DP_OK)
        goto fail;
    *out = (dp_release_half *)m;
    return DP_OK;
nomem:
    rc = dp_err(errstr, errstr_size, DP_ENOMEM, NAME ": out of memory");
fail:
    marginal_release_destroy((dp_release_half *)m);
    return rc;
}

static int marginal_release_exhausted(const dp_release_half *rel)
{
    const marginal_release *m = (const marginal_release *)rel;
    return m->exhausted;
}

static const dp_ledger *marginal_release_ledger(const dp_release_half *rel)
{
    return &((const marginal_release *)rel)->ledger;
}

static uint64_t marginal_next_step(const dp_release_half *rel)
{
    return ((const marginal_release *)rel)->done + 1;
}

/* The last step the plan releases (synth.h): the horizon; marginal exhausts by it alone
 * (and fails closed on a refused step), so an ingest-only bundle of a sharded
 * stream stops where the combined close would (docs/kafka.md §10). */
static uint64_t marginal_last_step(const dp_release_half *rel)
{
    return ((const marginal_release *)rel)->cfg.horizon;
}
static int emit_row(void *ctx, const int32_t *row)
{
    marginal_release *m = ctx;
    memcpy(m->row_buf, row, m->cfg.n_attrs * sizeof *row);
    dp_synth_record r = {.synthetic_id = m->next_id++,
                         .value = {.kind = DP_PAYLOAD_ROW, .row = m->row_buf, .row_len = m->cfg.n_attrs}};
    return m->sink->record ? m->sink->record(m->sink->ctx, &r) : 0;
}

static int emit_event(marginal_release *m, uint64_t step, uint64_t records, const dp_release_sink *sink)
{
    const dp_marginal_config *c = &m->cfg;
    size_t n = 0;
    dp_kv *kv = m->debias;
    kv[n++] = (dp_kv){"noisy_total", m->last_total};
    kv[n++] = (dp_kv){c->fit == DP_MARGINAL_FIT_MW ? "fit_mw" : "fit_pgm", 1};
    kv[n++] = (dp_kv){c->method == DP_MARGINAL_SMF ? "method_select_measure_fit"
                      : c->method == DP_MARGINAL_MWEM ? "method_mwem"
                      : c->method == DP_MARGINAL_FOREST ? "method_forest" : "method_independent", 1};
    kv[n++] = (dp_kv){c->aggregate == DP_MARGINAL_AGG_MEAN ? "aggregate_mean" : "aggregate_last", 1};
    kv[n++] = (dp_kv){"selection_epsilon", m->em.epsilon};
    kv[n++] = (dp_kv){"workloads", (double)c->n_workloads};
    for (size_t l = 0; l < c->selections && step > 0 && c->method < DP_MARGINAL_INDEPENDENT; l++) {
        kv[n++] = (dp_kv){m->sel_names[l][0], (double)m->sel[l]};
        kv[n++] = (dp_kv){m->sel_names[l][1], m->sel_sd[l]};
    }
    dp_release_manifest man = {
        .stream_id = m->stream_id,
        .stream_id_len = m->stream_id_len,
        .step = step,
        .synthesizer = NAME,
        .mode = DP_RELEASE_FULL,
        .record_count = records,
        .clamped = m->clamped,
        .debias = kv,
        .n_debias = n,
    };
    int rc = sink->manifest ? sink->manifest(sink->ctx, &man) : 0;
    if (rc != 0)
        return rc;
    dp_kv noise[] = {{"selection_epsilon", m->em.epsilon},
                     {c->model == DP_PRIVACY_PURE ? "measurement_scale" : "measurement_sigma2", m->noise_param},
                     {"selections_per_step", (double)c->selections},
                     {"group", (double)m->group}};
    double sdmax = 0;
    for (size_t l = 0; l < c->selections; l++)
        sdmax = m->sel_sd[l] > sdmax ? m->sel_sd[l] : sdmax;
    dp_kv acc[] = {{"selected_sd_max", sdmax}};
    dp_budget_event e = {
        .stream_id = m->stream_id,
        .stream_id_len = m->stream_id_len,
        .step = step,
        .status = m->exhausted ? DP_BUDGET_EXHAUSTED : DP_BUDGET_ACTIVE,
        .mechanism = dp_marginal_mechanism(c),
        .unit = c->max_rows_per_user ? "user-level: an entity's max_rows_per_user row events (parallel over steps)"
                                     : "event-level: one row inserted or deleted at one step (parallel over steps)",
        .neighbors = c->replace ? "replace" : "add_remove",
        .public_inputs = PUBLIC_INPUTS,
        .model = c->model,
        .noise = noise,
        .n_noise = sizeof noise / sizeof noise[0],
        .accuracy = acc,
        .n_accuracy = 1,
        .delta = c->delta,
    };
    /* Per step, every row event's cost is the whole step's spend; rows of
     * different steps are disjoint, so the stream total is the largest
     * step's (the header): after any step, the budget. */
    dp_budget_event_parallel_steps(&e, &m->ledger, e.delta);
    return sink->budget ? sink->budget(sink->ctx, &e) : 0;
}

static int marginal_release_step(dp_release_half *rel, uint64_t step, const dp_stats *st,
                                 const dp_release_sink *sink, char *errstr, size_t errstr_size)
{
    marginal_release *m = (marginal_release *)rel;
    const dp_marginal_config *c = &m->cfg;
    if (m->exhausted)
        return dp_err(errstr, errstr_size, DP_EHORIZON, NAME ": stream exhausted");
    if (step != m->done + 1 || st->step != step || !st->sorted)
        return dp_err(errstr, errstr_size, DP_ESTATE, NAME ": statistics for step %llu, expected %llu",
                      (unsigned long long)st->step, (unsigned long long)(m->done + 1));
    memset(m->d, 0, c->total_cells * sizeof *m->d);
    for (size_t i = 0; i < st->n_cells; i++) {
        if (st->keys[i] >= c->total_cells)
            return dp_err(errstr, errstr_size, DP_EINVAL, NAME ": workload statistic out of range");
        m->d[st->keys[i]] = st->counts[i];
    }
    int rc = dp_marginal_step_ledger(m, errstr, errstr_size);
    if (rc == DP_OK)
        rc = dp_marginal_method_step(m, step, errstr, errstr_size);
    if (rc != DP_OK) {
        m->exhausted = 1;   /* fail closed: a half-spent step is not continued */
        return rc;
    }
    /* The row count is the rounded noisy total, cut at max_release_rows
     * (a public configuration) and flagged: a release never grows without bound. */
    double t = m->last_total;
    m->last_rows = t > 0 ? (uint64_t)llround(t < 1e15 ? t : 1e15) : 0;
    m->clamped = m->last_rows > c->max_release_rows;
    if (m->clamped)
        m->last_rows = c->max_release_rows;
    m->next_id = 0;
    m->sink = sink;
    rc = dp_marginal_method_rows(m, step, m->last_rows, emit_row, m);
    m->sink = NULL;
    if (rc != 0)
        return rc;
    m->done = step;
    if (step >= c->horizon)
        m->exhausted = 1;
    return emit_event(m, step, m->next_id, sink);
}

/* The plan (synth.h): every step spends the whole budget on its own row
 * events — K selections and K measurements of budget/(2K) each — and steps
 * compose in parallel.  The stated figure is the largest standard
 * deviation a measured cell can have (the manifests' selected_sd.<l> are
 * at most this): a counter's at its horizon-th step, or mwem's one-step
 * noise. */
static int marginal_release_describe(const dp_release_half *rel, dp_synth_plan *out)
{
    const marginal_release *m = (const marginal_release *)rel;
    const dp_marginal_config *c = &m->cfg;
    int pure = c->model == DP_PRIVACY_PURE;
    out->mechanism = dp_marginal_mechanism(c);
    out->unit = c->max_rows_per_user ? "user-level: an entity's max_rows_per_user row events (parallel over steps)"
                                     : "event-level: one row inserted or deleted at one step (parallel over steps)";
    out->neighbors = c->replace ? "replace" : "add_remove";
    out->public_inputs = PUBLIC_INPUTS;
    dp_plan_budget(out, c->model, c->budget, c->delta);
    out->horizon = c->horizon;
    out->composition = "parallel";
    int indep = c->method >= DP_MARGINAL_INDEPENDENT;
    out->spend_rule = c->method == DP_MARGINAL_FOREST
                          ? "every step spends the whole budget on its own row events: its epoch's m kept marginals by "
                            "counters, (1-s)·budget/m each; s·budget for the next epoch's edge selection (exponential)"
                      : indep ? "every step spends the whole budget on its own row events: each attribute's 1-way "
                              "marginal by continual counters, budget/d per attribute (d attributes)"
                            : "every step spends the whole budget on its own row events: K selections (exponential "
                              "mechanism) and K measurements of budget/(2K) each";
    int rc = dp_plan_run_add(out, 1, c->horizon, dp_ledger_units_value(&m->ledger, m->ledger.units_total));
    double part = dp_ledger_units_value(&m->ledger, (uint64_t)1 << UNIT_BITS);
    dp_plan_kv(out->spend, &out->n_spend, indep ? "attributes" : "selections_per_step",
               (double)(indep ? c->n_attrs : c->selections));
    dp_plan_kv(out->spend, &out->n_spend, indep ? "per_attribute" : "per_selection", part);
    if (!indep) {
        dp_plan_kv(out->spend, &out->n_spend, "per_measurement", part);
        dp_plan_kv(out->noise, &out->n_noise, "selection_epsilon", m->em.epsilon);
    }
    dp_plan_kv(out->noise, &out->n_noise, pure ? "measurement_scale" : "measurement_sigma2", m->noise_param);
    dp_plan_kv(out->noise, &out->n_noise, "group", (double)m->group);
    dp_plan_kv(out->noise, &out->n_noise, "workloads", (double)c->n_workloads);
    dp_marginal_forest_describe(m, out);
    double sd = m->noise_sd;
    if (c->method != DP_MARGINAL_MWEM) {
        dp_counter *probe = NULL;
        dp_noise_source ns = {m->key, m->stream_id, m->stream_id_len, NAME "/probe"};
        if (rc == DP_OK && (rc = dp_counter_create(&probe, &m->ccfg, &ns, NULL, 0)) == DP_OK) {
            double vmax = 0;
            for (uint64_t t = 1; t <= m->ccfg.horizon; t++) {
                double v = dp_counter_variance(probe, t);
                vmax = v > vmax ? v : vmax;
            }
            sd = sqrt(vmax);
        }
        dp_counter_destroy(probe);
    }
    dp_plan_kv(out->accuracy, &out->n_accuracy, "measurement_sd_max", sd);
    return rc;
}

const dp_synth_ops dp_synth_ops_marginal = {
    .name = NAME,
    .example_config = "{\"attributes\":[{\"name\":\"a\",\"categories\":[\"0\",\"1\"]},"
                      "{\"name\":\"b\",\"categories\":[\"0\",\"1\",\"2\"]},{\"name\":\"c\",\"categories\":[\"0\",\"1\"]}],"
                      "\"horizon\":6,\"epsilon\":1}",
    .shards_by_entity = 1,
    .update_kind = DP_UPDATE_INSERT,
    .payload_kind = DP_PAYLOAD_ROW,
    .ingest_create = dp_marginal_ingest_create,
    .ingest_update = dp_marginal_ingest_update,
    .ingest_close = dp_marginal_ingest_close,
    .ingest_roster_complete = dp_marginal_ingest_roster_complete,
    .ingest_save = dp_marginal_ingest_save,
    .ingest_load = dp_marginal_ingest_load,
    .ingest_destroy = dp_marginal_ingest_destroy,
    .ingest_open_step = dp_marginal_ingest_open_step,
    .release_create = marginal_release_create,
    .release_step = marginal_release_step,
    .release_exhausted = marginal_release_exhausted,
    .release_save = dp_marginal_release_save,
    .release_load = dp_marginal_release_load,
    .release_destroy = marginal_release_destroy,
    .release_ledger = marginal_release_ledger,
    .release_next_step = marginal_next_step,
    .release_last_step = marginal_last_step,
    .release_describe = marginal_release_describe,
    .release_load_refusal = dp_marginal_release_load_refusal,
};
