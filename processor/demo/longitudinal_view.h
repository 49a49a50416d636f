/* longitudinal_view.h — what a consumer of `window` / `cumulative`
 * releases computes from them, next to the same statistic on the true
 * panel.  Used by the offline demo and the longitudinal benchmark; a
 * Kafka-fed demo can feed consumed records into the same views.
 *
 * window (seed 000 Alg. 1; release format in the synthesizer's docs): at
 * step k each synthetic individual arrives as a ROW of its k values
 * (oldest first), afterwards as one CATEGORY per step.  The view keeps
 * each synthetic individual's last k values as a pattern code
 *   code = Σ_j v_{t-k+1+j} · c^{k-1-j}   (oldest value most significant)
 * and the histogram p_s of codes.  Debiasing (seed 000 §3, docs/privacy.md
 * §3): the release contains n_pad padding individuals per pattern, so the
 * unbiased fraction estimate is (p_s − n_pad) / (n* − c^k·n_pad); the raw
 * one is p_s / n*.
 *
 * cumulative (seed 000 Alg. 2): one bit per synthetic individual per step;
 * the view keeps each synthetic individual's weight (number of 1s so far)
 * and S_b = #{weight >= b}, the answer to "how many were in state 1 for
 * at least b steps up to now".
 *
 * Memory: 8 bytes per (synthetic or true) individual, plus c^k counts. */
#ifndef DP_APP_LONGITUDINAL_VIEW_H
#define DP_APP_LONGITUDINAL_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "synth/common/synth.h"

/* --- window ----------------------------------------------------------------- */

typedef struct dp_window_view {
    uint32_t  k, c;
    uint64_t  bins;          /* c^k */
    uint64_t *code;          /* per individual (synthetic id or panel index) */
    size_t    n, cap;        /* individuals seen */
    uint64_t  values_seen;   /* values appended per individual so far (= steps since the start) */
    int64_t  *hist;          /* counts per pattern code, valid when values_seen >= k */
    /* from the last manifest (synthetic views only) */
    double    n_pad;
    uint64_t  population;
    int       clamped;
    int       bad;           /* a record did not fit the expected format */
} dp_window_view;

int  dp_window_view_init(dp_window_view *v, uint32_t k, uint32_t c);
void dp_window_view_free(dp_window_view *v);
/* Synthetic side: feed a release record by record, then its manifest. */
int  dp_window_view_record(dp_window_view *v, const dp_synth_record *r);
int  dp_window_view_manifest(dp_window_view *v, const dp_release_manifest *m);
/* True side: all n individuals' values at the next step (values[i] < c). */
int  dp_window_view_truth_step(dp_window_view *v, const uint8_t *values, size_t n);
/* Fractions per pattern code (valid once values_seen >= k). */
double dp_window_view_fraction_true(const dp_window_view *v, uint64_t code);
double dp_window_view_fraction_raw(const dp_window_view *v, uint64_t code);
double dp_window_view_fraction_debiased(const dp_window_view *v, uint64_t code);

/* --- cumulative -------------------------------------------------------------- */

typedef struct dp_cumulative_view {
    uint64_t  horizon;
    uint32_t *weight;        /* per individual */
    size_t    n, cap;
    uint64_t  steps;         /* steps fed so far */
    uint64_t *at_least;      /* at_least[b] = #{weight >= b}, b = 0..horizon */
    uint64_t  step_records;  /* records of the step being fed */
    int       bad;
} dp_cumulative_view;

int  dp_cumulative_view_init(dp_cumulative_view *v, uint64_t horizon);
void dp_cumulative_view_free(dp_cumulative_view *v);
int  dp_cumulative_view_record(dp_cumulative_view *v, const dp_synth_record *r);
int  dp_cumulative_view_manifest(dp_cumulative_view *v, const dp_release_manifest *m);
/* True side: bits[i] ∈ {0,1} for all n individuals at the next step. */
int  dp_cumulative_view_truth_step(dp_cumulative_view *v, const uint8_t *bits, size_t n);

/* A manifest's debias value by key, or `dflt`. */
double dp_manifest_debias(const dp_release_manifest *m, const char *key, double dflt);
/* A kv list's value by key, or `dflt`. */
double dp_kv_find(const dp_kv *kv, size_t n, const char *key, double dflt);

#endif
