/* marginal_release.h — the release half of `marginal`, private to its
 * files: marginal.c (the lifecycle, the release), marginal_method.c (plan,
 * select–measure–fit and mwem, the dispatch on the method),
 * marginal_snapshot.c (its exact save and restore) and the methods' files
 * (marginal_independent.c, marginal_forest*.c, marginal_counters.c…).
 * Owns the release state's layout; calls nothing (docs/privacy.md §5). */
#ifndef DP_MARGINAL_RELEASE_H
#define DP_MARGINAL_RELEASE_H

#include "synth/marginal/marginal.h"

#include "core/counter.h"
#include "core/exp_mech.h"
#include "core/sample.h"

/* "MRE2": with each workload's anchor.  "MREL" snapshots (before it) are
 * refused: their streams' noise sds would be the old ones. */
#define MARGINAL_REL_MAGIC 0x3245524du
#define UNIT_BITS 20                     /* ledger units per mechanism */
#define NAME "marginal"

typedef struct wl_state {
    dp_counter **cnt;        /* one counter per cell; NULL until first selected */
    int64_t     *c_last;     /* C_W(t): the counters' last noisy prefix sums */
    double      *r;          /* r(t, W), unless r_pending */
    uint8_t      r_pending;  /* r(t, W) = W(g) − C_W(t) with the current g, not yet computed (see marginal_method.c) */
    uint64_t     selected;   /* steps at which W was selected = counter steps */
    uint64_t     anchor;     /* counter steps when r(t, W) was last set: m = W(g_τ) + C(now) − C(anchor) */
} wl_state;

typedef struct marginal_release {
    dp_marginal_config   cfg;
    const dp_key        *key;
    char                *stream_id;
    size_t               stream_id_len;
    const dp_mmodel_ops *mops;
    /* plan */
    uint32_t             group;
    double               eps_sel;
    dp_exp_mech          em;
    dp_counter_config    ccfg;        /* each cell's counter */
    dp_dlap              dlap;        /* mwem's per-step measurement noise */
    dp_dgauss            dgauss;
    double               noise_param; /* DLap scale b or DGauss σ² of one measurement */
    double               noise_sd;    /* its standard deviation */
    double               first_sd;    /* sd of a counter's first output (a workload never selected) */
    /* state */
    uint64_t             done;
    int                  exhausted;
    dp_ledger            ledger;      /* the last released step's (per-step: see the header) */
    dp_mmodel           *g;           /* g_{t-1} (select_measure_fit) */
    dp_mmodel           *h, *avg, *fresh;
    double              *G;           /* mwem + mw: accumulated synthetic counts over the domain */
    dp_mmodel          **parts;       /* mwem + pgm: each step's fitted model (marginal_mixture.c) */
    size_t               n_parts, cap_parts;
    wl_state            *wl;
    double               last_total;
    uint64_t             last_rows;
    int                  clamped;      /* the last release was cut at max_release_rows */
    /* scratch */
    int64_t             *d;           /* W(∇f_t), all workloads' cells */
    double              *base;        /* W(g_{t-1}) + W(∇f_t) (select_measure_fit: where base_ok) */
    uint8_t             *base_ok;     /* per workload: its base is computed for this step */
    double              *q;           /* one workload's W(h) */
    double              *mvals;       /* K measurements, K × max cells */
    int64_t             *util;
    uint32_t            *cand;
    uint32_t            *sel;
    double              *sel_sd;
    dp_mmeasure         *ms;
    uint64_t             wmax;
    char               (*sel_names)[2][24];
    dp_kv               *debias;
    uint64_t             next_id;
    const dp_release_sink *sink;
    int32_t             *row_buf;
    /* method independent (marginal_independent.c): attribute a's cells at one_off[a] */
    uint64_t             one_off[DP_MARGINAL_MAX_ATTRS + 1];
    dp_counter         **one_cnt;     /* one continual counter per 1-way cell */
    int64_t             *one_last;    /* their last noisy prefix sums C_a(t) */
    double              *one_p;       /* C_a(t) projected onto the simplex of total N̂ */
    int64_t             *one_d;       /* scratch: the 1-way marginals of ∇f_t */
    /* estimate all_measurements (marginal_estimate.c): per workload its latest projected measurement */
    double              *est_values;  /* all workloads' cells, at their offsets */
    uint64_t            *est_step;    /* τ: the step it was taken (0: never) */
    double              *est_sd;      /* its per-cell sd (selected_sd) */
    double              *est_damp;    /* scratch: the weights π/max π */
    dp_mmeasure         *est_ms;      /* scratch: the refit's measurements */
    dp_mmodel           *est_g;       /* the released model: g_t refitted (g_t itself stays Alg. 3's) */
    struct dp_forest    *forest;      /* method forest (marginal_forest.h) */
    char                 load_refusal[384];   /* why the last load refused, if it can say (marginal_snapshot.c) */
} marginal_release;

/* The plan, the step and the rows, dispatched on the method (marginal_method.c): the budget split and the
 * mechanism a stream names; the step's ledger reset (2K mechanisms, d counters' measurements, or forest's
 * own); one step's selections, measurements and fit (N̂ into last_total); n rows from the model through emit,
 * drawn from the keyed DRBG of `step` labelled "marginal/rows/0". */
int         dp_marginal_plan(marginal_release *m, char *errstr, size_t errstr_size);
const char *dp_marginal_mechanism(const dp_marginal_config *c);
int         dp_marginal_step_ledger(marginal_release *m, char *errstr, size_t errstr_size);
int         dp_marginal_method_step(marginal_release *m, uint64_t step, char *errstr, size_t errstr_size);
int         dp_marginal_method_rows(const marginal_release *m, uint64_t step, uint64_t n, dp_mrow_fn emit, void *ctx);

/* Per-cell counters shared by every counter-keeping method (marginal_counters.c): `cells` counters of
 * configuration cc labelled "<prefix>/c<cell>"; one step's change dv into them (their prefix sums into
 * last, their sum into *total if not NULL); attribute a's 1-way marginal of ∇f_t off its source workload. */
int  dp_marginal_cells_create(const marginal_release *m, const dp_counter_config *cc, dp_counter **cnt,
                              uint64_t cells, const char *prefix, char *errstr, size_t errstr_size);
int  dp_marginal_cells_add(dp_counter **cnt, int64_t *last, const int64_t *dv, uint64_t cells, double *total,
                           char *errstr, size_t errstr_size);
void dp_marginal_one_way_delta(const marginal_release *m, uint32_t a, int64_t *out);
/* One counter in a snapshot (marginal_snapshot.c): its last prefix sum, then its snapshot; the inverse
 * replaces *slot (made with the configuration to expect) and requires `steps` steps. */
int  dp_marginal_put_counter(dp_buf *b, int64_t last, const dp_counter *cn);
int  dp_marginal_get_counter(const marginal_release *m, dp_reader *r, dp_counter **slot, int64_t *last,
                             uint64_t steps);

/* Workload i's per-cell counters, created the first time it is selected. */
int dp_marginal_ensure_counters(marginal_release *m, size_t i, char *errstr, size_t errstr_size);
/* A pending r(t, W) of workload i into out (its cells): W(g) − C_W(t), g the current model. */
int dp_marginal_r_from_g(const marginal_release *m, size_t i, double *out);

/* mwem + pgm's g_t, the sum of the steps' models (marginal_mixture.c). */
int    dp_marginal_mixture_add(marginal_release *m, const dp_mmodel *part);
double dp_marginal_mixture_total(const marginal_release *m);
int    dp_marginal_mixture_rows(const marginal_release *m, uint64_t n, dp_drbg *g, dp_mrow_fn emit, void *ctx);
void   dp_marginal_mixture_free(marginal_release *m);
void   dp_marginal_mixture_save(const marginal_release *m, dp_buf *b);
int    dp_marginal_mixture_load(marginal_release *m, dp_reader *r);

/* Method independent (marginal_independent.c): plan (counters, ledger), one
 * step (measure every 1-way marginal; N̂ into last_total), the product rows. */
int  dp_marginal_indep_plan(marginal_release *m, char *errstr, size_t errstr_size);
int  dp_marginal_indep_step(marginal_release *m, uint64_t step, char *errstr, size_t errstr_size);
int  dp_marginal_indep_rows(const marginal_release *m, uint64_t n, dp_drbg *g, dp_mrow_fn emit, void *ctx);
void dp_marginal_indep_free(marginal_release *m);

/* Method forest (marginal_forest*.c): plan, one step (epoch start: selection, bases, fresh counters;
 * then the ledger, the counters, the fit; N̂ into last_total), the rows, free, snapshot. */
int  dp_marginal_forest_plan(marginal_release *m, char *errstr, size_t errstr_size);
int  dp_marginal_forest_step(marginal_release *m, uint64_t step, char *errstr, size_t errstr_size);
int  dp_marginal_forest_rows(const marginal_release *m, uint64_t n, dp_drbg *g, dp_mrow_fn emit, void *ctx);
void dp_marginal_forest_free(marginal_release *m);
int  dp_marginal_forest_save(const marginal_release *m, dp_buf *b);
/* The plan's forest entries (no-op for other methods): k, C, s, the first selection's ε per pick. */
void dp_marginal_forest_describe(const marginal_release *m, dp_synth_plan *out);
int  dp_marginal_forest_load(marginal_release *m, dp_reader *r);

/* Estimate all_measurements (marginal_estimate.c); every entry is a no-op under estimate "selected". */
int    dp_marginal_est_alloc(marginal_release *m);
void   dp_marginal_est_free(marginal_release *m);
void   dp_marginal_est_record(marginal_release *m, size_t j, uint64_t step, const double *vals, double sd);
int    dp_marginal_est_refit(marginal_release *m, uint64_t step);
void   dp_marginal_est_save(const marginal_release *m, dp_buf *b);
int    dp_marginal_est_load(marginal_release *m, dp_reader *r);
/* The weight's parts (public inputs only; docs/privacy.md §5): a measurement's per-cell mean squared
 * error bound σ² + (age·B)²/|W|, and each workload's damping π/max π at step `step` (0: none kept). */
double dp_marginal_est_variance(double sd, uint64_t cells, uint64_t age, double rows_per_step);
void   dp_marginal_est_damp(const dp_marginal_config *c, uint64_t step, double total, const uint64_t *latest_step,
                            const double *latest_sd, double *damp);

int dp_marginal_release_save(const dp_release_half *rel, dp_buf *b);
int dp_marginal_release_load(dp_release_half *rel, dp_reader *r);
/* Why the last dp_marginal_release_load refused, in words ("" if it cannot say more than DP_ECORRUPT). */
const char *dp_marginal_release_load_refusal(const dp_release_half *rel);

#endif
