"""Regression: a plan's drawing routes and its other routes shared the per-row split counters
while launching with different split counts.

What broke (075a33a): drawing routes (temperature-only rows, device parameter arrays) launch with
``SamplingPlan.splits_draw`` splits, fewer than ``splits`` where the plan's would make a short
second wave, and every route counted its finished splits in the same per-row counters. A block
knows it is its row's last from the count's residue modulo the split count; a count that is a
multiple of one split count (what a race between a plan's graphs on two streams leaves, for
instance: docs/SEMANTICS.md says the counters come back to a multiple and later calls are right
again) is not a multiple of the other, so the next launch with the other count picked a block
that was not last and folded stale partials: wrong tokens from then on. Each split count now has
its own counters.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import rocsample as rs
from rocsample.reference import sampling as ref


def _count(nsplits, seed):
    """kernels.sampling_fast.count_done over one random interleaving of racing launches'
    blocks: the count each starts from is 0; returns where it ends."""
    r = random.Random(seed)
    blocks = [n for n in nsplits for _ in range(n)]
    r.shuffle(blocks)
    c = 0
    for n in blocks:
        done = c
        c += 1
        if done % n == n - 1:
            c -= n
    return c


def test_racing_launches_of_one_split_count_leave_the_count_at_zero():
    assert all(_count([10, 10], s) == 0 for s in range(500))
    assert all(_count([3, 3, 3], s) == 0 for s in range(500))
    # two split counts on one counter do not (why each split count has its own)
    assert any(_count([8, 10], s) != 0 for s in range(500))


def test_drawing_and_other_routes_count_in_their_own_counters(backend, rng, monkeypatch):
    if not backend.is_device:
        pytest.skip("the plan's device counters: a device backend (sim emulates one)")
    from rocsample import sampling_plan

    rows, vocab = 2, 64 if backend.name == "sim" else 4096
    # 4 splits, 3 for the drawing routes (the H200's rule gives two counts at 64 x 151936) and 5
    # for their nucleus pass (its rule takes twice phase 1's at narrow rows)
    monkeypatch.setattr(sampling_plan, "choose_splits", lambda *a: 4)
    monkeypatch.setattr(sampling_plan, "draw_splits", lambda *a: 3)
    monkeypatch.setattr(sampling_plan, "nuc_splits", lambda *a: 5)
    plan = rs.Sampler(rows, vocab, "float32", _block=backend.warp_size())
    assert (plan.plan.splits, plan.plan.splits_draw, plan.plan.splits_nuc) == (4, 3, 5)
    seed = np.arange(rows, dtype=np.int64) + 5

    def call(position, **params):
        lg = (rng.standard_normal((rows, vocab)) * 3).astype(np.float32)
        tok, _ = plan(lg, seed=seed, position=position, check=False, **params)
        want, _, _, near = ref.sample_with_margin(lg, seed=seed, position=position, **params)
        got = backend.to_host(tok) if not isinstance(tok, np.ndarray) else tok
        assert not ((got != want) & ~near).any(), (params, got, want)

    call(0, temperature=0.0)
    call(1, temperature=0.9)
    call(2, temperature=0.9, top_p=0.5)
    done = backend.to_host(plan._row_done)
    # (the last three rows: the lane count, the argmax kernel's counts, the nucleus pass's)
    assert done.shape == (11, rows) and not done.any()
    # the other routes' counters at a multiple of their split count (4), the drawing routes' at
    # one of theirs (3), as racing launches of them leave it: a launch at another split count
    # (3, or the nucleus pass's 5) must not read them
    shifted = done.copy()
    shifted[:3] = 2 * 4
    shifted[3:6] = 2 * 3
    plan._row_done.copy_to_device(shifted)
    for pos in range(3, 6):
        call(pos, temperature=0.9)
        call(pos + 10, temperature=0.0)
        call(pos + 20, temperature=0.9, top_p=0.5)
    np.testing.assert_array_equal(backend.to_host(plan._row_done), shifted)
