/* restore.h — streams of assigned partitions from the state topic
 * (restore.c).  Internal to processor/stream/. */
#ifndef DP_STREAM_RESTORE_H
#define DP_STREAM_RESTORE_H

#include "stream/processor_internal.h"

/* Restore the streams of the partitions in `l` (marked assigned) and set
 * each element's offset to where consumption must resume.  DP_ECANCELED
 * if a stop was requested meanwhile. */
int ps_restore_partitions(proc *p, rd_kafka_topic_partition_list_t *l);

#endif
