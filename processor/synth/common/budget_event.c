/* budget_event.c — budget-event fields shared by synthesizers (synth.h).
 * Its own file: the synthesizers call it and synth.c's registry refers to
 * the synthesizers, so in synth.c it would close a call cycle. */
#include "synth/common/synth.h"

void dp_budget_event_parallel_steps(dp_budget_event *e, const dp_ledger *l, double delta)
{
    e->model = l->model;
    e->delta = delta;
    e->spent_step = l->spent;
    e->spent_total = l->spent;
    e->budget_total = l->budget;
    e->spent_units_step = l->units_spent;
    e->spent_units_total = l->units_spent;
    e->budget_units = l->units_total;
    dp_privacy_describe((dp_privacy){l->model, l->spent}, delta, &e->eps_simple, &e->eps_cks);
}
