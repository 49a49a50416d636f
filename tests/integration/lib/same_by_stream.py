"""same_by_stream.py — whether two runs' releases and budget events are the
same, stream by stream (Kafka orders only within a partition, so lines of
different streams may interleave differently), byte for byte per line.
Usage: python3 same_by_stream.py EXPECTED_DIR ACTUAL_DIR  (exit 1 if not)."""
import json
import sys


def by_stream(path):
    g = {}
    for line in open(path):
        g.setdefault(json.loads(line)["stream"], []).append(line)
    return g


def main(expected, actual):
    ok = True
    for f in ["releases.jsonl", "budget.jsonl"]:
        a, b = by_stream(f"{expected}/{f}"), by_stream(f"{actual}/{f}")
        if sorted(a) != sorted(b):
            print(f"{f}: streams differ: {sorted(a)} vs {sorted(b)}")
            ok = False
            continue
        for s in a:
            if a[s] != b[s]:
                print(f"{f}: stream {s}: {len(a[s])} expected lines vs {len(b[s])} lines differ")
                ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
