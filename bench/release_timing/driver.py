#!/usr/bin/env python3
"""driver.py — release timing (issue 36 item 7): does the time from a step's
CLOSE_STEP marker to its committed release depend on the data, at a fixed
configuration and a fixed public shape of the input?  (bench/release_timing/
run.sh runs it; inputs.py says what the two variants A and B of each
scenario are.)

  driver.py kafka BIN OUT.jsonl --scenarios S,... --n N --steps T --reps R [--gap-s G]
      One `dpstream run` per (scenario, variant, rep) against the broker of
      $DPSTREAM_BOOTSTRAP_SERVERS, on its own topics (prefix rt-…, one
      partition).  Per step: `dpstream produce` the step's updates, wait G
      seconds (the processor ingests them meanwhile), `dpstream produce` the
      step's CLOSE_STEP marker alone, and wait until a read_committed
      consumer of the synthetic topic sees the step's ReleaseManifest.
      Afterwards the topics are read back and one JSON line per step is
      written with, in ms after the marker's Kafka timestamp (CreateTime,
      set by the producer; every clock is this host's):
        first_chunk  the release's first SyntheticRecord chunk's timestamp
        manifest     the ReleaseManifest's timestamp (what a consumer of the
                     release reads as its time)
        seen         when the read_committed consumer received the manifest
                     (after the commit)
        logged       the processor's `step_released` log event (after the commit)
      and the step's mode, record count, adaptive's `released`, and the
      bytes and messages the step wrote to the state topic.
      Variants run interleaved (A B A B ...) so that drift hits both alike.

  driver.py offline BIN OUT.jsonl --scenarios S,... --n N --steps T --reps R [--variants A,B]
      `dpstream replay` of each variant's whole input (markers included),
      interleaved; one JSON line per run: wall and CPU seconds (no Kafka).
      (hypercube also takes --variants S12,S8,S6,S4,S0: points in a box of
      side 2^-k, see inputs.py)

  driver.py report OUT.jsonl [OFFLINE.jsonl]
      min / median / max per (scenario, variant, mode) and B − A of the medians
      (steps 1 — the producer's first transaction — and window's NONE steps left out).
"""
import io
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import inputs  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KEY = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"


def arg(name, default=None, cast=str):
    if name in sys.argv:
        return cast(sys.argv[sys.argv.index(name) + 1])
    return default


def write_inputs(work, scenario, variant, n, steps, seed):
    route, lines = inputs.make(scenario, variant, n, steps, seed)
    files = []
    for t, step in enumerate(lines, 1):
        up, mk = f"{work}/{variant}.{t}.updates.jsonl", f"{work}/{variant}.{t}.marker.jsonl"
        with open(up, "w") as f:
            f.write("\n".join(step) + "\n")
        with open(mk, "w") as f:
            f.write(inputs.marker(t) + "\n")
        files.append((up, mk))
    return route, files


# --- Kafka -------------------------------------------------------------------------------

def schemas():
    import fastavro
    named, out = {}, {}
    for name in ("Update", "SyntheticRecord", "ReleaseManifest"):
        with open(f"{ROOT}/schemas/{name}.avsc") as f:
            out[name] = fastavro.parse_schema(json.load(f), named_schemas=named)
    return out


def read_topic(boot, topic, committed=True):
    """Every message of the topic: (partition, offset, timestamp ms, type header, key, value)."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition
    c = Consumer({"bootstrap.servers": boot, "group.id": f"rt-read-{uuid.uuid4().hex[:8]}",
                  "isolation.level": "read_committed" if committed else "read_uncommitted",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    parts = c.list_topics(topic, timeout=30).topics[topic].partitions
    c.assign([TopicPartition(topic, p, 0) for p in parts])
    left, out = set(parts), []
    while left:
        m = c.poll(10.0)
        if m is None:
            raise SystemExit(f"timed out reading {topic}")
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                left.discard(m.partition())
                continue
            raise SystemExit(f"reading {topic}: {m.error()}")
        kind = dict(m.headers() or []).get("dpstream.type", b"").decode()
        out.append((m.partition(), m.offset(), m.timestamp()[1], kind, m.key(), m.value()))
    c.close()
    return out


def kafka_run(binary, boot, scenario, variant, rep, n, steps, gap_s, sch, work):
    import fastavro
    from confluent_kafka import Consumer, TopicPartition
    prefix = f"rt-{scenario}-{variant}{rep}-{uuid.uuid4().hex[:8]}"
    route, files = write_inputs(work, scenario, variant, n, steps, 1)
    cfg = f"{work}/{variant}.config.json"
    with open(cfg, "w") as f:
        json.dump({"topics": {"prefix": prefix, "partitions": 1},
                   "kafka": {"session.timeout.ms": "6000", "group.id": f"{prefix}.group"},
                   "streams": [route]}, f)
    log = f"{work}/{variant}.run.log"
    env = dict(os.environ, DPSTREAM_BOOTSTRAP_SERVERS=boot)

    def produce(path):
        subprocess.run([binary, "produce", "--config", cfg, "--input", path], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    # the updates topic first (run subscribes to it), then the processor
    produce(files[0][0])
    run = subprocess.Popen([binary, "run", "--config", cfg, "--key-hex", KEY, "--instance-id", prefix,
                            "--idle-timeout-ms", "0", "--log-format", "json", "--log-level", "debug"],
                           env=env, stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    try:
        deadline = time.time() + 60
        while '"event":"rebalance_assign"' not in open(log).read():
            if run.poll() is not None or time.time() > deadline:
                raise SystemExit(f"{prefix}: the processor did not get its partition: {open(log).read()[-600:]}")
            time.sleep(0.1)
        synthetic = f"{prefix}.synthetic"
        cons = Consumer({"bootstrap.servers": boot, "group.id": f"{prefix}.watch", "isolation.level": "read_committed",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 10})
        cons.assign([TopicPartition(synthetic, 0, 0)])
        seen = {}
        for t, (up, mk) in enumerate(files, 1):
            if t > 1:
                produce(up)
            # the processor ingests the step's updates meanwhile; the watcher
            # keeps polling (an idle consumer's first fetch would be late)
            until = time.time() + gap_s
            while time.time() < until:
                cons.poll(0.05)
            produce(mk)
            deadline = time.time() + 120
            while t not in seen:
                m = cons.poll(0.05)
                if m is not None and not m.error() and \
                        dict(m.headers() or []).get("dpstream.type", b"") == b"ReleaseManifest":
                    body = fastavro.schemaless_reader(io.BytesIO(m.value()), sch["ReleaseManifest"])
                    seen[body["step"]] = time.time() * 1000.0
                if time.time() > deadline:
                    raise SystemExit(f"{prefix}: step {t} not released within 120 s")
        cons.close()
    finally:
        run.send_signal(signal.SIGTERM)
        try:
            run.wait(60)
        except subprocess.TimeoutExpired:
            run.kill()
            run.wait()
    # read everything back
    markers = {}
    for _, _, ts, _, _, v in read_topic(boot, f"{prefix}.updates", committed=False):
        u = fastavro.schemaless_reader(io.BytesIO(v), sch["Update"])
        if u["kind"] == "CLOSE_STEP":
            markers[u["step"]] = ts
    rel = {}
    for _, _, ts, kind, _, v in read_topic(boot, synthetic):
        body = fastavro.schemaless_reader(io.BytesIO(v), sch[kind])
        r = rel.setdefault(body["step"], {"first_chunk": None})
        if kind == "SyntheticRecord":
            r["first_chunk"] = ts if r["first_chunk"] is None else min(r["first_chunk"], ts)
        else:
            r.update(manifest=ts, mode=body["mode"], records=body["record_count"],
                     released={d["name"]: d["value"] for d in body["debias"]}.get("released"))
    state = read_topic(boot, f"{prefix}.state")
    logged = {}
    commits = []
    for line in open(log):
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("event") == "step_released":
            logged[e["step"]] = e["ts"]
        elif e.get("event") == "txn_commit":
            commits.append(e["msg"])
    rows = []
    bounds = [markers[t] for t in range(1, steps + 1)] + [float("inf")]
    for t in range(1, steps + 1):
        m0 = markers[t]
        r = rel[t]
        st = [x for x in state if bounds[t - 1] <= x[2] < bounds[t]]
        lts = logged.get(t)
        lms = None
        if lts:   # RFC 3339 with milliseconds, UTC
            import datetime
            lms = datetime.datetime.strptime(lts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
                tzinfo=datetime.timezone.utc).timestamp() * 1000.0
        rows.append({"scenario": scenario, "variant": variant, "rep": rep, "n": n, "step": t,
                     "mode": r["mode"], "records": r["records"], "released": r["released"],
                     "first_chunk": None if r["first_chunk"] is None else r["first_chunk"] - m0,
                     "manifest": r["manifest"] - m0, "seen": round(seen[t] - m0, 1),
                     "logged": None if lms is None else round(lms - m0, 1),
                     "state_bytes": sum(len(x[5] or b"") for x in st), "state_msgs": len(st)})
    return rows


# --- offline -----------------------------------------------------------------------------

def offline_run(binary, scenario, variant, n, steps, work):
    route, files = write_inputs(work, scenario, variant, n, steps, 1)
    cfg, inp = f"{work}/{variant}.offline.json", f"{work}/{variant}.all.jsonl"
    if not os.path.exists(inp):
        with open(cfg, "w") as f:
            json.dump({"streams": [route]}, f)
        with open(inp, "w") as f:
            for up, mk in files:
                f.write(open(up).read() + open(mk).read())
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    subprocess.run([binary, "replay", "--config", cfg, "--input", inp, "--out", f"{work}/{variant}.out",
                    "--key-hex", KEY], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return {"scenario": scenario, "variant": variant, "n": n, "steps": steps, "wall_s": round(wall, 3),
            "cpu_s": round(cpu, 3)}


# --- report ------------------------------------------------------------------------------

def mmm(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    return f"{min(xs):.0f} / {statistics.median(xs):.0f} / {max(xs):.0f}"


def report(path, offline=None):
    rows = [json.loads(l) for l in open(path)]
    groups = {}
    for r in rows:
        if r["mode"] == "NONE" or r["step"] == 1:
            continue   # window before step k: no dataset yet (public); step 1: the producer's first transaction
        kind = r["mode"] if r["released"] is None else ("release" if r["released"] else "repeat")
        groups.setdefault((r["scenario"], kind), {}).setdefault(r["variant"], []).append(r)
    print("| scenario | steps | variant | n | records | marker → manifest timestamp (ms) | marker → seen committed (ms) "
          "| state bytes a step | B − A of the medians, manifest / seen (ms) |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for (sc, kind), by in sorted(groups.items()):
        med = {v: statistics.median([r["manifest"] for r in rs]) for v, rs in by.items()}
        sen = {v: statistics.median([r["seen"] for r in rs]) for v, rs in by.items()}
        for v in sorted(by):
            rs = by[v]
            d = f"{med['B'] - med['A']:+.0f} / {sen['B'] - sen['A']:+.0f}" if v == "B" and "A" in med else ""
            print(f"| {sc} | {kind} ×{len(rs)} | {v} | {rs[0]['n']} | {statistics.median([r['records'] for r in rs]):.0f} "
                  f"| {mmm([r['manifest'] for r in rs])} | {mmm([r['seen'] for r in rs])} "
                  f"| {statistics.median([r['state_bytes'] for r in rs]):.0f} | {d} |")
    # step by step: a step's public work differs with its index (hypercube
    # refines its partition at public times, marginal's FULL release grows),
    # so A and B are compared at the same step
    print()
    print("| scenario | step | records A / B | manifest A (ms) | manifest B (ms) | seen A (ms) | seen B (ms) "
          "| B − A manifest / seen | ranges apart |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    steps = {}
    for r in rows:
        if r["mode"] != "NONE" and r["step"] > 1:
            steps.setdefault((r["scenario"], r["step"]), {}).setdefault(r["variant"], []).append(r)
    for (sc, t), by in sorted(steps.items()):
        if set(by) != {"A", "B"}:
            continue
        a, b = by["A"], by["B"]
        if any(r["released"] is not None for r in a + b) and \
                len({r["released"] for r in a + b}) > 1:
            continue   # adaptive: only steps with one release decision in every run
        ma, mb = [r["manifest"] for r in a], [r["manifest"] for r in b]
        sa, sb = [r["seen"] for r in a], [r["seen"] for r in b]
        apart = "manifest" if max(ma) < min(mb) or max(mb) < min(ma) else ""
        if max(sa) < min(sb) or max(sb) < min(sa):
            apart = (apart + " seen").strip()
        print(f"| {sc} | {t} | {statistics.median([r['records'] for r in a]):.0f} / "
              f"{statistics.median([r['records'] for r in b]):.0f} | {mmm(ma)} | {mmm(mb)} | {mmm(sa)} | {mmm(sb)} "
              f"| {statistics.median(mb) - statistics.median(ma):+.0f} / {statistics.median(sb) - statistics.median(sa):+.0f} "
              f"| {apart} |")
    if offline:
        off = [json.loads(l) for l in open(offline)]
        print()
        print("| scenario | variant | n × steps | replay CPU s (min / median / max) | replay wall s |")
        print("|---|---|---:|---:|---:|")
        by = {}
        for r in off:
            by.setdefault((r["scenario"], r["variant"]), []).append(r)
        for (sc, v), rs in sorted(by.items()):
            c = [r["cpu_s"] for r in rs]
            w = [r["wall_s"] for r in rs]
            print(f"| {sc} | {v} | {rs[0]['n']} × {rs[0]['steps']} | {min(c):.2f} / {statistics.median(c):.2f} / "
                  f"{max(c):.2f} | {statistics.median(w):.2f} |")


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    mode = sys.argv[1]
    if mode == "report":
        report(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 and not sys.argv[3].startswith("-") else None)
        return
    binary, out = os.path.abspath(sys.argv[2]), sys.argv[3]
    scen = arg("--scenarios", ",".join(inputs.SCENARIOS)).split(",")
    n, steps, reps = arg("--n", 20000, int), arg("--steps", 8, int), arg("--reps", 3, int)
    gap = arg("--gap-s", 1.0, float)
    boot = os.environ.get("DPSTREAM_BOOTSTRAP_SERVERS", "127.0.0.1:39092")
    sch = schemas() if mode == "kafka" else None
    variants = arg("--variants", "A,B").split(",")
    with open(out, "a") as f:
        for sc in scen:
            with tempfile.TemporaryDirectory(prefix="rt-") as work:
                for rep in range(reps):
                    for v in variants:
                        if mode == "kafka":
                            rows = kafka_run(binary, boot, sc, v, rep, n, steps, gap, sch, work)
                        else:
                            rows = [offline_run(binary, sc, v, n, steps, work)]
                        for r in rows:
                            f.write(json.dumps(r) + "\n")
                        f.flush()
                        print(f"{mode} {sc} {v} rep {rep}: " +
                              (", ".join(f"{r['step']}:{r['mode'][0]} {r['manifest']:.0f}/{r['seen']:.0f}"
                                         for r in rows) if mode == "kafka" else f"{rows[0]['cpu_s']} s CPU"),
                              file=sys.stderr)


if __name__ == "__main__":
    main()
