/* state_disk.h — how many bytes a topic's log segments hold on the local
 * broker's disk (bench_throughput: the state topic's growth per step,
 * which incremental snapshots are meant to shrink).  Reads the broker's
 * data directory (scripts/kafka-local.sh: $DPSTREAM_KAFKA_DIR/data, by
 * default /tmp/dpstream-kafka/data); never talks to the broker. */
#ifndef BENCH_STATE_DISK_H
#define BENCH_STATE_DISK_H

#include <stdint.h>

/* The local broker's data directory: $DPSTREAM_KAFKA_DIR/data, or the
 * default of scripts/kafka-local.sh.  Static storage. */
const char *bench_broker_data_dir(void);

/* Sum of the sizes of the *.log segment files of every partition of
 * `topic` under data_dir (directories "<topic>-<partition>"); -1 if
 * data_dir cannot be read or holds no partition of the topic. */
int64_t bench_topic_disk_bytes(const char *data_dir, const char *topic);

#endif
