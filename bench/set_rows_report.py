"""The set_rows tables of issue #15 from a pytest-benchmark JSON of bench/test_set_rows.py.

``python -m bench.set_rows_report set_rows.json``

Per (case, dst type): the floor, rocsample unchecked GPU us and its ratio to the floor, its eager
figure, ggml's CUDA set_rows GPU us (torch graph around the ctypes launches) and eager us, the
speed ratio (ggml GPU / rocsample GPU: above 1 means rocsample is faster), ggml's rows that
differ from ours byte for byte, and torch ``index_copy_`` (f32 / f16). Then the decode-step graph
(four set_rows sites) per step, and the issue's targets checked against these figures.
"""

from __future__ import annotations

import sys

from .report import _load, _num, eager_us, fmt, gpu_us, not_captured

CASES = ["decode", "prefill", "large"]
TYPES = ["f32", "f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "iq4_nl"]
QUANT = TYPES[3:]


def _gpu(e):
    v = gpu_us(e)
    return "-" if v is None else fmt(v) + ("†" if not_captured(e) else "")


def _collect(benches):
    rows, step = {}, {}
    for b in benches:
        if "test_set_rows.py" not in b.get("fullname", ""):
            continue
        e = b.get("extra_info") or {}
        name = b.get("name", "")
        if name.startswith("test_decode_step_graph"):
            step[e.get("impl")] = e
            continue
        case, t, impl = e.get("case"), e.get("dst_type"), e.get("impl")
        if impl == "rocsample":
            impl = "checked" if e.get("checked") else "unchecked"
        rows.setdefault((case, t), {})[impl] = e
    return rows, step


def tables(benches) -> str:
    rows, step = _collect(benches)
    out = ["| case | dst | floor us | rocsample GPU us | x floor | rocsample eager us | checked eager us "
           "| ggml GPU us | ggml eager us | ggml / rocsample | ggml rows differing | torch GPU us | torch / rocsample |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    for case in CASES:
        for t in TYPES:
            d = rows.get((case, t))
            if not d:
                continue
            u, c, g = d.get("unchecked"), d.get("checked"), d.get("ggml")
            tt = d.get("torch.index_copy_")
            floor = _num((u or {}).get("floor_us"))
            ratio = _num((u or {}).get("ratio_to_floor"))
            vs = (g or {}).get("vs_rocsample") or {}
            diff = "-" if not vs else f"{vs.get('rows_differing')} of {vs.get('rows_written')}"
            gr = gpu_us(g) / gpu_us(u) if gpu_us(g) and gpu_us(u) else None
            tr = gpu_us(tt) / gpu_us(u) if gpu_us(tt) and gpu_us(u) else None
            out.append(f"| {case} | {t} | {fmt(floor)} | {_gpu(u)} | {fmt(ratio, 2)} | {fmt(eager_us(u))} | "
                       f"{fmt(eager_us(c))} | {_gpu(g)} | {fmt(eager_us(g))} | {fmt(gr, 2)} | {diff} | "
                       f"{_gpu(tt)} | {fmt(tr, 2)} |")
    out += ["", "| decode step (4 set_rows sites) | GPU us per step | eager us per step |", "|---|---:|---:|"]
    for impl in ("rocsample", "ggml"):
        e = step.get(impl)
        if e:
            out.append(f"| {impl} | {_gpu(e)} | {fmt(eager_us(e))} |")
    out += ["", "Targets (issue #15):"] + _targets(rows)
    return "\n".join(out)


def _targets(rows) -> list[str]:
    lines = []

    def g(case, t, impl="unchecked"):
        return gpu_us((rows.get((case, t)) or {}).get(impl))

    for t in ("f32", "f16"):
        ours, torch = g("decode", t), g("decode", t, "torch.index_copy_")
        if ours and torch:
            lines.append(f"- decode {t}: {ours:.2f} us vs index_copy_ {torch:.2f} us: "
                         f"{'met' if ours <= torch else 'NOT met'}")
    q8, f16 = g("decode", "q8_0"), g("decode", "f16")
    if q8 and f16:
        lines.append(f"- decode q8_0 {q8:.2f} us <= 2 x f16 {f16:.2f} us: {'met' if q8 <= 2 * f16 else 'NOT met'}")
    for case, limit in (("large", 2.0), ("prefill", 3.0)):
        for t in QUANT:
            e = (rows.get((case, t)) or {}).get("unchecked") or {}
            r = _num(e.get("ratio_to_floor"))
            if r is not None:
                lines.append(f"- {case} {t}: {r:.2f}x the floor (<= {limit}x): {'met' if r <= limit else 'NOT met'}")
    return lines


def main(argv=None) -> int:
    print(tables(_load(argv if argv is not None else sys.argv[1:])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
