"""One line per case of a bench/test_host_overhead.py JSON: host us (median, busy queue), the
case, MET / MISSED against its target, and the idle-GPU figure.

    python tools/gpu/host_summary.py host-perf.json
"""

from __future__ import annotations

import json
import sys


def main(path: str) -> int:
    rows = json.load(open(path))["benchmarks"]
    for b in sorted(rows, key=lambda b: b["name"]):
        e = b["extra_info"]
        t = e.get("target_us")
        mark = "" if t is None else ("  MET" if e["host_us_median"] <= t else f"  MISSED (<= {t})")
        idle = e.get("host_us_idle_median")
        idle = "" if idle is None else f" (idle GPU {idle:.1f} us)"
        print(f"{e['host_us_median']:8.1f} us  {e.get('impl', b['name'])}{mark}{idle}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
