/* restore_read.h — what a restore reads (restore_read.c): one assigned
 * partition's state partition (state_layout.h), newest value per key.
 * Internal to processor/stream/. */
#ifndef DP_STREAM_RESTORE_READ_H
#define DP_STREAM_RESTORE_READ_H

#include "stream/processor_internal.h"
#include "stream/state_record.h"

/* The newest value under a key: a dp_state_piece whose bytes it owns. */
typedef dp_state_piece restore_val;

/* The restore's clients, made once per restore and used for every
 * partition it restores. */
typedef struct restore_reader {
    rd_kafka_t *rk;      /* read_committed: the records */
    rd_kafka_t *hw_rk;   /* read_uncommitted: high watermarks */
    int64_t     deadline;
} restore_reader;

/* Make both clients and check the two topics' partition counts (equal, or
 * a refusal: ps_set_fatal, fatal_refused); p->updates_partitions is the
 * updates topic's count.  restore_reader_close in every case. */
int  restore_reader_open(proc *p, restore_reader *r);
void restore_reader_close(restore_reader *r);

/* The low and high watermarks (lo[i], hi[i]) of the state partitions of
 * the updates partitions in l, for all of them in two requests per leader
 * (the high ones from the read_uncommitted client: for a read_committed
 * one the broker answers the last stable offset). */
int  restore_read_watermarks(proc *p, restore_reader *r, const rd_kafka_topic_partition_list_t *l, int64_t *lo,
                             int64_t *hi);

/* Only the high watermarks hi[i] of the state partitions of the updates
 * partitions in l (one read_uncommitted client, made and closed here). */
int  restore_read_ends(proc *p, const rd_kafka_topic_partition_list_t *l, int64_t *hi);

/* Read state partition `part` (that of updates partition `part`) from lo
 * to an EOF at or past hi, its watermarks as of the restore's start
 * (read_committed: a predecessor's transaction still open is waited out,
 * never read) into *latest, newest value per key, tombstones deleting.
 * Nothing is fetched when hi <= lo (an empty partition).  A record that
 * belongs to another partition is refused (ps_set_fatal).  *n_read: the
 * records read.  DP_ECANCELED on a stop request. */
int  restore_read_partition(proc *p, restore_reader *r, int32_t part, int64_t lo, int64_t hi, dp_bytes_map *latest,
                            uint64_t *n_read);

/* Free the values of *latest (keeps the map). */
void restore_latest_clear(dp_bytes_map *latest);

#endif
