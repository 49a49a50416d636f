/* marginal.h — internals of the `marginal` synthesizer (seed 001;
 * docs/privacy.md §5), shared by its files:
 *
 *   marginal_config.c   the JSON configuration and the workload layout
 *   marginal_ingest.c   ingest half: the current rows, ∇f_t's workload marginals
 *   marginal.c          release half: its lifecycle, a step's frame, the release
 *   marginal_method.c   the methods' plan and step: select (exponential mechanism),
 *                       measure (continual counters), fit; the budget
 *   marginal_mw.c       the `mw` fit: multiplicative weights over the full domain
 *   marginal_pgm.c      the `pgm` fit: a graphical model on a junction tree
 *   marginal_factor.c   factors and junction-tree inference for `pgm`
 *
 * The synthetic data g_t is held by a "model" (dp_mmodel) that the fit
 * updates; `mw` keeps one weight per domain cell, `pgm` a graphical model. */
#ifndef DP_SYNTH_MARGINAL_H
#define DP_SYNTH_MARGINAL_H

#include "synth/marginal/marginal_config.h"
#include "synth/common/synth.h"

#include "core/buf.h"
#include "core/drbg.h"

/* The ingest half (marginal_ingest.c), as dp_synth_ops entries. */
int  dp_marginal_ingest_create(dp_ingest_half **out, const json_t *config, char *errstr, size_t errstr_size);
int  dp_marginal_ingest_update(dp_ingest_half *in, const dp_update *u, dp_reject_reason *reason);
int  dp_marginal_ingest_close(dp_ingest_half *in, uint64_t step, dp_stats *out);
int  dp_marginal_ingest_roster_complete(const dp_ingest_half *in);
int  dp_marginal_ingest_save(const dp_ingest_half *in, dp_buf *b);
int  dp_marginal_ingest_load(dp_ingest_half *in, dp_reader *r);
void dp_marginal_ingest_destroy(dp_ingest_half *in);
uint64_t dp_marginal_ingest_open_step(const dp_ingest_half *in);

/* --- the synthetic-data model ------------------------------------------------ */

/* A (noisy) measurement of one workload: values[cells], in workload cell
 * order; weight = 1/σ of its per-cell error (how much the fit trusts it);
 * damp in (0, 1]: the fraction of each fit update applied (0 = 1, a full
 * IPF step; estimate "all_measurements" sets it, marginal_estimate.c). */
typedef struct dp_mmeasure {
    const dp_marginal_workload *w;
    const double               *values;
    double                      weight;
    double                      damp;
} dp_mmeasure;

typedef struct dp_mmodel dp_mmodel;

/* Receives one synthetic row (n_attrs indices) of a release. */
typedef int (*dp_mrow_fn)(void *ctx, const int32_t *row);

typedef struct dp_mmodel_ops {
    const char *name;    /* "mw" / "pgm": stated in every manifest */
    int    (*create)(dp_mmodel **out, const dp_marginal_config *c, char *errstr, size_t errstr_size);
    void   (*destroy)(dp_mmodel *m);
    int    (*copy)(dp_mmodel *dst, const dp_mmodel *src);
    double (*total)(const dp_mmodel *m);
    /* W(g) = the model's marginal on w, scaled by its total. */
    int    (*marginal)(const dp_mmodel *m, const dp_marginal_workload *w, double *out);
    /* Refit to the measurements with the given total, warm-started. */
    int    (*fit)(dp_mmodel *m, const dp_mmeasure *ms, size_t n, double total, uint32_t iterations);
    /* acc <- ((l-1)·acc + h)/l: the running mean of h_{t,1..l} (Alg. 3 line 19). */
    int    (*average)(dp_mmodel *acc, const dp_mmodel *h, uint32_t l);
    /* n synthetic rows drawn from the model (post-processing). */
    int    (*rows)(const dp_mmodel *m, uint64_t n, dp_drbg *g, dp_mrow_fn emit, void *ctx);
    int    (*save)(const dp_mmodel *m, dp_buf *b);
    int    (*load)(dp_mmodel *m, dp_reader *r);
    /* 1 if a measurement of w would enter this model's fit; NULL: every workload does. */
    int    (*admits)(const dp_mmodel *m, const dp_marginal_workload *w);
} dp_mmodel_ops;

extern const dp_mmodel_ops dp_mmodel_mw;
extern const dp_mmodel_ops dp_mmodel_pgm;
/* The mw model's expected counts N·p over the whole domain (the mwem baseline adds them up). */
int dp_mmodel_mw_counts(const dp_mmodel *m, double *out);


/* Rows from a dense vector of expected counts over the domain (cells in
 * mixed radix, attribute 0 most significant), rounded as above, in domain
 * order. */
int dp_marginal_rows_from_counts(const dp_marginal_config *c, const double *counts, uint64_t n, dp_drbg *g,
                                 dp_mrow_fn emit, void *ctx);

/* The selection utility of workload i on the exponential mechanism's
 * fixed-point grid: Σ_c floor(|base_c − q_c|·S/|W|) − round(bias·S) with
 * S = 2^16·min|W|; one row changes it by at most DP_MARGINAL_UTILITY_DELTA
 * (marginal_method.c derives it). */
#define DP_MARGINAL_GRID_BITS 16
#define DP_MARGINAL_UTILITY_DELTA (((uint64_t)1 << DP_MARGINAL_GRID_BITS) + 2)
int64_t dp_marginal_grid_utility(const dp_marginal_config *c, size_t i, const double *base, const double *q,
                                 double bias);

/* W(counts) for a dense vector over the domain. */
void dp_marginal_dense_marginal(const dp_marginal_config *c, const double *counts, const dp_marginal_workload *w,
                                double *out);

#endif
