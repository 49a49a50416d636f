/* hypercube_release.h — the release half's state, shared by hypercube.c
 * (the step: counting, consistency, output), hypercube_state.c (the level
 * schedule, scratch, the d = 1 history) and hypercube_snapshot.c.
 * Private to those files. */
#ifndef DP_HYPERCUBE_RELEASE_H
#define DP_HYPERCUBE_RELEASE_H

#include "core/accountant.h"
#include "core/counter_sparse_cell.h"
#include "synth/hypercube/hypercube.h"

#define HC_REL_MAGIC 0x4c455248u         /* "HREL" */
#define HC_REL_MAGIC_DENSE 0x44455248u   /* "HRED": variant "dense" (its own layout) */
#define MAX_LEVEL 62u

typedef struct hc_history {   /* d = 1: every counter step's points by finest cell */
    uint64_t  steps, cap_steps;
    uint64_t *t;               /* t after the step */
    uint64_t *off;             /* cells of step s: [off[s], off[s+1]) (off has steps+1 entries) */
    uint64_t  cells, cap_cells;
    uint64_t *keys;
    int64_t  *counts;
} hc_history;

typedef struct hc_release {
    dp_hypercube_config cfg;
    const dp_key       *key;
    char               *stream_id;
    size_t              stream_id_len;
    /* schedule */
    double              alpha, C1;
    dp_isc_level       *lv;          /* [(D+1) · (MAX_LEVEL+1)], prepared on first use */
    uint8_t            *lv_ready;
    /* state */
    uint64_t            done;        /* steps closed */
    uint64_t            t;           /* points so far */
    uint64_t            cstep;       /* counter steps (steps with points) */
    unsigned            level;       /* level(t) at the last counter step */
    unsigned            depth;       /* cells exist at depths 1..depth */
    uint64_t            open_steps;  /* dense: counter steps in the open epoch */
    dp_isc_cell        *cells[DP_HYPERCUBE_MAX_DEPTH + 1];
    uint64_t           *prev;        /* last release's points per cell at prev_depth */
    unsigned            prev_depth;
    hc_history          hist;
    dp_ledger           ledger;      /* the last step's */
    /* last release */
    uint64_t            released;
    int                 clamped;
    int                 broken;      /* a step failed half-way: fail closed */
    double              eps_step;
    /* scratch */
    uint64_t           *m, *m_next;  /* consistent counts of one depth */
    double             *weights;
    uint64_t           *cut;
    uint64_t            n_records;
    double              point_buf[DP_PARTITION_MAX_DIM];
} hc_release;

/* hypercube_state.c */
uint64_t hc_level_start(const hc_release *m, unsigned j);   /* t_j = ceil(2^j/ε); UINT64_MAX past 2^62 */
unsigned hc_level_of(const hc_release *m, uint64_t t);
int      hc_level_params(hc_release *m, unsigned j, unsigned r, const dp_isc_level **out, char *errstr,
                         size_t errstr_size);
int      hc_grow_scratch(hc_release *m, unsigned depth);
int      hc_epoch_ends(const hc_release *m, uint64_t t_before, uint64_t t_after);   /* dense */
int      hc_history_append(hc_history *h, uint64_t t, const dp_stats *st);

/* hypercube_snapshot.c */
int hc_release_save(const dp_release_half *rel, dp_buf *b);
int hc_release_load(dp_release_half *rel, dp_reader *r);

#endif
