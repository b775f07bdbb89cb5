"""Regression: a new plan's first call could read its per-row counters before they were zeroed.

What broke (the fuzz profile and a torch CPU-tensor test on an H200: tokens of a first call
wrong, the same call right when repeated): phase 1's last block per row is found by a per-row
counter of finished splits that belongs to the plan (Sampler.prewarm allocates it). Its zeros
were copied on the plan's own stream without waiting; a plan that follows the caller's stream
(``stream=None``: the one-off ``sample`` / ``argmax`` plans, torch's current stream) launches on
another stream, which that copy does not order, so the first launch could count from whatever
the fresh allocation held and fold the row before every split had written its partial. Now the
plan waits for the zeros before its first launch.
"""

from __future__ import annotations

import numpy as np
import pytest

import rocsample
from rocsample.reference import sampling as R


def test_counters_are_zero_before_the_plan_returns(backend, monkeypatch):
    if not backend.is_device:
        pytest.skip("the cpu backend runs the reference: no counters")
    events = []
    orig_as = backend.as_array
    orig_sync = backend.runtime.synchronize

    def as_array(obj, name, *a, **kw):
        out = orig_as(obj, name, *a, **kw)
        events.append(("copy", name))
        return out

    def synchronize(st):
        events.append(("sync", st.handle))
        return orig_sync(st)

    monkeypatch.setattr(backend, "as_array", as_array)
    monkeypatch.setattr(backend.runtime, "synchronize", synchronize)
    blk = {"_block": backend.warp_size()} if backend.name == "sim" else {}
    plan = rocsample.Sampler(2, 64, "float32", **blk)
    at = events.index(("copy", "row_done"))
    assert ("sync", plan.stream.handle) in events[at + 1:]
    monkeypatch.undo()
    lg = np.random.default_rng(0).standard_normal((2, 64)).astype(np.float32)
    got = backend.to_host(plan(lg, temperature=0.7, seed=3, position=1))
    np.testing.assert_array_equal(got, R.sample(lg, temperature=0.7, seed=3, position=1))
