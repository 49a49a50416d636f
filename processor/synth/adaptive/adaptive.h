/* adaptive.h — `adaptive`: DSFT / DSAT adaptive histogram release (seed 003,
 * corrected to be DP as docs/privacy.md §7) and the w-event baselines BD / BA
 * (Kellaris et al. 2014) behind synth.h.
 *
 * The ingest half (adaptive_ingest.c) builds the snapshot H_i: under
 * `snapshot: "step_reports"` (the w-event default) the histogram of the
 * reports made at step i, under "standing_values" (the user-level default)
 * that of every entity's current value.  Its statistics at close: key =
 * bin, count = H_i[bin] (bins with a zero count left out) — additive over
 * disjoint entity shards.  No scalars: n_i = Σ H_i is private.  The release
 * half decides, releases or repeats: adaptive.c (user-level DSFT/DSAT,
 * output, snapshots), adaptive_window.c (every method under w-event). */
#ifndef DP_ADAPTIVE_H
#define DP_ADAPTIVE_H

#include "synth/adaptive/adaptive_config.h"
#include "synth/common/synth.h"

int  dp_adaptive_ingest_create(dp_ingest_half **out, const json_t *config, char *errstr, size_t errstr_size);
int  dp_adaptive_ingest_update(dp_ingest_half *in, const dp_update *u, dp_reject_reason *reason);
int  dp_adaptive_ingest_close(dp_ingest_half *in, uint64_t step, dp_stats *out);
int  dp_adaptive_ingest_roster_complete(const dp_ingest_half *in);
int  dp_adaptive_ingest_save(const dp_ingest_half *in, dp_buf *b);
int  dp_adaptive_ingest_load(dp_ingest_half *in, dp_reader *r);
void dp_adaptive_ingest_destroy(dp_ingest_half *in);
uint64_t dp_adaptive_ingest_open_step(const dp_ingest_half *in);

#endif
