"""set_rows ran on a stream of another device than its arrays instead of refusing the call.

What broke: ``set_rows`` never compared the device of dst / src / idx with the stream's device
(``Sampler`` does). On ``sim`` a call on a stream of device 1 with arrays of device 0 simply wrote
dst; on a GPU the kernels would run on device 1 against device 0's memory (a fault, or another
device's bytes without peer access). ``ring_write`` with a device position launched its index
kernel, advancing the position, before anything noticed. Now both raise ``ValueError`` naming the
argument (``stream``, or the array on the odd device) before any launch, dst and position untouched.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from tests.kernels.test_set_rows import assert_bytes_equal, expected

sr = importlib.import_module("rocsample.set_rows")  # the module; rocsample.set_rows may be the function


def _inputs(rng):
    dst = rng.standard_normal((4, 32)).astype(np.float32)
    src = rng.standard_normal((2, 32)).astype(np.float32)
    return dst, src, np.array([3, 0])


@pytest.mark.multi_gpu
def test_stream_of_another_device_is_refused(backend, rng, new_stream, launches):
    if backend.runtime.device_count() < 2:
        pytest.skip("needs two devices (emulated on cpu/sim)")
    dst, src, idx = _inputs(rng)
    other = 1 - backend.runtime.current_device()
    st = new_stream(other)
    if not backend.is_device:
        # host arrays belong to no device: the cpu backend writes them whatever the stream
        got = dst.copy()
        sr.set_rows(got, src, idx, stream=st)
        assert_bytes_equal(got, expected(dst, src, idx, "f32"), "cpu, stream of device 1")
        return
    d = backend.as_array(dst, "dst")  # on the current device
    s, i = backend.as_array(src, "src"), backend.as_array(idx, "idx")
    for check_bounds in (True, False):
        with pytest.raises(ValueError, match=rf"stream: expected a stream on device {1 - other} "
                                             rf"\(where dst lives\), got a stream on device {other}"):
            sr.set_rows(d, s, i, stream=st, check_bounds=check_bounds)
    assert launches == [], "a kernel was launched before the device mismatch was noticed"
    assert_bytes_equal(backend.to_host(d), dst, "dst after a refused call")
    # the same call with arrays and stream on one device goes through (the check is not blanket)
    with backend.on_device(other):
        d1 = backend.as_array(dst, "dst", backend.stream(st))
        sr.set_rows(d1, backend.as_array(src, "src", backend.stream(st)),
                    backend.as_array(idx, "idx", backend.stream(st)), stream=st)
        got = backend.to_host(d1, backend.stream(st))
    assert_bytes_equal(got, expected(dst, src, idx, "f32"), "arrays and stream on one device")


@pytest.mark.multi_gpu
def test_ring_write_on_a_stream_of_another_device_leaves_position(backend, rng, new_stream, launches):
    if backend.runtime.device_count() < 2:
        pytest.skip("needs two devices (emulated on cpu/sim)")
    if not backend.is_device:
        pytest.skip("device positions are for GPU backends")
    dst, src, _ = _inputs(rng)
    other = 1 - backend.runtime.current_device()
    st = new_stream(other)
    d = backend.as_array(dst, "dst")
    pos = backend.as_array(np.array([3], np.int64), "position")
    with pytest.raises(ValueError, match=rf"stream: expected a stream on device {1 - other}"):
        sr.ring_write(d, backend.as_array(src, "src"), pos, stream=st, advance=True)
    assert launches == [], "the ring index kernel ran before the device mismatch was noticed"
    assert backend.to_host(pos)[0] == 3, "position advanced by a refused call"
    assert_bytes_equal(backend.to_host(d), dst, "dst after a refused ring_write")


@pytest.mark.gpu
@pytest.mark.multi_gpu
def test_arrays_on_two_devices_are_refused(backend, rng, launches):
    # needs real memory on two devices: the simulator has one address space
    if backend.runtime.device_count() < 2:
        pytest.skip("needs two devices (two GPUs)")
    dst, src, idx = _inputs(rng)
    with backend.on_device(0):
        st0 = backend.stream(None)
        d = backend.as_array(dst, "dst", st0)
        i = backend.as_array(idx, "idx", st0)
    with backend.on_device(1):
        s = backend.as_array(src, "src", backend.stream(None))
    with backend.on_device(0):
        with pytest.raises(ValueError, match=r"src: expected an array on device 0 \(where dst lives\), "
                                             r"got one on device 1"):
            sr.set_rows(d, s, i)
        assert launches == []
        assert_bytes_equal(backend.to_host(d), dst, "dst after a refused call")
