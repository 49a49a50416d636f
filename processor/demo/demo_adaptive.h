/* demo_adaptive.h — the embedded demo's fifth stream: which of 6 transport
 * modes 2000 commuters use each month, through `adaptive` (DSAT, corrected
 * to be DP).  A few commuters switch every month and a new bus line pulls
 * many over in month 7; DSAT re-releases the histogram only when it has
 * moved.  The offline and the Kafka demo feed the same reports and the
 * same sink, so they print the same. */
#ifndef DP_DEMO_ADAPTIVE_H
#define DP_DEMO_ADAPTIVE_H

#include <stdint.h>
#include <stdio.h>

#include "core/buf.h"
#include "demo/demo_ledger.h"
#include "demo/demo_longitudinal.h"
#include "synth/common/synth.h"

#define DP_DEMO_MODES_STREAM "demo/modes"
#define DP_DEMO_MODES 6
#define DP_DEMO_COMMUTERS 2000

typedef struct dp_demo_modes {
    dp_key   seed;
    uint64_t steps;
    uint8_t  mode[DP_DEMO_COMMUTERS];
    int64_t  truth[DP_DEMO_MODES];
    double   released[DP_DEMO_MODES];   /* the release in force */
    int      new_release, bad;
    uint64_t repeat_of;
    dp_demo_ledger ledger;
    dp_buf   lines;
} dp_demo_modes;

int  dp_demo_modes_init(dp_demo_modes *d, const dp_demo_params *p);
void dp_demo_modes_free(dp_demo_modes *d);
json_t *dp_demo_modes_config(const dp_demo_params *p);

/* Month t's reports (every commuter), handed to fn in order; no CLOSE_STEP. */
typedef int (*dp_demo_modes_update_fn)(void *ctx, const dp_update *u);
int  dp_demo_modes_month(dp_demo_modes *d, uint64_t t, dp_demo_modes_update_fn fn, void *ctx);

dp_release_sink dp_demo_modes_sink(dp_demo_modes *d);
int  dp_demo_modes_note(dp_demo_modes *d, uint64_t t);
void dp_demo_modes_print(FILE *f, const dp_demo_modes *d);

#endif
