/* replay_run.h — one offline replay: the synthesizer state machines run
 * over a file of update JSON lines, without Kafka (replay_run.c documents
 * what is written and why).  `dpstream replay` parses its options into a
 * dp_replay_options and calls dp_replay_run. */
#ifndef DP_CONNECTORS_REPLAY_RUN_H
#define DP_CONNECTORS_REPLAY_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/dp_error.h"
#include "stream/stream_config.h"
#include "synth/common/synth.h"

typedef struct dp_replay_options {
    const dp_stream_config *cfg;
    const dp_key *key;            /* noise key */
    const char   *input_path;     /* update JSON lines; "-" reads stdin */
    const char   *out_dir;        /* created if missing */
    const char   *ledger_path;    /* --ledger, or NULL */
} dp_replay_options;

typedef struct dp_replay_summary {
    uint64_t lines;
    uint64_t used;
    uint64_t closes;
    uint64_t duplicate_markers;
    uint64_t rejected[DP_REJECT_REASON_COUNT];
    uint64_t n_rejected;          /* the sum of rejected[] */
    size_t   streams;
} dp_replay_summary;

/* DP_OK: the outputs are in place (rejected lines are data, not failures).
 * Otherwise nothing is left in out_dir but what was there before, and:
 *   DP_EIO     an unreadable input or ledger, an unwritable output
 *   DP_EKEY    a --ledger refusal
 *   other      out of memory, a synthesizer that could not be created or
 *              closed, an ingest failure
 * with the reason in err, or err empty when it was already printed on
 * stderr (the line-numbered failures inside the run). */
int dp_replay_run(const dp_replay_options *o, dp_replay_summary *sum, char *err, size_t errsz);

#endif
