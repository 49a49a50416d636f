/* load_run.h — one load: rows of a CSV, JSON-lines or update JSON-lines
 * file (row_source.h; the first two converted by a mapping,
 * load_mapping.h), written as updates to a JSON-lines file (the input of
 * `dpstream replay`) or to Kafka (load_kafka.h), with CLOSE_STEP markers
 * when asked.  `dpstream load` (and its alias `dpstream produce`) parses
 * its options into a dp_load_options and calls dp_load_run.
 *
 * Owns: the output target, per-stream step tracking, the counters.
 * Calls: row_source (rows), load_kafka / update_json (output). */
#ifndef DP_CONNECTORS_LOAD_RUN_H
#define DP_CONNECTORS_LOAD_RUN_H

#include <stdint.h>
#include <stdio.h>

#include "connectors/load/load_kafka.h"
#include "connectors/load/load_mapping.h"
#include "connectors/load/row_source.h"

typedef struct dp_load_options {
    const dp_load_mapping *map; /* csv and jsonl */
    FILE        *in;            /* rows */
    const char  *input_name;    /* for messages */
    dp_row_format format;
    FILE        *out;           /* update JSON lines, or NULL for Kafka */
    dp_load_kafka *kafka;       /* opened Kafka target, or NULL */
    FILE        *rejects;       /* rejected rows as JSON lines, or NULL */
    int          close_steps;   /* write CLOSE_STEP markers (see load_run.c) */
    uint64_t     max_gap;       /* refuse a row that skips more empty steps */
    int          quiet;         /* no progress lines on stderr */
    const char  *label;         /* the command in stderr lines (NULL: "load") */
    int          strict;        /* a refused row stops the load ("line N: why") */
    int          raw_invalid;   /* Kafka: a refused row is produced as it is, with no key */
} dp_load_options;

typedef struct dp_load_summary {
    uint64_t rows, emitted, markers, rejected, raw;   /* raw: refused rows produced as they are */
    uint64_t by_reason[DP_LOAD_REJECT_COUNT];
    size_t   streams;
} dp_load_summary;

/* DP_OK (bad rows are reported, never fatal), or a fatal status with the
 * reason in err (unreadable input, a column missing from the header, an
 * output or delivery failure). */
int dp_load_run(const dp_load_options *o, dp_load_summary *sum, char *err, size_t errsz);

#endif
