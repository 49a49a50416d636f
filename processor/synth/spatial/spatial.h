/* spatial.h — `spatial`: PHDStream streaming spatial synthetic data (seed
 * 002, docs/privacy.md §6) behind synth.h.  The ingest half
 * (spatial_ingest.c) keeps the exact multiset of points; the release half
 * (spatial.c) grows a PrivTree over the previous synthetic data plus the
 * step's differential data, counts the leaves with per-node continual
 * counters and samples the synthetic points.
 *
 * Statistics between the halves: for every point that changed in the step,
 * its cell at depth max_depth (partition.h's path) tagged
 *   key = path << 1 | 0   count = net change (INSERTs - DELETEs)   ∇f_t
 *   key = path << 1 | 1   count = INSERTs (safe variant only)     ∇f⁺_t
 * Both add up over disjoint shards; no scalars (every exact count is
 * private). */
#ifndef DP_SPATIAL_H
#define DP_SPATIAL_H

#include "synth/spatial/spatial_config.h"
#include "synth/common/synth.h"

int  dp_spatial_ingest_create(dp_ingest_half **out, const json_t *config, char *errstr, size_t errstr_size);
int  dp_spatial_ingest_update(dp_ingest_half *in, const dp_update *u, dp_reject_reason *reason);
int  dp_spatial_ingest_close(dp_ingest_half *in, uint64_t step, dp_stats *out);
int  dp_spatial_ingest_roster_complete(const dp_ingest_half *in);
int  dp_spatial_ingest_save(const dp_ingest_half *in, dp_buf *b);
int  dp_spatial_ingest_load(dp_ingest_half *in, dp_reader *r);
void dp_spatial_ingest_destroy(dp_ingest_half *in);
uint64_t dp_spatial_ingest_open_step(const dp_ingest_half *in);

#define DP_SPATIAL_TAG_NET 0
#define DP_SPATIAL_TAG_ADDED 1

#endif
