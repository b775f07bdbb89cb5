"""The device A/B scripts' summary: graph_lines' records ("VARIANT GRAPH mode shape gpu_us=N",
tools/gpu/steps.sh) averaged per (mode, shape, variant), each variant's ratio to the first one
named, and min_p alone against the chain where a variant has both at a shape.

Usage: python3 tools/gpu/ab_summary.py AB.txt [VARIANT ...]   (default: the variants in the
order they first appear)
"""

from __future__ import annotations

import collections
import re
import statistics
import sys


def main(argv: list[str]) -> int:
    t: dict = collections.defaultdict(list)
    seen: list[str] = []
    for line in open(argv[1]):
        m = re.match(r"(\S+) GRAPH (\S+) (\S+) gpu_us=([0-9.]+)", line)
        if m:
            t[(m[2], m[3], m[1])].append(float(m[4]))
            if m[1] not in seen:
                seen.append(m[1])
    variants = argv[2:] or seen
    mean = {k: statistics.mean(v) for k, v in t.items()}
    print(f"{'mode':10} {'shape':11} " + " ".join(f"{v:>14}" for v in variants)
          + "".join(f" {v + '/' + variants[0]:>12}" for v in variants[1:]))
    for mode, shape in sorted({(m, s) for m, s, _ in t}):
        cells = [f"{mean[(mode, shape, v)]:9.2f} ({len(t[(mode, shape, v)])})"
                 if (mode, shape, v) in mean else "" for v in variants]
        first = mean.get((mode, shape, variants[0]))
        ratios = [f"{mean[(mode, shape, v)] / first:12.3f}" if first and (mode, shape, v) in mean
                  else " " * 12 for v in variants[1:]]
        print(f"{mode:10} {shape:11} " + " ".join(f"{c:>14}" for c in cells)
              + "".join(f" {r}" for r in ratios))
    for shape in sorted({s for _, s, _ in t}):
        for v in variants:
            a, c = mean.get(("minp", shape, v)), mean.get(("chain", shape, v))
            if a and c:
                print(f"min_p / chain {shape} {v}: {a / c:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
