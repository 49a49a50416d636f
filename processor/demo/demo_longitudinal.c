/* demo_longitudinal.c — truth vs synthetic for the embedded demo (see
 * demo_longitudinal.h). */
#include "demo/demo_longitudinal.h"
#include "demo/demo_marginal.h"
#include "demo/demo_spatial.h"
#include "demo/demo_adaptive.h"
#include "demo/demo_hypercube.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/dp_error.h"

/* Public seed of the sample panel (the panel is made-up test data). */
static const char DEMO_PANEL_SEED[DP_KEY_BYTES + 1] = "dpstream-demo-panel-seed-v1.....";

void dp_demo_default_params(dp_demo_params *p)
{
    memset(p, 0, sizeof *p);
    p->n = 3000;
    p->steps = 12;
    p->k = 3;
    p->rho_window = 0.05;
    p->rho_cumulative = 0.05;
    p->stay_employed = 0.98;     /* ~2% of the employed lose their job each month */
    p->stay_unemployed = 0.75;   /* ~25% of the unemployed find one: long-run rate ~7.4% */
    p->counter = "tree";
    memcpy(p->panel_seed.bytes, DEMO_PANEL_SEED, DP_KEY_BYTES);
}

int dp_demo_state_init(dp_demo_state *d, const dp_demo_params *p)
{
    memset(d, 0, sizeof *d);
    d->p = *p;
    int rc;
    if ((rc = dp_window_view_init(&d->win_true, p->k, 2)) != DP_OK ||
        (rc = dp_window_view_init(&d->win_syn, p->k, 2)) != DP_OK ||
        (rc = dp_cumulative_view_init(&d->cum_true, p->steps)) != DP_OK ||
        (rc = dp_cumulative_view_init(&d->cum_syn, p->steps)) != DP_OK) {
        dp_demo_state_free(d);
        return rc;
    }
    return DP_OK;
}

void dp_demo_state_free(dp_demo_state *d)
{
    dp_window_view_free(&d->win_true);
    dp_window_view_free(&d->win_syn);
    dp_cumulative_view_free(&d->cum_true);
    dp_cumulative_view_free(&d->cum_syn);
}

static void copy_budget(dp_demo_budget *b, const dp_budget_event *e)
{
    b->seen = 1;
    b->exhausted = e->status == DP_BUDGET_EXHAUSTED;
    b->spent_total = e->spent_total;
    b->budget_total = e->budget_total;
    b->delta = e->delta;
    b->eps_simple = e->eps_simple;
    b->eps_cks = e->eps_cks;
    b->max_abs_error = dp_kv_find(e->accuracy, e->n_accuracy, "max_abs_error", NAN);
    snprintf(b->mechanism, sizeof b->mechanism, "%s", e->mechanism ? e->mechanism : "?");
    snprintf(b->neighbors, sizeof b->neighbors, "%s", e->neighbors ? e->neighbors : "?");
}

static int win_record(void *ctx, const dp_synth_record *r)
{
    return dp_window_view_record(&((dp_demo_state *)ctx)->win_syn, r);
}

static int win_manifest(void *ctx, const dp_release_manifest *m)
{
    dp_demo_state *d = ctx;
    d->win_released = m->record_count > 0;
    return dp_window_view_manifest(&d->win_syn, m);
}

static int win_budget(void *ctx, const dp_budget_event *e)
{
    copy_budget(&((dp_demo_state *)ctx)->win_budget, e);
    return DP_OK;
}

static int cum_record(void *ctx, const dp_synth_record *r)
{
    return dp_cumulative_view_record(&((dp_demo_state *)ctx)->cum_syn, r);
}

static int cum_manifest(void *ctx, const dp_release_manifest *m)
{
    dp_demo_state *d = ctx;
    d->cum_released = 1;
    return dp_cumulative_view_manifest(&d->cum_syn, m);
}

static int cum_budget(void *ctx, const dp_budget_event *e)
{
    copy_budget(&((dp_demo_state *)ctx)->cum_budget, e);
    return DP_OK;
}

dp_release_sink dp_demo_window_sink(dp_demo_state *d)
{
    return (dp_release_sink){.ctx = d, .record = win_record, .manifest = win_manifest, .budget = win_budget};
}

dp_release_sink dp_demo_cumulative_sink(dp_demo_state *d)
{
    return (dp_release_sink){.ctx = d, .record = cum_record, .manifest = cum_manifest, .budget = cum_budget};
}

int dp_demo_truth_step(dp_demo_state *d, const uint8_t *values, size_t n)
{
    int rc = dp_window_view_truth_step(&d->win_true, values, n);
    return rc != DP_OK ? rc : dp_cumulative_view_truth_step(&d->cum_true, values, n);
}

/* --- printing ------------------------------------------------------------------- */

void dp_demo_print_intro(FILE *f, const dp_demo_params *p)
{
    dp_demo_print_intro_how(f, p, "offline, no Kafka");
}

void dp_demo_print_intro_how(FILE *f, const dp_demo_params *p, const char *how)
{
    double pi_u = (1.0 / (1.0 - p->stay_unemployed)) /
                  (1.0 / (1.0 - p->stay_employed) + 1.0 / (1.0 - p->stay_unemployed));
    fprintf(f,
            "dpstream demo — continual differentially private synthetic data (%s)\n"
            "\n"
            "A made-up survey panel: %" PRIu64 " people report every month for %" PRIu64 " months whether\n"
            "they are employed (0) or unemployed (1). Each month an employed person stays\n"
            "employed with probability %.2f, an unemployed one stays unemployed with\n"
            "probability %.2f (long-run unemployment %.1f%%). Every month dpstream publishes a\n"
            "synthetic panel that is differentially private for each person's whole history:\n"
            "\n"
            "  window     (Bun et al. 2024, Alg. 1) keeps the last k = %u months of every\n"
            "             person's pattern right, e.g. \"unemployed in at least one of the last\n"
            "             %u months\". It adds n_pad padding people per pattern so noisy counts\n"
            "             stay positive; consumers subtract them (\"debiased\" below).\n"
            "  cumulative (Alg. 2, %s counters) keeps \"unemployed for at least b months so\n"
            "             far\" right, for every b.\n"
            "\n"
            "True = computed on the real panel (what must stay private); synthetic = computed\n"
            "on the released data only. Differences are the price of privacy.\n"
            "The noise key is a fixed DEMO KEY, public and NOT FOR PRODUCTION: anyone can\n"
            "recompute this noise. Use `dpstream keygen` for a real key.\n\n",
            how, p->n, p->steps, p->stay_employed, p->stay_unemployed, 100.0 * pi_u, p->k, p->k, p->counter);
    /* Column layout shared with dp_demo_print_step. */
    char q1[16], q2[16], q3[32];
    snprintf(q1, sizeof q1, ">=1 of %u", p->k);
    snprintf(q2, sizeof q2, "all %u", p->k);
    snprintf(q3, sizeof q3, "max err, %u patterns", 1u << p->k);
    fprintf(f, "%5s  %-60s   %s\n", "", "window: share unemployed in the last k months", "cumulative: people unemployed");
    fprintf(f, "%5s  %-13s   %-13s   %-19s  %-7s   %-11s   %-11s   %s\n", "", q1, q2, q3, "", ">=1 month", ">=2 months",
            ">=3 months");
    fprintf(f, "%5s  %6s %6s   %6s %6s   %9s %9s  %-7s   %5s %5s   %5s %5s   %5s %5s\n", "month", "true", "synth", "true",
            "synth", "debiased", "raw", "", "true", "synth", "true", "synth", "true", "synth");
}

static unsigned popcount_u64(uint64_t x)
{
    unsigned c = 0;
    for (; x; x &= x - 1)
        c++;
    return c;
}

void dp_demo_print_step(FILE *f, const dp_demo_state *d, uint64_t t)
{
    fprintf(f, "%5" PRIu64 "  ", t);
    const dp_window_view *wt = &d->win_true, *ws = &d->win_syn;
    if (d->win_released && ws->values_seen >= ws->k && wt->values_seen >= wt->k) {
        double t1 = 0, s1 = 0, tall = 0, sall = 0, max_deb = 0, max_raw = 0;
        for (uint64_t s = 0; s < wt->bins; s++) {
            double ft = dp_window_view_fraction_true(wt, s);
            double fd = dp_window_view_fraction_debiased(ws, s);
            double fr = dp_window_view_fraction_raw(ws, s);
            if (popcount_u64(s) >= 1) {
                t1 += ft;
                s1 += fd;
            }
            if (popcount_u64(s) == wt->k) {
                tall += ft;
                sall += fd;
            }
            max_deb = fmax(max_deb, fabs(fd - ft));
            max_raw = fmax(max_raw, fabs(fr - ft));
        }
        fprintf(f, "%5.1f%% %5.1f%%   %5.1f%% %5.1f%%   %8.2f%% %8.2f%%  %-7s", 100 * t1, 100 * s1, 100 * tall,
                100 * sall, 100 * max_deb, 100 * max_raw, ws->clamped ? "clamped" : "");
    } else {
        fprintf(f, "%-60s", "(window: needs k months of history)");
    }
    const dp_cumulative_view *ct = &d->cum_true, *cs = &d->cum_syn;
    for (uint64_t b = 1; b <= 3 && b <= d->p.steps && d->cum_released; b++)
        fprintf(f, "   %5" PRIu64 " %5" PRIu64, ct->at_least[b], cs->at_least[b]);
    fprintf(f, "\n");
}

static void print_budget_line(FILE *f, const char *name, const dp_demo_budget *b)
{
    if (!b->seen) {
        fprintf(f, "  %-11s no release yet\n", name);
        return;
    }
    fprintf(f, "  %-11s %-30s spent rho %.4g of %.4g%s  = (eps %.3f, delta %.0e)-DP [eps %.3f by the simple bound]\n",
            name, b->mechanism, b->spent_total, b->budget_total, b->exhausted ? " (EXHAUSTED)" : "",
            b->eps_cks, b->delta, b->eps_simple);
    fprintf(f, "  %-11s neighbours: %s one person's whole history; stated max count error (beta-bound): %.1f\n",
            "", b->neighbors, b->max_abs_error);
}

void dp_demo_print_ledger(FILE *f, const dp_demo_state *d)
{
    fprintf(f, "\nPrivacy budget ledger (zCDP, user-level over the %" PRIu64 " months):\n", d->p.steps);
    print_budget_line(f, "window", &d->win_budget);
    print_budget_line(f, "cumulative", &d->cum_budget);
    fprintf(f, "  Both releases are computed from the same people, so their costs add up:\n"
               "  total rho = %.4g over the whole panel.\n",
            d->win_budget.spent_total + d->cum_budget.spent_total);
    fprintf(f, "\nSynthetic window data holds n* = %" PRIu64 " people (%" PRIu64 " real + padding of %.0f per pattern, noisy);\n"
               "\"debiased\" subtracts the padding before computing shares, \"raw\" does not.\n",
            d->win_syn.population, d->p.n, d->win_syn.n_pad);
}

/* --- offline driver ---------------------------------------------------------------- */

json_t *dp_demo_window_config(const dp_demo_params *p)
{
    return json_pack("{s:I, s:I, s:i, s:f, s:s}", "horizon", (json_int_t)p->steps, "k", (json_int_t)p->k,
                     "categories", 2, "rho", p->rho_window, "neighbors", "replace");
}

json_t *dp_demo_cumulative_config(const dp_demo_params *p)
{
    return json_pack("{s:I, s:f, s:s, s:s}", "horizon", (json_int_t)p->steps, "rho", p->rho_cumulative,
                     "counter", p->counter, "neighbors", "replace");
}

void dp_demo_panel_params(const dp_demo_params *p, dp_panel_params *pp)
{
    memset(pp, 0, sizeof *pp);
    pp->n = p->n;
    pp->steps = p->steps;
    pp->categories = 2;
    pp->stay[0] = p->stay_employed;
    pp->stay[1] = p->stay_unemployed;
    pp->seed = p->panel_seed;
}

/* The table stream's updates go straight into its synthesizer; a
 * rejection is a bug in the demo's own generator. */
static int ingest_table_update(void *ctx, const dp_update *u)
{
    dp_reject_reason why = DP_REJECT_NONE;
    int rc = dp_synth_ingest(ctx, u, &why);
    return rc != DP_OK ? rc : why != DP_REJECT_NONE ? DP_ESTATE : DP_OK;
}

/* Month t of the panel: every person's report into the window and the
 * cumulative synthesizer, which must accept them all. */
static int ingest_panel_month(const dp_panel_gen *gen, uint64_t t, dp_synth *win, const dp_synth_env *wenv,
                              dp_synth *cum, const dp_synth_env *cenv, char *errstr, size_t errstr_size)
{
    char entity[32];
    dp_update u = {.stream_id = NULL, .step = t, .kind = DP_UPDATE_REPORT, .entity_id = entity,
                   .payload = {.kind = DP_PAYLOAD_CATEGORY}};
    for (uint64_t i = 0; i < gen->p.n; i++) {
        u.entity_id_len = (size_t)snprintf(entity, sizeof entity, "u%" PRIu64, i + 1);
        u.payload.category = gen->value[i];
        dp_reject_reason r1 = DP_REJECT_NONE, r2 = DP_REJECT_NONE;
        int rc;
        u.stream_id = wenv->stream_id;
        u.stream_id_len = wenv->stream_id_len;
        if ((rc = dp_synth_ingest(win, &u, &r1)) != DP_OK)
            return rc;
        u.stream_id = cenv->stream_id;
        u.stream_id_len = cenv->stream_id_len;
        if ((rc = dp_synth_ingest(cum, &u, &r2)) != DP_OK)
            return rc;
        if (r1 != DP_REJECT_NONE || r2 != DP_REJECT_NONE)
            return dp_err(errstr, errstr_size, DP_ESTATE, "demo: a synthesizer refused a report (%s / %s)",
                          dp_reject_reason_name(r1), dp_reject_reason_name(r2));
    }
    return DP_OK;
}

/* One of the other streams' month: `month_rc` is how feeding it went
 * (a refusal is the demo's own bug, said as "demo: the <refused>"); then
 * its step closes into `sink`. */
static int month_closed(int month_rc, const char *refused, dp_synth *s, const dp_release_sink *sink, char *errstr,
                        size_t errstr_size)
{
    if (month_rc != DP_OK)
        return dp_err(errstr, errstr_size, month_rc, "demo: the %s", refused);
    return dp_synth_close_step(s, sink, errstr, errstr_size);
}

int dp_demo_run_offline(const dp_demo_params *p, const dp_key *key, FILE *f,
                        char *errstr, size_t errstr_size)
{
    dp_panel_params pp;
    dp_demo_panel_params(p, &pp);
    dp_panel_gen gen;
    dp_demo_state d;
    dp_synth *win = NULL, *cum = NULL, *tbl = NULL, *map = NULL, *mod = NULL, *drp = NULL;
    json_t *wcfg = NULL, *ccfg = NULL, *tcfg = NULL, *mcfg = NULL, *acfg = NULL, *hcfg = NULL;
    dp_demo_modes md;
    dp_demo_modes_init(&md, p);
    dp_demo_drops dr;
    dp_demo_drops_init(&dr, p);
    dp_demo_table tab;
    dp_demo_table_init(&tab, p);
    dp_demo_map mp;
    dp_demo_map_init(&mp, p);
    int rc = dp_panel_gen_init(&gen, &pp, errstr, errstr_size);
    if (rc != DP_OK) {
        dp_demo_table_free(&tab);
        dp_demo_map_free(&mp);
        dp_demo_modes_free(&md);
        dp_demo_drops_free(&dr);
        return rc;
    }
    if ((rc = dp_demo_state_init(&d, p)) != DP_OK) {
        dp_panel_gen_free(&gen);
        return dp_err(errstr, errstr_size, rc, "demo: cannot set up views");
    }
    wcfg = dp_demo_window_config(p);
    ccfg = dp_demo_cumulative_config(p);
    tcfg = dp_demo_table_config(p);
    mcfg = dp_demo_map_config(p);
    acfg = dp_demo_modes_config(p);
    hcfg = dp_demo_drops_config(p);
    if (!wcfg || !ccfg || !tcfg || !mcfg || !acfg || !hcfg) {
        rc = dp_err(errstr, errstr_size, DP_ENOMEM, "demo: out of memory");
        goto out;
    }
    dp_synth_env wenv = {.key = key, .stream_id = DP_DEMO_WINDOW_STREAM,
                         .stream_id_len = sizeof DP_DEMO_WINDOW_STREAM - 1};
    dp_synth_env cenv = {.key = key, .stream_id = DP_DEMO_CUMULATIVE_STREAM,
                         .stream_id_len = sizeof DP_DEMO_CUMULATIVE_STREAM - 1};
    dp_synth_env tenv = {.key = key, .stream_id = DP_DEMO_TABLE_STREAM,
                         .stream_id_len = sizeof DP_DEMO_TABLE_STREAM - 1};
    dp_synth_env menv = {.key = key, .stream_id = DP_DEMO_MAP_STREAM, .stream_id_len = sizeof DP_DEMO_MAP_STREAM - 1};
    dp_synth_env aenv = {.key = key, .stream_id = DP_DEMO_MODES_STREAM,
                         .stream_id_len = sizeof DP_DEMO_MODES_STREAM - 1};
    dp_synth_env henv = {.key = key, .stream_id = DP_DEMO_DROPS_STREAM,
                         .stream_id_len = sizeof DP_DEMO_DROPS_STREAM - 1};
    if ((rc = dp_synth_create(&win, "window", wcfg, &wenv, errstr, errstr_size)) != DP_OK ||
        (rc = dp_synth_create(&cum, "cumulative", ccfg, &cenv, errstr, errstr_size)) != DP_OK ||
        (rc = dp_synth_create(&tbl, "marginal", tcfg, &tenv, errstr, errstr_size)) != DP_OK ||
        (rc = dp_synth_create(&map, "spatial", mcfg, &menv, errstr, errstr_size)) != DP_OK ||
        (rc = dp_synth_create(&mod, "adaptive", acfg, &aenv, errstr, errstr_size)) != DP_OK ||
        (rc = dp_synth_create(&drp, "hypercube", hcfg, &henv, errstr, errstr_size)) != DP_OK)
        goto out;

    dp_demo_print_intro(f, p);
    dp_release_sink wsink = dp_demo_window_sink(&d), csink = dp_demo_cumulative_sink(&d),
                    tsink = dp_demo_table_sink(&tab), msink = dp_demo_map_sink(&mp), asink = dp_demo_modes_sink(&md),
                    hsink = dp_demo_drops_sink(&dr);
    for (uint64_t t = 1; t <= p->steps; t++) {
        if ((rc = dp_panel_gen_next(&gen)) != DP_OK)
            break;
        if ((rc = ingest_panel_month(&gen, t, win, &wenv, cum, &cenv, errstr, errstr_size)) != DP_OK ||
            (rc = dp_demo_truth_step(&d, gen.value, (size_t)p->n)) != DP_OK)
            goto out;
        /* The whole roster reported: from step 2 on that closes the step by
         * itself (docs/design.md §2); step 1 forms the roster and needs the
         * explicit close a CLOSE_STEP marker would give. */
        if ((rc = dp_synth_close_step(win, &wsink, errstr, errstr_size)) != DP_OK ||
            (rc = dp_synth_close_step(cum, &csink, errstr, errstr_size)) != DP_OK)
            goto out;
        if ((rc = month_closed(dp_demo_table_month(&tab, t, ingest_table_update, tbl), "table stream refused an "
                               "update", tbl, &tsink, errstr, errstr_size)) != DP_OK ||
            (rc = month_closed(dp_demo_map_month(&mp, t, ingest_table_update, map), "map stream refused an update",
                               map, &msink, errstr, errstr_size)) != DP_OK ||
            (rc = month_closed(dp_demo_modes_month(&md, t, ingest_table_update, mod), "modes stream refused a "
                               "report", mod, &asink, errstr, errstr_size)) != DP_OK ||
            (rc = month_closed(dp_demo_drops_month(&dr, t, ingest_table_update, drp), "drops stream refused a point",
                               drp, &hsink, errstr, errstr_size)) != DP_OK)
            goto out;
        if (d.win_syn.bad || d.cum_syn.bad || dp_demo_table_note(&tab, t) != DP_OK || dp_demo_map_note(&mp, t) != DP_OK ||
            dp_demo_modes_note(&md, t) != DP_OK || dp_demo_drops_note(&dr, t) != DP_OK) {
            rc = dp_err(errstr, errstr_size, DP_ESTATE, "demo: a release did not have the documented format");
            goto out;
        }
        dp_demo_print_step(f, &d, t);
    }
    if (rc == DP_OK) {
        dp_demo_print_ledger(f, &d);
        dp_demo_table_print(f, &tab);
        dp_demo_map_print(f, &mp);
        dp_demo_modes_print(f, &md);
        dp_demo_drops_print(f, &dr);
    }
out:
    dp_synth_destroy(win);
    dp_synth_destroy(cum);
    dp_synth_destroy(tbl);
    dp_synth_destroy(map);
    dp_synth_destroy(mod);
    dp_synth_destroy(drp);
    json_decref(hcfg);
    json_decref(wcfg);
    json_decref(ccfg);
    json_decref(tcfg);
    json_decref(mcfg);
    json_decref(acfg);
    dp_demo_table_free(&tab);
    dp_demo_map_free(&mp);
    dp_demo_modes_free(&md);
    dp_demo_drops_free(&dr);
    dp_demo_state_free(&d);
    dp_panel_gen_free(&gen);
    return rc;
}
