/* demo_longitudinal.h — the embedded demo's reusable half: receive the
 * releases of a `window` and a `cumulative` synthesizer through release
 * sinks, keep the same statistics on the true panel, and print truth vs
 * synthetic per step plus the budget ledger.
 *
 * The offline demo (dp_demo_run_offline) drives the synthesizers directly;
 * a Kafka-backed demo only has to feed consumed records, manifests and
 * budget events into the sinks returned here (and the true panel into
 * dp_demo_truth_step) and call the same printers. */
#ifndef DP_APP_DEMO_LONGITUDINAL_H
#define DP_APP_DEMO_LONGITUDINAL_H

#include <stdint.h>
#include <stdio.h>

#include "demo/longitudinal_view.h"
#include "connectors/panel/panel_gen.h"
#include "synth/common/synth.h"

typedef struct dp_demo_params {
    uint64_t n;              /* individuals */
    uint64_t steps;          /* T (months) */
    uint32_t k;              /* window length */
    double   rho_window;     /* zCDP budget of the window synthesizer */
    double   rho_cumulative; /* zCDP budget of the cumulative synthesizer */
    double   stay_employed;  /* P(employed next month | employed) */
    double   stay_unemployed;/* P(unemployed next month | unemployed) */
    const char *counter;     /* counter kind of the cumulative synthesizer */
    dp_key   panel_seed;
} dp_demo_params;

/* The built-in sample panel and synthesizer settings. */
void dp_demo_default_params(dp_demo_params *p);

typedef struct dp_demo_budget {
    int    seen;
    int    exhausted;
    double spent_total, budget_total, delta, eps_simple, eps_cks, max_abs_error;
    char   mechanism[64];
    char   neighbors[16];
} dp_demo_budget;

typedef struct dp_demo_state {
    dp_demo_params     p;
    dp_window_view     win_true, win_syn;
    dp_cumulative_view cum_true, cum_syn;
    dp_demo_budget     win_budget, cum_budget;
    int                win_released;   /* the window synthesizer released patterns at the last step */
    int                cum_released;
} dp_demo_state;

int  dp_demo_state_init(dp_demo_state *d, const dp_demo_params *p);
void dp_demo_state_free(dp_demo_state *d);
dp_release_sink dp_demo_window_sink(dp_demo_state *d);
dp_release_sink dp_demo_cumulative_sink(dp_demo_state *d);
/* The true panel's values at the next step (category 1 = unemployed). */
int  dp_demo_truth_step(dp_demo_state *d, const uint8_t *values, size_t n);

/* The two demo streams.  Their ids feed the noise DRBG (drbg.h), so the
 * offline and the Kafka demo must use exactly these for the same releases. */
#define DP_DEMO_WINDOW_STREAM     "demo/window"
#define DP_DEMO_CUMULATIVE_STREAM "demo/cumulative"

/* The synthesizer configs of the two streams (new references; NULL on
 * out-of-memory).  Shared by the offline and the Kafka demo so the two
 * run the very same synthesizers. */
json_t *dp_demo_window_config(const dp_demo_params *p);
json_t *dp_demo_cumulative_config(const dp_demo_params *p);

/* The sample panel's generator parameters (employed = 0, unemployed = 1). */
void dp_demo_panel_params(const dp_demo_params *p, dp_panel_params *out);

/* `how` completes the title line, e.g. "offline, no Kafka". */
void dp_demo_print_intro_how(FILE *f, const dp_demo_params *p, const char *how);
void dp_demo_print_intro(FILE *f, const dp_demo_params *p);   /* how = "offline, no Kafka" */
void dp_demo_print_step(FILE *f, const dp_demo_state *d, uint64_t t);
void dp_demo_print_ledger(FILE *f, const dp_demo_state *d);

/* Generate the panel, run both synthesizers over it step by step with
 * `key`, print everything to f.  DP_OK or an error with a message. */
int  dp_demo_run_offline(const dp_demo_params *p, const dp_key *key, FILE *f,
                         char *errstr, size_t errstr_size);

#endif
