"""Splits per row and threads per block against GPU time, per mode and shape (issue #13: greedy
at <= 1.25x the floor from 64 x 151936, faster than torch.argmax at every shape).

For each benchmark shape and mode (greedy, temperature 0.8, the full chain, top_p 0.95 alone,
min_p 0.05 alone) times ``Sampler(..., _splits=s, _block=b)`` with bench/common.graph_time (10
calls captured into one graph, median of replays) for a grid of split counts (one count for
every launch of the call), and the plan's own launch shapes (no ``_splits``: its ``splits``,
``splits_draw`` and ``splits_nuc``), and prints per (mode, shape) the plan's, the best point,
the ratio and every point at the default block. Results never depend on
the split count (SPEC; the suite checks it), so only time is compared here.

    python tools/gpu/split_sweep.py            # $OUT/split-sweep.json
    SWEEP_MODES=greedy SWEEP_SHAPES=64x151936,64x262144 python tools/gpu/split_sweep.py  # a part
About 60-120 s on the H200 with a warm numba cache (block and splits are launch parameters: no
kernel compiles per point).
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from sampler_inputs import device_inputs, logits  # noqa: E402 (this folder: sys.path[0])

SHAPES = [(1, 32000), (1, 151936), (64, 32000), (64, 151936), (256, 32000), (256, 151936),
          (64, 262144)]
MODES = {
    "greedy": dict(temperature=0.0),
    "temperature": dict(temperature=0.8),
    "chain": dict(temperature=0.8, top_k=50, top_p=0.9, min_p=0.05),
    "top_p095": dict(temperature=1.0, top_p=0.95),
    "min_p005": dict(temperature=1.0, min_p=0.05),
}
if os.environ.get("SWEEP_MODES"):
    MODES = {m: MODES[m] for m in os.environ["SWEEP_MODES"].split(",")}
if os.environ.get("SWEEP_SHAPES"):
    SHAPES = [tuple(int(v) for v in a.split("x")) for a in os.environ["SWEEP_SHAPES"].split(",")]
SPLITS = [1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128]
BLOCKS = [128, 256, 512]
# SWEEP_SPLITS / SWEEP_BLOCKS: the points to time instead (SWEEP_SPLITS also past the plan's
# own bound of a split's logits, vocab // max(1024, block))
EXACT = bool(os.environ.get("SWEEP_SPLITS"))
if EXACT:
    SPLITS = [int(v) for v in os.environ["SWEEP_SPLITS"].split(",")]
if os.environ.get("SWEEP_BLOCKS"):
    BLOCKS = [int(v) for v in os.environ["SWEEP_BLOCKS"].split(",")]
if os.environ.get("SWEEP_BACKEND") == "sim":
    SPLITS, BLOCKS = [1, 2], [32]


def main() -> int:
    import rocsample
    from bench.common import graph_time
    from rocsample.sampling_plan import choose_splits

    be = rocsample.use_backend(os.environ.get("SWEEP_BACKEND", "cuda"))
    shapes = [(2, 512), (4, 1024)] if be.name == "sim" else SHAPES  # (a dry run on sim)
    cus = be.compute_units()
    s = be.runtime.new_stream()
    st = be.stream(s)
    rng = np.random.default_rng(0)
    out = {}
    t_start = time.time()
    for rows, vocab in shapes:
        x, seed, pos = device_inputs(be, st, logits(rows, vocab, scale=2.0, rng=rng))
        floor = rows * vocab * 4 / 3.97e12 * 1e6  # the bench's measured copy bandwidth
        for mode, params in MODES.items():
            res = {}
            owns = {}   # block -> the plan's own split counts at it
            for b in BLOCKS:
                default = choose_splits(rows, vocab, cus, b)
                most = vocab if EXACT else max(1, vocab // max(1024, b))
                cands = sorted({default, *[v for v in SPLITS if v <= most]})
                # (None: the plan's own launch shapes, splits_draw and splits_nuc included)
                for sp in [None, *cands]:
                    kw = {} if sp is None else {"_splits": sp}
                    plan = rocsample.Sampler(rows, vocab, "float32", stream=s, _block=b, **kw)
                    if sp is None:
                        owns[b] = dict(splits=plan.plan.splits,
                                       splits_draw=plan.plan.splits_draw,
                                       splits_nuc=plan.plan.splits_nuc)
                    plan.prewarm()

                    def fn(plan=plan, x=x, seed=seed, pos=pos, params=params):
                        plan(x, seed=seed, position=pos, check=False, **params)
                    try:
                        us = graph_time(be, fn, s, calls=10, samples=3) * 1e6
                    except Exception as e:  # a point that cannot run is reported, not fatal
                        us = None
                        res[f"b{b}-s{sp}-error"] = f"{type(e).__name__}: {e}"[:200]
                    res[(b, sp)] = us
                    del plan
            b0 = 256 if 256 in BLOCKS else BLOCKS[0]  # the plan's default block
            dflt = res.get((b0, None))
            own = owns[b0]
            good = {k: v for k, v in res.items()
                    if isinstance(k, tuple) and k[1] is not None and v is not None}
            best = min(good, key=good.get)
            key = f"{mode} {rows}x{vocab}"
            out[key] = dict(default=dict(block=b0, **own, us=dflt),
                            best=dict(block=best[0], splits=best[1], us=good[best]),
                            floor_us=floor,
                            points={f"b{k[0]}-s{k[1]}": v for k, v in good.items()})
            d = "/".join(str(own[k]) for k in ("splits", "splits_draw", "splits_nuc"))
            print(f"{key:26s} plan b{b0} s{d:<9s} {dflt or float('nan'):8.2f} us   best "
                  f"b{best[0]} s{best[1]:<4d} {good[best]:8.2f} us   "
                  f"x{(dflt or float('nan')) / good[best]:.2f}  floor {floor:.2f}  "
                  + " ".join(f"s{k[1]}:{v:.2f}" for k, v in sorted(good.items()) if k[0] == b0),
                  flush=True)
    out["seconds"] = time.time() - t_start
    with open(os.path.join(os.environ.get("OUT", "/tmp"), "split-sweep.json"), "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
