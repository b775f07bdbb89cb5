"""The device gate's wall time under pytest-xdist's file scheduling, from a gate's junit report
(no GPU needed): whether tests/conftest.py's GATE_LONG_FILES still holds the longest files.

The gate (``python -m rocsample.check``) runs ``--dist loadfile``: whole files go to workers,
two to each to start, one more to a worker with at most two tests left. xdist from 3.6 on hands
them out by test count unless ``--no-loadscope-reorder`` (which the gate passes); a GPU run
collects GATE_LONG_FILES first. This replays that scheduling over the report's test times for
both orders and prints the files that a fresh GATE_LONG_FILES would list.

    python tools/gate_order.py bench/results/nvidia-h100-s42-84d40e3-gate-junit.xml.gz [--workers 8]

The replay ignores collection, start-up and compile contention (the forty-second session's
first gate: 296 s modelled, 321 s of pytest).
"""

from __future__ import annotations

import argparse
import gzip
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def file_times(junit: str) -> dict:
    """{test file path: [its tests' seconds, in report order]} (classname a.b.test_c or
    a.b.test_c.TestD -> a/b/test_c.py); ``junit`` may be gzipped."""
    opener = gzip.open if junit.endswith(".gz") else open
    with opener(junit, "rb") as f:
        root = ET.parse(f).getroot()
    out: dict = {}
    for tc in root.iter("testcase"):
        parts = (tc.get("classname") or "").split(".")
        while len(parts) > 1 and parts[-1][:1].isupper():
            parts.pop()   # a test class
        out.setdefault("/".join(parts) + ".py", []).append(float(tc.get("time") or 0))
    return out


def makespan(files: dict, order: list, workers: int = 8) -> float:
    """The wall time of xdist's file scheduling of ``files`` in ``order`` on ``workers``."""
    queue = list(order)
    pending = [[] for _ in range(workers)]
    for _ in range(2):
        for p in pending:
            if queue:
                p.extend(files[queue.pop(0)])
    clock = [0.0] * workers
    while any(pending):
        i = min((w for w in range(workers) if pending[w]), key=lambda w: clock[w])
        clock[i] += pending[i].pop(0)
        if len(pending[i]) <= 2 and queue:
            pending[i].extend(files[queue.pop(0)])
    return max(clock)


def orders(files: dict, long_files) -> dict:
    """The two orders: xdist's (test count, largest first) and the gate's (long files first,
    then the rest as pytest collects them: by path)."""
    rest = sorted(f for f in files if f not in long_files)
    return {"by test count (xdist's own)": sorted(files, key=lambda f: -len(files[f])),
            "GATE_LONG_FILES first": [f for f in long_files if f in files] + rest}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("junit")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--top", type=int, default=8)
    a = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.conftest import GATE_LONG_FILES

    files = file_times(a.junit)
    total = sum(map(sum, files.values()))
    print(f"{len(files)} files, {total:.0f} s of tests, {a.workers} workers "
          f"(at best {total / a.workers:.0f} s)")
    for name, order in orders(files, GATE_LONG_FILES).items():
        print(f"{name}: {makespan(files, order, a.workers):.0f} s")
    longest = sorted(files, key=lambda f: -sum(files[f]))[:a.top]
    print("longest files:", ", ".join(f"{f} {sum(files[f]):.0f}" for f in longest))
    missing = [f for f in longest if f not in GATE_LONG_FILES]
    print("GATE_LONG_FILES lacks:", ", ".join(missing) if missing else "none")
    return 0


if __name__ == "__main__":
    sys.exit(main())
