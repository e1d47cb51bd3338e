#!/usr/bin/env python3
"""Prints the verdicts of outage_replay runs side by side.

usage: replay_verdicts.py NAME=OUTPUT.txt [NAME=OUTPUT.txt ...]
Each OUTPUT.txt is what one outage_replay run printed; NAME heads its column.
"""
import sys

LABELS = [
    ("participants placed after the fault", "calls placed (participants)"),
    ("peak mailbox", "peak mailbox"),
    ("time to recover", "time to recover"),
    ("ring", "ring"),
    ("gateway hosts out of memory", "gateway hosts out of memory"),
    ("recoveries that relapsed", "recoveries that relapsed"),
    ("verdict:", "verdict"),
]


def read(path):
    found = {}
    with open(path) as f:
        for line in f:
            for key, _ in LABELS:
                if line.startswith(key + " ") or (key.endswith(":") and line.startswith(key)):
                    found[key] = line[len(key):].strip()
    return found


def main():
    if len(sys.argv) < 2 or any("=" not in a for a in sys.argv[1:]):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    runs = [(a.split("=", 1)[0], read(a.split("=", 1)[1])) for a in sys.argv[1:]]
    for name, found in runs:
        if "verdict:" not in found:
            print(f"replay_verdicts: the {name} run printed no verdict", file=sys.stderr)
            sys.exit(1)
    width = max(len(label) for _, label in LABELS)
    cols = [max(len(name), *(len(f.get(k, "-")) for k, _ in LABELS)) for name, f in runs]
    print(" " * width + " | " + " | ".join(n.ljust(c) for (n, _), c in zip(runs, cols)))
    print("-" * width + "-+-" + "-+-".join("-" * c for c in cols))
    for key, label in LABELS:
        print(label.ljust(width) + " | " +
              " | ".join(f.get(key, "-").ljust(c) for (_, f), c in zip(runs, cols)))


if __name__ == "__main__":
    main()
