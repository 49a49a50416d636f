#!/usr/bin/env python3
"""consume_releases.py — read dpstream's synthetic topic with stock Python
clients (confluent-kafka + fastavro), using nothing but the documented
wire contract (README "Topics and Avro schemas", schemas/*.avsc):

  * read with isolation.level=read_committed: a release is in one
    transaction with its budget event and snapshot;
  * every message carries a "dpstream.type" header naming its schema;
    the synthetic topic holds "SyntheticRecord" chunks and one
    "ReleaseManifest" per release, keyed by the stream id;
  * plain framing: the value is the Avro binary of that schema;
  * a release is complete when its manifest has arrived and the chunks
    (stream, step, chunk_index 0..chunk_count-1) add up to the manifest's
    record_count and BLAKE2b checksum (ReleaseManifest.checksum's doc says
    exactly which bytes are hashed).

Prints one JSON line per complete release:
  {"stream", "step", "mode", "records": [[synthetic_id, value], ...]}
and exits 1 if any release does not add up.

  consume_releases.py --bootstrap 127.0.0.1:9092 --topic P.synthetic --schemas DIR
"""
import argparse
import hashlib
import io
import json
import struct
import sys

import fastavro
from confluent_kafka import Consumer, KafkaError, TopicPartition


def zigzag(n):
    """Avro's long encoding: zigzag, then base-128 varint."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        if z:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def canonical(rec):
    """A SyntheticRow's canonical encoding (ReleaseManifest.checksum)."""
    value = rec["value"]
    out = bytearray(zigzag(rec["synthetic_id"]))
    if "value" in value:                      # Category
        out += zigzag(0) + zigzag(value["value"])
    elif "values" in value:                   # CategoricalRow
        items = value["values"]
        out += zigzag(1)
        if items:
            out += zigzag(len(items)) + b"".join(zigzag(v) for v in items)
        out += b"\x00"
    else:                                     # Point
        items = value["coordinates"]
        out += zigzag(2)
        if items:
            out += zigzag(len(items)) + b"".join(struct.pack("<d", v) for v in items)
        out += b"\x00"
    return bytes(out)


def plain_value(rec):
    """The record's value as dpstream's JSON lines write it."""
    value = rec["value"]
    if "value" in value:
        return value["value"]
    return value.get("values", value.get("coordinates"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--schemas", required=True, help="directory of dpstream's *.avsc")
    ap.add_argument("--group", default="consume-releases-example")
    args = ap.parse_args()
    named = {}
    schemas = {}
    for name in ("SyntheticRecord", "ReleaseManifest"):
        with open(f"{args.schemas}/{name}.avsc") as f:
            schemas[name] = fastavro.parse_schema(json.load(f), named_schemas=named)

    consumer = Consumer({"bootstrap.servers": args.bootstrap, "group.id": args.group,
                         "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    parts = consumer.list_topics(args.topic, timeout=30).topics[args.topic].partitions
    consumer.assign([TopicPartition(args.topic, p, 0) for p in parts])  # offset 0: from the start
    remaining = set(parts)
    chunks = {}      # (stream, step) -> {chunk_index: [records]}
    bad = 0
    while remaining:
        msg = consumer.poll(10.0)
        if msg is None:
            print("timed out waiting for the end of the topic", file=sys.stderr)
            return 1
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                remaining.discard(msg.partition())
                continue
            print(f"consumer error: {msg.error()}", file=sys.stderr)
            return 1
        kind = dict(msg.headers() or []).get("dpstream.type", b"").decode()
        if kind not in schemas:
            print(f"unexpected dpstream.type {kind!r}", file=sys.stderr)
            bad += 1
            continue
        body = fastavro.schemaless_reader(io.BytesIO(msg.value()), schemas[kind])
        key = (body["stream"], body["step"])
        if msg.key() != body["stream"].encode():
            print(f"message key {msg.key()!r} is not its stream id", file=sys.stderr)
            bad += 1
        if kind == "SyntheticRecord":
            chunks.setdefault(key, {})[body["chunk_index"]] = body["records"]
            continue
        got = chunks.pop(key, {})
        records = [r for i in range(body["chunk_count"]) for r in got.get(i, [])]
        digest = hashlib.blake2b(b"".join(canonical(r) for r in records), digest_size=32).digest()
        if sorted(got) != list(range(body["chunk_count"])) or len(records) != body["record_count"] \
                or digest != body["checksum"]:
            print(f"release {key} does not add up to its manifest", file=sys.stderr)
            bad += 1
            continue
        print(json.dumps({"stream": key[0], "step": key[1], "mode": body["mode"],
                          "records": [[r["synthetic_id"], plain_value(r)] for r in records]},
                         separators=(",", ":")))
    consumer.close()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
