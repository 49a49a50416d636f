/* cmd_check_config.c — `dpstream check-config`: validate a configuration
 * exactly as `run` and `replay` load it (dp_stream_config_load_file: the
 * same parser, the same synthesizer checks, the same JSON paths in its
 * errors), then print each stream route's privacy plan.
 *
 *   dpstream check-config --config CONFIG.json [--json]
 *
 * The plan comes from the synthesizers themselves (dp_synth_describe): each
 * route's synthesizer is created once more with a throw-away key — as the
 * loader does to validate it — and states its mechanism, budget, per-step
 * spends, noise parameters and stated accuracy, the figures its budget
 * events will carry (tests/unit/test_synth_plan.c checks that they do).
 * Nothing is drawn from that key and nothing of it is printed: the plan
 * is a function of the configuration only.
 *
 * Exit status: 0 valid; 2 invalid (the message names the JSON path) or a
 * usage error; 3 the file cannot be read. */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "app/cli.h"
#include "core/dp_error.h"
#include "stream/stream_config.h"
#include "synth/synth.h"

static void check_usage(FILE *f)
{
    fprintf(f,
            "usage: dpstream check-config --config CONFIG.json [--json]\n"
            "\n"
            "Validates CONFIG.json as `dpstream run` and `dpstream replay` do (same code,\n"
            "same messages: an error names its JSON path) and prints every stream route's\n"
            "plan: synthesizer, mechanism, privacy unit and model, total budget and its\n"
            "(epsilon, delta) equivalents, per-step spends, noise parameters and the stated\n"
            "accuracy where the synthesizer states one.  The plan depends on the\n"
            "configuration only.\n"
            "  --json   one JSON document on stdout (also for an invalid config: valid false)\n"
            "Exit 0 if valid, 2 if not (or on a usage error), 3 if the file cannot be read.\n");
}

/* The plan of route r: its synthesizer created with a throw-away key (as
 * stream_config.c's check does; describing draws no noise). */
static int route_plan(const dp_stream_route *r, dp_synth_plan *plan, char *err, size_t errn)
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

static const char *model_budget_name(dp_privacy_model m) { return m == DP_PRIVACY_ZCDP ? "rho" : "epsilon"; }

/* --- text --------------------------------------------------------------------------- */

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

/* The runs as printed: to 6 significant digits, so consecutive runs that
 * print alike are shown as one (an exact split of the budget in ledger
 * units can differ by one unit between steps; --json has every run
 * exactly), and a long schedule is elided in the middle. */
static void print_runs(const dp_synth_plan *p)
{
    size_t shown = 0, total = 0;
    char a[32], b[32];
    for (size_t k = 0; k < p->n_runs; k++) {   /* how many lines */
        snprintf(a, sizeof a, "%.6g", p->runs[k].spend);
        snprintf(b, sizeof b, "%.6g", k ? p->runs[k - 1].spend : NAN);
        total += k == 0 || strcmp(a, b) != 0 || p->runs[k - 1].last + 1 != p->runs[k].first;
    }
    for (size_t k = 0; k < p->n_runs;) {
        size_t j = k;
        snprintf(a, sizeof a, "%.6g", p->runs[k].spend);
        while (j + 1 < p->n_runs && p->runs[j].last && p->runs[j].last + 1 == p->runs[j + 1].first &&
               (snprintf(b, sizeof b, "%.6g", p->runs[j + 1].spend), strcmp(a, b) == 0))
            j++;
        if (total <= 16 || shown < 6 || shown >= total - 3)
            print_run(p->runs[k].first, p->runs[j].last, p->runs[k].spend);
        else if (shown == 6)
            printf("  %-12s... %zu more lines (--json lists every step)\n", "", total - 9);
        shown++;
        k = j + 1;
    }
}

static void print_route_text(size_t i, const dp_stream_route *r, const dp_synth_plan *p)
{
    printf("\nstreams[%zu]  %s \"%s\" -> %s\n", i, r->match ? "match" : "prefix", r->match ? r->match : r->prefix,
           r->synthesizer);
    if (r->prefix) {
        printf("  %-12severy stream id it matches is a stream with its own budget", "routing");
        if (r->max_streams)
            printf("; at most %" PRIu32 " of them per input partition", r->max_streams);
        if (r->budget_group)
            printf("; budget_group: the budget below is each stream's share of the route's");
        printf("\n");
    }
    printf("  %-12s%s\n", "mechanism", p->mechanism);
    printf("  %-12s%s; neighbours %s\n", "privacy", p->unit, p->neighbors);
    printf("  %-12s%s %.6g (%s)", "budget", model_budget_name(p->model), p->budget_total,
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
    printf("  %-12son CLOSE_STEP markers and the step timer%s; %s\n", "steps close",
           r->gate.close_on_roster ? ", and when the roster is complete" : "",
           r->gate.lookahead ? "reports for the next step are held until it opens"
                             : "reports for a later step are rejected (FUTURE_STEP)");
}

/* --- JSON --------------------------------------------------------------------------- */

static json_t *real_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t *kvs_json(const dp_kv *kv, size_t n)
{
    json_t *o = json_object();
    for (size_t i = 0; i < n; i++)
        json_object_set_new(o, kv[i].key, real_or_null(kv[i].value));
    return o;
}

static json_t *route_json(size_t i, const dp_stream_route *r, const dp_synth_plan *p)
{
    json_t *o = json_object();
    json_object_set_new(o, "index", json_integer((json_int_t)i));
    json_object_set_new(o, r->match ? "match" : "prefix", json_string(r->match ? r->match : r->prefix));
    json_object_set_new(o, "synthesizer", json_string(r->synthesizer));
    json_object_set_new(o, "max_streams", r->max_streams ? json_integer(r->max_streams) : json_null());
    json_object_set_new(o, "budget_group", json_boolean(r->budget_group));
    json_object_set_new(o, "lookahead", json_integer(r->gate.lookahead));
    json_object_set_new(o, "close_on_complete_roster", json_boolean(r->gate.close_on_roster));
    json_object_set_new(o, "mechanism", json_string(p->mechanism));
    json_object_set_new(o, "unit", json_string(p->unit));
    json_object_set_new(o, "neighbors", json_string(p->neighbors));
    json_object_set_new(o, "model", json_string(dp_privacy_model_name(p->model)));
    json_object_set_new(o, "budget_total", real_or_null(p->budget_total));
    json_object_set_new(o, "delta", p->model == DP_PRIVACY_ZCDP ? real_or_null(p->delta) : json_null());
    json_object_set_new(o, "eps_simple", real_or_null(p->eps_simple));
    json_object_set_new(o, "eps_cks", real_or_null(p->eps_cks));
    json_object_set_new(o, "horizon", p->horizon ? json_integer((json_int_t)p->horizon) : json_null());
    json_object_set_new(o, "composition", json_string(p->composition));
    json_object_set_new(o, "spend_rule", json_string(p->spend_rule));
    json_t *runs = json_array();
    for (size_t k = 0; k < p->n_runs; k++) {
        json_t *ru = json_object();
        json_object_set_new(ru, "first", json_integer((json_int_t)p->runs[k].first));
        json_object_set_new(ru, "last", p->runs[k].last ? json_integer((json_int_t)p->runs[k].last) : json_null());
        json_object_set_new(ru, "spend", real_or_null(p->runs[k].spend));
        json_array_append_new(runs, ru);
    }
    json_object_set_new(o, "spends", runs);
    json_object_set_new(o, "spend", kvs_json(p->spend, p->n_spend));
    json_object_set_new(o, "noise", kvs_json(p->noise, p->n_noise));
    json_object_set_new(o, "accuracy", kvs_json(p->accuracy, p->n_accuracy));
    json_object_set_new(o, "public_inputs", json_string(p->public_inputs));
    return o;
}

static void print_json(json_t *doc)
{
    json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    fputc('\n', stdout);
}

int cmd_check_config(int argc, char **argv)
{
    const char *cmd = "check-config";
    const char *config_path = NULL;
    int as_json = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            check_usage(stdout);
            return 0;
        } else if (strcmp(a, "--json") == 0) {
            as_json = 1;
        } else if (strcmp(a, "--config") == 0 && i + 1 < argc) {
            config_path = argv[++i];
        } else {
            check_usage(stderr);
            return cli_fail(cmd, "unknown option or missing value: '%s'", a);
        }
    }
    if (!config_path) {
        check_usage(stderr);
        return cli_fail(cmd, "--config is required");
    }
    char err[1400];
    dp_stream_config *cfg = NULL;
    int rc = dp_stream_config_load_file(&cfg, config_path, err, sizeof err);
    if (rc != DP_OK) {
        if (as_json) {
            json_t *doc = json_object();
            json_object_set_new(doc, "config", json_string(config_path));
            json_object_set_new(doc, "valid", json_false());
            json_object_set_new(doc, "error", json_string(err));
            print_json(doc);
            json_decref(doc);
        }
        cli_fail(cmd, "%s", err);
        return rc == DP_EIO ? CLI_EXIT_IO : CLI_EXIT_USAGE;
    }

    json_t *doc = NULL, *streams = NULL;
    if (as_json) {
        doc = json_object();
        json_object_set_new(doc, "config", json_string(config_path));
        json_object_set_new(doc, "valid", json_true());
        json_object_set_new(doc, "delta", json_real(cfg->delta));
        json_object_set_new(doc, "wire", json_string(cfg->framing == DP_CODEC_FRAMING_CONFLUENT ? "confluent" : "plain"));
        json_t *topics = json_object();
        json_object_set_new(topics, "updates", json_string(cfg->topic_updates));
        json_object_set_new(topics, "synthetic", json_string(cfg->topic_synthetic));
        json_object_set_new(topics, "budget", json_string(cfg->topic_budget));
        json_object_set_new(topics, "dead_letter", json_string(cfg->topic_dead_letter));
        json_object_set_new(topics, "state", json_string(cfg->topic_state));
        json_object_set_new(doc, "topics", topics);
        streams = json_array();
        json_object_set_new(doc, "streams", streams);
    } else {
        printf("%s: valid; %zu stream route(s), delta %g, %s wire format\n", config_path, cfg->n_routes, cfg->delta,
               cfg->framing == DP_CODEC_FRAMING_CONFLUENT ? "Confluent-framed" : "plain Avro");
        printf("  topics: updates %s; synthetic %s, budget %s, dead letters %s; state %s\n", cfg->topic_updates,
               cfg->topic_synthetic, cfg->topic_budget, cfg->topic_dead_letter, cfg->topic_state);
    }
    int status = CLI_EXIT_OK;
    for (size_t i = 0; i < cfg->n_routes && status == CLI_EXIT_OK; i++) {
        dp_synth_plan plan;
        err[0] = '\0';
        if (route_plan(&cfg->routes[i], &plan, err, sizeof err) != DP_OK) {
            /* the loader built this synthesizer a moment ago: only memory can fail here */
            cli_fail(cmd, "streams[%zu]: %s", i, err[0] ? err : "cannot describe the plan");
            status = CLI_EXIT_FAILED;
            break;
        }
        if (as_json)
            json_array_append_new(streams, route_json(i, &cfg->routes[i], &plan));
        else
            print_route_text(i, &cfg->routes[i], &plan);
        dp_synth_plan_free(&plan);
    }
    if (as_json && status == CLI_EXIT_OK)
        print_json(doc);
    json_decref(doc);
    dp_stream_config_free(cfg);
    return status;
}
