"""Markdown tables from pytest-benchmark JSON (the figures BENCHMARKS.md quotes).

``python -m bench.report bench/results/nvidia-h200-*.json``

Each GPU figure comes in two forms (``bench/common.py``): **GPU us**, from replays of 20 calls
captured into one graph (kernel time, no host launch path), and **eager us**, from device events
around back-to-back eager calls (host launch path included). Ratios against a peer are GPU to
GPU. A GPU figure marked † was not captured (``gpu_method`` ``events``: the capture failed or the
call cannot be captured), so it is the eager figure and a ratio built on it is not GPU to GPU;
the lines under the table say why. Results written before this split (no ``gpu_us``) are read
through ``device_time_us`` and show ``-`` for the eager figure. Missing benchmarks and fields
print as ``-``.
"""

from __future__ import annotations

import glob
import gzip
import json
import sys
from collections import defaultdict
from pathlib import Path

_NOT_CAPTURED = "†"


def _files(p) -> list:
    """The files a path names. bench/results keeps its JSON gzip-compressed (``NAME.json.gz``),
    so a name that does not exist is read as its ``.gz``, and a glob pattern the shell left
    as it was (it matched no ``.json``) as the files it matches in either form: the commands in
    BENCHMARKS.md, which name ``.json``, read the compressed files."""
    path = Path(p)
    if path.exists():
        return [path]
    if Path(f"{p}.gz").exists():
        return [Path(f"{p}.gz")]
    found = sorted(set(glob.glob(str(p))) | set(glob.glob(f"{p}.gz")))
    return [Path(f) for f in found] or [path]


def _read(p) -> list:
    """The benchmarks of one pytest-benchmark JSON file (or ``.json.gz``, or the files a glob
    pattern matches: :func:`_files`); an empty or cut-off file (a run stopped before
    pytest-benchmark wrote it) is reported on stderr and contributes nothing."""
    out = []
    for f in _files(p):
        try:
            raw = f.read_bytes()
            if f.suffix == ".gz":
                raw = gzip.decompress(raw)
            out.extend(json.loads(raw).get("benchmarks", []))
        except (OSError, ValueError, EOFError) as e:
            print(f"bench.report: skipped {f}: {type(e).__name__}: {e}", file=sys.stderr)
    return out


def _load(paths):
    out = []
    for p in paths:
        out.extend(_read(p))
    return out


def _num(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def gpu_us(e):
    """GPU time per call (graph replay where captured); older results: ``device_time_us``."""
    if not e:
        return None
    v = _num(e.get("gpu_us"))
    return v if v is not None else _num(e.get("device_time_us"))


def eager_us(e):
    """Eager time per call (events around back-to-back calls); older rocsample results kept it
    as ``eager_device_time_us``."""
    if not e:
        return None
    v = _num(e.get("eager_us"))
    return v if v is not None else _num(e.get("eager_device_time_us"))


def not_captured(e) -> bool:
    """True where the GPU figure is an eager one although a graph was the intent."""
    return bool(e) and e.get("gpu_method") in ("events", "host")


def fmt(v, p: int = 1) -> str:
    return "-" if v is None else f"{v:.{p}f}"


def _gpu_cell(e, p: int = 1) -> str:
    s = fmt(gpu_us(e), p)
    return s + _NOT_CAPTURED if s != "-" and not_captured(e) else s


def _ratio(peer, ours) -> str:
    """peer GPU time / rocsample GPU time (> 1: rocsample faster); † if either was not captured."""
    a, b = gpu_us(peer), gpu_us(ours)
    if a is None or not b:
        return "-"
    s = f"{a / b:.2f}"
    return s + _NOT_CAPTURED if not_captured(peer) or not_captured(ours) else s


def _floor_ratio(e, p: int) -> str:
    g, f = gpu_us(e), _num((e or {}).get("floor_us"))
    if g is None or not f:
        return fmt(_num((e or {}).get("ratio_to_floor")), p)
    return f"{g / f:.{p}f}"


def _why_lines(entries) -> list[str]:
    """The legend of the † marks: one line, then one per (implementation, reason) of a failed
    capture. Empty when every GPU figure shown came from a graph."""
    marked = [(label, e) for label, e in entries if not_captured(e)]
    if not marked:
        return []
    seen: dict = {}
    for label, e in marked:
        if e.get("graph_error"):
            key = (label, e["graph_error"])
            seen[key] = seen.get(key, 0) + 1
    return ["", f"{_NOT_CAPTURED} not from a graph: device events around eager calls (the call cannot be "
            "captured, or its capture failed as below); ratios on it are not GPU to GPU."] + [
        f"{_NOT_CAPTURED} {label} not captured ({n} benchmark{'s' * (n > 1)}): {why}"
        for (label, why), n in seen.items()]


#: sampling modes in table order; ``chain_joint`` is FlashInfer's chain in ``joint`` filter order,
#: compared with rocsample's (and PyTorch's) ``chain``
SAMPLING_MODES = ["greedy", "temperature", "top_k50", "top_k1000", "top_p095", "min_p005",
                  "min_p005_t08", "chain", "chain_joint", "chain_dev", "mixed_dev"]
_OURS_MODE = {"chain_joint": "chain"}


def _is_flashinfer(impl) -> bool:
    return isinstance(impl, str) and (impl == "flashinfer" or impl.startswith("flashinfer-"))


def _version_key(label: str):
    """flashinfer-0.2.14.post1 < flashinfer-0.7.4 (numeric parts compared as numbers)."""
    import re

    return [int(t) if t.isdigit() else t for t in re.split(r"[.\-+]", label) if t]


def flashinfer_labels(benches) -> list[str]:
    """The FlashInfer versions in the results, oldest first (``flashinfer`` alone: older results)."""
    found = {(b.get("extra_info") or {}).get("impl") for b in benches}
    return sorted((f for f in found if _is_flashinfer(f)), key=_version_key)


def _sampling_entries(benches):
    by = defaultdict(dict)
    for b in benches:
        e = b.get("extra_info") or {}
        impl = e.get("impl")
        if (impl in ("rocsample", "torch") or _is_flashinfer(impl)) and "mode" in e and "rows" in e:
            by[(e["mode"], e["rows"], e.get("vocab"))][impl] = e
    return by


def sampling_table(benches) -> str:
    """One row per (mode, shape): rocsample (GPU, x floor, eager, eager with a fresh torch view),
    PyTorch and every FlashInfer version (GPU, eager), and the GPU ratios peer / rocsample."""
    by = _sampling_entries(benches)
    fis = flashinfer_labels(benches)
    head = ["mode", "rows x vocab", "floor us", "rocsample GPU us", "x floor", "rocsample eager us",
            "rocsample eager fresh us", "torch GPU us", "torch eager us"]
    for f in fis:
        head += [f"{f} GPU us", f"{f} eager us"]
    head += ["vs torch"] + [f"vs {f}" for f in fis]
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 2)]

    def key_order(k):
        m = SAMPLING_MODES
        return (m.index(k[0]) if k[0] in m else len(m), str(k[0]), k[1], k[2] or 0)

    for key in sorted(by, key=key_order):
        d = by[key]
        ours = by.get((_OURS_MODE.get(key[0], key[0]),) + key[1:], {})
        r, t = ours.get("rocsample"), d.get("torch") or ours.get("torch")
        fe = [d.get(f) for f in fis]
        floor = next((_num(e.get("floor_us")) for e in (r, t, *fe)
                      if e and _num(e.get("floor_us")) is not None), None)
        cells = [str(key[0]), f"{key[1]} x {key[2]}", fmt(floor), _gpu_cell(r), _floor_ratio(r, 1),
                 fmt(eager_us(r)), fmt(_num((r or {}).get("eager_fresh_us"))), _gpu_cell(t),
                 fmt(eager_us(t))]
        for e in fe:
            cells += [_gpu_cell(e), fmt(eager_us(e))]
        cells += [_ratio(t, r)] + [_ratio(e, r) for e in fe]
        lines.append("| " + " | ".join(cells) + " |")
    why = _why_lines([(impl, e) for d in by.values() for impl, e in d.items()])
    return "\n".join(lines + why)


def per_row_table(benches) -> str:
    """Issue #13's per-row target: rocsample with the chain's values as per-row device arrays
    (``chain_dev``) against the same values as host scalars (``chain``), GPU and eager."""
    by = _sampling_entries(benches)
    lines = ["| rows x vocab | chain (host scalars) GPU us | chain_dev (device arrays) GPU us "
             "| dev / host GPU | chain eager us | chain_dev eager us | dev / host eager |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    shapes = sorted({k[1:] for k in by if k[0] == "chain_dev"}, key=lambda s: (s[0], s[1] or 0))
    for rows, vocab in shapes:
        h = by.get(("chain", rows, vocab), {}).get("rocsample")
        d = by.get(("chain_dev", rows, vocab), {}).get("rocsample")
        gh, gd, eh, ed = gpu_us(h), gpu_us(d), eager_us(h), eager_us(d)
        lines.append(f"| {rows} x {vocab} | {_gpu_cell(h)} | {_gpu_cell(d)} | "
                     f"{fmt(gd / gh, 2) if gh and gd else '-'} | {fmt(eh)} | {fmt(ed)} | "
                     f"{fmt(ed / eh, 2) if eh and ed else '-'} |")
    return "\n".join(lines)


def decode_table(benches) -> str:
    """bench/test_decode_loop.py: per-step time of each sampler in the loop, eager and captured.

    A case of the interleaved form (``extra_info["samplers"]``: every sampler's loop timed in
    one case, round by round, against one forward-only loop) gives a row per sampler, all on that
    case's forward step (the common-forward columns are then the step itself), with the spread
    of its rounds and, against each peer, in how many rounds rocsample's step was the faster
    (``round_step_us``, from 222d44a on); older files hold a case per sampler, each with its own
    forward-only rounds, put on their median."""
    rows = defaultdict(dict)
    for b in benches:
        e = b.get("extra_info") or {}
        if "test_decode_loop.py" not in b.get("fullname", "") or "batch" not in e:
            continue
        if isinstance(e.get("samplers"), dict):
            for label, s_ in e["samplers"].items():
                if label != "none":
                    rows[(e["batch"], e.get("mode"))][label] = dict(
                        s_, forward_us=e.get("forward_us"))
        elif "impl" in e:
            rows[(e["batch"], e.get("mode"))][e["impl"]] = e
    lines = ["| batch | mode | sampler | step us | wall step us | forward-only us (same case) "
             "| rounds' step us (min-max) | rounds rocsample's step was faster "
             "| sampling us | sampling share | step at the common forward us "
             "| rocsample / this (common forward) |",
             "|---:|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|"]
    order = {"eager": 0, "graph": 1}

    def at_common(e, common):
        s_ = _num(e.get("sampling_us"))
        return None if s_ is None or common is None else common + s_

    for (batch, mode) in sorted(rows, key=lambda k: (k[0], order.get(k[1], 9))):
        d = rows[(batch, mode)]
        fwds = sorted(f for f in (_num(e.get("forward_us")) for e in d.values()) if f is not None)
        # the forward-only step every sampler's figure is put on: the median of the cases' own
        # (each measured between that case's rounds; the host drifts between cases)
        common = fwds[len(fwds) // 2] if fwds else None
        ours = at_common(d.get("rocsample") or {}, common)
        our_rounds = (d.get("rocsample") or {}).get("round_step_us")
        for impl in sorted(d, key=lambda i: (i != "rocsample", i)):
            e = d[impl]
            step = _num(e.get("step_us"))
            share = _num(e.get("sampling_share"))
            if e.get("capture_error"):
                lines.append(f"| {batch} | {mode} | {impl} | not captured: {e['capture_error'][:120]} "
                             "| | | | | | | | |")
                continue
            c = at_common(e, common)
            # (the interleaved form's rounds: round i of every loop ran within the same minute)
            rounds = e.get("round_step_us") or []
            spread = f"{min(rounds):.1f}-{max(rounds):.1f}" if rounds else "-"
            paired = "-"
            if impl != "rocsample" and rounds and our_rounds and len(our_rounds) == len(rounds):
                paired = f"{sum(o < r for o, r in zip(our_rounds, rounds))} of {len(rounds)}"
            lines.append(f"| {batch} | {mode} | {impl} | {fmt(step)} | {fmt(_num(e.get('wall_step_us')))} | "
                         f"{fmt(_num(e.get('forward_us')))} | {spread} | {paired} | "
                         f"{fmt(_num(e.get('sampling_us')))} | "
                         f"{fmt(share * 100 if share is not None else None)}% | {fmt(c)} | "
                         f"{fmt(ours / c, 2) if ours and c else '-'} |")
    return "\n".join(lines)


def _set_rows_impl(b) -> tuple[str, str, str] | None:
    """(case, dst type, 'checked' | 'unchecked' | 'torch') of a set_rows benchmark, else None."""
    if "test_set_rows.py" not in b.get("fullname", ""):
        return None
    e = b.get("extra_info") or {}
    name = b.get("name", "")
    peer = str(e.get("peer", ""))
    if "reference" in name or peer == "numpy-reference":
        return None
    params = name[name.index("[") + 1:-1].split("-") if "[" in name else []
    case = e.get("case", params[0] if params else None)
    t = e.get("dst_type", params[1] if len(params) > 1 else None)
    if peer.startswith("torch") or "torch" in name:
        impl = "torch"
    elif "checked" in e:
        impl = "checked" if e["checked"] else "unchecked"
    elif len(params) > 2:
        impl = params[2]
    else:
        return None
    return (case, t, impl) if case and t else None


def set_rows_table(benches) -> str:
    rows = {}
    for b in benches:
        k = _set_rows_impl(b)
        if k is not None:
            rows.setdefault(k[:2], {})[k[2]] = b.get("extra_info") or {}
    lines = ["| case | dst | floor us | unchecked GPU us | x floor | unchecked eager us | checked eager us "
             "| torch index_copy_ GPU us | torch index_copy_ eager us | vs torch |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    cases = ["decode", "prefill", "large"]
    for (case, t), d in sorted(rows.items(), key=lambda kv: (cases.index(kv[0][0]) if kv[0][0] in cases else 9,
                                                             str(kv[0][0]), str(kv[0][1]))):
        u, c, tt = d.get("unchecked"), d.get("checked"), d.get("torch")
        floor = next((_num(e.get("floor_us")) for e in (u, c, tt) if e and _num(e.get("floor_us")) is not None), None)
        # the checked call synchronizes each time: its eager figure is the one it has
        checked = eager_us(c) if eager_us(c) is not None else gpu_us(c)
        lines.append(f"| {case} | {t} | {fmt(floor)} | {_gpu_cell(u)} | {_floor_ratio(u, 2)} | {fmt(eager_us(u))} | "
                     f"{fmt(checked)} | {_gpu_cell(tt)} | {fmt(eager_us(tt))} | {_ratio(tt, u)} |")
    why = _why_lines([(("torch index_copy_" if k == "torch" else f"rocsample {k}"), e)
                      for d in rows.values() for k, e in d.items() if k != "checked"])
    return "\n".join(lines + why)


def overhead_table(benches) -> str:
    lines = ["| path | host us per call (median; torch cases: a busy stream) | host us, idle GPU "
             "(median) | GPU us | eager us |", "|---|---:|---:|---:|---:|"]
    rows = [b for b in benches if "test_host_overhead.py" in b.get("fullname", "")]

    def median(b):
        return _num(b.get("stats", {}).get("median"))

    for b in sorted(rows, key=lambda b: (median(b) is None, median(b) or 0)):
        e = b.get("extra_info") or {}
        m = median(b)
        lines.append(f"| {e.get('impl', b.get('name', '?'))} | {fmt(m * 1e6 if m is not None else None)} | "
                     f"{fmt(_num(e.get('host_us_idle_median')))} | {_gpu_cell(e)} | {fmt(eager_us(e))} |")
    for b in benches:
        if "test_warm_start.py" in b.get("fullname", ""):
            e = b.get("extra_info") or {}
            lines.append(f"| time to first token, new process, cold JIT cache | {fmt(_num(e.get('cold_s')), 2)} s | | | |")
            lines.append(f"| time to first token, new process, warm JIT cache | {fmt(_num(e.get('warm_s_median')), 2)} s | | | |")
    why = _why_lines([(e.get("impl", "?"), e) for e in ((b.get("extra_info") or {}) for b in rows)])
    return "\n".join(lines + why)


def main(argv=None) -> int:
    benches = _load(argv if argv is not None else sys.argv[1:])
    print("### Sampling\n\n" + sampling_table(benches) + "\n")
    print("### Per-row device parameters\n\n" + per_row_table(benches) + "\n")
    print("### Decode loop\n\n" + decode_table(benches) + "\n")
    print("### set_rows\n\n" + set_rows_table(benches) + "\n")
    print("### Host overhead and warm start\n\n" + overhead_table(benches))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
