/* adaptive.h — `adaptive`: DSFT / DSAT adaptive histogram release (seed 003,
 * corrected to be DP as ALGORITHMS.md §7) and the w-event baselines BD / BA
 * (Kellaris et al. 2014) behind synth.h.
 *
 * The ingest half (adaptive_ingest.c) keeps every entity's current value;
 * the snapshot at step i is the histogram H_i of those values (an entity
 * that reported once stays in the snapshot with its last value).  Its
 * statistics at close: key = bin, count = H_i[bin] (bins with a zero count
 * left out) — additive over disjoint entity shards.  No scalars: n_i = Σ H_i
 * is private.  The release half (adaptive.c) decides, releases or repeats. */
#ifndef DP_ADAPTIVE_H
#define DP_ADAPTIVE_H

#include "synth/adaptive_config.h"
#include "synth/synth.h"

int  dp_adaptive_ingest_create(dp_ingest_half **out, const json_t *config, char *errstr, size_t errstr_size);
int  dp_adaptive_ingest_update(dp_ingest_half *in, const dp_update *u, dp_reject_reason *reason);
int  dp_adaptive_ingest_close(dp_ingest_half *in, uint64_t step, dp_stats *out);
int  dp_adaptive_ingest_roster_complete(const dp_ingest_half *in);
int  dp_adaptive_ingest_save(const dp_ingest_half *in, dp_buf *b);
int  dp_adaptive_ingest_load(dp_ingest_half *in, dp_reader *r);
void dp_adaptive_ingest_destroy(dp_ingest_half *in);
uint64_t dp_adaptive_ingest_open_step(const dp_ingest_half *in);

#endif
