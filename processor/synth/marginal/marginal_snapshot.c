/* marginal_snapshot.c — the exact snapshot of `marginal`'s release half
 * (marginal_release.h): the plan's fingerprint (refused if the
 * configuration differs), the step, the per-step ledger, the model, and
 * per workload its selection count, its anchor, r(t, W) and its counters'
 * snapshots; method independent's 1-way counters after them, method
 * forest's epoch state (marginal_forest_rows.c) after those; estimate
 * all_measurements' kept measurements last (marginal_estimate.c). */
#include "synth/marginal/marginal_release.h"
#include "core/ledger_io.h"

#include "core/dp_error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int dp_marginal_release_save(const dp_release_half *rel, dp_buf *b)
{
    const marginal_release *m = (const marginal_release *)rel;
    const dp_marginal_config *c = &m->cfg;
    dp_buf_put_u32(b, MARGINAL_REL_MAGIC);
    dp_buf_put_u64(b, c->n_workloads);
    dp_buf_put_u64(b, c->total_cells);
    dp_buf_put_u64(b, c->horizon);
    dp_buf_put_u32(b, c->selections);
    dp_buf_put_u8(b, (uint8_t)c->method);
    dp_buf_put_u8(b, (uint8_t)c->fit);
    dp_buf_put_f64(b, m->em.epsilon);
    dp_buf_put_f64(b, m->noise_param);
    dp_buf_put_u64(b, m->done);
    dp_buf_put_u8(b, (uint8_t)m->exhausted);
    dp_buf_put_f64(b, m->last_total);
    for (size_t l = 0; l < c->selections; l++) {
        dp_buf_put_u32(b, m->sel[l]);
        dp_buf_put_f64(b, m->sel_sd[l]);
    }
    int rc = dp_ledger_save(&m->ledger, b);
    if (rc == DP_OK)
        rc = m->mops->save(m->g, b);
    if (rc != DP_OK)
        return rc;
    if (m->G)
        for (uint64_t x = 0; x < (uint64_t)c->domain_cells; x++)
            dp_buf_put_f64(b, m->G[x]);
    else if (c->method == DP_MARGINAL_MWEM)
        dp_marginal_mixture_save(m, b);
    for (size_t i = 0; i < c->n_workloads; i++) {
        const wl_state *w = &m->wl[i];
        dp_buf_put_u64(b, w->selected);
        dp_buf_put_u64(b, w->anchor);
        dp_buf_put_u8(b, w->cnt != NULL);
        /* a pending r(t, W) is written as computed: the bytes (and a
         * restored stream) are those of a release that computed it eagerly */
        double *computed = NULL;
        if (w->r_pending) {
            if (!(computed = malloc(c->workloads[i].cells * sizeof *computed)))
                return DP_ENOMEM;
            if ((rc = dp_marginal_r_from_g(m, i, computed)) != DP_OK) {
                free(computed);
                return rc;
            }
        }
        const double *rv = computed ? computed : w->r;
        for (uint64_t k = 0; k < c->workloads[i].cells; k++)
            dp_buf_put_f64(b, rv[k]);
        free(computed);
        if (!w->cnt)
            continue;
        for (uint64_t k = 0; k < c->workloads[i].cells; k++)
            if ((rc = dp_marginal_put_counter(b, w->c_last[k], w->cnt[k])) != DP_OK)
                return rc;
    }
    if (c->method == DP_MARGINAL_INDEPENDENT) {   /* the 1-way counters, then their projections */
        for (uint64_t k = 0; k < m->one_off[c->n_attrs]; k++)
            if ((rc = dp_marginal_put_counter(b, m->one_last[k], m->one_cnt[k])) != DP_OK)
                return rc;
        for (uint64_t k = 0; k < m->one_off[c->n_attrs]; k++)
            dp_buf_put_f64(b, m->one_p[k]);
    }
    if (c->method == DP_MARGINAL_FOREST && (rc = dp_marginal_forest_save(m, b)) != DP_OK)
        return rc;
    dp_marginal_est_save(m, b);
    return dp_buf_status(b);
}

/* A state of another method than the configuration's: never restored as this one (its counters, model and
 * ledger are another mechanism's).  The same configuration text can resolve to another method — the default
 * changed from "select_measure_fit" to "forest" on 2026-11-28 (marginal_config.c) — so the refusal says which
 * method wrote the state and, for the old default, what to add to continue it. */
static int method_refusal(marginal_release *m, dp_marginal_method was)
{
    const dp_marginal_config *c = &m->cfg;
    int old_default = was == DP_MARGINAL_SMF && c->method == DP_MARGINAL_FOREST && !c->method_named;
    snprintf(m->load_refusal, sizeof m->load_refusal,
             "its state was written by method \"%s\" and this configuration %s method \"%s\"; refusing to "
             "restore it (the state is left as it was)%s", dp_marginal_method_name(was),
             c->method_named ? "names" : "names no method, so it runs the default,", dp_marginal_method_name(c->method),
             old_default ? ": the default method changed from \"select_measure_fit\" to \"forest\" on 2026-11-28 — "
                           "add \"method\": \"select_measure_fit\" to the stream's configuration to continue it as it ran"
                         : "");
    return DP_ECORRUPT;
}

const char *dp_marginal_release_load_refusal(const dp_release_half *rel)
{
    return ((const marginal_release *)rel)->load_refusal;
}

int dp_marginal_release_load(dp_release_half *rel, dp_reader *r)
{
    marginal_release *m = (marginal_release *)rel;
    const dp_marginal_config *c = &m->cfg;
    m->load_refusal[0] = '\0';
    int ok = dp_reader_u32(r) == MARGINAL_REL_MAGIC && dp_reader_u64(r) == c->n_workloads &&
             dp_reader_u64(r) == c->total_cells && dp_reader_u64(r) == c->horizon;
    ok &= dp_reader_u32(r) == c->selections;
    uint8_t method = dp_reader_u8(r);
    if (ok && dp_reader_status(r) == DP_OK && method != (uint8_t)c->method && method <= DP_MARGINAL_FOREST)
        return method_refusal(m, (dp_marginal_method)method);
    if (!ok || dp_reader_u8(r) != (uint8_t)c->fit || dp_reader_f64(r) != m->em.epsilon ||
        dp_reader_f64(r) != m->noise_param)
        return DP_ECORRUPT;
    m->done = dp_reader_u64(r);
    m->exhausted = dp_reader_u8(r) != 0;
    m->last_total = dp_reader_f64(r);
    if (dp_reader_status(r) != DP_OK || m->done > c->horizon || !isfinite(m->last_total))
        return DP_ECORRUPT;
    for (size_t l = 0; l < c->selections; l++) {
        m->sel[l] = dp_reader_u32(r);
        m->sel_sd[l] = dp_reader_f64(r);
        if (m->sel[l] >= c->n_workloads && m->done > 0)
            return DP_ECORRUPT;
    }
    int rc = dp_ledger_load(&m->ledger, r);
    if (rc == DP_OK)
        rc = m->mops->load(m->g, r);
    if (rc != DP_OK)
        return DP_ECORRUPT;
    if (m->G) {
        for (uint64_t x = 0; x < (uint64_t)c->domain_cells; x++)
            if (!isfinite(m->G[x] = dp_reader_f64(r)))
                return DP_ECORRUPT;
    } else if (c->method == DP_MARGINAL_MWEM && (rc = dp_marginal_mixture_load(m, r)) != DP_OK) {
        return rc;
    }
    char why[128];
    for (size_t i = 0; i < c->n_workloads; i++) {
        wl_state *w = &m->wl[i];
        w->selected = dp_reader_u64(r);
        w->anchor = dp_reader_u64(r);
        int has = dp_reader_u8(r);
        if (dp_reader_status(r) != DP_OK || w->selected > m->done || w->anchor > w->selected || has > 1 ||
            (has != (w->selected > 0)))
            return DP_ECORRUPT;
        w->r_pending = 0;
        for (uint64_t k = 0; k < c->workloads[i].cells; k++)
            if (!isfinite(w->r[k] = dp_reader_f64(r)))
                return DP_ECORRUPT;
        if (!has)
            continue;
        if ((rc = dp_marginal_ensure_counters(m, i, why, sizeof why)) != DP_OK)
            return rc == DP_ENOMEM ? rc : DP_ECORRUPT;
        for (uint64_t k = 0; k < c->workloads[i].cells; k++)
            if ((rc = dp_marginal_get_counter(m, r, &w->cnt[k], &w->c_last[k], w->selected)) != DP_OK)
                return rc;
    }
    if (c->method == DP_MARGINAL_INDEPENDENT) {
        for (uint64_t k = 0; k < m->one_off[c->n_attrs]; k++)
            if ((rc = dp_marginal_get_counter(m, r, &m->one_cnt[k], &m->one_last[k], m->done)) != DP_OK)
                return rc;
        for (uint64_t k = 0; k < m->one_off[c->n_attrs]; k++)
            if (!isfinite(m->one_p[k] = dp_reader_f64(r)) || m->one_p[k] < 0)
                return DP_ECORRUPT;
    }
    if (c->method == DP_MARGINAL_FOREST && (rc = dp_marginal_forest_load(m, r)) != DP_OK)
        return rc == DP_ENOMEM ? rc : DP_ECORRUPT;
    if ((rc = dp_marginal_est_load(m, r)) != DP_OK)
        return DP_ECORRUPT;
    return dp_reader_status(r);
}
