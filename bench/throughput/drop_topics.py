#!/usr/bin/env python3
"""drop_topics.py — the benchmark scripts' cleanup (synth_e2e.sh,
restore_rss.sh): delete every topic named PREFIX<SEP>… and the named
consumer groups on the broker BOOT, through confluent-kafka (the project's
Python venv; scripts/install-deps.sh).  A group that was never created is
not an error.

  drop_topics.py BOOT PREFIX SEP [GROUP ...]
"""
import sys

from confluent_kafka.admin import AdminClient


def main():
    boot, prefix, sep, groups = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    a = AdminClient({"bootstrap.servers": boot})
    topics = [t for t in a.list_topics(timeout=20).topics if t.startswith(prefix + sep)]
    for f in (a.delete_topics(topics, operation_timeout=60).values() if topics else []):
        f.result()
    for f in (a.delete_consumer_groups(groups).values() if groups else []):
        try:
            f.result()
        except Exception:
            pass   # never created (a failed run)


if __name__ == "__main__":
    main()
