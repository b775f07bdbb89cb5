"""The nucleus pass's own split count against top_p-alone time (issue #13; the twenty-seventh
session). The pass reads nothing of phase 1's per split (its sums are exact integers added
per row), so its grid need not be phase 1's. For each shape and phase-1 split count (the
plan's, and ``--draw`` points) times ``Sampler(...)`` with ``plan.splits_nuc`` set to
multiples of phase 1's, graph-timed (bench/common.graph_time: 20 calls in one graph, median of
5 replays), top_p 0.95 alone on sampler_inputs' logits. The plan's own point is timed first
and last (the run's noise).

    python3 tools/gpu/nuc_split_probe.py [--shapes 64x32000,256x32000] [--draw 256x32000:2,4]
Prints ``NUCSPLIT shape draw=S nuc=N us=T`` lines.
"""
from __future__ import annotations

import sys

from sampler_inputs import device_inputs, logits, shapes_arg

import rocsample
from bench.common import graph_time
from rocsample.backends import get_backend

SHAPES = shapes_arg([(1, 32000), (8, 32000), (64, 32000), (256, 32000), (64, 151936),
                     (256, 151936)])
DRAW = {}
if "--draw" in sys.argv:   # 256x32000:2,4;64x32000:8
    for part in sys.argv[sys.argv.index("--draw") + 1].split(";"):
        shp, pts = part.split(":")
        DRAW[tuple(int(v) for v in shp.split("x"))] = [int(v) for v in pts.split(",")]
MULTS = (1, 2, 4, 8, 16)

be = get_backend()
s = be.runtime.new_stream()


def timed(rows, vocab, x, seed, pos, draw, nuc):
    sm = rocsample.Sampler(rows, vocab, "float32", stream=s,
                           **({} if draw is None else {"_splits": draw}))
    pl = sm.plan
    if nuc is not None:
        pl.splits_nuc = nuc

    def fn():
        sm(x, seed=seed, position=pos, check=False, top_p=0.95)
    us = graph_time(be, fn, s, calls=20, samples=5) * 1e6
    print(f"NUCSPLIT {rows}x{vocab} draw={pl.splits_draw} nuc={pl.splits_nuc} us={us:.2f}",
          flush=True)
    return pl.splits_draw


for rows, vocab in SHAPES:
    x, seed, pos = device_inputs(be, be.stream(s), logits(rows, vocab))
    for draw in [None, *DRAW.get((rows, vocab), [])]:
        sd = timed(rows, vocab, x, seed, pos, draw, None)
        for m in MULTS[1:]:
            ns = sd * m
            if vocab // ns < 256:
                break
            timed(rows, vocab, x, seed, pos, draw, ns)
        timed(rows, vocab, x, seed, pos, draw, None)
