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
 * A route whose plan says dp 0 (a synthesizer's unsafe_paper_variant) gets
 * a WARNING line on stderr: valid, but not differentially private.
 *
 * Exit status: 0 valid; 2 invalid (the message names the JSON path) or a
 * usage error; 3 the file cannot be read. */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "app/cli.h"
#include "app/cli_plan.h"
#include "core/dp_error.h"
#include "stream/registry_subjects.h"
#include "stream/stream_config.h"
#include "synth/common/synth.h"

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
            "configuration only.  A stream run under unsafe_paper_variant (NOT differentially\n"
            "private) gets a WARNING line on stderr.\n"
            "  --json   one JSON document on stdout (also for an invalid config: valid false)\n"
            "Exit 0 if valid, 2 if not (or on a usage error), 3 if the file cannot be read.\n");
}

/* The plan of route r: its synthesizer created with a throw-away key (as
 * stream_config.c's check does; describing draws no noise). */
/* --- text --------------------------------------------------------------------------- */

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
    if (r->sharded)
        printf("  %-12skeyed by stream id, a 0x00 byte and entity id, so its entities spread over every partition "
               "of the updates topic, each partition a shard; every CLOSE_STEP marker goes to every partition.  "
               "`run --role ingest` instances keep its shards and publish their statistics, `run --role release` "
               "instances merge them and release; the single process (`--role all`) refuses it (docs/kafka.md "
               "§10)\n", "sharded");
    cli_plan_print(p);
    printf("  %-12son CLOSE_STEP markers and the step timer%s; %s\n", "steps close",
           r->gate.close_on_roster ? ", and when the roster is complete" : "",
           r->gate.lookahead ? "reports for the next step are held until it opens"
                             : "reports for a later step are rejected (FUTURE_STEP)");
}

/* --- JSON --------------------------------------------------------------------------- */

static json_t *route_json(size_t i, const dp_stream_route *r, const dp_synth_plan *p)
{
    json_t *o = json_object();
    json_object_set_new(o, "index", json_integer((json_int_t)i));
    json_object_set_new(o, r->match ? "match" : "prefix", json_string(r->match ? r->match : r->prefix));
    json_object_set_new(o, "synthesizer", json_string(r->synthesizer));
    json_object_set_new(o, "max_streams", r->max_streams ? json_integer(r->max_streams) : json_null());
    json_object_set_new(o, "budget_group", json_boolean(r->budget_group));
    json_object_set_new(o, "sharded", json_boolean(r->sharded));
    json_object_set_new(o, "lookahead", json_integer(r->gate.lookahead));
    json_object_set_new(o, "close_on_complete_roster", json_boolean(r->gate.close_on_roster));
    cli_plan_json(p, o);
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
    /* a configuration is checked for `run`, which reads or writes all six schemas */
    if (rc == DP_OK && (rc = dp_stream_config_require_ids(cfg, DP_STREAM_IDS_ALL, "run", err, sizeof err)) != DP_OK) {
        dp_stream_config_free(cfg);
        cfg = NULL;
    }
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
        if (cfg->registry) {
            /* the URL and the subjects only: credentials are never printed */
            json_t *reg = json_object(), *subjects = json_object();
            json_object_set_new(reg, "url", json_string(cfg->registry->url));
            for (int t = 0; t < DP_CODEC_TYPE_COUNT; t++) {
                char subject[512];
                if (dp_registry_subject(cfg, (dp_codec_type)t, subject, sizeof subject) == DP_OK)
                    json_object_set_new(subjects, dp_codec_type_name((dp_codec_type)t), json_string(subject));
            }
            json_object_set_new(reg, "subjects", subjects);
            json_object_set_new(reg, "compatibility",
                                cfg->registry->compatibility ? json_string(cfg->registry->compatibility) : json_null());
            json_object_set_new(doc, "schema_registry", reg);
        }
        streams = json_array();
        json_object_set_new(doc, "streams", streams);
    } else {
        printf("%s: valid; %zu stream route(s), delta %g, %s wire format\n", config_path, cfg->n_routes, cfg->delta,
               cfg->framing == DP_CODEC_FRAMING_CONFLUENT ? "Confluent-framed" : "plain Avro");
        printf("  topics: updates %s; synthetic %s, budget %s, dead letters %s; state %s\n", cfg->topic_updates,
               cfg->topic_synthetic, cfg->topic_budget, cfg->topic_dead_letter, cfg->topic_state);
        for (size_t i = 0; i < cfg->n_routes; i++)
            if (cfg->routes[i].sharded) {   /* the roles' topics (docs/kafka.md §10) */
                printf("  sharded routes: statistics %s.stats (exact statistics of personal data: the updates "
                       "topic's access controls, never exported), release state %s.release-state\n",
                       cfg->topic_prefix, cfg->topic_prefix);
                break;
            }
        if (cfg->registry) {
            char subject[512];
            printf("  schema registry %s: subjects <topic>-org.dpstream.v1.<Record> (TopicRecordNameStrategy), "
                   "e.g. %s; compatibility %s\n", cfg->registry->url,
                   dp_registry_subject(cfg, DP_CODEC_UPDATE, subject, sizeof subject) == DP_OK ? subject : "?",
                   cfg->registry->compatibility ? cfg->registry->compatibility : "left as it is");
        }
    }
    int status = CLI_EXIT_OK;
    for (size_t i = 0; i < cfg->n_routes && status == CLI_EXIT_OK; i++) {
        dp_synth_plan plan;
        err[0] = '\0';
        if (cli_route_plan(&cfg->routes[i], &plan, err, sizeof err) != DP_OK) {
            /* the loader built this synthesizer a moment ago: only memory can fail here */
            cli_fail(cmd, "streams[%zu]: %s", i, err[0] ? err : "cannot describe the plan");
            status = CLI_EXIT_FAILED;
            break;
        }
        /* on stderr in both forms: a config that is valid but not private
         * must not pass silently, and --json's stdout stays one document */
        const dp_stream_route *r = &cfg->routes[i];
        if (!cli_plan_is_dp(&plan))
            cli_warn_not_dp(i, r, 0);
        if (as_json)
            json_array_append_new(streams, route_json(i, r, &plan));
        else
            print_route_text(i, r, &plan);
        dp_synth_plan_free(&plan);
    }
    if (as_json && status == CLI_EXIT_OK)
        print_json(doc);
    json_decref(doc);
    dp_stream_config_free(cfg);
    return status;
}
