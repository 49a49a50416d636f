/* test_stream_config.c — the processor config file: routing (exact id vs
 * prefix, first match wins), defaults, and validation messages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* processor/app is built only into the dpstream binary, not a library:
 * compile the module under test into this executable. */
#include "stream/kafka_util.h"
#include "stream/stream_config.h"
#include "core/dp_error.h"
#include "dptest.h"

#define WINDOW_CFG "{\"horizon\":12,\"k\":3,\"rho\":0.005}"
#define CUMUL_CFG  "{\"horizon\":12,\"rho\":0.005}"

static dp_stream_config *load_ok(const char *text)
{
    dp_stream_config *c = NULL;
    char err[1024] = "";
    int rc = dp_stream_config_parse(&c, text, strlen(text), err, sizeof err);
    if (rc != DP_OK)
        fprintf(stderr, "\n  unexpected config error: %s\n", err);
    CU_ASSERT_EQUAL(rc, DP_OK);
    return c;
}

/* Every text must be refused with DP_EINVAL and a message containing its needle. */
typedef struct bad_config {
    const char *text, *needle;
} bad_config;

static void expect_refused(const char *what, const bad_config *bad, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dp_stream_config *c = (dp_stream_config *)1;
        char err[1024] = "";
        int rc = dp_stream_config_parse(&c, bad[i].text, strlen(bad[i].text), err, sizeof err);
        int ok = rc == DP_EINVAL && c == NULL && strstr(err, bad[i].needle) != NULL;
        CU_ASSERT(ok);
        if (!ok)
            fprintf(stderr, "\n  %s case %zu: rc=%d err=\"%s\" (wanted \"%s\")", what, i, rc, err, bad[i].needle);
    }
}

static const char *route_synth(const dp_stream_config *c, const char *id)
{
    const dp_stream_route *r = dp_stream_config_route(c, id, strlen(id));
    return r ? r->synthesizer : NULL;
}

static void test_routing(void)
{
    dp_stream_config *c = load_ok(
        "{\"streams\":["
        " {\"match\":\"survey/special\",\"synthesizer\":\"cumulative\",\"config\":" CUMUL_CFG "},"
        " {\"prefix\":\"survey/\",\"synthesizer\":\"window\",\"config\":" WINDOW_CFG "},"
        " {\"match\":\"panel-a\",\"synthesizer\":\"window\",\"config\":" WINDOW_CFG "},"
        " {\"prefix\":\"pan\",\"synthesizer\":\"cumulative\",\"config\":" CUMUL_CFG "}"
        "]}");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(c->n_routes, 4);
    /* exact match before the prefix that also covers it */
    const dp_stream_route *r = dp_stream_config_route(c, "survey/special", 14);
    CU_ASSERT_PTR_EQUAL(r, &c->routes[0]);
    CU_ASSERT_PTR_EQUAL(dp_stream_config_route(c, "survey/other", 12), &c->routes[1]);
    CU_ASSERT_STRING_EQUAL(route_synth(c, "survey/"), "window");            /* prefix = whole id */
    CU_ASSERT_STRING_EQUAL(route_synth(c, "survey/special2"), "window");    /* exact is exact */
    CU_ASSERT_PTR_EQUAL(dp_stream_config_route(c, "panel-a", 7), &c->routes[2]);
    CU_ASSERT_PTR_EQUAL(dp_stream_config_route(c, "panel-b", 7), &c->routes[3]);
    CU_ASSERT_PTR_EQUAL(dp_stream_config_route(c, "panel-a2", 8), &c->routes[3]);
    CU_ASSERT_PTR_NULL(dp_stream_config_route(c, "survey", 6));              /* shorter than the prefix */
    CU_ASSERT_PTR_NULL(dp_stream_config_route(c, "pa", 2));
    CU_ASSERT_PTR_NULL(dp_stream_config_route(c, "Survey/x", 8));            /* bytes, case-sensitive */
    /* the length is explicit: an id with an embedded NUL is not "panel-a" */
    CU_ASSERT_PTR_EQUAL(dp_stream_config_route(c, "panel-a\0x", 9), &c->routes[3]);
    dp_stream_config_free(c);

    /* an empty prefix is a catch-all */
    c = load_ok("{\"streams\":[{\"match\":\"a\",\"synthesizer\":\"window\",\"config\":" WINDOW_CFG "},"
                "{\"prefix\":\"\",\"synthesizer\":\"cumulative\",\"config\":" CUMUL_CFG "}]}");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_STRING_EQUAL(route_synth(c, "a"), "window");
    CU_ASSERT_STRING_EQUAL(route_synth(c, "anything"), "cumulative");
    dp_stream_config_free(c);
}

static void test_defaults(void)
{
    dp_stream_config *c = load_ok("{\"streams\":[{\"match\":\"s\",\"synthesizer\":\"window\",\"config\":" WINDOW_CFG "}]}");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_STRING_EQUAL(c->topic_prefix, "dpstream");
    CU_ASSERT_STRING_EQUAL(c->topic_updates, "dpstream.updates");
    CU_ASSERT_STRING_EQUAL(c->topic_synthetic, "dpstream.synthetic");
    CU_ASSERT_STRING_EQUAL(c->topic_budget, "dpstream.budget");
    CU_ASSERT_STRING_EQUAL(c->topic_dead_letter, "dpstream.deadletter");
    CU_ASSERT_STRING_EQUAL(c->topic_state, "dpstream.state");
    CU_ASSERT_EQUAL(c->n_kafka, 0);
    CU_ASSERT_DOUBLE_EQUAL(c->delta, 1e-6, 0);
    /* the file-wide delta is handed to the synthesizer */
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(c->routes[0].config, "delta")), 1e-6, 0);
    dp_stream_config_free(c);

    c = load_ok("{\"topics\":{\"prefix\":\"acme\",\"budget\":\"privacy-ledger\"},"
                "\"kafka\":{\"bootstrap.servers\":\"127.0.0.1:9092\",\"linger.ms\":5,\"enable.idempotence\":true},"
                "\"delta\":1e-9,"
                "\"streams\":[{\"match\":\"s\",\"synthesizer\":\"window\",\"config\":" WINDOW_CFG "},"
                "{\"match\":\"t\",\"synthesizer\":\"window\",\"config\":{\"horizon\":12,\"k\":3,\"rho\":0.005,\"delta\":1e-5}}]}");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_STRING_EQUAL(c->topic_updates, "acme.updates");
    CU_ASSERT_STRING_EQUAL(c->topic_budget, "privacy-ledger");
    CU_ASSERT_STRING_EQUAL(c->topic_dead_letter, "acme.deadletter");
    CU_ASSERT_EQUAL_FATAL(c->n_kafka, 3);
    CU_ASSERT_STRING_EQUAL(c->kafka[0].name, "bootstrap.servers");
    CU_ASSERT_STRING_EQUAL(c->kafka[1].value, "5");
    CU_ASSERT_STRING_EQUAL(c->kafka[2].value, "true");
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(c->routes[0].config, "delta")), 1e-9, 0);
    /* a stream's own delta wins */
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(c->routes[1].config, "delta")), 1e-5, 0);
    dp_stream_config_free(c);
}

static void test_validation(void)
{
    static const bad_config BAD[] = {
        {"[]", "must be a JSON object"},
        {"{\"streams\":[", "not valid JSON"},
        {"{}", "streams: required"},
        {"{\"streams\":[]}", "streams: required"},
        {"{\"stream\":[]}", "unknown top-level key \"stream\""},
        {"{\"delta\":0,\"streams\":[{\"match\":\"s\",\"synthesizer\":\"window\",\"config\":" WINDOW_CFG "}]}", "delta"},
        {"{\"delta\":1,\"streams\":[{\"match\":\"s\",\"synthesizer\":\"window\",\"config\":" WINDOW_CFG "}]}", "delta"},
        {"{\"topics\":{\"updates\":\"has space\"},\"streams\":[{\"match\":\"s\",\"synthesizer\":\"window\",\"config\":" WINDOW_CFG "}]}",
         "topics.updates"},
        {"{\"topics\":{\"update\":\"x\"},\"streams\":[{\"match\":\"s\",\"synthesizer\":\"window\",\"config\":" WINDOW_CFG "}]}",
         "topics: unknown key \"update\""},
        {"{\"kafka\":{\"acks\":[1]},\"streams\":[{\"match\":\"s\",\"synthesizer\":\"window\",\"config\":" WINDOW_CFG "}]}",
         "kafka.acks"},
        {"{\"kafka\":[],\"streams\":[{\"match\":\"s\",\"synthesizer\":\"window\",\"config\":" WINDOW_CFG "}]}", "kafka:"},
        {"{\"streams\":[7]}", "streams[0]: must be an object"},
        {"{\"streams\":[{\"synthesizer\":\"window\",\"config\":" WINDOW_CFG "}]}", "streams[0]: give exactly one"},
        {"{\"streams\":[{\"match\":\"s\",\"prefix\":\"s\",\"synthesizer\":\"window\",\"config\":" WINDOW_CFG "}]}",
         "streams[0]: give exactly one"},
        {"{\"streams\":[{\"match\":\"\",\"synthesizer\":\"window\",\"config\":" WINDOW_CFG "}]}", "streams[0].match"},
        {"{\"streams\":[{\"match\":\"s\",\"synthesizer\":\"windows\",\"config\":" WINDOW_CFG "}]}",
         "unknown synthesizer \"windows\""},
        {"{\"streams\":[{\"match\":\"s\",\"config\":" WINDOW_CFG "}]}", "streams[0].synthesizer"},
        {"{\"streams\":[{\"match\":\"s\",\"synthesizer\":\"window\"}]}", "streams[0].config"},
        {"{\"streams\":[{\"match\":\"s\",\"synthesizer\":\"window\",\"config\":" WINDOW_CFG ",\"extra\":1}]}",
         "streams[0]: unknown key \"extra\""},
        /* the synthesizer's own validation surfaces with the route's path */
        {"{\"streams\":[{\"match\":\"s\",\"synthesizer\":\"window\",\"config\":{\"horizon\":12,\"rho\":0.005}}]}",
         "streams[0].config: "},
        {"{\"streams\":[{\"match\":\"a\",\"synthesizer\":\"window\",\"config\":" WINDOW_CFG "},"
         "{\"match\":\"s\",\"synthesizer\":\"window\",\"config\":{\"horizon\":12,\"k\":3,\"rho\":0.005,\"bogus\":1}}]}",
         "streams[1].config: "},
        /* unreachable routes */
        {"{\"streams\":[{\"match\":\"s\",\"synthesizer\":\"window\",\"config\":" WINDOW_CFG "},"
         "{\"match\":\"s\",\"synthesizer\":\"cumulative\",\"config\":" CUMUL_CFG "}]}",
         "streams[1]: unreachable: streams[0]"},
        {"{\"streams\":[{\"prefix\":\"sur\",\"synthesizer\":\"window\",\"config\":" WINDOW_CFG "},"
         "{\"prefix\":\"survey/\",\"synthesizer\":\"cumulative\",\"config\":" CUMUL_CFG "}]}",
         "streams[1]: unreachable: streams[0] (prefix \"sur\")"},
        {"{\"streams\":[{\"prefix\":\"\",\"synthesizer\":\"window\",\"config\":" WINDOW_CFG "},"
         "{\"match\":\"x\",\"synthesizer\":\"cumulative\",\"config\":" CUMUL_CFG "}]}",
         "streams[1]: unreachable"},
    };
    expect_refused("validation", BAD, sizeof BAD / sizeof BAD[0]);
    /* the longer prefix first is fine: both are reachable */
    dp_stream_config *c = load_ok("{\"streams\":[{\"prefix\":\"survey/\",\"synthesizer\":\"window\",\"config\":" WINDOW_CFG "},"
                                  "{\"prefix\":\"sur\",\"synthesizer\":\"cumulative\",\"config\":" CUMUL_CFG "}]}");
    CU_ASSERT_PTR_NOT_NULL(c);
    dp_stream_config_free(c);
}

static void test_load_file(void)
{
    dp_stream_config *c = NULL;
    char err[1024] = "";
    CU_ASSERT_EQUAL(dp_stream_config_load_file(&c, "/nonexistent/dpstream.json", err, sizeof err), DP_EIO);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "/nonexistent/dpstream.json"));
    char path[] = "/tmp/dpstream-test-config-XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("{\"streams\":[{\"match\":\"s\",\"synthesizer\":\"window\",\"config\":{\"horizon\":12,\"k\":0,\"rho\":0.005}}]}", f);
    fclose(f);
    CU_ASSERT_EQUAL(dp_stream_config_load_file(&c, path, err, sizeof err), DP_EINVAL);
    /* the message names the file and the JSON path */
    CU_ASSERT_PTR_NOT_NULL(strstr(err, path));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "streams[0].config"));
    remove(path);
}

#define ONE_ROUTE "\"streams\":[{\"match\":\"s\",\"synthesizer\":\"window\",\"config\":" WINDOW_CFG "}]"
#define ALL_IDS "{\"Update\":1,\"SyntheticRecord\":2,\"ReleaseManifest\":3,\"BudgetEvent\":4," \
                "\"DeadLetter\":5,\"Snapshot\":2147483647}"

/* "wire": framing and Schema Registry ids, and the codec options every
 * Kafka reader/writer builds from them. */
static void test_wire(void)
{
    dp_codec_options o;
    /* default: plain, no ids */
    dp_stream_config *c = load_ok("{" ONE_ROUTE "}");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(c->framing, DP_CODEC_FRAMING_PLAIN);
    memset(&o, 0xAB, sizeof o);
    dp_stream_config_codec_options(c, &o);
    CU_ASSERT_EQUAL(o.framing, DP_CODEC_FRAMING_PLAIN);
    for (int t = 0; t < DP_CODEC_TYPE_COUNT; t++)
        CU_ASSERT_EQUAL(o.schema_id[t], 0);
    dp_stream_config_free(c);

    c = load_ok("{\"wire\":{\"framing\":\"plain\"}," ONE_ROUTE "}");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(c->framing, DP_CODEC_FRAMING_PLAIN);
    dp_stream_config_free(c);

    /* confluent: ids land at their codec type, whatever the key order */
    c = load_ok("{\"wire\":{\"schema_ids\":{\"Snapshot\":60,\"DeadLetter\":50,\"BudgetEvent\":40,"
                "\"ReleaseManifest\":30,\"SyntheticRecord\":20,\"Update\":10},\"framing\":\"confluent\"},"
                ONE_ROUTE "}");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    dp_stream_config_codec_options(c, &o);
    CU_ASSERT_EQUAL(o.framing, DP_CODEC_FRAMING_CONFLUENT);
    CU_ASSERT_EQUAL(o.schema_id[DP_CODEC_UPDATE], 10);
    CU_ASSERT_EQUAL(o.schema_id[DP_CODEC_SYNTHETIC_RECORD], 20);
    CU_ASSERT_EQUAL(o.schema_id[DP_CODEC_RELEASE_MANIFEST], 30);
    CU_ASSERT_EQUAL(o.schema_id[DP_CODEC_BUDGET_EVENT], 40);
    CU_ASSERT_EQUAL(o.schema_id[DP_CODEC_DEAD_LETTER], 50);
    CU_ASSERT_EQUAL(o.schema_id[DP_CODEC_SNAPSHOT], 60);
    /* the options really produce Confluent frames with these ids */
    dp_codec *codec = NULL;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(dp_codec_create(&codec, &o, err, sizeof err), DP_OK);
    dp_update u = {.stream_id = "s", .stream_id_len = 1, .step = 1, .kind = DP_UPDATE_CLOSE_STEP};
    dp_buf b;
    dp_buf_init(&b);
    CU_ASSERT_EQUAL_FATAL(dp_codec_encode_update_buf(codec, &u, &b, err, sizeof err), DP_OK);
    CU_ASSERT_FATAL(b.len > DP_CODEC_CONFLUENT_HEADER);
    CU_ASSERT_EQUAL(b.data[0], 0x00);
    CU_ASSERT_EQUAL(b.data[1], 0x00);
    CU_ASSERT_EQUAL(b.data[2], 0x00);
    CU_ASSERT_EQUAL(b.data[3], 0x00);
    CU_ASSERT_EQUAL(b.data[4], 10);
    dp_buf_free(&b);
    dp_codec_destroy(codec);
    dp_stream_config_free(c);

    c = load_ok("{\"wire\":{\"framing\":\"confluent\",\"schema_ids\":" ALL_IDS "}," ONE_ROUTE "}");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(c->schema_ids[DP_CODEC_SNAPSHOT], 2147483647u);
    dp_stream_config_free(c);

    /* a partial map loads; each command then needs the ids it reads or writes */
    c = load_ok("{\"wire\":{\"framing\":\"confluent\",\"schema_ids\":{\"Update\":1,\"SyntheticRecord\":2,"
                "\"ReleaseManifest\":3,\"BudgetEvent\":4,\"DeadLetter\":5}}," ONE_ROUTE "}");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(dp_stream_config_require_ids(c, DP_STREAM_IDS_OF(DP_CODEC_UPDATE), "produce", err, sizeof err),
                    DP_OK);
    CU_ASSERT_EQUAL(dp_stream_config_require_ids(c, DP_STREAM_IDS_ALL, "run", err, sizeof err), DP_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "wire.schema_ids.Snapshot: required with confluent framing: `run`"));
    dp_stream_config_free(c);
    c = load_ok("{\"wire\":{\"framing\":\"confluent\",\"schema_ids\":{\"Update\":7}}," ONE_ROUTE "}");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(dp_stream_config_require_ids(c, DP_STREAM_IDS_OF(DP_CODEC_UPDATE), "load", err, sizeof err),
                    DP_OK);
    CU_ASSERT_EQUAL(dp_stream_config_require_ids(c, DP_STREAM_IDS_OF(DP_CODEC_SNAPSHOT), "inspect-snapshot", err,
                                                 sizeof err),
                    DP_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "wire.schema_ids.Snapshot"));
    dp_stream_config_free(c);
    /* plain framing needs no ids */
    c = load_ok("{" ONE_ROUTE "}");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(dp_stream_config_require_ids(c, DP_STREAM_IDS_ALL, "run", err, sizeof err), DP_OK);
    dp_stream_config_free(c);

    static const bad_config BAD[] = {
        {"{\"wire\":[]," ONE_ROUTE "}", "wire: must be an object"},
        {"{\"wire\":{\"framing\":\"avro\"}," ONE_ROUTE "}", "wire.framing: must be"},
        {"{\"wire\":{\"framing\":1}," ONE_ROUTE "}", "wire.framing: must be"},
        {"{\"wire\":{\"framings\":\"plain\"}," ONE_ROUTE "}", "wire: unknown key \"framings\""},
        {"{\"wire\":{\"framing\":\"confluent\"}," ONE_ROUTE "}", "wire.schema_ids: required"},
        {"{\"wire\":{\"framing\":\"plain\",\"schema_ids\":" ALL_IDS "}," ONE_ROUTE "}",
         "wire.schema_ids: only meaningful"},
        {"{\"wire\":{\"schema_ids\":" ALL_IDS "}," ONE_ROUTE "}", "wire.schema_ids: only meaningful"},
        {"{\"wire\":{\"framing\":\"confluent\",\"schema_ids\":{\"Update\":0,\"SyntheticRecord\":2,"
         "\"ReleaseManifest\":3,\"BudgetEvent\":4,\"DeadLetter\":5,\"Snapshot\":6}}," ONE_ROUTE "}",
         "wire.schema_ids.Update: must be an integer"},
        {"{\"wire\":{\"framing\":\"confluent\",\"schema_ids\":{\"Update\":1,\"SyntheticRecord\":2,"
         "\"ReleaseManifest\":3,\"BudgetEvent\":2147483648,\"DeadLetter\":5,\"Snapshot\":6}}," ONE_ROUTE "}",
         "wire.schema_ids.BudgetEvent: must be an integer"},
        {"{\"wire\":{\"framing\":\"confluent\",\"schema_ids\":{\"Update\":-3,\"SyntheticRecord\":2,"
         "\"ReleaseManifest\":3,\"BudgetEvent\":4,\"DeadLetter\":5,\"Snapshot\":6}}," ONE_ROUTE "}",
         "wire.schema_ids.Update: must be an integer"},
        {"{\"wire\":{\"framing\":\"confluent\",\"schema_ids\":{\"Update\":\"1\",\"SyntheticRecord\":2,"
         "\"ReleaseManifest\":3,\"BudgetEvent\":4,\"DeadLetter\":5,\"Snapshot\":6}}," ONE_ROUTE "}",
         "wire.schema_ids.Update: must be an integer"},
        {"{\"wire\":{\"framing\":\"confluent\",\"schema_ids\":{\"Update\":1,\"SyntheticRecord\":2,"
         "\"ReleaseManifest\":3,\"BudgetEvent\":4,\"DeadLetter\":5,\"Snapshot\":6,\"Progress\":7}}," ONE_ROUTE "}",
         "wire.schema_ids: unknown key \"Progress\""},
        {"{\"wire\":{\"framing\":\"confluent\",\"schema_ids\":[1,2,3,4,5,6]}," ONE_ROUTE "}",
         "wire.schema_ids: required object"},
    };
    expect_refused("wire", BAD, sizeof BAD / sizeof BAD[0]);
}

/* Per-route step policy (synth/common/step_gate.h) and the partitioner every
 * stream's updates are checked against. */
static void test_gate_and_partitioner(void)
{
    dp_stream_config *c = load_ok("{\"streams\":[{\"match\":\"a\",\"synthesizer\":\"window\",\"config\":" WINDOW_CFG "},"
                                  "{\"match\":\"b\",\"synthesizer\":\"window\",\"lookahead\":0,"
                                  "\"close_on_complete_roster\":true,\"config\":" WINDOW_CFG "}]}");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    const dp_stream_route *a = dp_stream_config_route(c, "a", 1), *b = dp_stream_config_route(c, "b", 1);
    CU_ASSERT_EQUAL(a->gate.lookahead, dp_gate_policy_default.lookahead);
    CU_ASSERT_EQUAL(a->gate.close_on_roster, dp_gate_policy_default.close_on_roster);
    CU_ASSERT_EQUAL(b->gate.lookahead, 0);
    CU_ASSERT_EQUAL(b->gate.close_on_roster, 1);
    CU_ASSERT_STRING_EQUAL(c->partitioner, "consistent_random");
    dp_stream_config_free(c);
    c = load_ok("{\"kafka\":{\"partitioner\":\"murmur2_random\"}," "\"streams\":[{\"match\":\"a\",\"synthesizer\":"
                "\"window\",\"config\":" WINDOW_CFG "}]}");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_STRING_EQUAL(c->partitioner, "murmur2_random");
    dp_stream_config_free(c);
    /* a budget group of at most 4 streams: each stream's config holds a quarter */
    c = load_ok("{\"streams\":[{\"prefix\":\"g/\",\"synthesizer\":\"window\",\"max_streams\":4,"
                "\"budget_group\":true,\"config\":" WINDOW_CFG "}]}");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    const dp_stream_route *g = dp_stream_config_route(c, "g/x", 3);
    CU_ASSERT_EQUAL(g->max_streams, 4);
    CU_ASSERT(g->budget_group);
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(g->config, "rho")), 0.005 / 4, 1e-18);
    dp_stream_config_free(c);
    /* an (ε, δ) budget of a zCDP synthesizer is turned into ρ before it is
     * shared: ρ composes over the group, ε at a fixed δ does not */
    c = load_ok("{\"delta\":1e-7,\"streams\":[{\"prefix\":\"g/\",\"synthesizer\":\"window\",\"max_streams\":4,"
                "\"budget_group\":true,\"config\":{\"horizon\":4,\"k\":1,\"epsilon\":2}}]}");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    g = dp_stream_config_route(c, "g/x", 3);
    double rho;
    CU_ASSERT_EQUAL(dp_zcdp_rho_for_eps_cks(2.0, 1e-7, &rho), DP_OK);
    CU_ASSERT_PTR_NULL(json_object_get(g->config, "epsilon"));
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(g->config, "rho")), rho / 4, 1e-18);
    dp_stream_config_free(c);
    /* a pure-DP synthesizer's epsilon is shared as it is */
    c = load_ok("{\"streams\":[{\"prefix\":\"g/\",\"synthesizer\":\"hypercube\",\"max_streams\":4,"
                "\"budget_group\":true,\"config\":{\"epsilon\":2}}]}");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    g = dp_stream_config_route(c, "g/x", 3);
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(g->config, "epsilon")), 0.5, 1e-15);
    dp_stream_config_free(c);
    static const bad_config BAD[] = {
        {"{\"kafka\":{\"partitioner\":\"random\"},\"streams\":[{\"match\":\"a\",\"synthesizer\":\"window\","
         "\"config\":" WINDOW_CFG "}]}", "kafka.partitioner"},
        {"{\"streams\":[{\"match\":\"a\",\"synthesizer\":\"window\",\"lookahead\":2,\"config\":" WINDOW_CFG "}]}",
         "streams[0].lookahead"},
        {"{\"streams\":[{\"match\":\"a\",\"synthesizer\":\"window\",\"lookahead\":-1,\"config\":" WINDOW_CFG "}]}",
         "streams[0].lookahead"},
        /* a stream cap only where a route can have several streams; a group needs the cap */
        {"{\"streams\":[{\"match\":\"a\",\"synthesizer\":\"window\",\"max_streams\":2,\"config\":" WINDOW_CFG "}]}",
         "streams[0].max_streams: only for a \"prefix\" route"},
        {"{\"streams\":[{\"prefix\":\"a\",\"synthesizer\":\"window\",\"max_streams\":0,\"config\":" WINDOW_CFG "}]}",
         "streams[0].max_streams: must be an integer"},
        {"{\"streams\":[{\"prefix\":\"a\",\"synthesizer\":\"window\",\"budget_group\":true,\"config\":" WINDOW_CFG "}]}",
         "streams[0].budget_group: needs max_streams"},
        /* a budget the exact samplers cannot serve names the budget (issue 13.10) */
        {"{\"streams\":[{\"match\":\"a\",\"synthesizer\":\"window\",\"config\":{\"horizon\":4,\"k\":1,"
         "\"rho\":1e308}}]}", "window: rho = 1e+308"},
        {"{\"streams\":[{\"match\":\"a\",\"synthesizer\":\"cumulative\",\"config\":{\"horizon\":4,"
         "\"rho\":1e308}}]}", "cumulative: rho = 1e+308"},
        /* both release n exactly: add/remove neighbours only with n declared public */
        {"{\"streams\":[{\"match\":\"a\",\"synthesizer\":\"cumulative\",\"config\":{\"horizon\":4,"
         "\"rho\":1,\"neighbors\":\"add_remove\"}}]}", "reveals the roster size n"},
        {"{\"streams\":[{\"match\":\"a\",\"synthesizer\":\"cumulative\",\"config\":{\"horizon\":4,"
         "\"rho\":1,\"assume_public_n\":true}}]}", "assume_public_n applies to neighbors"},
        {"{\"streams\":[{\"match\":\"a\",\"synthesizer\":\"window\",\"close_on_complete_roster\":1,"
         "\"config\":" WINDOW_CFG "}]}", "streams[0].close_on_complete_roster"},
    };
    expect_refused("gate", BAD, sizeof BAD / sizeof BAD[0]);
    /* Known values of librdkafka's partitioners (CRC32 and murmur2 of the
     * key, modulo the partition count): the processor must agree with the
     * producers bit for bit. */
    CU_ASSERT_EQUAL(dp_kafka_key_partition("consistent_random", "panel", 5, 1000003), (int32_t)(0xa2add30fu % 1000003u));
    CU_ASSERT_EQUAL(dp_kafka_key_partition("consistent", "panel", 5, 7), (int32_t)(0xa2add30fu % 7u));
    for (int32_t n = 1; n <= 16; n++) {
        int32_t m = dp_kafka_key_partition("murmur2_random", "stream-42", 9, n);
        CU_ASSERT(m >= 0 && m < n);
        CU_ASSERT_EQUAL(m, dp_kafka_key_partition("murmur2", "stream-42", 9, n));
    }
}

/* "sharded": only for a synthesizer whose ingest half shards by entity,
 * and not with what needs one shard to see the whole stream. */
static void test_sharded(void)
{
    dp_stream_config *c = load_ok("{\"streams\":[{\"match\":\"a\",\"synthesizer\":\"window\",\"sharded\":true,"
                                  "\"config\":" WINDOW_CFG "},{\"prefix\":\"c/\",\"synthesizer\":\"cumulative\","
                                  "\"sharded\":true,\"config\":" CUMUL_CFG "},{\"match\":\"b\",\"synthesizer\":"
                                  "\"window\",\"sharded\":false,\"config\":" WINDOW_CFG "}]}");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT(dp_stream_config_route(c, "a", 1)->sharded);
    CU_ASSERT(dp_stream_config_route(c, "c/x", 3)->sharded);
    CU_ASSERT(!dp_stream_config_route(c, "b", 1)->sharded);
    dp_stream_config_free(c);
    static const bad_config BAD[] = {
        {"{\"streams\":[{\"match\":\"a\",\"synthesizer\":\"window\",\"sharded\":1,\"config\":" WINDOW_CFG "}]}",
         "streams[0].sharded: must be true or false"},
        {"{\"streams\":[{\"match\":\"a\",\"synthesizer\":\"hypercube\",\"sharded\":true,\"config\":"
         "{\"epsilon\":2}}]}", "streams[0].sharded: synthesizer \"hypercube\" does not shard by entity"},
        {"{\"streams\":[{\"match\":\"a\",\"synthesizer\":\"window\",\"sharded\":true,"
         "\"close_on_complete_roster\":true,\"config\":" WINDOW_CFG "}]}",
         "streams[0].sharded: not with close_on_complete_roster"},
        {"{\"streams\":[{\"prefix\":\"a\",\"synthesizer\":\"window\",\"sharded\":true,\"max_streams\":2,"
         "\"config\":" WINDOW_CFG "}]}", "streams[0].sharded: not with max_streams"},
    };
    expect_refused("sharded", BAD, sizeof BAD / sizeof BAD[0]);
}

static const dptest_case CASES[] = {
    {"sharded routes: window and cumulative only, no roster close, no max_streams", test_sharded},
    {"per-route step policy; partitioner choice and key placement", test_gate_and_partitioner},
    {"routing: exact before prefix, first match wins", test_routing},
    {"topic, kafka and delta defaults and overrides", test_defaults},
    {"validation errors name the JSON path", test_validation},
    {"loading from a file", test_load_file},
    {"wire: framing and schema ids", test_wire},
    {NULL, NULL},
};

int main(void) { return dptest_run("stream_config", CASES); }
