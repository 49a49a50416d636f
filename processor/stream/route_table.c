/* route_table.c — an update's stream, or why there is none (route_table.h).
 *
 * Owns: nothing (the stream table is the caller's).  Calls: stream_config
 * (the first matching route), synth (create), step_gate (init). */
#include "stream/route_table.h"

#include "core/dp_error.h"

/* How many streams `route` has in `partition` (max_streams counts per
 * partition: one instance owns a partition and sees all of its streams,
 * in log order, so the count at any offset is what a replay counts). */
static uint32_t route_streams(const dp_route_table *t, const dp_stream_route *route, int32_t partition)
{
    uint32_t n = 0;
    for (size_t i = 0; i < t->streams->cap; i++) {
        const void *s = dp_bytes_map_at(t->streams, i);
        int32_t part = 0;
        n += s && t->route_of(s, &part) == route && part == partition;
    }
    return n;
}

dp_route_verdict dp_route_update(const dp_route_table *t, const char *id, size_t len, int32_t partition,
                                 void **stream, const dp_stream_route **route)
{
    dp_bytes_map_slot *slot = t->table_key ? dp_bytes_map_find(t->streams, t->table_key, t->table_key_len)
                                           : dp_bytes_map_find(t->streams, id, len);
    if (slot && slot->value) {
        *stream = slot->value;
        return DP_ROUTE_KNOWN;
    }
    const dp_stream_route *r = dp_stream_config_route(t->cfg, id, len);
    if (!r)
        return DP_ROUTE_UNKNOWN;
    if (t->misplaced && t->misplaced(t->ctx))
        return DP_ROUTE_MISPLACED;
    *route = r;
    if (r->max_streams && route_streams(t, r, partition) >= r->max_streams)
        return DP_ROUTE_FULL;
    return DP_ROUTE_NEW;
}

int dp_route_open(const dp_stream_route *route, const dp_key *key, const char *id, size_t len, dp_synth **synth,
                  dp_step_gate *gate, char *err, size_t errsz)
{
    dp_synth_env env = {.key = key, .stream_id = id, .stream_id_len = len};
    err[0] = '\0';
    int rc = dp_synth_create(synth, route->synthesizer, route->config, &env, err, errsz);
    if (rc != DP_OK)
        return rc;
    dp_gate_init(gate, *synth, &route->gate);
    return DP_OK;
}
