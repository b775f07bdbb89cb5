"""rocsample.backends.interop without torch or CuPy: DLPack capsules parsed by hand, the key of a
host array, the stream rule without a framework (the torch/CuPy parts run on a GPU:
tests/regress/test_torch_inputs_ran_on_the_default_stream.py)."""

from __future__ import annotations

import numpy as np
import pytest

from rocsample.backends import interop


@pytest.mark.parametrize("make", [
    lambda: np.arange(24, dtype=np.float32).reshape(4, 6),
    lambda: np.arange(48, dtype=np.int64).reshape(4, 12)[:, ::3],
    lambda: np.zeros((3, 5), np.uint16)[1:],
    lambda: np.ones(7, np.uint8),
], ids=["f32", "strided-i64", "offset-u16", "u8"])
def test_a_dlpack_capsule_reads_as_the_array_interface(make):
    a = make()
    cai = interop.parse_dlpack(a.__dlpack__())
    ai = a.__array_interface__
    assert cai["data"][0] == ai["data"][0]
    assert cai["shape"] == a.shape
    assert cai["typestr"] == a.dtype.str.replace("=", "<")
    if cai["strides"] is not None:
        assert cai["strides"] == a.strides
    else:
        assert a.flags.c_contiguous


class _HostDLPack:
    def __init__(self, a):
        self._a = a

    def __dlpack__(self, stream=None):
        return self._a.__dlpack__()

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_a_host_dlpack_producer_is_adopted_as_numpy():
    a = np.arange(6, dtype=np.float32)
    got = interop.adopt(_HostDLPack(a))
    assert isinstance(got, np.ndarray) and got.__array_interface__["data"][0] == a.ctypes.data


def test_host_values_are_no_device_arrays(backend):
    for v in (np.zeros(3), 1.5, 3, None, [1, 2]):
        assert interop.device_key(backend, v) is None
    assert interop.framework_of(np.zeros(3)) is None
    assert interop.call_stream(backend, None, np.zeros(3)) == backend.stream(None)
