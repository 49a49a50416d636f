/* cli_plan.c — see cli_plan.h.
 *
 * Owns: nothing.  Calls: synth (create, describe), log (run's warning). */
#include "app/cli_plan.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/dp_error.h"
#include "stream/log.h"

json_t *cli_json_real(double v) { return isfinite(v) ? json_real(v) : json_null(); }

int cli_plan_is_dp(const dp_synth_plan *p)
{
    for (size_t i = 0; i < p->n_noise; i++)
        if (strcmp(p->noise[i].key, "dp") == 0)
            return p->noise[i].value != 0;
    return 1;
}

int cli_route_plan(const dp_stream_route *r, dp_synth_plan *plan, char *err, size_t errn)
{
    dp_key throwaway;
    memset(&throwaway, 0, sizeof throwaway);
    const char *id = r->match_len ? (r->match ? r->match : r->prefix) : "config-check";
    dp_synth_env env = {.key = &throwaway, .stream_id = id, .stream_id_len = strlen(id)};
    dp_synth *s = NULL;
    int rc = dp_synth_create(&s, r->synthesizer, r->config, &env, err, errn);
    if (rc == DP_OK)
        rc = dp_synth_describe(s, plan, err, errn);
    dp_synth_destroy(s);
    return rc;
}

void cli_warn_not_dp(size_t i, const dp_stream_route *r, int as_log)
{
    const char *kind = r->match ? "match" : "prefix", *name = r->match ? r->match : r->prefix;
    if (as_log)
        dp_log_event(DP_LOG_WARN, "not_differentially_private", NULL, 0, 0,
                     "streams[%zu] %s \"%s\" (%s): unsafe_paper_variant is NOT differentially private; "
                     "for comparison only", i, kind, name, r->synthesizer);
    else
        fprintf(stderr, "WARNING: streams[%zu] %s \"%s\" (%s): unsafe_paper_variant is NOT differentially "
                        "private; for comparison only\n", i, kind, name, r->synthesizer);
}

int cli_warn_not_dp_routes(const dp_stream_config *cfg, int as_log, char *err, size_t errn)
{
    for (size_t i = 0; i < cfg->n_routes; i++) {
        dp_synth_plan plan;
        int rc = cli_route_plan(&cfg->routes[i], &plan, err, errn);
        if (rc != DP_OK)
            return rc;
        if (!cli_plan_is_dp(&plan))
            cli_warn_not_dp(i, &cfg->routes[i], as_log);
        dp_synth_plan_free(&plan);
    }
    return DP_OK;
}

static void print_kvs(const char *label, const dp_kv *kv, size_t n)
{
    if (!n)
        return;
    printf("  %-12s", label);
    for (size_t i = 0; i < n; i++)
        printf("%s%s %.6g", i ? ", " : "", kv[i].key, kv[i].value);
    printf("\n");
}

static void print_run(uint64_t first, uint64_t last, double spend)
{
    printf("  %-12s", "");
    if (last == first)
        printf("step %" PRIu64 ": %.6g\n", first, spend);
    else if (last == 0)
        printf("steps %" PRIu64 " on: %.6g each\n", first, spend);
    else
        printf("steps %" PRIu64 "-%" PRIu64 ": %.6g each\n", first, last, spend);
}

/* 1 if run k continues run k-1 and prints alike (6 significant digits). */
static int prints_like_previous(const dp_synth_plan *p, size_t k)
{
    if (k == 0 || !p->runs[k - 1].last || p->runs[k - 1].last + 1 != p->runs[k].first)
        return 0;
    char a[32], b[32];
    snprintf(a, sizeof a, "%.6g", p->runs[k - 1].spend);
    snprintf(b, sizeof b, "%.6g", p->runs[k].spend);
    return strcmp(a, b) == 0;
}

/* The runs as printed: to 6 significant digits, so consecutive runs that
 * print alike are shown as one (an exact split of the budget in ledger
 * units can differ by one unit between steps; JSON has every run
 * exactly), and a long schedule is elided in the middle. */
static void print_runs(const dp_synth_plan *p)
{
    size_t lines = 0, shown = 0;
    for (size_t k = 0; k < p->n_runs; k++)
        lines += !prints_like_previous(p, k);
    for (size_t k = 0; k < p->n_runs;) {
        size_t j = k;
        while (j + 1 < p->n_runs && prints_like_previous(p, j + 1))
            j++;
        if (lines <= 16 || shown < 6 || shown >= lines - 3)
            print_run(p->runs[k].first, p->runs[j].last, p->runs[k].spend);
        else if (shown == 6)
            printf("  %-12s... %zu more lines (--json lists every step)\n", "", lines - 9);
        shown++;
        k = j + 1;
    }
}

void cli_plan_print(const dp_synth_plan *p)
{
    printf("  %-12s%s\n", "mechanism", p->mechanism);
    printf("  %-12s%s; neighbours %s\n", "privacy", p->unit, p->neighbors);
    printf("  %-12s%s %.6g (%s)", "budget", p->model == DP_PRIVACY_ZCDP ? "rho" : "epsilon", p->budget_total,
           p->model == DP_PRIVACY_ZCDP ? "zCDP" : "pure epsilon-DP");
    if (p->horizon)
        printf(" over %" PRIu64 " steps", p->horizon);
    else
        printf(", no horizon");
    if (p->model == DP_PRIVACY_ZCDP)
        printf(" = (epsilon %.6g, delta %g) by the simple bound, epsilon %.6g by CKS", p->eps_simple, p->delta,
               p->eps_cks);
    printf("\n");
    printf("  %-12s%s: %s\n", "spends", p->composition, p->spend_rule);
    print_runs(p);
    print_kvs("per step", p->spend, p->n_spend);
    print_kvs("noise", p->noise, p->n_noise);
    print_kvs("accuracy", p->accuracy, p->n_accuracy);
    printf("  %-12s%s\n", "public", p->public_inputs);
}

static json_t *kvs_json(const dp_kv *kv, size_t n)
{
    json_t *o = json_object();
    for (size_t i = 0; i < n; i++)
        json_object_set_new(o, kv[i].key, cli_json_real(kv[i].value));
    return o;
}

void cli_plan_json(const dp_synth_plan *p, json_t *o)
{
    json_object_set_new(o, "mechanism", json_string(p->mechanism));
    json_object_set_new(o, "unit", json_string(p->unit));
    json_object_set_new(o, "neighbors", json_string(p->neighbors));
    json_object_set_new(o, "model", json_string(dp_privacy_model_name(p->model)));
    json_object_set_new(o, "budget_total", cli_json_real(p->budget_total));
    json_object_set_new(o, "delta", p->model == DP_PRIVACY_ZCDP ? cli_json_real(p->delta) : json_null());
    json_object_set_new(o, "eps_simple", cli_json_real(p->eps_simple));
    json_object_set_new(o, "eps_cks", cli_json_real(p->eps_cks));
    json_object_set_new(o, "horizon", p->horizon ? json_integer((json_int_t)p->horizon) : json_null());
    json_object_set_new(o, "composition", json_string(p->composition));
    json_object_set_new(o, "spend_rule", json_string(p->spend_rule));
    json_t *runs = json_array();
    for (size_t k = 0; k < p->n_runs; k++) {
        json_t *r = json_object();
        json_object_set_new(r, "first", json_integer((json_int_t)p->runs[k].first));
        json_object_set_new(r, "last", p->runs[k].last ? json_integer((json_int_t)p->runs[k].last) : json_null());
        json_object_set_new(r, "spend", cli_json_real(p->runs[k].spend));
        json_array_append_new(runs, r);
    }
    json_object_set_new(o, "spends", runs);
    json_object_set_new(o, "spend", kvs_json(p->spend, p->n_spend));
    json_object_set_new(o, "noise", kvs_json(p->noise, p->n_noise));
    json_object_set_new(o, "accuracy", kvs_json(p->accuracy, p->n_accuracy));
    json_object_set_new(o, "public_inputs", json_string(p->public_inputs));
}
