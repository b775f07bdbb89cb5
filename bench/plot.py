"""Figures from pytest-benchmark JSON: one PNG per kernel family (issue #6).

``python -m bench.plot bench/results/X.json [more.json ...] --out bench/results``

- sampling: effective GB/s (one read of the logits / GPU time) against shape, one panel per mode,
  rocsample and its peers on the same axes, with the measured copy bandwidth as the floor line.
- set_rows: effective GB/s per case and row type, rocsample (checked / unchecked) and PyTorch
  index_copy_, with the floor line.
- host overhead: host microseconds per call, rocsample paths and PyTorch peers.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

_COLORS = {"rocsample": "tab:red", "torch": "tab:blue", "flashinfer": "tab:green"}


def _load(paths):
    out = []
    for p in paths:
        d = json.loads(Path(p).read_text())
        out.extend(d["benchmarks"])
    return out


def _copy_bw(benches):
    vals = [b["extra_info"]["copy_bandwidth_GBps"] for b in benches if "copy_bandwidth_GBps" in b["extra_info"]]
    return sorted(vals)[len(vals) // 2] if vals else None


def plot_sampling(benches, out: Path, device: str) -> Path | None:
    rows = [b for b in benches if b["extra_info"].get("impl") in _COLORS and "mode" in b["extra_info"]]
    if not rows:
        return None
    bw = _copy_bw(rows)
    modes = ["greedy", "temperature", "top_k50", "top_p095", "chain"]
    fig, grid = plt.subplots(2, 3, figsize=(15, 8.5), sharey=True)
    axes = list(grid.flat)
    axes[-1].axis("off")
    for ax, mode in zip(axes, modes):
        series = defaultdict(list)
        for b in rows:
            e = b["extra_info"]
            if e["mode"] != mode:
                continue
            series[e["impl"]].append((e["rows"] * e["vocab"], f"{e['rows']}x{e['vocab']}", e["effective_GBps"]))
        labels = sorted({(x, lab) for s in series.values() for x, lab, _ in s})
        pos = {lab: i for i, (_, lab) in enumerate(labels)}
        for impl, pts in series.items():
            pts.sort()
            ax.plot([pos[lab] for _, lab, _ in pts], [g for _, _, g in pts], "o-", color=_COLORS[impl], label=impl)
        if bw:
            ax.axhline(bw, color="k", ls="--", lw=1, label=f"floor (copy {bw:.0f} GB/s)")
        ax.set_xticks(range(len(labels)), [lab for _, lab in labels], rotation=70, fontsize=7)
        ax.set_yscale("log")
        ax.set_title(mode)
        ax.grid(alpha=0.3)
    for ax in (axes[0], axes[3]):
        ax.set_ylabel("effective GB/s (one read / GPU time)")
    handles, labels = axes[4].get_legend_handles_labels()
    axes[-1].legend(handles, labels, loc="center", fontsize=11)
    fig.suptitle(f"sampling on {device}: higher is better; the dashed line is the memory floor")
    fig.tight_layout()
    path = out / f"{device}-sampling.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_set_rows(benches, out: Path, device: str) -> Path | None:
    rows = [b for b in benches if "test_set_rows.py" in b["fullname"] and "reference" not in b["name"]]
    if not rows:
        return None
    bw = _copy_bw(rows)
    series = defaultdict(dict)
    for b in rows:
        name = b["name"]
        params = name[name.index("[") + 1:-1].split("-")
        case, t = params[0], params[1]
        impl = "torch index_copy_" if "torch" in name else f"rocsample {params[2]}"
        series[impl][f"{case}\n{t}"] = b["extra_info"].get("effective_GBps", 0)
    cats = sorted({c for s in series.values() for c in s}, key=lambda c: (["decode", "prefill", "large"].index(c.split()[0]), c))
    fig, ax = plt.subplots(figsize=(12, 4.5))
    w = 0.8 / max(1, len(series))
    for k, (impl, vals) in enumerate(sorted(series.items())):
        ax.bar([i + k * w for i in range(len(cats))], [vals.get(c, 0) for c in cats], w, label=impl)
    if bw:
        ax.axhline(bw, color="k", ls="--", lw=1, label=f"floor (copy {bw:.0f} GB/s)")
    ax.set_xticks([i + 0.4 - w / 2 for i in range(len(cats))], cats, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("effective GB/s (bytes moved / GPU time)")
    ax.legend(fontsize=8)
    ax.set_title(f"set_rows on {device}: higher is better; decode/prefill are launch-bound")
    fig.tight_layout()
    path = out / f"{device}-set_rows.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_overhead(benches, out: Path, device: str) -> Path | None:
    rows = [b for b in benches if "test_host_overhead.py" in b["fullname"]]
    if not rows:
        return None
    rows.sort(key=lambda b: b["stats"]["median"])
    fig, ax = plt.subplots(figsize=(9, 4.5))
    labels = [b["extra_info"].get("impl", b["name"]) for b in rows]
    vals = [b["stats"]["median"] * 1e6 for b in rows]
    ax.barh(labels, vals, color=["tab:blue" if lab.startswith("torch") else "tab:red" for lab in labels])
    ax.set_xscale("log")
    ax.set_xlabel("host microseconds per call (median), 1 x 1024 logits")
    ax.set_title(f"host overhead on {device}: lower is better")
    fig.tight_layout()
    path = out / f"{device}-host-overhead.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("json", nargs="+")
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--device", default="nvidia-h200")
    a = ap.parse_args(argv)
    benches = _load(a.json)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    for fn in (plot_sampling, plot_set_rows, plot_overhead):
        p = fn(benches, out, a.device)
        if p:
            print("wrote", p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
