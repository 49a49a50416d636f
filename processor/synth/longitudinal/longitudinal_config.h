/* longitudinal_config.h — the validated JSON configuration of `window`
 * and `cumulative` (keys documented in /work/notes/h5-config.md and in
 * window.c / cumulative.c), plus the release-side helpers both share
 * (budget event epsilons; the ledger in a snapshot: core/ledger_io.h). */
#ifndef DP_LONGITUDINAL_CONFIG_H
#define DP_LONGITUDINAL_CONFIG_H

#include <jansson.h>
#include <stdint.h>

#include "core/accountant.h"
#include "core/counter.h"
#include "synth/longitudinal/longitudinal.h"
#include "synth/common/synth.h"

#define DP_CUMULATIVE_MAX_HORIZON 1024u
#define DP_WINDOW_MAX_BINS (1u << 24)
#define DP_WINDOW_DEFAULT_MAX_PADDING 10000000ull

typedef struct dp_long_config {
    int       is_window;
    uint64_t  horizon;        /* T */
    uint32_t  k;              /* window length (cumulative: 1) */
    uint32_t  categories;     /* c (cumulative: 2) */
    double    rho;            /* total zCDP budget over the horizon */
    double    epsilon;        /* the budget as configured in ε (at delta; rho derived), or 0 for "rho" */
    int       replace;        /* neighbors: 1 = replace (default), 0 = add_remove */
    int       assume_public_n;/* add_remove only: n declared public (the paper's setting) */
    double    beta;
    int       n_pad_given;
    uint64_t  n_pad;
    uint64_t  max_padding_records; /* window: refuse plans padding releases beyond this */
    dp_impute_policy impute;
    uint32_t  impute_value;
    double    delta;
    /* cumulative only */
    dp_counter_kind counter_kind;
    uint64_t  counter_block;
    uint32_t  counter_buffers;
} dp_long_config;

int dp_long_config_parse(dp_long_config *c, const char *name, const json_t *cfg, int is_window,
                         char *errstr, size_t errstr_size);

const char *dp_long_neighbors_name(const dp_long_config *c);
/* The budget events' public_inputs sentence for this configuration. */
const char *dp_long_public_inputs(const dp_long_config *c);

/* Fill spent/total/epsilon fields of a budget event from a zCDP ledger. */
void dp_long_fill_budget(dp_budget_event *e, const dp_ledger *l, double delta);

#endif
