"""One line per case of a bench/test_host_overhead.py JSON: host us (median, busy queue), the
case, MET / MISSED against its target, the idle-GPU figure and how many of the timed calls
rocsample._fastcall served (the rest went through Python), where a served call's host time went
in the idle loop (C parts, us a call) and the CPUs the case ran on.

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
        c = e.get("c_served")
        c = "" if c is None else f" [C served {c}]"
        parts = e.get("c_idle_parts_us")
        parts = "" if not parts else " [idle C: " + ", ".join(
            f"{k} {v:.1f}" for k, v in parts.items()) + "]"
        cpus = e.get("cpus")
        cpus = "" if not cpus else f" cpu {','.join(map(str, cpus))}"
        print(f"{e['host_us_median']:8.1f} us  {e.get('impl', b['name'])}{mark}{idle}{c}{parts}{cpus}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
