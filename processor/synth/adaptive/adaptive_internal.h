/* adaptive_internal.h — the release half's state, shared by adaptive.c
 * (user-level DSFT/DSAT, output, snapshots) and adaptive_window.c (the
 * w-event mechanisms and their per-window ledger).  Not a public header. */
#ifndef DP_ADAPTIVE_INTERNAL_H
#define DP_ADAPTIVE_INTERNAL_H

#include "core/accountant.h"
#include "core/drbg.h"
#include "core/sample.h"
#include "synth/adaptive/adaptive_config.h"
#include "synth/common/svt.h"
#include "synth/common/synth.h"

#define ADAPTIVE_NAME "adaptive"
#define ADAPTIVE_GRID_BITS 20
#define ADAPTIVE_GRID ((double)(1 << ADAPTIVE_GRID_BITS))
/* Ledger units of one DSFT/DSAT release (user-level and w-event alike). */
#define ADAPTIVE_RELEASE_UNITS ((uint64_t)1 << 16)
/* BD/BA: a window's budget is w · 2^20 units, so a test's share and BA's
 * ε_u are whole units and BD's halvings floor to whole units. */
#define ADAPTIVE_STEP_UNITS ((uint64_t)1 << 20)

typedef struct adaptive_release {
    dp_adaptive_config cfg;
    const dp_key      *key;
    char              *stream_id;
    size_t             stream_id_len;
    /* plan: dsat / dsft */
    uint64_t           units_decision;      /* user-level: ε₁ in ledger units */
    double             eps_release;         /* ε₂/C */
    int64_t            delta_grid;          /* ⌈Δ·2^20⌉ + 1 */
    dp_svt             svt;
    dp_dlap            release_noise;
    /* plan: w-event (all four methods) — the per-window integer ledger */
    uint64_t           units_window;        /* B: the window's ε in units */
    uint64_t           units_instance;      /* dsat/dsft: one AboveThreshold instance */
    uint64_t           units_test;          /* bd/ba: one step's dissimilarity test */
    uint64_t           units_pub;           /* bd/ba: the window's publication budget P = B − w·test */
    dp_dlap            dis_noise;           /* bd/ba: DLap(s/ε_test) */
    /* state */
    uint64_t           done;
    int                exhausted;
    uint64_t           releases, last_release;
    double             T;
    int64_t           *noisy;               /* H̃ of the last release */
    uint64_t          *wunits;              /* w-event: units spent at each of the last w steps (ring) */
    uint64_t          *wpub;                /* w-event: of which publications (ring) */
    uint8_t           *wflags;              /* w-event dsat/dsft: 1 released, 2 positive, per step (ring) */
    uint64_t           nullified_until;     /* ba */
    dp_ledger          ledger;              /* user-level dsat/dsft: the whole stream */
    /* the last step, for its events */
    int                released;
    uint64_t           units_step;          /* this step's spend, in ledger (user) or window units */
    uint64_t           units_spent_window;  /* w-event: the current window's */
    uint64_t           units_step_decision; /* of units_step, for decisions (SVT, tests) */
    double             last_eps2;
    /* scratch */
    int64_t           *hist;
    dp_kv             *kv;
    char             (*kv_names)[24];
} adaptive_release;

/* adaptive_draws.c */
int  adaptive_prepare_dlap(dp_dlap *d, double scale, const char *what, char *errstr, size_t errstr_size);
void adaptive_step_drbg(const adaptive_release *m, dp_drbg *g, uint64_t step, const char *label);
void adaptive_release_histogram(adaptive_release *m, uint64_t step, const dp_dlap *noise);
void adaptive_dsat_threshold(adaptive_release *m, double rate);
int  adaptive_svt_positive(adaptive_release *m, uint64_t i);
void adaptive_svt_start(adaptive_release *m, uint64_t i);

/* adaptive_window.c: the w-event plans and steps; ε of `units` window units. */
double adaptive_window_value(const adaptive_release *m, uint64_t units);
int    adaptive_plan_svt_window(adaptive_release *m, char *errstr, size_t errstr_size);
int    adaptive_plan_bd_ba(adaptive_release *m, char *errstr, size_t errstr_size);
int    adaptive_step_svt_window(adaptive_release *m, uint64_t i, char *errstr, size_t errstr_size);
int    adaptive_step_bd_ba(adaptive_release *m, uint64_t i, char *errstr, size_t errstr_size);
void   adaptive_describe_window(const adaptive_release *m, dp_synth_plan *out);

#endif
