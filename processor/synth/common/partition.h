/* partition.h — hierarchical binary partitions of a box in R^d, the
 * geometry `spatial` (seed 002, PrivTree cells) and `hypercube` (seed 004,
 * dyadic cells) share (docs/privacy.md §6, §8).
 *
 * A cell at depth k is named by its path: k bits, the first split most
 * significant, bit 1 = the upper half.  The split creating depth k+1
 * halves coordinate (k mod d) at its midpoint: x first, then y, … (seed
 * 002 §4.1, seed 004 §3).  A point on a midpoint goes to the upper half;
 * the box's upper faces belong to the box.  Paths of depth ≤ 62 fit a
 * uint64 with room for a tag bit.
 *
 * The materialised tree (dp_ptree) is the set of cells a synthesizer has
 * ever split, stored as nodes with both children or none, so any cell below
 * a childless node is "virtual": its values derive from that node.  Node
 * ids are dense and stable (children are created in pairs, never removed),
 * so a synthesizer keeps its per-node data in arrays indexed by id. */
#ifndef DP_SYNTH_PARTITION_H
#define DP_SYNTH_PARTITION_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/drbg.h"

#define DP_PARTITION_MAX_DIM 16
#define DP_PARTITION_MAX_DEPTH 60

typedef struct dp_box {
    uint32_t d;
    double   lo[DP_PARTITION_MAX_DIM];
    double   hi[DP_PARTITION_MAX_DIM];
} dp_box;

/* 1 if x (d coordinates, finite) lies in the closed box. */
int dp_box_contains(const dp_box *b, const double *x);

/* Whether an update's payload is a point of this box (spatial, hypercube):
 * WRONG_KIND if it is not a Point, OUT_OF_DOMAIN with another dimension or
 * outside the box, MALFORMED with a non-finite coordinate, else NONE.
 * (A dp_reject_reason, synth.h; int here so partition.h stays below it.) */
struct dp_payload;
int dp_box_check_point(const dp_box *b, const struct dp_payload *p);

/* The path of the depth-`depth` cell containing x (x in the box). */
uint64_t dp_partition_path(const dp_box *b, const double *x, uint32_t depth);

/* The cell's region [lo, hi) (closed at the box's upper faces). */
void dp_partition_region(const dp_box *b, uint32_t depth, uint64_t path, double *lo, double *hi);

/* A uniform point of the cell's region, from 53 random bits per
 * coordinate of g (deterministic given g's state). */
void dp_partition_sample(const dp_box *b, uint32_t depth, uint64_t path, dp_drbg *g, double *out);
/* The same for a region [lo, hi) already computed by dp_partition_region
 * (many points of one cell). */
void dp_partition_sample_region(uint32_t d, const double *lo, const double *hi, dp_drbg *g, double *out);

/* Keys of the depth-`depth` descendants of (k, path) form the half-open
 * range [path << (depth-k), (path+1) << (depth-k)). */
static inline uint64_t dp_partition_first(uint32_t k, uint64_t path, uint32_t depth)
{
    return path << (depth - k);
}

/* Seed 004 Alg. 4's split (after He, Vershynin, Zhu 2023 Alg. 3): a
 * parent's consistent count m shared by children whose noisy counts are
 * na, nb, clamped at 0 to a, b: m0 = floor(m·a/(a+b)), m1 = m − m0 (m0 =
 * floor(m/2) when a = b = 0).  Then m0 + m1 = m and (m0 − a)(m1 − b) >= 0:
 * both children move towards m in the same direction. */
void dp_partition_split_count(uint64_t m, int64_t na, int64_t nb, uint64_t *m0, uint64_t *m1);

/* --- counts of points by cell ------------------------------------------------------
 *
 * A sparse histogram over the depth-`depth` cells (keys = paths, ascending)
 * with prefix sums, so any coarser cell's total is two binary searches. */
typedef struct dp_cell_sums {
    uint32_t  depth;
    size_t    n, cap;
    uint64_t *keys;
    int64_t  *cum;   /* cum[i] = Σ counts of keys[0..i) */
} dp_cell_sums;

void dp_cell_sums_init(dp_cell_sums *s, uint32_t depth);
void dp_cell_sums_free(dp_cell_sums *s);
/* Append a cell (keys strictly ascending across calls after a reset);
 * DP_ERANGE if the running sum would overflow. */
int  dp_cell_sums_add(dp_cell_sums *s, uint64_t key, int64_t count);
void dp_cell_sums_reset(dp_cell_sums *s);
/* Σ counts over the cells below (k, path), k <= depth. */
int64_t dp_cell_sums_range(const dp_cell_sums *s, uint32_t k, uint64_t path);

/* --- the materialised tree ---------------------------------------------------- */

#define DP_PTREE_NONE UINT32_MAX

typedef struct dp_pnode {
    uint64_t path;
    uint32_t depth;
    uint32_t parent;     /* DP_PTREE_NONE at the root */
    uint32_t child;      /* first child (the second is child + 1), or DP_PTREE_NONE */
} dp_pnode;

typedef struct dp_ptree {
    dp_pnode *nodes;     /* nodes[0] is the root */
    uint32_t  n;
    uint32_t  cap;
    uint32_t  max_nodes; /* a configured limit (memory is proportional to n) */
} dp_ptree;

int  dp_ptree_init(dp_ptree *t, uint32_t max_nodes);
void dp_ptree_free(dp_ptree *t);
/* Give node v its two children (no-op if it has them).  DP_ERANGE past
 * max_nodes or DP_PARTITION_MAX_DEPTH, DP_ENOMEM; on error nothing changes.
 * May move t->nodes. */
int  dp_ptree_split(dp_ptree *t, uint32_t v);

/* The consistent extension E of per-node values C (seed 002 §4.3): the
 * value a at v counts at v and every ancestor, and a/2^k at each
 * descendant k levels down.  In its compute-efficient form every node keeps
 * A (its share of its ancestors' values: A(child) = (A(v) + C(v))/2) and D
 * (its descendants' values: D(v) = Σ_children C + D), and E(C)(v) = A + C + D;
 * a virtual cell k levels below a childless node u gets (A(u) + C(u))/2^k.
 * Then every node's value is the sum of its children's, and the root's is
 * Σ C.  O(n), parents before children in id order. */
void dp_ptree_extend(const dp_ptree *t, const int64_t *C, double *A, double *D);

/* Snapshots: the shape in id order (children pairs are implied). */
int  dp_ptree_save(const dp_ptree *t, dp_buf *b);
int  dp_ptree_load(dp_ptree *t, dp_reader *r);

#endif
