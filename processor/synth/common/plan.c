/* plan.c — the helpers that build a stream's plan (synth.h,
 * dp_synth_plan) for the synthesizers' describe ops, and the public
 * exhaustion rule both halves stop by (dp_synth_plan_exhausted,
 * docs/kafka.md §10).  Its own file: the
 * synthesizers call it and synth.c's registry refers to the synthesizers,
 * so in synth.c it would close a call cycle (as budget_event.c). */
#include "synth/common/synth.h"

#include "core/dp_error.h"

#include <math.h>
#include <stdlib.h>

void dp_synth_plan_free(dp_synth_plan *p)
{
    if (!p)
        return;
    free(p->runs);
    p->runs = NULL;
    p->n_runs = 0;
}

void dp_plan_budget(dp_synth_plan *p, dp_privacy_model model, double budget, double delta)
{
    p->model = model;
    p->budget_total = budget;
    p->delta = model == DP_PRIVACY_ZCDP ? delta : 0;
    if (dp_privacy_describe((dp_privacy){model, budget}, delta, &p->eps_simple, &p->eps_cks) != DP_OK)
        p->eps_simple = p->eps_cks = NAN;
}

int dp_plan_run_add(dp_synth_plan *p, uint64_t first, uint64_t last, double spend)
{
    dp_plan_run *prev = p->n_runs ? &p->runs[p->n_runs - 1] : NULL;
    if (prev && prev->last && prev->last + 1 == first && prev->spend == spend) {
        prev->last = last;
        return DP_OK;
    }
    dp_plan_run *r = realloc(p->runs, (p->n_runs + 1) * sizeof *r);
    if (!r)
        return DP_ENOMEM;
    p->runs = r;
    p->runs[p->n_runs++] = (dp_plan_run){.first = first, .last = last, .spend = spend};
    return DP_OK;
}

void dp_plan_kv(dp_kv *arr, size_t *n, const char *key, double value)
{
    if (*n < DP_PLAN_MAX_KV)
        arr[(*n)++] = (dp_kv){key, value};
}

int dp_synth_plan_exhausted(uint64_t last_step, uint64_t closed)
{
    return last_step != 0 && closed >= last_step;
}
