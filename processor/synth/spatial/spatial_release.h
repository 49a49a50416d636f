/* spatial_release.h — the release half's state of `spatial`, shared by
 * spatial.c (the step: PrivTree, counting, extension, points),
 * spatial_nodes.c (the per-node arrays) and spatial_snapshot.c.  Private to
 * those files. */
#ifndef DP_SPATIAL_RELEASE_H
#define DP_SPATIAL_RELEASE_H

#include "core/accountant.h"
#include "core/counter.h"
#include "synth/common/privtree.h"
#include "synth/spatial/spatial.h"

#define SPATIAL_REL_MAGIC 0x4c455253u   /* "SREL" */
typedef enum node_status { NODE_BELOW = 0, NODE_LEAF = 1, NODE_INTERNAL = 2 } node_status;

typedef struct spatial_release {
    dp_spatial_config cfg;
    const dp_key     *key;
    char             *stream_id;
    size_t            stream_id_len;
    /* plan */
    uint64_t          tree_units, count_units;
    double            eps_tree, eps_count;   /* per event */
    dp_privtree       privtree;
    dp_counter_config ccfg;
    /* state */
    uint64_t          done;                  /* input steps closed */
    int               exhausted;
    dp_ledger         ledger;                /* the last release step's */
    dp_stats          pending;               /* ∇ of input steps not yet released (t < t₀) */
    dp_ptree          tree;
    uint32_t          cap;                   /* capacity of the per-node arrays */
    dp_counter      **cnt;                   /* per node; NULL until the node is first a leaf */
    int64_t          *C;                     /* the counter's last output */
    double           *A, *D;                 /* the extension's parts (header) */
    double           *syn;                   /* released measure of the node's cell */
    uint8_t          *status;                /* node_status in the last release */
    uint8_t          *prev_status;           /* ... in the one before (during a step) */
    uint32_t         *gen;                   /* times the node became a leaf (its points' key) */
    uint64_t         *prev_pts;              /* points of the node in the last release if a leaf */
    /* last release */
    uint64_t          leaves, max_leaf_depth, points;
    int               clamped, truncated;
    /* scratch */
    uint32_t         *queue;
    dp_cell_sums      net, added;            /* the step's ∇f_t and ∇f⁺_t by finest cell */
    uint64_t         *leaf_pts;
    double           *weights;
    uint64_t          next_id;
    double            point_buf[DP_PARTITION_MAX_DIM];
} spatial_release;

/* spatial_nodes.c */
int  sp_reserve_nodes(spatial_release *m, uint32_t n);
void sp_extend(spatial_release *m);   /* g_t per node: A + C + D (spatial.c's header) */

/* spatial_snapshot.c */
int sp_release_save(const dp_release_half *rel, dp_buf *b);
int sp_release_load(dp_release_half *rel, dp_reader *r);

#endif
