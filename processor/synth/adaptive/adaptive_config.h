/* adaptive_config.h — the validated JSON configuration of `adaptive`
 * (seed 003, Li, Xiong, Jiang, Liu 2015, corrected as docs/privacy.md §7).
 *
 * Keys (unknown keys refused; every error names its key):
 *   categories        U histogram bins (2..65536); a report's CATEGORY value is a bin
 *   attributes        or [{"name", "categories": [labels]}, …] (like `marginal`): a report's ROW
 *                     value, one index per attribute, is the bin of the product domain
 *                     (first attribute most significant; at most 65536 bins in all)
 *   method            "dsat" (default) | "dsft" | "bd" | "ba"
 *   epsilon           pure ε-DP (required)
 *   privacy           "user" (dsat, dsft: the whole series of a user's reports) |
 *                     "w_event" with "w" (any w consecutive steps; Kellaris et al. 2014; bd and
 *                     ba are w-event only, dsat and dsft either)
 *   w                 the window of w_event privacy
 *   snapshot          what step i's histogram H_i holds (docs/privacy.md §7, "what a snapshot is"):
 *                     "step_reports" — the reports made at step i, nothing carried forward
 *                     (REPORT only; the w_event default: one report is in exactly one
 *                     snapshot, Kellaris et al.'s model) | "standing_values" — every entity's
 *                     current value, a report standing until replaced or deleted (REPORT,
 *                     INSERT, DELETE; the user default).  Under w_event standing_values is
 *                     opt-in: one report stands in every later snapshot until replaced, so
 *                     a value standing k steps costs ceil(k/w)·ε, and dropping a report of
 *                     an entity that held a value is a replacement (L1 = 2): the release and
 *                     dissimilarity noise are calibrated for 2.
 *   horizon           N steps (required)
 *   max_releases      C (dsat, dsft): per horizon (user) or per window (w_event); default
 *                     max(2, N/10) or max(2, w/10)
 *   decision_fraction k: ε₁ = kε for the decisions, ε₂ = (1−k)ε for the releases (default 0.05)
 *   n_min             public lower bound on the snapshot size (dsat, dsft; required):
 *                     the distance's sensitivity is Δ = 2/n_min
 *   threshold         T (default 0.025)
 *   theta_p           DSAT's proportional gain θ_P (default 0.5)
 *   delta_sp          DSAT's set point δ_sp (default 0.05)
 *   burn_in           DSAT's M (default 2)
 *   test_fraction     bd, ba: the window's share of ε for the dissimilarity tests (default
 *                     0.5 as in Kellaris et al.; streamdp-benchmark uses w/U)
 *   unsafe_paper_variant  true: DSFT/DSAT's published decision rules (svt.h), which are NOT
 *                     differentially private — for comparison only; every budget event says so
 *   delta             accepted (the stream file sets it on every stream) and unused: pure ε */
#ifndef DP_ADAPTIVE_CONFIG_H
#define DP_ADAPTIVE_CONFIG_H

#include <jansson.h>
#include <stdint.h>

#define DP_ADAPTIVE_MAX_CATEGORIES 65536u
#define DP_ADAPTIVE_MAX_HORIZON (1u << 24)

typedef enum dp_adaptive_method {
    DP_ADAPTIVE_DSAT = 0,
    DP_ADAPTIVE_DSFT = 1,
    DP_ADAPTIVE_BD = 2,
    DP_ADAPTIVE_BA = 3,
} dp_adaptive_method;

#define DP_ADAPTIVE_MAX_ATTRS 16

typedef struct dp_adaptive_config {
    uint32_t           categories;
    uint32_t           n_attrs;                         /* 0: plain categories */
    uint32_t           sizes[DP_ADAPTIVE_MAX_ATTRS];
    dp_adaptive_method method;
    double             epsilon;
    int                w_event;       /* bd, ba */
    int                standing;      /* snapshot: standing_values (1) or step_reports (0) */
    uint32_t           sensitivity;   /* L1 change of one H_i from one neighbouring report: 2 under
                                         w_event with standing values, else 1 */
    uint32_t           w;
    uint64_t           horizon;
    uint64_t           max_releases;  /* C */
    double             decision_fraction;
    uint64_t           n_min;
    double             threshold, theta_p, delta_sp;
    uint32_t           burn_in;
    double             test_fraction;   /* bd, ba */
    int                unsafe_paper;    /* dsat, dsft: the published (non-DP) rules */
} dp_adaptive_config;

int dp_adaptive_config_parse(dp_adaptive_config *c, const json_t *cfg, char *errstr, size_t errstr_size);

#endif
