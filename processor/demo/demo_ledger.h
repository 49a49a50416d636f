/* demo_ledger.h — the last budget event of one of the demo's single-stream
 * views (table, map, modes) and its "ledger:" line. */
#ifndef DP_DEMO_LEDGER_H
#define DP_DEMO_LEDGER_H

#include <stdint.h>
#include <stdio.h>

#include "synth/common/synth.h"

typedef struct dp_demo_ledger {
    uint64_t budget_step;   /* the newest step whose budget event was taken */
    double   spent_total, budget_total;
    int      exhausted;
    char     mechanism[128];
} dp_demo_ledger;

void dp_demo_ledger_take(dp_demo_ledger *l, const dp_budget_event *e);
/* "  ledger: <mechanism>, spent eps S of B[ (EXHAUSTED)] — <unit>" */
void dp_demo_ledger_print(FILE *f, const dp_demo_ledger *l, const char *unit);

#endif
