"""Figures from pytest-benchmark JSON: one PNG per kernel family (issue #6).

``python -m bench.plot bench/results/X.json [more.json ...] --out bench/results``

- sampling: effective GB/s (one read of the logits / GPU time) against shape, one panel per mode,
  rocsample and its peers on the same axes, with the measured copy bandwidth as the floor line.
  Solid: the GPU time from graph replay (``gpu_us``; hollow markers where a peer could not be
  captured and its eager figure stands in); dotted: the eager time (``eager_us``, host launch
  path included), where the results have it.
- set_rows: effective GB/s per case and row type, rocsample (checked / unchecked) and PyTorch
  index_copy_, with the floor line; bars from ``gpu_us``, black ticks from ``eager_us``.
- host overhead: host microseconds per call, rocsample paths and PyTorch peers.

Results written before ``gpu_us`` existed are read through ``device_time_us`` (no eager lines).
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .report import (  # noqa: E402
    SAMPLING_MODES,
    _is_flashinfer,
    _read,
    _set_rows_impl,
    eager_us,
    flashinfer_labels,
    gpu_us,
    not_captured,
)

_COLORS = {"rocsample": "tab:red", "torch": "tab:blue", "flashinfer": "tab:green"}
_FI_COLORS = ["tab:olive", "tab:green", "tab:cyan", "tab:purple"]  # FlashInfer versions, oldest first


def _colors(benches) -> dict:
    """rocsample, torch, and one colour per FlashInfer version in the results."""
    c = dict(_COLORS)
    for i, f in enumerate(flashinfer_labels(benches)):
        c[f] = "tab:green" if f == "flashinfer" else _FI_COLORS[i % len(_FI_COLORS)]
    return c


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _load(paths):
    out = []
    for p in paths:
        out.extend(_read(p))
    for b in out:  # a benchmark that failed or recorded nothing: an empty extra_info, not None
        b["extra_info"] = b.get("extra_info") or {}
        b.setdefault("fullname", b.get("name", ""))
        b.setdefault("name", b["fullname"])
    return out


def _gbps(e, us):
    """Effective GB/s of a benchmark at ``us`` microseconds per call (None if unknown)."""
    n = e.get("bytes_moved")
    return n / us / 1e3 if n and us else None


def _copy_bw(benches):
    vals = [b["extra_info"]["copy_bandwidth_GBps"] for b in benches if "copy_bandwidth_GBps" in b["extra_info"]]
    return sorted(vals)[len(vals) // 2] if vals else None


def plot_sampling(benches, out: Path, device: str) -> Path | None:
    colors = _colors(benches)
    rows = [b for b in benches if (b["extra_info"].get("impl") in ("rocsample", "torch")
                                   or _is_flashinfer(b["extra_info"].get("impl")))
            and all(k in b["extra_info"] for k in ("mode", "rows", "vocab"))]
    if not rows:
        return None
    bw = _copy_bw(rows)
    present = {b["extra_info"]["mode"] for b in rows}
    modes = [m for m in SAMPLING_MODES if m in present] + sorted(present - set(SAMPLING_MODES))
    ncol = 4 if len(modes) > 5 else 3
    nrow = -(-(len(modes) + 1) // ncol)
    fig, grid = plt.subplots(nrow, ncol, figsize=(5 * ncol, 4.25 * nrow), sharey=True, squeeze=False)
    axes = list(grid.flat)
    for ax in axes[len(modes):]:
        ax.axis("off")
    for ax, mode in zip(axes, modes):
        series = defaultdict(list)
        for b in rows:
            e = b["extra_info"]
            if e["mode"] != mode:
                continue
            g = _gbps(e, gpu_us(e))
            if g is None:
                g = e.get("effective_GBps")
            if g is None:
                continue
            series[e["impl"]].append((e["rows"] * e["vocab"], f"{e['rows']}x{e['vocab']}", g,
                                      _gbps(e, eager_us(e)), not_captured(e)))
        labels = sorted({(p[0], p[1]) for s in series.values() for p in s})
        pos = {lab: i for i, (_, lab) in enumerate(labels)}
        for impl, pts in series.items():
            pts.sort()
            xs = [pos[p[1]] for p in pts]
            ax.plot(xs, [p[2] for p in pts], "-", color=colors[impl], label=f"{impl} GPU (graph)")
            ax.scatter(xs, [p[2] for p in pts], edgecolors=colors[impl], zorder=3,
                       facecolors=["none" if p[4] else colors[impl] for p in pts])
            eag = [(x, p[3]) for x, p in zip(xs, pts) if p[3] is not None]
            if eag:
                ax.plot([x for x, _ in eag], [v for _, v in eag], ":", color=colors[impl], alpha=0.7,
                        label=f"{impl} eager")
        if bw:
            ax.axhline(bw, color="k", ls="--", lw=1, label=f"floor (copy {bw:.0f} GB/s)")
        ax.set_xticks(range(len(labels)), [lab for _, lab in labels], rotation=70, fontsize=7)
        ax.set_yscale("log")
        ax.set_title(mode)
        ax.grid(alpha=0.3)
    for i in range(0, len(modes), ncol):
        axes[i].set_ylabel("effective GB/s (one read / time per call)")
    seen: dict = {}
    for ax in axes[:len(modes)]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    axes[-1].legend(list(seen.values()), list(seen), loc="center", fontsize=10)
    fig.suptitle(f"sampling on {device}: higher is better; solid: GPU time (graph replay), dotted: eager "
                 "(host launch included), hollow: not captured; dashed line: the memory floor")
    return _save(fig, out / f"{device}-sampling.png")


def plot_set_rows(benches, out: Path, device: str) -> Path | None:
    keyed = [(k, b) for b in benches if (k := _set_rows_impl(b)) is not None]
    if not keyed:
        return None
    bw = _copy_bw([b for _, b in keyed])
    series = defaultdict(dict)
    eager = defaultdict(dict)
    for (case, t, kind), b in keyed:
        e = b["extra_info"]
        impl = "torch index_copy_" if kind == "torch" else f"rocsample {kind}"
        g = _gbps(e, gpu_us(e))
        series[impl][f"{case}\n{t}"] = g if g is not None else e.get("effective_GBps", 0)
        ge = _gbps(e, eager_us(e))
        if ge is not None and kind != "checked":  # checked: its bar is already the eager figure
            eager[impl][f"{case}\n{t}"] = ge
    order = ["decode", "prefill", "large"]
    cats = sorted({c for s in series.values() for c in s},
                  key=lambda c: (order.index(c.split()[0]) if c.split()[0] in order else len(order), c))
    fig, ax = plt.subplots(figsize=(12, 4.5))
    w = 0.8 / max(1, len(series))
    ticks = False
    for k, (impl, vals) in enumerate(sorted(series.items())):
        ax.bar([i + k * w for i in range(len(cats))], [vals.get(c, 0) for c in cats], w, label=impl)
        pts = [(i + k * w, eager[impl][c]) for i, c in enumerate(cats) if c in eager[impl]]
        if pts:
            ax.scatter([x for x, _ in pts], [v for _, v in pts], marker="_", s=120, color="k", zorder=3,
                       label=None if ticks else "eager (host launch included)")
            ticks = True
    if bw:
        ax.axhline(bw, color="k", ls="--", lw=1, label=f"floor (copy {bw:.0f} GB/s)")
    ax.set_xticks([i + 0.4 - w / 2 for i in range(len(cats))], cats, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("effective GB/s (bytes moved / GPU time per call)")
    ax.legend(fontsize=8)
    ax.set_title(f"set_rows on {device}: higher is better; bars: GPU time (graph replay; checked: eager)")
    return _save(fig, out / f"{device}-set_rows.png")


def plot_overhead(benches, out: Path, device: str) -> Path | None:
    rows = [b for b in benches if "test_host_overhead.py" in b["fullname"]
            and isinstance((b.get("stats") or {}).get("median"), (int, float))]
    if not rows:
        return None
    rows.sort(key=lambda b: b["stats"]["median"])
    fig, ax = plt.subplots(figsize=(11, max(4.5, 0.22 * len(rows) + 1.2)))  # a readable label each
    labels = [b["extra_info"].get("impl", b["name"]) for b in rows]
    vals = [b["stats"]["median"] * 1e6 for b in rows]
    ax.barh(labels, vals, color=["tab:blue" if lab.startswith("torch") else "tab:red" for lab in labels])
    ax.set_xscale("log")
    ax.tick_params(axis="y", labelsize=7)
    ax.set_xlabel("host microseconds per call (median; torch rows: behind a queued kernel)")
    ax.set_title(f"host overhead on {device}: lower is better")
    return _save(fig, out / f"{device}-host-overhead.png")


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
