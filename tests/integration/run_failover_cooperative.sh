#!/usr/bin/env bash
# run_failover_cooperative.sh — run_failover.sh with
# partition.assignment.strategy=cooperative-sticky (issue 42 §4): B's join
# moves partitions from A without revoking or restoring the ones A keeps,
# and the outputs still equal `dpstream replay`.
# Usage: bash run_failover_cooperative.sh /path/to/dpstream
DPSTREAM_FAILOVER_STRATEGY=cooperative-sticky exec bash "$(dirname "$0")/run_failover.sh" "$@"
