"""registry_clients.py — stock Confluent clients on both sides of dpstream
(tests/integration/run_schema_registry.sh): confluent-kafka's
AvroSerializer writes the updates topic, AvroDeserializer reads the
synthetic topic, both through the schema registry.  Not a test by itself.

  produce  BOOT REGISTRY TOPIC SCHEMAS_DIR INPUT.jsonl OUT.json
      Writes every update of INPUT.jsonl (dpstream's JSON lines) in order,
      keyed by stream id, cycling through three writer schemas registered
      by the serializer under dpstream's subject (TopicRecordNameStrategy):
      dpstream's own Update, a newer one (an added optional field) and an
      older one (without event_time).  Then writes 3 updates with an
      incompatible schema (step is a string): the registry refuses that
      schema under dpstream's subject (BACKWARD, set by dpstream), so they
      are registered under "<topic>-value" (TopicNameStrategy), as a
      producer on other settings would.  OUT.json: the ids.
  serialize REGISTRY TOPIC SCHEMAS_DIR INPUT.jsonl OUT.json
      Serializes every update of INPUT.jsonl with the newer Update schema
      (registering it), without producing: OUT.json is [[key, hex], ...];
      prints the schema id.
  produce-raw BOOT TOPIC IN.json
      Produces what `serialize` wrote, as raw bytes: no registry needed.
  consume  BOOT REGISTRY TOPIC MANIFESTS OUT.jsonl
      Reads the synthetic topic (read_committed) until MANIFESTS release
      manifests arrived; one line per release: stream, step, records
      [[id, value], ...] in chunk order.
"""
import json
import sys
import time
import uuid

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext
from confluent_kafka.schema_registry import (topic_record_subject_name_strategy,
                                             topic_subject_name_strategy)


def update_schemas(schemas_dir):
    own = json.load(open(f"{schemas_dir}/Update.avsc"))
    newer = json.loads(json.dumps(own))
    newer["fields"].append({"name": "source", "type": ["null", "string"], "default": None,
                            "doc": "added by a newer producer"})
    older = json.loads(json.dumps(own))
    older["fields"] = [f for f in older["fields"] if f["name"] != "event_time"]
    bad = json.loads(json.dumps(own))
    for f in bad["fields"]:
        if f["name"] == "step":
            f["type"] = "string"
    return own, newer, older, bad


def to_avro(line, variant):
    o = json.loads(line)
    payload = None
    if "value" in o:
        payload = ("org.dpstream.v1.Category", {"value": o["value"]})
    elif "row" in o:
        payload = ("org.dpstream.v1.CategoricalRow", {"values": o["row"]})
    elif "point" in o:
        payload = ("org.dpstream.v1.Point", {"coordinates": o["point"]})
    u = {"stream": o["stream"], "step": o["step"], "kind": o["kind"], "entity": o.get("entity"),
         "payload": payload}
    if variant != "older":
        u["event_time"] = None
    if variant == "newer":
        u["source"] = "python"
    return u


def produce(boot, registry, topic, schemas_dir, input_path, out_path):
    client = SchemaRegistryClient({"url": registry})
    own, newer, older, bad = update_schemas(schemas_dir)
    conf = {"auto.register.schemas": True, "subject.name.strategy": topic_record_subject_name_strategy}
    ser = {name: AvroSerializer(client, json.dumps(s), conf=conf)
           for name, s in (("own", own), ("newer", newer), ("older", older))}
    subject = f"{topic}-org.dpstream.v1.Update"
    refused = None
    try:
        client.register_schema(subject, Schema(json.dumps(bad), "AVRO"))
    except SchemaRegistryError as e:
        refused = e.http_status_code
    ser_bad = AvroSerializer(client, json.dumps(bad),
                             conf={"auto.register.schemas": True,
                                   "subject.name.strategy": topic_subject_name_strategy})
    p = Producer({"bootstrap.servers": boot, "enable.idempotence": True, "partitioner": "consistent_random",
                  "linger.ms": 5})
    failed = []
    def dr(err, msg):
        if err:
            failed.append(str(err))
    names = ["own", "newer", "older"]
    n = 0
    for line in open(input_path):
        if not line.strip():
            continue
        variant = names[n % 3]
        u = to_avro(line, variant)
        v = ser[variant](u, SerializationContext(topic, MessageField.VALUE))
        p.produce(topic, key=u["stream"].encode(), value=v, on_delivery=dr)
        p.poll(0)
        n += 1
    stream = json.loads(open(input_path).readline())["stream"]
    for i in range(3):
        u = {"stream": stream, "step": "1", "kind": "REPORT", "entity": f"bad{i}",
             "payload": ("org.dpstream.v1.Category", {"value": 0}), "event_time": None}
        p.produce(topic, key=stream.encode(), value=ser_bad(u, SerializationContext(topic, MessageField.VALUE)),
                  on_delivery=dr)
    if p.flush(30) != 0 or failed:
        sys.exit(f"produce failed: {failed[:3]}")
    ids = {}
    for name, s in (("own", own), ("newer", newer), ("older", older)):
        ids[name] = client.lookup_schema(subject, Schema(json.dumps(s), "AVRO")).schema_id
    ids["incompatible"] = client.lookup_schema(f"{topic}-value", Schema(json.dumps(bad), "AVRO")).schema_id
    ids["refused_status"] = refused
    ids["updates"] = n
    json.dump(ids, open(out_path, "w"))


def serialize(registry, topic, schemas_dir, input_path, out_path):
    client = SchemaRegistryClient({"url": registry})
    newer = update_schemas(schemas_dir)[1]
    ser = AvroSerializer(client, json.dumps(newer),
                         conf={"auto.register.schemas": True,
                               "subject.name.strategy": topic_record_subject_name_strategy})
    out = []
    for line in open(input_path):
        if line.strip():
            u = to_avro(line, "newer")
            out.append([u["stream"], ser(u, SerializationContext(topic, MessageField.VALUE)).hex()])
    json.dump(out, open(out_path, "w"))
    print(int(out[0][1][2:10], 16))


def produce_raw(boot, topic, in_path):
    p = Producer({"bootstrap.servers": boot, "enable.idempotence": True, "partitioner": "consistent_random"})
    failed = []
    for key, hexval in json.load(open(in_path)):
        p.produce(topic, key=key.encode(), value=bytes.fromhex(hexval),
                  on_delivery=lambda err, msg: failed.append(str(err)) if err else None)
    if p.flush(30) != 0 or failed:
        sys.exit(f"produce failed: {failed[:3]}")


def row_value(v):
    # the SyntheticRow payload union: Category {value}, CategoricalRow {values}, Point {coordinates}
    for k in ("value", "values", "coordinates"):
        if k in v:
            return v[k]
    raise ValueError(f"unknown payload {v}")


def consume(boot, registry, topic, manifests, out_path):
    client = SchemaRegistryClient({"url": registry})
    de = AvroDeserializer(client)
    c = Consumer({"bootstrap.servers": boot, "group.id": f"registry-it-{uuid.uuid4()}",
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    chunks, seen, deadline = {}, 0, time.time() + 120
    ids = set()
    while seen < manifests and time.time() < deadline:
        m = c.poll(1.0)
        if m is None or m.error() or m.value() is None:
            continue
        ids.add(int.from_bytes(m.value()[1:5], "big"))
        o = de(m.value(), SerializationContext(topic, MessageField.VALUE))
        if "records" in o:
            chunks.setdefault((o["stream"], o["step"]), {})[o["chunk_index"]] = o["records"]
        else:
            seen += 1
    c.close()
    if seen < manifests:
        sys.exit(f"consume: {seen} of {manifests} manifests within 120 s")
    with open(out_path, "w") as f:
        for (s, step), byidx in sorted(chunks.items()):
            recs = [[r["synthetic_id"], row_value(r["value"])] for i in sorted(byidx) for r in byidx[i]]
            f.write(json.dumps({"stream": s, "step": step, "records": recs}) + "\n")
    print(json.dumps(sorted(ids)))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "produce":
        produce(*args)
    elif cmd == "serialize":
        serialize(*args)
    elif cmd == "produce-raw":
        produce_raw(*args)
    elif cmd == "consume":
        consume(args[0], args[1], args[2], int(args[3]), args[4])
    else:
        sys.exit(f"unknown command {cmd}")
