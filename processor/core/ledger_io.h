/* ledger_io.h — a budget ledger (accountant.h) inside a synthesizer's
 * release snapshot, and a ledger started afresh: what `window`,
 * `cumulative`, `marginal`, `spatial` and `hypercube` share.
 *
 * Owns: nothing.  Calls: the accountant, buf. */
#ifndef DP_CORE_LEDGER_IO_H
#define DP_CORE_LEDGER_IO_H

#include <stddef.h>
#include <stdint.h>

#include "core/accountant.h"
#include "core/buf.h"

/* The ledger as one blob (dp_ledger_serialize). */
int dp_ledger_save(const dp_ledger *l, dp_buf *b);
/* Read the blob back into l: DP_ECORRUPT if it is not a ledger or its
 * model or budget is not l's (l is left as it was); else l is replaced. */
int dp_ledger_load(dp_ledger *l, dp_reader *r);

/* Free l and start it again empty: dp_ledger_init_exact(l, model, budget,
 * units, …) — a plan's or a step's fresh ledger (marginal, spatial,
 * hypercube). */
int dp_ledger_reset_exact(dp_ledger *l, dp_privacy_model model, double budget, uint64_t units, char *errstr,
                          size_t errstr_size);

#endif
