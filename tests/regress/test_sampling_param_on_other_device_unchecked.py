"""Regression: device parameter arrays on another device than the stream's were not refused.

What broke: ``Sampler.__call__`` compared only the logits' device with the stream's. A
temperature/top_k/top_p/min_p/seed/position array, or ``out``, living on another GPU was
handed to the kernels as it was: without peer access that is an illegal address (a sticky
error that ends the process's context), with it a silent cross-device read or write. Now each
device array argument is checked before any launch, naming the argument.

The simulator places every array on the current device, so these tests say where an array
lives by patching ``backend.array_device`` - what the GPU backends answer from the pointer.
"""

from __future__ import annotations

import numpy as np
import pytest

import rocsample.sampling as rs

ROWS, VOCAB = 2, 40


def _device_args(backend):
    d = lambda a: backend.as_array(np.asarray(a), "x")  # noqa: E731
    return dict(temperature=d(np.array([0.7, 1.0], np.float32)),
                top_k=d(np.array([5, 0], np.int64)),
                top_p=d(np.array([0.9, 1.0], np.float32)),
                min_p=d(np.array([0.0, 0.1], np.float32)),
                seed=d(np.array([1, 2], np.uint64)),
                position=d(np.array([3, 4], np.uint64)),
                out=d(np.full(ROWS, -7, np.int32)))


def _address(a):
    if hasattr(a, "_ary"):  # a simulator array: NumPy underneath
        return a._ary.__array_interface__["data"][0]
    return a.__cuda_array_interface__["data"][0]


@pytest.mark.parametrize("name", ["temperature", "top_k", "top_p", "min_p", "seed", "position",
                                  "out"])
def test_device_argument_on_another_device_raises(backend, monkeypatch, name):
    if not backend.is_device:
        pytest.skip("device arrays")
    blk = backend.warp_size() if backend.name == "sim" else None
    plan = rs.Sampler(ROWS, VOCAB, "float32", _block=blk)
    lg = backend.as_array(np.random.default_rng(0).standard_normal((ROWS, VOCAB))
                          .astype(np.float32), "logits")
    args = _device_args(backend)
    plan(lg, **args, advance_position=True)  # all on one device: fine (and compiles)
    st = plan.stream
    pos_before = backend.to_host(args["position"], st).copy()
    out_before = backend.to_host(args["out"], st).copy()
    other = args[name]
    real = backend.array_device
    # by address: a GPU backend's view of the argument (as_array) is a new object
    addr = _address(other)
    monkeypatch.setattr(backend, "array_device",
                        lambda a: st.device + 1 if _address(a) == addr else real(a))
    launched = []
    monkeypatch.setattr(backend, "launch", lambda *a, **k: launched.append(a))
    with pytest.raises(ValueError, match=rf"^{name}: expected .*device {st.device}"):
        plan(lg, **args, advance_position=True)
    assert not launched
    monkeypatch.undo()
    np.testing.assert_array_equal(backend.to_host(args["position"], st), pos_before)
    np.testing.assert_array_equal(backend.to_host(args["out"], st), out_before)
