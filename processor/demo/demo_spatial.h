/* demo_spatial.h — the embedded demo's fourth stream: check-ins on a map
 * through `spatial` (PHDStream).  Each month people check in at places in
 * a made-up 10 km × 10 km town (an old centre, a new district, a ring road)
 * and some earlier check-ins are withdrawn (by the person who made them);
 * after every release the demo answers a few public range queries on the
 * true and the synthetic points.  The offline and the Kafka demo feed the
 * same updates and the same sink, so they print the same. */
#ifndef DP_DEMO_SPATIAL_H
#define DP_DEMO_SPATIAL_H

#include <stdint.h>
#include <stdio.h>

#include "core/buf.h"
#include "demo/demo_ledger.h"
#include "demo/demo_longitudinal.h"
#include "synth/common/synth.h"

#define DP_DEMO_MAP_STREAM "demo/map"
#define DP_DEMO_MAP_INSERTS 300
#define DP_DEMO_MAP_DELETES 60
#define DP_DEMO_MAP_QUERIES 4

typedef struct dp_demo_map {
    dp_key    seed;
    uint64_t  steps;
    uint64_t  n_live, cap_live, next_entity;
    double   *live;                              /* (x, y) per live check-in, insertion order */
    uint64_t *live_id;
    uint64_t  truth[DP_DEMO_MAP_QUERIES];        /* true points in each query rectangle */
    uint64_t  syn[DP_DEMO_MAP_QUERIES];          /* the release being received */
    uint64_t  syn_points;
    double    leaves, depth;
    int       bad;
    dp_demo_ledger ledger;
    dp_buf    lines;
} dp_demo_map;

int  dp_demo_map_init(dp_demo_map *d, const dp_demo_params *p);
void dp_demo_map_free(dp_demo_map *d);
json_t *dp_demo_map_config(const dp_demo_params *p);

/* Month t's updates (check-ins, then withdrawals of earlier ones) handed
 * to fn in order; no CLOSE_STEP. */
typedef int (*dp_demo_map_update_fn)(void *ctx, const dp_update *u);
int  dp_demo_map_month(dp_demo_map *d, uint64_t t, dp_demo_map_update_fn fn, void *ctx);

dp_release_sink dp_demo_map_sink(dp_demo_map *d);
int  dp_demo_map_note(dp_demo_map *d, uint64_t t);
void dp_demo_map_print(FILE *f, const dp_demo_map *d);

#endif
