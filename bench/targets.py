"""Issue #13's "Done when" targets, read from bench/test_sampling.py's pytest-benchmark JSON.

``python -m bench.targets bench/results/nvidia-h100-s50-bench.json``

One line a target: how many of the benchmarked shapes meet it, then the shapes that do not, each
with its figure and how many microseconds of rocsample's GPU time stand between it and the
target (GPU times from graph replays, ratios GPU to GPU, peers from the same files).
"The newest FlashInfer" is the newest ``flashinfer-<version>`` in the files. A shape missing a
figure on either side is counted as unmeasured, never as met. The exit status is 0 either way:
this reports, it does not gate (the figures come from one lent GPU; BENCHMARKS.md says which).
"""

from __future__ import annotations

import sys

from bench.report import _load, _sampling_entries, flashinfer_labels, gpu_us

#: shapes from which greedy must be within ``GREEDY_FLOOR_MAX`` of the memory floor
GREEDY_FLOOR_FROM = (64, 151936)
GREEDY_FLOOR_MAX = 1.25
TOPP_VS_GREEDY_MAX = 3.0
NEAR_CHAIN_MAX = 1.5
DEV_VS_HOST_MAX = 1.2
DEV_SHAPES = ((1, 151936), (64, 151936))
CHAIN_VS_TORCH_MIN = 10.0


def _shape(s) -> str:
    return f"{s[0]} x {s[1]}"


class _Targets:
    def __init__(self, benches):
        self.by = _sampling_entries(benches)
        fis = flashinfer_labels(benches)
        self.fi = fis[-1] if fis else None
        self.shapes = sorted({(k[1], k[2]) for k in self.by if k[2] is not None})

    def us(self, mode, shape, impl="rocsample"):
        return gpu_us(self.by.get((mode, shape[0], shape[1]), {}).get(impl))

    def floor(self, shape):
        for d in (self.by.get(("greedy",) + shape, {}), self.by.get(("chain",) + shape, {})):
            for e in d.values():
                if isinstance(e.get("floor_us"), (int, float)):
                    return float(e["floor_us"])
        return None

    def line(self, name, shapes, value, ok, fmt, over=None):
        """``value(shape)`` -> a number or None; ``ok(number)`` -> met; ``fmt`` formats a miss;
        ``over(shape)``: rocsample's microseconds past the target there (printed with a miss)."""
        met, miss, none = [], [], []
        for s in shapes:
            v = value(s)
            if v is None:
                none.append(_shape(s))
            elif ok(v):
                met.append(s)
            else:
                o = over(s) if over else None
                miss.append(f"{_shape(s)} {fmt.format(v)}" + (f" ({o:.1f} us over)" if o is not None else ""))
        out = f"{name}: met at {len(met)} of {len(shapes)}"
        if miss:
            out += "; not at " + ", ".join(miss)
        if none:
            out += "; unmeasured " + ", ".join(none)
        return out

    def ratio(self, a_mode, b_mode, a_impl="rocsample", b_impl="rocsample"):
        def f(s):
            a, b = self.us(a_mode, s, a_impl), self.us(b_mode, s, b_impl)
            return a / b if a is not None and b else None
        return f

    def over(self, a_mode, b_mode, limit, b_impl="rocsample"):
        """rocsample's ``a_mode`` time past ``limit`` times ``b_mode``'s (``b_impl``'s), us."""
        def f(s):
            a, b = self.us(a_mode, s), self.us(b_mode, s, b_impl)
            return a - limit * b if a is not None and b is not None else None
        return f

    def within(self, name, shapes, a_mode, b_mode, limit, b_impl="rocsample", strict=False):
        """The line of a target "rocsample's ``a_mode`` at most (``strict``: under) ``limit``
        times ``b_mode``'s (``b_impl``'s)": the ratio, its test and the microseconds over."""
        ok = (lambda v: v < limit) if strict else (lambda v: v <= limit)
        fmt = "{:.2f}x its time" if strict else "{:.2f}x"
        return self.line(name, shapes, self.ratio(a_mode, b_mode, b_impl=b_impl), ok, fmt,
                         self.over(a_mode, b_mode, limit, b_impl))

    def lines(self) -> list[str]:
        sh, fi = self.shapes, self.fi
        out = [f"shapes: {len(sh)}; newest FlashInfer: {fi or 'none in these files'}"]
        out.append(self.within("top_p alone <= 3x greedy", sh, "top_p095", "greedy",
                               TOPP_VS_GREEDY_MAX))
        if fi:
            out.append(self.within(f"top_p alone faster than {fi}", sh, "top_p095", "top_p095",
                                   1.0, fi, strict=True))
        for mode in ("min_p005", "min_p005_t08", "top_k1000"):
            out.append(self.within(f"{mode} within 1.5x of the chain", sh, mode, "chain",
                                   NEAR_CHAIN_MAX))
        dev = [s for s in DEV_SHAPES if s in sh] or list(DEV_SHAPES)
        out.append(self.within("chain_dev within 1.2x of the host-scalar chain", dev,
                               "chain_dev", "chain", DEV_VS_HOST_MAX))
        big = [s for s in sh if s[0] >= GREEDY_FLOOR_FROM[0] and s[1] >= GREEDY_FLOOR_FROM[1]]

        def greedy_floor(s, over=False):
            g, f = self.us("greedy", s), self.floor(s)
            if g is None or not f:
                return None
            return g - GREEDY_FLOOR_MAX * f if over else g / f
        out.append(self.line("greedy <= 1.25x the floor (>= 64 x 151936)", big, greedy_floor,
                             lambda v: v <= GREEDY_FLOOR_MAX, "{:.2f}x",
                             lambda s: greedy_floor(s, over=True)))
        out.append(self.within("greedy faster than torch.argmax", sh, "greedy", "greedy", 1.0,
                               "torch", strict=True))
        if fi:
            out.append(self.within(f"temperature faster than {fi}", sh, "temperature",
                                   "temperature", 1.0, fi, strict=True))
        out.append(self.line("chain >= 10x PyTorch", sh,
                             self.ratio("chain", "chain", a_impl="torch"),
                             lambda v: v >= CHAIN_VS_TORCH_MIN, "{:.2f}x",
                             self.over("chain", "chain", 1.0 / CHAIN_VS_TORCH_MIN, "torch")))
        if fi:
            def vs_fi(s, over=False):
                # FlashInfer's faster filter order against ours
                ours = self.us("chain", s)
                theirs = [v for v in (self.us("chain", s, fi), self.us("chain_joint", s, fi))
                          if v is not None]
                if not theirs or not ours:
                    return None
                return ours - min(theirs) if over else min(theirs) / ours
            out.append(self.line(f"chain faster than {fi} (its faster filter order)", sh, vs_fi,
                                 lambda v: v > 1.0, "{:.2f}x", lambda s: vs_fi(s, over=True)))
        return out


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    for ln in _Targets(_load(args)).lines():
        print(ln)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
