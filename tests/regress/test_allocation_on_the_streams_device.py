"""Regression: arrays for a stream of another device were allocated on the current device.

What broke: numba allocates in the current device's context, and ``as_array`` (host copies) and
``empty`` (a Sampler's outputs) did not make the stream's device current. With device 0 current,
``Sampler(..., stream=<device-1 stream>)`` put its output buffers on device 0 (kernels on
device 1 would then write another device's memory), and ``sample`` / ``set_rows`` with NumPy
inputs and a device-1 stream copied them to device 0 and refused the call ("stream: expected a
stream on device 0 (where logits live)"), although NumPy arrays belong to no device. Allocations
for a stream now happen on its device; the simulator records which device each array was made for.
"""

from __future__ import annotations

import numpy as np
import pytest

import rocsample as rs
from rocsample.reference import sampling as R


@pytest.fixture
def other_stream(backend, new_stream):
    if not backend.is_device or backend.runtime.device_count() < 2:
        pytest.skip("needs two devices on a device backend (sim emulates two)")
    assert backend.runtime.current_device() == 0
    return new_stream(1)


def test_sampler_outputs_live_on_the_streams_device(backend, other_stream):
    plan = rs.Sampler(2, 40, "float32", stream=other_stream)
    assert [backend.array_device(a) for a in plan._outputs] == [1, 1, 1]
    assert backend.runtime.current_device() == 0  # left as it was


def test_numpy_inputs_with_a_stream_of_another_device(backend, rng, other_stream):
    lg = (rng.standard_normal((2, 40)) * 3).astype(np.float32)
    tok = rs.sample(lg, temperature=0.0, seed=1, position=0, stream=other_stream, _block=backend.warp_size())
    st = backend.stream(other_stream)
    assert backend.array_device(tok) == 1
    want = R.sample(lg, temperature=0.0, seed=1, position=0)
    assert list(backend.to_host(tok, st)) == list(want) == list(lg.argmax(axis=1))
    dst = np.zeros((4, 32), np.float32)
    src = np.ones((2, 32), np.float32)
    rs.set_rows(dst, src, np.array([3, 1]), stream=other_stream)
    assert dst[[1, 3]].all() and not dst[[0, 2]].any()
