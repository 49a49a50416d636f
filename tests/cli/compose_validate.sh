#!/usr/bin/env bash
# compose_validate.sh — static checks of docker/ (no Docker engine here):
#   docker-compose.yml: the expected services; Kafka in KRaft mode with the
#     full KAFKA_* set (docker image semantics: any KAFKA_* drops the
#     defaults) and consistent listeners/voters; a health check; depends_on
#     conditions that exist, point at real services, need a health check /
#     a one-shot job where they say so, and form no cycle; named volumes
#     declared, bind-mounted paths present; the topic-init topics equal the
#     topics the mounted config derives; every dpstream command line names
#     an existing subcommand (from `dpstream --help`) and only options that
#     subcommand's --help documents; every /etc/dpstream/ file it names
#     exists in docker/config/.
#   docker/config: the mounted config passes `dpstream replay`'s validation,
#     and the loader's exact pipeline (gen-panel -> load with the mounted
#     mapping), run to a file instead of Kafka, replays into releases.
#   Dockerfile: two debian:bookworm-slim stages, unit tests run in the
#     build stage, the final stage installs exactly the runtime libraries
#     (no -dev, no compiler), every shared library the dpstream binary
#     links (readelf NEEDED) comes from those packages or libc6, and it
#     runs as a non-root USER.
# Needs python3 with PyYAML (Debian python3-yaml).
# Usage: bash compose_validate.sh /path/to/dpstream
set -euo pipefail
BIN=${1:?usage: compose_validate.sh path/to/dpstream}
SRC=${DPSTREAM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
python3 -c 'import yaml' 2> /dev/null || { echo "FAIL: python3 PyYAML missing (apt-get install python3-yaml)" >&2; exit 1; }

# shared-library → package table for the Dockerfile check
: > "$WORK/needed.txt"
for lib in $(readelf -d "$BIN" | awk '/NEEDED/ {gsub(/[][]/, "", $5); print $5}'); do
    path=$(ldd "$BIN" | awk -v l="$lib" '$1 == l {print $3}')
    pkg=""
    for p in "$path" "$(readlink -f "$path")" "/usr$path" "${path#/usr}"; do
        pkg=$(dpkg -S "$p" 2> /dev/null | head -1 | cut -d: -f1) && [ -n "$pkg" ] && break
    done
    echo "$lib ${pkg:-?}" >> "$WORK/needed.txt"
done

python3 - "$BIN" "$SRC" "$WORK" <<'EOF'
import json, os, re, shlex, subprocess, sys
import yaml

BIN, SRC, WORK = sys.argv[1:4]
DOCKER = os.path.join(SRC, "docker")
errors = []
def check(cond, msg):
    if not cond:
        errors.append(msg)

def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)

compose = yaml.safe_load(open(os.path.join(DOCKER, "docker-compose.yml")))
services = compose.get("services", {})
SHARDED = {"ingest", "release", "loader-sharded"}   # the two-role variant, profile "sharded"
check(set(services) == {"kafka", "schema-registry", "topic-init", "keygen", "dpstream", "loader", "exporter"} | SHARDED,
      f"services: {sorted(services)}")
for name, svc in services.items():
    want = ["sharded"] if name in SHARDED else None
    check(svc.get("profiles") == want, f"{name}: profiles {svc.get('profiles')}, want {want}")

# The header comment is documentation people copy: every service its
# `docker compose` command lines name, and its "Services:" list, exist.
header = []
for line in open(os.path.join(DOCKER, "docker-compose.yml")):
    if not line.startswith("#"):
        break
    header.append(line[1:].strip())
header_text = " ".join(header)
named = []
for line in header:
    m = re.search(r"docker compose -f \S+ (run|logs|exec|start|stop|restart) (.*)", line)
    if m:
        words = [w for w in shlex.split(m.group(2).split("#")[0]) if not w.startswith("-")]
        named += words[:1] if m.group(1) in ("run", "exec") else words
m = re.search(r"Services: ([^(]*)", header_text)
check(m is not None, "the compose header has no 'Services:' list")
if m:
    listed = [w.strip(" .,") for w in m.group(1).split(",")]
    check(set(listed) == set(services), f"the header's Services list {listed} != {sorted(services)}")
check(named, "the compose header names no service in a command line")
for n in named:
    check(n in services, f"the compose header names service '{n}', which does not exist")

# --- Kafka (KRaft) ------------------------------------------------------------------
k = services.get("kafka", {})
check(re.fullmatch(r"apache/kafka:3\.9\.\d+", str(k.get("image", ""))), f"kafka image {k.get('image')}")
env = {str(a): str(b) for a, b in (k.get("environment") or {}).items()}
required = ["KAFKA_NODE_ID", "KAFKA_PROCESS_ROLES", "KAFKA_CONTROLLER_QUORUM_VOTERS", "KAFKA_LISTENERS",
            "KAFKA_ADVERTISED_LISTENERS", "KAFKA_INTER_BROKER_LISTENER_NAME", "KAFKA_CONTROLLER_LISTENER_NAMES",
            "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP", "KAFKA_LOG_DIRS", "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR",
            "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR", "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR",
            "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS", "CLUSTER_ID"]
for key in required:
    check(key in env, f"kafka environment lacks {key}")
if all(key in env for key in required):
    check(set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}, "process roles")
    check(re.fullmatch(r"[A-Za-z0-9_-]{22}", env["CLUSTER_ID"]), "CLUSTER_ID must be a 22-char base64url uuid")
    voters = env["KAFKA_CONTROLLER_QUORUM_VOTERS"].split(",")
    check(len(voters) == 1 and voters[0].split("@")[0] == env["KAFKA_NODE_ID"], "quorum voter is not this node")
    proto = dict(x.split(":") for x in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(","))
    listeners = {x.split("://")[0]: x.split("://")[1] for x in env["KAFKA_LISTENERS"].split(",")}
    adv = {x.split("://")[0]: x.split("://")[1] for x in env["KAFKA_ADVERTISED_LISTENERS"].split(",")}
    for name in listeners:
        check(name in proto, f"listener {name} not in the protocol map")
    ctl = env["KAFKA_CONTROLLER_LISTENER_NAMES"]
    check(ctl in listeners and ctl not in adv, "controller listener must be listened on, not advertised")
    check(env["KAFKA_INTER_BROKER_LISTENER_NAME"] in adv, "inter-broker listener not advertised")
    check(set(adv) <= set(listeners), "advertised listener without a listener")
    voter_port = voters[0].split(":")[-1]
    check(listeners[ctl].endswith(":" + voter_port), "quorum voter port differs from the controller listener")
    # single node: every internal topic must be creatable with one replica
    for key in ["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR", "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR",
                "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR"]:
        check(env[key] == "1", f"{key} must be 1 on one node")
hc = k.get("healthcheck", {})
check("kafka-broker-api-versions.sh" in " ".join(map(str, hc.get("test", []))), "kafka health check")

# --- depends_on ----------------------------------------------------------------------
ONE_SHOT = {"topic-init", "keygen"}
graph = {}
for name, svc in services.items():
    deps = svc.get("depends_on", {}) or {}
    if isinstance(deps, list):
        deps = {d: {"condition": "service_started"} for d in deps}
    graph[name] = list(deps)
    for dep, spec in deps.items():
        check(dep in services, f"{name} depends on unknown {dep}")
        cond = (spec or {}).get("condition", "service_started")
        check(cond in ("service_started", "service_healthy", "service_completed_successfully"),
              f"{name}: bad condition {cond}")
        if cond == "service_healthy":
            check("healthcheck" in services.get(dep, {}), f"{name} waits for {dep} to be healthy; it has no healthcheck")
        if cond == "service_completed_successfully":
            check(dep in ONE_SHOT and str(services.get(dep, {}).get("restart", "no")) == "no",
                  f"{name} waits for {dep} to complete; it must be a one-shot job")
expect = {"topic-init": {"kafka": "service_healthy"},
          "schema-registry": {"kafka": "service_healthy"},
          "dpstream": {"topic-init": "service_completed_successfully", "keygen": "service_completed_successfully",
                       "schema-registry": "service_healthy"},
          "loader": {"topic-init": "service_completed_successfully", "schema-registry": "service_healthy"},
          "exporter": {"topic-init": "service_completed_successfully", "schema-registry": "service_healthy"},
          "ingest": {"topic-init": "service_completed_successfully", "keygen": "service_completed_successfully",
                     "schema-registry": "service_healthy"},
          "release": {"topic-init": "service_completed_successfully", "keygen": "service_completed_successfully",
                      "schema-registry": "service_healthy"},
          "loader-sharded": {"topic-init": "service_completed_successfully", "schema-registry": "service_healthy"}}
for name, deps in expect.items():
    got = services.get(name, {}).get("depends_on", {}) or {}
    for dep, cond in deps.items():
        check(dep in got and got[dep].get("condition") == cond, f"{name} must wait for {dep}: {cond}")
state = {}
def visit(n):
    if state.get(n) == 1:
        errors.append(f"depends_on cycle through {n}")
        return
    if state.get(n) == 2:
        return
    state[n] = 1
    for d in graph.get(n, []):
        visit(d)
    state[n] = 2
for n in graph:
    visit(n)

# --- volumes ----------------------------------------------------------------------------
declared = set((compose.get("volumes") or {}).keys())
used = set()
for name, svc in services.items():
    for v in svc.get("volumes", []) or []:
        src, dst = str(v).split(":")[:2]
        if src.startswith(".") or src.startswith("/"):
            check(os.path.exists(os.path.join(DOCKER, src)), f"{name}: bind mount source {src} missing")
        else:
            used.add(src)
            check(src in declared, f"{name}: volume {src} not declared")
check(used == declared, f"declared but unused volumes: {declared - used}")
check(any(str(v).startswith("dpstream-export:") for v in services.get("exporter", {}).get("volumes", [])),
      "exporter must write to a volume")

# --- dpstream command lines --------------------------------------------------------------
helptext = run([BIN, "--help"]).stdout
subcommands = set(re.findall(r"^  (\S+)\s", helptext, re.M))
check({"run", "load", "export", "gen-panel", "keygen", "replay"} <= subcommands, f"subcommands: {subcommands}")
sub_help = {}
invocations = []
for name, svc in services.items():
    if not str(svc.get("image", "")).startswith("dpstream"):
        continue
    cmd = svc.get("command")
    check(cmd is not None, f"{name}: no command")
    if cmd is None:
        continue
    argv = cmd if isinstance(cmd, list) else shlex.split(cmd)
    argv = [str(a) for a in argv]
    if argv[:2] == ["sh", "-c"]:
        script = argv[2]
        parts = re.split(r"&&|\|\||;", script)
        found = False
        for part in parts:
            toks = shlex.split(part)
            if "dpstream" in toks:
                found = True
                invocations.append((name, toks[toks.index("dpstream"):]))
        check(found, f"{name}: no dpstream command in {script!r}")
    else:
        check(argv[0] == "dpstream", f"{name}: command must start with dpstream: {argv}")
        invocations.append((name, argv))
for name, argv in invocations:
    sub = argv[1] if len(argv) > 1 else ""
    check(sub in subcommands, f"{name}: 'dpstream {sub}' is not a dpstream subcommand")
    if sub not in subcommands:
        continue
    if sub not in sub_help:
        r = run([BIN, sub, "--help"])
        check(r.returncode == 0, f"dpstream {sub} --help exits {r.returncode}")
        sub_help[sub] = r.stdout
    for a in argv[2:]:
        if a.startswith("--"):
            check(re.search(re.escape(a) + r"\b", sub_help[sub]) is not None,
                  f"{name}: option {a} is not documented by 'dpstream {sub} --help'")
        if a.startswith("/etc/dpstream/"):
            check(os.path.exists(os.path.join(DOCKER, "config", a[len('/etc/dpstream/'):])),
                  f"{name}: {a} is not in docker/config/")
runs = [a for n, a in invocations if n == "dpstream"]
check(len(runs) == 1 and runs[0][1] == "run", "the dpstream service must run 'dpstream run'")
check(any(a[1] == "gen-panel" for n, a in invocations if n == "loader") and
      any(a[1] == "load" for n, a in invocations if n == "loader"), "loader must be gen-panel -> load")
check(any(a[1] == "export" and "--follow" in a for n, a in invocations if n == "exporter"), "exporter must follow")

# --- the mounted config and the loader's pipeline, offline ---------------------------------
cfg_path = os.path.join(DOCKER, "config", "dpstream.json")
key = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
r = run([BIN, "replay", "--config", cfg_path, "--input", "/dev/null", "--out", f"{WORK}/empty", "--key-hex", key])
check(r.returncode == 0, f"mounted config refused: {r.stderr}")
cfg = json.load(open(cfg_path))
script = " ".join(map(str, services["topic-init"].get("command", [])))
# topic -> created compacted?  `for topic in A B; do <create> done` loops
# give their topics their body's policy; the other creates name one topic.
created = {}
def note_create(topics, body):
    for t in topics:
        check(t not in created, f"topic-init creates {t} twice")
        created[t] = "cleanup.policy=compact" in body
rest = script
for m in re.finditer(r"for topic in ([^;]+); do(.*?)\bdone\b", script, re.S):
    note_create(m.group(1).split(), m.group(2))
    rest = rest.replace(m.group(0), " ")
for cmd in re.split(r"(?=\$\$t\s)", rest):
    m = re.search(r"--topic\s+(\S+)", cmd)
    if m:
        note_create([m.group(1)], cmd)
def check_topics(cfg, extra, compacted):
    """topic-init creates the config's topics as dpstream itself would
    (topics.partitions, topics.replication_factor), exactly `compacted` so"""
    prefix = cfg.get("topics", {}).get("prefix", "dpstream")
    want_topics = {f"{prefix}.{s}" for s in ("updates", "synthetic", "budget", "deadletter", "state") + extra}
    got_topics = {t for t in created if t.startswith(prefix + ".")}
    check(got_topics == want_topics, f"topic-init creates {sorted(got_topics)}, config derives {sorted(want_topics)}")
    got_compact = {t for t in got_topics if created[t]}
    want_compact = {f"{prefix}.{t}" for t in compacted}
    check(got_compact == want_compact, f"topic-init compacts {sorted(got_compact)}, want {sorted(want_compact)}")
    tcfg = cfg.get("topics", {})
    for flag, want in (("--partitions", tcfg.get("partitions", 4)),
                       ("--replication-factor", tcfg.get("replication_factor"))):
        got = set(re.findall(re.escape(flag) + r"\s+(\d+)", script))
        if want is not None and want != -1:
            check(got == {str(want)}, f"topic-init {flag} {sorted(got)}, the config says {want}")
check_topics(cfg, (), ("state",))
# the mounted config's schema registry is the compose service, on the port it listens on
reg_url = cfg.get("schema_registry", {}).get("url", "")
m = re.match(r"https?://([^:/]+):(\d+)", reg_url)
check(m is not None and m.group(1) in services, f"schema_registry.url {reg_url!r} must name a compose service")
if m and m.group(1) in services:
    listeners = str((services[m.group(1)].get("environment") or {}).get("SCHEMA_REGISTRY_LISTENERS", ""))
    check(listeners.endswith(":" + m.group(2)), f"schema_registry.url port {m.group(2)}, the service listens on {listeners}")
# replicas must not share an instance id (they would fence each other)
denv = services.get("dpstream", {}).get("environment") or {}
check("DPSTREAM_INSTANCE_ID" not in denv,
      "the dpstream service must not fix DPSTREAM_INSTANCE_ID: replicas (--scale) would share it")
# run a loader's own command lines, with the output redirected to a file,
# and replay what it wrote under its config: 12 releases, nothing rejected
def check_loader(service, cfg_path, tag):
    for argv in [a for n, a in invocations if n == service]:
        argv = [os.path.join(DOCKER, "config", a[len("/etc/dpstream/"):]) if a.startswith("/etc/dpstream/")
                else f"{WORK}/{tag}-" + a[len("/tmp/"):] if a.startswith("/tmp/") else a for a in argv]
        if argv[1] == "load" and "--config" in argv:
            i = argv.index("--config")
            argv[i:i + 2] = ["--out", f"{WORK}/{tag}-updates.jsonl", "--quiet"]
        r = run([BIN] + argv[1:])
        check(r.returncode == 0, f"{service} step {argv[1]} failed: {r.stderr}")
    r = run([BIN, "replay", "--config", cfg_path, "--input", f"{WORK}/{tag}-updates.jsonl", "--out", f"{WORK}/{tag}-rep",
             "--key-hex", key])
    check(r.returncode == 0, f"replay of {service}'s updates failed: {r.stderr}")
    if r.returncode == 0:
        rel = open(f"{WORK}/{tag}-rep/releases.jsonl").read()
        check(rel.count('"type":"manifest"') == 12, f"{service}: expected 12 releases, got {rel.count('manifest')}")
        check(os.path.getsize(f"{WORK}/{tag}-rep/rejected.jsonl") == 0, f"{service}'s updates were rejected")
check_loader("loader", cfg_path, "demo")

# --- the two-role variant: its config shards a route, its instances run the two roles
scfg_path = os.path.join(DOCKER, "config", "dpstream-sharded.json")
r = run([BIN, "replay", "--config", scfg_path, "--input", "/dev/null", "--out", f"{WORK}/sempty", "--key-hex", key])
check(r.returncode == 0, f"the sharded config is refused: {r.stderr}")
scfg = json.load(open(scfg_path))
check(any(s.get("sharded") for s in scfg.get("streams", [])), "dpstream-sharded.json shards no route")
check(scfg.get("topics", {}).get("prefix") != cfg.get("topics", {}).get("prefix"),
      "the two-role variant must not share the demo's topics")
check_topics(scfg, ("stats", "release-state"), ("state", "release-state"))
for role in ("ingest", "release"):
    argv = [a for n, a in invocations if n == role]
    check(len(argv) == 1 and argv[0][1] == "run" and argv[0][argv[0].index("--role") + 1] == role and
          "/etc/dpstream/dpstream-sharded.json" in argv[0],
          f"the {role} service must run 'dpstream run --role {role}' on dpstream-sharded.json")
    check("DPSTREAM_INSTANCE_ID" not in (services.get(role, {}).get("environment") or {}),
          f"the {role} service must not fix DPSTREAM_INSTANCE_ID: replicas would share it")
check_loader("loader-sharded", scfg_path, "sharded")

# --- Dockerfile ------------------------------------------------------------------------------
lines = []
for raw in open(os.path.join(DOCKER, "Dockerfile")).read().replace("\\\n", " ").splitlines():
    raw = raw.strip()
    if raw and not raw.startswith("#"):
        lines.append(raw)
stages = []
for l in lines:
    ins, _, rest = l.partition(" ")
    if ins.upper() == "FROM":
        m = re.fullmatch(r"(\S+)(?:\s+AS\s+(\S+))?", rest.strip(), re.I)
        stages.append({"image": m.group(1), "name": m.group(2), "lines": []})
    elif stages:
        stages[-1]["lines"].append((ins.upper(), rest))
check(len(stages) == 2, f"Dockerfile must have two stages, has {len(stages)}")
check(all(s["image"] == "debian:bookworm-slim" for s in stages), "both stages must be debian:bookworm-slim")
if len(stages) == 2:
    build, final = stages
    build_runs = " ".join(r for i, r in build["lines"] if i == "RUN")
    check("ctest" in build_runs and "-L unit" in build_runs, "the build stage must run the unit tests")
    final_runs = " ".join(r for i, r in final["lines"] if i == "RUN")
    m = re.search(r"apt-get install\s+((?:-\S+\s+)*)(.*?)(?:&&|$)", final_runs)
    pkgs = set(m.group(2).split()) if m else set()
    runtime = {"librdkafka1", "libavro23", "libsodium23", "libjansson4", "libjemalloc2", "libmicrohttpd12", "libcurl4"}
    check(pkgs == runtime, f"runtime packages {sorted(pkgs)}, want {sorted(runtime)}")
    check(not re.search(r"-dev\b|build-essential|cmake|gcc", final_runs), "compiler or -dev package in the final stage")
    needed = [l.split() for l in open(f"{WORK}/needed.txt")]
    for lib, pkg in needed:
        # libc6/libgcc-s1 are in every Debian image; sanitizer runtimes only
        # appear when this test runs against an ASan/UBSan build
        sanitizer = re.match(r"lib(a|ub|t|l)san\.so", lib) is not None
        check(pkg in runtime or pkg.startswith("libc6") or pkg == "libgcc-s1" or sanitizer,
              f"{lib} comes from {pkg}, not installed in the final stage")
    check(any(i == "COPY" and f"--from={build['name']}" in r and "dpstream" in r for i, r in final["lines"]),
          "the final stage must copy the binary from the build stage")
    users = [r.strip() for i, r in final["lines"] if i == "USER"]
    check(users and users[-1].split(":")[0] not in ("root", "0"), f"final USER must be non-root: {users}")
    check(any("useradd" in r for i, r in final["lines"] if i == "RUN"), "the final stage must create its user")
check(os.path.exists(os.path.join(DOCKER, "Dockerfile.dockerignore")), "docker/Dockerfile.dockerignore missing")

if errors:
    for e in errors:
        print("FAIL:", e, file=sys.stderr)
    sys.exit(1)
print(f"compose_validate: ok ({len(services)} services, {len(invocations)} dpstream command lines, "
      f"{len(needed)} linked libraries checked)")
EOF
