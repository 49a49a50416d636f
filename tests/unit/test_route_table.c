/* test_route_table.c — the one routing rule of the consume loop and of
 * replay (stream/route_table.h): a known stream is found; an id no route
 * matches is unknown; the placement check runs after the route matched and
 * before the cap; max_streams counts the route's streams per partition. */
#include <stdlib.h>
#include <string.h>

#include "core/bytes_map.h"
#include "core/dp_error.h"
#include "dptest.h"
#include "stream/route_table.h"

typedef struct fake_stream {
    const dp_stream_route *route;
    int32_t partition;
} fake_stream;

static const dp_stream_route *fake_route_of(const void *stream, int32_t *partition)
{
    const fake_stream *s = stream;
    *partition = s->partition;
    return s->route;
}

static int refuse_calls;
static int refuse(void *ctx)
{
    refuse_calls++;
    return *(int *)ctx;
}

static void put(dp_bytes_map *m, const char *id, fake_stream *s)
{
    dp_bytes_map_slot *e = dp_bytes_map_upsert(m, id, strlen(id));
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    e->value = s;
}

static void test_route_update(void)
{
    const char *text = "{\"streams\":[{\"prefix\":\"g/\",\"synthesizer\":\"cumulative\",\"max_streams\":2,"
                       "\"config\":{\"horizon\":4,\"rho\":1}},"
                       "{\"match\":\"w\",\"synthesizer\":\"cumulative\",\"config\":{\"horizon\":4,\"rho\":1}}]}";
    dp_stream_config *cfg = NULL;
    char err[512] = "";
    CU_ASSERT_EQUAL_FATAL(dp_stream_config_parse(&cfg, text, strlen(text), err, sizeof err), DP_OK);
    const dp_stream_route *g = dp_stream_config_route(cfg, "g/1", 3);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    dp_bytes_map m;
    dp_bytes_map_init(&m);
    fake_stream a = {g, 0}, b = {g, 1};
    put(&m, "g/a", &a);
    put(&m, "g/b", &b);
    int no = 0;
    dp_route_table t = {.cfg = cfg, .streams = &m, .route_of = fake_route_of, .misplaced = refuse, .ctx = &no};
    void *found = NULL;
    const dp_stream_route *route = NULL;

    refuse_calls = 0;
    CU_ASSERT_EQUAL(dp_route_update(&t, "g/a", 3, 0, &found, &route), DP_ROUTE_KNOWN);
    CU_ASSERT_PTR_EQUAL(found, &a);
    CU_ASSERT_EQUAL(refuse_calls, 0);   /* a known stream is not placed again */
    CU_ASSERT_EQUAL(dp_route_update(&t, "zzz", 3, 0, &found, &route), DP_ROUTE_UNKNOWN);
    CU_ASSERT_EQUAL(refuse_calls, 0);   /* unknown before misplaced */
    /* one g/ stream in partition 0: room for one more there */
    CU_ASSERT_EQUAL(dp_route_update(&t, "g/c", 3, 0, &found, &route), DP_ROUTE_NEW);
    CU_ASSERT_PTR_EQUAL(route, g);
    fake_stream c = {g, 0};
    put(&m, "g/c", &c);
    CU_ASSERT_EQUAL(dp_route_update(&t, "g/d", 3, 0, &found, &route), DP_ROUTE_FULL);
    CU_ASSERT_PTR_EQUAL(route, g);
    CU_ASSERT_EQUAL(dp_route_update(&t, "g/d", 3, 1, &found, &route), DP_ROUTE_NEW);   /* per partition */
    CU_ASSERT_EQUAL(dp_route_update(&t, "w", 1, 0, &found, &route), DP_ROUTE_NEW);     /* no cap */
    int yes = 1;
    t.ctx = &yes;
    refuse_calls = 0;
    CU_ASSERT_EQUAL(dp_route_update(&t, "g/d", 3, 0, &found, &route), DP_ROUTE_MISPLACED);   /* before the cap */
    CU_ASSERT_EQUAL(refuse_calls, 1);
    t.misplaced = NULL;
    CU_ASSERT_EQUAL(dp_route_update(&t, "g/d", 3, 0, &found, &route), DP_ROUTE_FULL);

    dp_key key;
    dptest_key(&key, 0);
    dp_synth *synth = NULL;
    dp_step_gate gate;
    CU_ASSERT_EQUAL(dp_route_open(g, &key, "g/d", 3, &synth, &gate, err, sizeof err), DP_OK);
    CU_ASSERT_PTR_NOT_NULL(synth);
    CU_ASSERT_EQUAL(dp_synth_open_step(synth), 1);
    dp_gate_free(&gate);
    dp_synth_destroy(synth);
    dp_bytes_map_free(&m);
    dp_stream_config_free(cfg);
}

static const dptest_case CASES[] = {
    {"known, unknown, misplaced, full (per partition), new; a new stream's synthesizer", test_route_update},
    {NULL, NULL},
};

int main(void) { return dptest_run("route_table", CASES); }
