/* cli_plan.h — a stream's plan (synth.h, dp_synth_plan) as text and as
 * JSON, one form for every command that shows it (check-config,
 * inspect-snapshot), and the one warning run, replay and check-config give
 * for a route that is not differentially private. */
#ifndef DP_CLI_PLAN_H
#define DP_CLI_PLAN_H

#include <jansson.h>

#include "stream/stream_config.h"
#include "synth/common/synth.h"

/* Lines "  <label>  <value>" (labels 12 wide): mechanism, privacy,
 * budget, spends, per step, noise, accuracy, public. */
void cli_plan_print(const dp_synth_plan *p);
/* The same fields into object o (numbers exact; NaN as null). */
void cli_plan_json(const dp_synth_plan *p, json_t *o);
/* 0 if the plan's noise figures say dp 0 — a synthesizer run under its
 * unsafe_paper_variant switch, NOT differentially private — else 1. */
int cli_plan_is_dp(const dp_synth_plan *p);
/* The plan of route r's synthesizer, built from its config with a
 * throwaway key (no stream exists yet: the plan depends on the config only). */
int cli_route_plan(const dp_stream_route *r, dp_synth_plan *plan, char *err, size_t errn);
/* The warning for route i whose plan says dp 0: a WARNING line on stderr,
 * or (as_log) a warn-level log event "not_differentially_private" in the
 * run's log format.  The line holds configuration only (public). */
void cli_warn_not_dp(size_t i, const dp_stream_route *r, int as_log);
/* cli_warn_not_dp for every route of cfg whose plan says dp 0, so a config
 * that is valid but not private never starts silently.  DP_OK, or the
 * plan's error (memory only: the loader built each synthesizer already). */
int cli_warn_not_dp_routes(const dp_stream_config *cfg, int as_log, char *err, size_t errn);
/* v, or null when it is not finite (JSON has no NaN). */
json_t *cli_json_real(double v);

#endif
