/* demo_ledger.c — see demo_ledger.h. */
#include "demo/demo_ledger.h"

void dp_demo_ledger_take(dp_demo_ledger *l, const dp_budget_event *e)
{
    l->budget_step = e->step;
    l->spent_total = e->spent_total;
    l->budget_total = e->budget_total;
    l->exhausted = e->status == DP_BUDGET_EXHAUSTED;
    snprintf(l->mechanism, sizeof l->mechanism, "%s", e->mechanism ? e->mechanism : "");
}

void dp_demo_ledger_print(FILE *f, const dp_demo_ledger *l, const char *unit)
{
    fprintf(f, "  ledger: %s, spent eps %.4g of %.4g%s — %s\n", l->mechanism, l->spent_total, l->budget_total,
            l->exhausted ? " (EXHAUSTED)" : "", unit);
}
