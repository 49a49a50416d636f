/* hypercube.h — `hypercube`: online DP synthetic data on [0,1]^d with
 * Wasserstein accuracy (He, Vershynin, Zhu 2024, seed 004, Alg. 1;
 * docs/privacy.md §8) behind synth.h.  The ingest half (hypercube_ingest.c)
 * takes the step's points; the release half (hypercube.c) counts every cell
 * of the dyadic partition with inhomogeneous sparse counters, makes the
 * counts consistent and samples exactly t points.
 *
 * Statistics between the halves: for every accepted point, its cell at
 * depth max_depth (partition.h's path) with count +1, and
 *   scalars[DP_HYPERCUBE_SCALAR_POINTS] = the step's number of points,
 * public under replacement neighbours (one point replaced keeps every
 * step's count).  Both add up over disjoint shards. */
#ifndef DP_HYPERCUBE_H
#define DP_HYPERCUBE_H

#include "synth/hypercube/hypercube_config.h"
#include "synth/common/synth.h"

#define DP_HYPERCUBE_SCALAR_POINTS 0

int  dp_hypercube_ingest_create(dp_ingest_half **out, const json_t *config, char *errstr, size_t errstr_size);
int  dp_hypercube_ingest_update(dp_ingest_half *in, const dp_update *u, dp_reject_reason *reason);
int  dp_hypercube_ingest_close(dp_ingest_half *in, uint64_t step, dp_stats *out);
int  dp_hypercube_ingest_roster_complete(const dp_ingest_half *in);
int  dp_hypercube_ingest_save(const dp_ingest_half *in, dp_buf *b);
int  dp_hypercube_ingest_load(dp_ingest_half *in, dp_reader *r);
void dp_hypercube_ingest_destroy(dp_ingest_half *in);
uint64_t dp_hypercube_ingest_open_step(const dp_ingest_half *in);

/* The counters' current outputs N_θ of the 2^j depth-j cells (path order),
 * 1 <= j <= the current depth: for tests and inspection (they are released
 * only through the consistent counts). */
int dp_hypercube_counts(const dp_release_half *rel, unsigned j, int64_t *out, uint64_t n);

#endif
