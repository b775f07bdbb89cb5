"""Regression: advancing a NumPy position also bumped its cached device copy.

What broke (tools/gpu/diag_torch_cpu.py on an H200; tests/regress/test_torch_cpu_tensors_
backend_dependent.py and the fuzz's sample case failed there): with ``advance_position=True``
and a host (NumPy or torch CPU) position, the host array was bumped on the host, as documented,
and the device-advance kernel also ran on the position's device copy. That copy is the plan's
cached parameter for those host values (Sampler._host_param, keyed by the bytes), so the next
call with the same host values read positions one higher: wrong tokens for every sampling row
(greedy rows do not draw), on the second call and after, including calls without
``advance_position``. Now only a device position is advanced by the device.
"""

from __future__ import annotations

import numpy as np

import rocsample
from rocsample.reference import sampling as R


def _blk(backend):
    return {"_block": backend.warp_size()} if backend.name == "sim" else {}


def _tokens(backend, res):
    return np.asarray(backend.to_host(res)) if backend.is_device_array(res) else np.asarray(res)


def test_same_host_position_values_draw_the_same_tokens(backend, rng):
    lg = rng.standard_normal((3, 40)).astype(np.float32)
    kw = dict(temperature=np.array([0.7, 1.0, 0.0], np.float32), seed=np.arange(3))
    pos0 = np.array([5, 2**63 - 1, 9], np.int64)
    want = R.sample(lg, position=pos0, **kw)
    for advance in (True, True, False, True):
        pos = pos0.copy()
        got = rocsample.sample(lg, position=pos, advance_position=advance, **kw, **_blk(backend))
        np.testing.assert_array_equal(_tokens(backend, got), want)
        np.testing.assert_array_equal(pos, pos0 + 1 if advance else pos0)


def test_a_sampler_with_a_host_position_follows_it(backend, rng):
    lg = rng.standard_normal((2, 64)).astype(np.float32)
    plan = rocsample.Sampler(2, 64, "float32", **_blk(backend))
    pos = np.array([0, 7], np.int64)
    for _ in range(4):
        want = R.sample(lg, temperature=0.9, seed=1, position=pos.copy())
        got = plan(lg, temperature=0.9, seed=1, position=pos, advance_position=True)
        np.testing.assert_array_equal(_tokens(backend, got), want)
