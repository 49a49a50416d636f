/* stats.h — a step's exact sufficient statistics: a sparse histogram over
 * 64-bit cell keys plus a few named integer scalars.  The ingest half of a
 * synthesizer produces one per shard per step; shards' statistics add
 * (dp_stats_merge), which is what lets one stream's ingest be sharded
 * (docs/design.md §4).  Cells are kept sorted by key so iteration order — and
 * therefore every release — is independent of insertion order. */
#ifndef DP_STATS_H
#define DP_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

#define DP_STATS_MAX_SCALARS 8

typedef struct dp_stats {
    uint64_t  step;
    size_t    n_cells;
    size_t    cap_cells;
    uint64_t *keys;      /* strictly increasing after dp_stats_finish */
    int64_t  *counts;
    /* Named scalars, by index; meaning is the synthesizer's (e.g. window:
     * [0] roster size n, [1] imputed count). */
    int64_t   scalars[DP_STATS_MAX_SCALARS];
    int       sorted;
} dp_stats;

void dp_stats_init(dp_stats *s, uint64_t step);
void dp_stats_free(dp_stats *s);
void dp_stats_clear(dp_stats *s, uint64_t step);
/* Add `count` to cell `key` (appends; call dp_stats_finish before reading). */
int  dp_stats_add(dp_stats *s, uint64_t key, int64_t count);
/* Sort by key and combine duplicate keys (dropping zero cells). */
int  dp_stats_finish(dp_stats *s);
/* count of `key` (0 if absent); requires finished stats. */
int64_t dp_stats_get(const dp_stats *s, uint64_t key);
/* into += from (cells and scalars; steps must match). Both finished. */
int  dp_stats_merge(dp_stats *into, const dp_stats *from);
int  dp_stats_save(const dp_stats *s, dp_buf *b);
int  dp_stats_load(dp_stats *s, dp_reader *r);

#endif
