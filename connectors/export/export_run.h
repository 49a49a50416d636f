/* export_run.h — one export: complete releases (and budget events, dead
 * letters) out of the output topics, or out of `dpstream replay`'s files,
 * into files downstream tools read (export_writer.h: layouts, formats).
 * `dpstream export` parses its options into a dp_export_options and calls
 * dp_export_run. */
#ifndef DP_CONNECTORS_EXPORT_RUN_H
#define DP_CONNECTORS_EXPORT_RUN_H

#include <signal.h>
#include <stdint.h>

#include "connectors/export/export_assemble.h"
#include "connectors/export/export_writer.h"
#include "stream/stream_config.h"

typedef struct dp_export_options {
    const dp_stream_config *cfg;        /* read the config's topics, or NULL with replay_dir */
    const char             *replay_dir; /* read DIR/releases.jsonl and DIR/budget.jsonl */
    const char             *out_dir;
    dp_export_layout        layout;
    dp_export_format        format;
    int                     follow;     /* Kafka: read until *stop */
    int64_t                 timeout_ms; /* without follow: give up on a partition silent this long */
    volatile sig_atomic_t  *stop;       /* set by the caller's signal handler */
    const char             *dead_letter_path; /* Kafka: also export dead letters there (NULL: not read) */
    int                     connect_timeout_ms; /* Kafka: give up when no broker answers this long (0: default) */
} dp_export_options;

typedef struct dp_export_result {
    dp_export_stats stats;              /* of the reassembler */
    uint64_t        budget_events, dead_letters;
    size_t          pending;            /* releases still incomplete at the end */
    int             problems;           /* something did not add up (reported on stderr) */
} dp_export_result;

/* DP_OK when the export ran (r->problems says whether everything added
 * up), or a failure status (messages on stderr). */
int dp_export_run(const dp_export_options *o, dp_export_result *r);

#endif
