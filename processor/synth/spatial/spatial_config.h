/* spatial_config.h — the validated JSON configuration of `spatial`
 * (PHDStream, seed 002, docs/privacy.md §6).
 *
 * Keys (unknown keys refused; every error names its key):
 *   box                   [[min, max], …] one pair per dimension (default [[0,1],[0,1]])
 *   epsilon               pure ε-DP over the stream per user (required)
 *   sensitivity           s: insert/delete events per user (default 1: event-level);
 *                         s > 1 requires an entity id and enforces s (USER_LIMIT)
 *   tree_budget_fraction  share of ε for PrivTree (default 0.5; the rest counts)
 *   fanout                β (only 2: each split halves one coordinate)
 *   max_depth             h_max (default 20)
 *   theta                 PrivTree's threshold θ (default 0)
 *   init_steps            t₀: input steps 1..t₀ form the first release (default 1)
 *   counter               a counter kind or {"kind", "block", "buffers"} (default "simple")
 *   unsafe_paper_variant  true: the published rule (see spatial.c), NOT differentially
 *                         private under deletions — for comparison only; every budget
 *                         event says so (dp 0) and check-config warns (default false)
 *   variant               "safe" only (accepted for old configs); "paper" is refused with
 *                         a message naming unsafe_paper_variant
 *   horizon               T input steps (required by bounded counters; absent: unbounded)
 *   max_nodes             materialised-tree limit (default 2^22 nodes)
 *   max_release_points    a release with more points is cut and flagged (default 10^7, at most 2^34)
 *   output                "full" (default: every step all synthetic points) | "delta" (the
 *                         points added and removed since the last release; see spatial.c)
 *   delta                 accepted (the stream file sets it on every stream) and unused:
 *                         spatial is pure ε-DP */
#ifndef DP_SPATIAL_CONFIG_H
#define DP_SPATIAL_CONFIG_H

#include <jansson.h>
#include <stdint.h>

#include "core/counter.h"
#include "synth/common/partition.h"

#define DP_SPATIAL_MAX_HORIZON ((uint64_t)1 << 32)

typedef enum dp_spatial_variant { DP_SPATIAL_SAFE = 0, DP_SPATIAL_PAPER = 1 } dp_spatial_variant;

typedef struct dp_spatial_config {
    dp_box             box;
    double             epsilon;
    uint32_t           sensitivity;        /* s */
    double             tree_fraction;
    uint32_t           max_depth;
    double             theta;
    uint64_t           init_steps;         /* t₀ */
    dp_counter_kind    counter_kind;
    uint64_t           counter_block;
    uint32_t           counter_buffers;
    dp_spatial_variant variant;
    uint64_t           horizon;            /* 0: unbounded */
    uint32_t           max_nodes;
    uint64_t           max_release_points;
    int                delta_output;
    int                event_level;        /* sensitivity given as absent/1 without entities */
} dp_spatial_config;

int dp_spatial_config_parse(dp_spatial_config *c, const json_t *cfg, char *errstr, size_t errstr_size);

/* The release step for input step t (t₀ input steps make release step 1). */
static inline uint64_t dp_spatial_release_step(const dp_spatial_config *c, uint64_t t)
{
    return t <= c->init_steps ? 1 : t - c->init_steps + 1;
}

#endif
