/* demo_hypercube.h — the embedded demo's sixth stream: parcel drop-off
 * locations in the made-up 10 km × 10 km town, through `hypercube` (He,
 * Vershynin, Zhu 2024).  Each month 1500 drop-offs arrive (most in the old
 * centre, more and more in the new district); every release holds exactly
 * as many synthetic drop-offs as there have been.  After each release the
 * demo compares the share of the town's four districts (quadrants), true
 * and synthetic.  The offline and the Kafka demo feed the same points and
 * the same sink, so they print the same. */
#ifndef DP_DEMO_HYPERCUBE_H
#define DP_DEMO_HYPERCUBE_H

#include <stdint.h>
#include <stdio.h>

#include "core/buf.h"
#include "demo/demo_ledger.h"
#include "demo/demo_longitudinal.h"
#include "synth/common/synth.h"

#define DP_DEMO_DROPS_STREAM "demo/drops"
#define DP_DEMO_DROPS_PER_MONTH 1500

typedef struct dp_demo_drops {
    dp_key   seed;
    uint64_t steps;
    uint64_t truth[4], t;            /* true drop-offs per district (SW, SE, NW, NE), in all */
    uint64_t syn[4], syn_points;     /* the release being received */
    double   depth;
    int      bad;
    dp_demo_ledger ledger;
    dp_buf   lines;
} dp_demo_drops;

int  dp_demo_drops_init(dp_demo_drops *d, const dp_demo_params *p);
void dp_demo_drops_free(dp_demo_drops *d);
json_t *dp_demo_drops_config(const dp_demo_params *p);

/* Month t's drop-offs, handed to fn in order; no CLOSE_STEP. */
typedef int (*dp_demo_drops_update_fn)(void *ctx, const dp_update *u);
int  dp_demo_drops_month(dp_demo_drops *d, uint64_t t, dp_demo_drops_update_fn fn, void *ctx);

dp_release_sink dp_demo_drops_sink(dp_demo_drops *d);
int  dp_demo_drops_note(dp_demo_drops *d, uint64_t t);
void dp_demo_drops_print(FILE *f, const dp_demo_drops *d);

#endif
