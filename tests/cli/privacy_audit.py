#!/usr/bin/env python3
"""privacy_audit.py — the auditor's check of docs/privacy.md §1.

Two neighbouring inputs D and D2 (they differ in one person's updates) are
replayed under many noise keys.  Everything the release publishes — every
field of every record, manifest and budget event, and the number and order
of lines — is compared:

  * a field whose value is the same under every key for D, the same under
    every key for D2, but different between D and D2 is an *exact*
    data-dependent output (not the output of a noisy mechanism): FAIL;
  * a line or field present under every key for D and absent under every
    key for D2 (or the reverse) is a structural difference: FAIL;
  * the accept/reject decisions about everybody *else's* updates (the
    dead-letter lines whose raw input does not name the person) must be
    identical multisets for D and D2 under each key: FAIL otherwise.

Fields that vary with the key are noise outputs and are not compared here
(their distributions are the DP guarantee, checked by the statistical
tests).  Usage:
  privacy_audit.py BIN CONFIG D.jsonl D2.jsonl PERSON KEYS WORKDIR
Exit 0 if nothing is flagged, 1 with a report otherwise."""
import hashlib
import json
import os
import subprocess
import sys


def replay(binary, config, data, key_hex, out):
    r = subprocess.run([binary, "replay", "--config", config, "--input", data, "--out", out,
                        "--key-hex", key_hex], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"replay failed ({r.returncode}): {r.stderr.strip()}")
    published = {}
    for name in ("releases.jsonl", "budget.jsonl"):
        with open(os.path.join(out, name)) as f:
            lines = [json.loads(line) for line in f]
        published[name] = lines
    with open(os.path.join(out, "rejected.jsonl")) as f:
        rejected = [json.loads(line) for line in f]
    return published, rejected


def flatten(prefix, value, out):
    if isinstance(value, dict):
        for k, v in value.items():
            flatten(f"{prefix}.{k}", v, out)
    elif isinstance(value, list):
        out[f"{prefix}#len"] = len(value)
        for i, v in enumerate(value):
            flatten(f"{prefix}[{i}]", v, out)
    else:
        out[prefix] = value


def fields(published):
    """Every published value, keyed by where it sits: (file, line type,
    stream, step, ordinal within that release, json path), plus how many
    lines each (file, type, stream, step) has.  Keying by position in the
    release rather than by line number keeps one release's fields aligned
    across runs whose earlier releases had other sizes."""
    out = {}
    for name, lines in published.items():
        seen = {}
        for obj in lines:
            group = (name, obj.get("type"), obj.get("stream"), obj.get("step"))
            ordinal = seen.get(group, 0)
            seen[group] = ordinal + 1
            flat = {}
            flatten("", obj, flat)
            for path, v in flat.items():
                out[group + (ordinal, path)] = v
        for group, n in seen.items():
            out[group + ("#lines",)] = n
    return out


def others_decisions(rejected, person):
    """The multiset of (reason, raw) for updates that are not the person's."""
    keep = []
    for r in rejected:
        raw = r.get("raw", "")
        try:
            entity = json.loads(raw).get("entity")
        except (ValueError, AttributeError):
            entity = None
        if entity == person:
            continue
        keep.append((r["reason"], raw))
    return sorted(keep)


def main():
    binary, config, d1, d2, person, keys, work = sys.argv[1:8]
    keys = int(keys)
    runs = {d1: [], d2: []}
    problems = []
    for k in range(keys):
        key_hex = hashlib.blake2b(f"audit key {k}".encode(), digest_size=32).hexdigest()
        decisions = {}
        for data in (d1, d2):
            out = os.path.join(work, f"{os.path.basename(data)}.{k}")
            published, rejected = replay(binary, config, data, key_hex, out)
            runs[data].append(fields(published))
            decisions[data] = others_decisions(rejected, person)
        if decisions[d1] != decisions[d2]:
            a, b = set(decisions[d1]), set(decisions[d2])
            problems.append(f"key {k}: decisions about other people differ: {len(a - b)} only with D, "
                            f"{len(b - a)} only with D2, e.g. {sorted(a ^ b)[:2]}")
            break
    # nothing published, nothing compared: a run without a single release
    # (a wrong route, an input that never closes a step) would pass vacuously
    for data in runs:
        for i, f in enumerate(runs[data]):
            if not any(k[0] == "releases.jsonl" and k[1] == "manifest" and k[-1] == "#lines" for k in f):
                problems.append(f"key {i}: {os.path.basename(data)} published no release: nothing to compare")
                break
    all_fields = set()
    for data in runs:
        for f in runs[data]:
            all_fields.update(f.keys())
    flagged = 0
    for fld in sorted(all_fields, key=str):
        v1 = [f.get(fld, "<absent>") for f in runs[d1]]
        v2 = [f.get(fld, "<absent>") for f in runs[d2]]
        c1 = len(set(map(repr, v1))) == 1
        c2 = len(set(map(repr, v2))) == 1
        if c1 and c2 and v1[0] != v2[0]:
            flagged += 1
            if flagged <= 12:
                problems.append(f"exact data-dependent output {fld}: {v1[0]!r} with D, {v2[0]!r} with D2 "
                                f"under all {keys} keys")
    if flagged > 12:
        problems.append(f"... {flagged - 12} more exact data-dependent fields")
    n_fields = len(all_fields)
    if problems:
        print(f"privacy audit: {len(problems)} finding(s) over {n_fields} published fields, {keys} keys:")
        for p in problems:
            print("  " + p)
        return 1
    print(f"privacy audit: nothing flagged over {n_fields} published fields, {keys} keys")
    return 0


if __name__ == "__main__":
    sys.exit(main())
