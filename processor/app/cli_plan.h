/* cli_plan.h — a stream's plan (synth.h, dp_synth_plan) as text and as
 * JSON, one form for every command that shows it (check-config,
 * inspect-snapshot). */
#ifndef DP_CLI_PLAN_H
#define DP_CLI_PLAN_H

#include <jansson.h>

#include "synth/common/synth.h"

/* Lines "  <label>  <value>" (labels 12 wide): mechanism, privacy,
 * budget, spends, per step, noise, accuracy, public. */
void cli_plan_print(const dp_synth_plan *p);
/* The same fields into object o (numbers exact; NaN as null). */
void cli_plan_json(const dp_synth_plan *p, json_t *o);
/* 0 if the plan's noise figures say dp 0 — a synthesizer run under its
 * unsafe_paper_variant switch, NOT differentially private — else 1. */
int cli_plan_is_dp(const dp_synth_plan *p);
/* v, or null when it is not finite (JSON has no NaN). */
json_t *cli_json_real(double v);

#endif
