"""Regression: the rows the nucleus pass leaves were finished at the drawing splits.

What was slow (c612825 to a15dc10, measured on the H200): a top-p-only row whose two best
Gumbel scores both lie outside its nucleus (0.07%-0.4% of the benchmark's rows) is finished by
the histogram and select passes, which were launched at phase 1's drawing splits: at 256 x
262144 four blocks of 65536 logits each, one row's latency, about 200 us of the call's 597.9
(FlashInfer 0.7.4: 421.3). And a plan with one drawing split a row (256 x 32000) kept top-p
rows off the nucleus pass altogether, for the same reason. Those passes read nothing per split
of phase 1 for top-p-only rows, so routes whose histogram-path rows are all top-p-only now
launch them row-strided (``Route.strided``: ``splits_fin`` splits of about 2048 logits by
``rows_fin`` block rows), 381.0 us at 256 x 262144 (BENCHMARKS, "The runs of a15dc10 and
7704995"). Batches of rows of at most ``NUC_FINISH_VOCAB`` logits now finish those rows in the
nucleus pass itself (``Route.finish``, no histogram or select launch, phase 1 keeping four best
scores; tests/test_sampling_plan_splits.py). The kernels' side (the rows' tokens through the
row-strided launches) is tests/kernels/test_sampling_nucleus.py; this checks the plan and the
routes, on every backend.
"""

from __future__ import annotations

import numpy as np
import pytest

from rocsample import sampling_router as R
from rocsample.kernels import sampling as K
from tests.test_sampling_plan_splits import H200, _plan, fake_launches


def _host(rows, top_p=0.95, min_p=0.0, top_k=0):
    return R.Host(np.ones(rows, np.float32), np.full(rows, top_k, np.int64),
                  np.full(rows, top_p, np.float32), np.full(rows, min_p, np.float32))


def _launches(plan, route):
    return {kernel: (grid, args) for kernel, grid, _b, args in fake_launches(plan, route)}


@pytest.mark.parametrize("rows, vocab", [(256, 262144), (256, 151936), (64, 151936),
                                         (256, 32000), (1, 32000), (4096, 1 << 20)])
def test_top_p_only_batches_finish_left_rows_in_short_splits(rows, vocab):
    plan = _plan(rows, vocab)
    r = R.route(plan, _host(rows))
    if vocab <= R.NUC_FINISH_VOCAB:   # (1 x 32000, 256 x 32000)
        assert r.nuc and r.finish and not (r.hist or r.select or r.strided)
        return
    assert r.nuc and r.strided
    got = _launches(plan, r)
    for kernel, counters in (("h", "f2"), ("s", "f3")):
        grid, args = got[kernel]
        assert grid == (plan.splits_fin, plan.rows_fin) and args[2] == plan.chunk_fin
        assert counters in args
    assert got["n"][0] == (plan.splits_draw, rows)   # the nucleus pass: the drawing splits
    # short splits where the rows allow, at least the drawing splits' parallelism otherwise
    assert plan.chunk_fin <= max(4096, plan.chunk)
    assert plan.rows_fin * plan.splits_fin <= max(2 * H200, plan.splits_fin)
    # the select pass's split winners have their slots
    pi = next(shape for name, _dt, shape, _o, _n in plan.layout if name == "pi")
    assert pi == (rows, max(plan.splits, plan.splits_fin), K.N_PI)
    assert rows * pi[1] <= max(65536, rows * plan.splits)


@pytest.mark.parametrize("other", [dict(min_p=0.05), dict(top_p=1.0, min_p=0.05)],
                         ids=["top_p-with-min_p", "min_p-only"])
def test_batches_with_other_histogram_rows_keep_phase_1_s_splits(other):
    plan = _plan(64, 151936)
    h = _host(64)
    for name, value in other.items():
        getattr(h, name)[0] = value   # one row that is not top-p-only
    r = R.route(plan, h)
    assert r.nuc and r.hist and not r.strided
    grid, args = _launches(plan, r)["h"]
    assert grid == (plan.splits_draw, 64) and "d2" in args
