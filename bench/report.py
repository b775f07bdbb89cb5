"""Markdown tables from pytest-benchmark JSON (the figures BENCHMARKS.md quotes).

``python -m bench.report bench/results/nvidia-h200-*.json``
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path


def _load(paths):
    out = []
    for p in paths:
        out.extend(json.loads(Path(p).read_text())["benchmarks"])
    return out


def sampling_table(benches) -> str:
    by = defaultdict(dict)
    for b in benches:
        e = b["extra_info"]
        if e.get("impl") in ("rocsample", "torch", "flashinfer") and "mode" in e:
            by[(e["mode"], e["rows"], e["vocab"])][e["impl"]] = e
    lines = ["| mode | rows x vocab | floor us | rocsample GPU us | x floor | torch GPU us | FlashInfer GPU us | vs torch | vs FlashInfer |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    order = ["greedy", "temperature", "top_k50", "top_p095", "chain"]
    for key in sorted(by, key=lambda k: (order.index(k[0]), k[1], k[2])):
        d = by[key]
        r, t, f = d.get("rocsample"), d.get("torch"), d.get("flashinfer")
        if r is None:
            continue
        rt = r["device_time_us"]
        tt = t["device_time_us"] if t else None
        ft = f["device_time_us"] if f else None

        def fmt(v, p=1):
            return "-" if v is None else f"{v:.{p}f}"

        lines.append(
            f"| {key[0]} | {key[1]} x {key[2]} | {r['floor_us']:.1f} | {rt:.1f} | {r['ratio_to_floor']:.1f} | "
            f"{fmt(tt)} | {fmt(ft)} | {fmt(tt / rt if tt else None, 2)} | {fmt(ft / rt if ft else None, 2)} |")
    return "\n".join(lines)


def _us(e) -> str:
    return "-" if e is None else f"{e['device_time_us']:.1f}"


def set_rows_table(benches) -> str:
    rows = {}
    for b in benches:
        if "test_set_rows.py" not in b["fullname"] or "reference" in b["name"]:
            continue
        name = b["name"]
        p = name[name.index("[") + 1:-1].split("-")
        impl = "torch" if "torch" in name else p[2]
        rows.setdefault((p[0], p[1]), {})[impl] = b["extra_info"]
    lines = ["| case | dst | floor us | unchecked GPU us | x floor | checked GPU us | torch index_copy_ GPU us |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for (case, t), d in sorted(rows.items(), key=lambda kv: (["decode", "prefill", "large"].index(kv[0][0]), kv[0][1])):
        u, c, tt = d.get("unchecked"), d.get("checked"), d.get("torch")
        lines.append(f"| {case} | {t} | {u['floor_us']:.1f} | {u['device_time_us']:.1f} | {u['ratio_to_floor']:.2f} | "
                     f"{c['device_time_us']:.1f} | {_us(tt)} |")
    return "\n".join(lines)


def overhead_table(benches) -> str:
    lines = ["| path | host us per call (median) |", "|---|---:|"]
    rows = [b for b in benches if "test_host_overhead.py" in b["fullname"]]
    for b in sorted(rows, key=lambda b: b["stats"]["median"]):
        lines.append(f"| {b['extra_info'].get('impl', b['name'])} | {b['stats']['median'] * 1e6:.1f} |")
    for b in benches:
        if "test_warm_start.py" in b["fullname"]:
            e = b["extra_info"]
            lines.append(f"| time to first token, new process, cold JIT cache | {e['cold_s']:.2f} s |")
            lines.append(f"| time to first token, new process, warm JIT cache | {e['warm_s_median']:.2f} s |")
    return "\n".join(lines)


def main(argv=None) -> int:
    benches = _load(argv if argv is not None else sys.argv[1:])
    print("### Sampling\n\n" + sampling_table(benches) + "\n")
    print("### set_rows\n\n" + set_rows_table(benches) + "\n")
    print("### Host overhead and warm start\n\n" + overhead_table(benches))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
