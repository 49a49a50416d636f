/* demo_kafka.h — the embedded `dpstream demo` on Kafka: the sample panel
 * streamed through the real processor on librdkafka's in-process mock
 * cluster (mock_harness.h), releases read back from the output topics. */
#ifndef DP_APP_DEMO_KAFKA_H
#define DP_APP_DEMO_KAFKA_H

#include <stddef.h>
#include <stdio.h>

#include "demo/demo_longitudinal.h"

/* Step by step: produce the step's reports of both streams and a
 * CLOSE_STEP marker each, wait (at most step_timeout_ms) until both
 * releases and budget events of the step are back from Kafka, print the
 * step like dp_demo_run_offline does.  For the same params and key the
 * printed synthetic numbers equal the offline demo's (same input, same
 * key, same releases).  DP_OK or an error with a message. */
int dp_demo_run_kafka(const dp_demo_params *p, const dp_key *key, int step_timeout_ms, FILE *f,
                      char *errstr, size_t errstr_size);

#endif
