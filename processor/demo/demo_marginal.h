/* demo_marginal.h — the embedded demo's third stream: a small streaming
 * table (age band × sex × education × employed) through `marginal`.  Rows
 * are inserted each month and some earlier rows deleted (by the entity that
 * inserted them); after every release the demo compares the synthetic
 * table's 2-way marginals with the true table's.  The offline and the Kafka
 * demo feed the same updates and the same sink, so they print the same. */
#ifndef DP_DEMO_MARGINAL_H
#define DP_DEMO_MARGINAL_H

#include <stdint.h>
#include <stdio.h>

#include "core/buf.h"
#include "demo/demo_ledger.h"
#include "demo/demo_longitudinal.h"
#include "synth/common/synth.h"

#define DP_DEMO_TABLE_STREAM "demo/table"
#define DP_DEMO_TABLE_ATTRS 4
#define DP_DEMO_TABLE_CELLS 48   /* 4 · 2 · 3 · 2 */
#define DP_DEMO_TABLE_INSERTS 200
#define DP_DEMO_TABLE_DELETES 40

typedef struct dp_demo_table {
    dp_key    seed;
    uint64_t  steps;
    int64_t   truth[DP_DEMO_TABLE_CELLS];
    uint64_t  n_live, cap_live, next_entity;
    uint64_t *live;                      /* entity number << 8 | cell, in insertion order */
    double    syn[DP_DEMO_TABLE_CELLS];  /* the release being received */
    uint64_t  syn_rows;
    int       bad;                       /* a release not in the documented format */
    dp_demo_ledger ledger;
    int       selected[4];
    dp_buf    lines;                     /* one text line per released month */
} dp_demo_table;

int  dp_demo_table_init(dp_demo_table *d, const dp_demo_params *p);
void dp_demo_table_free(dp_demo_table *d);
json_t *dp_demo_table_config(const dp_demo_params *p);

/* Month t's updates (inserts, then deletes of earlier rows), in order,
 * each handed to fn; the true table follows them.  No CLOSE_STEP. */
typedef int (*dp_demo_update_fn)(void *ctx, const dp_update *u);
int  dp_demo_table_month(dp_demo_table *d, uint64_t t, dp_demo_update_fn fn, void *ctx);

dp_release_sink dp_demo_table_sink(dp_demo_table *d);
/* After month t's release: compare, and keep the month's line. */
int  dp_demo_table_note(dp_demo_table *d, uint64_t t);
void dp_demo_table_print(FILE *f, const dp_demo_table *d);

#endif
