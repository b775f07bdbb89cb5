"""graphs.copy_to_device's checks, exactly, on both kinds of backend (and written to kill its
mutants: docs/MUTATION.md). The device branch runs here on a private cpu backend that poses as a
device backend, with a stand-in device array: the check is the backend-independent contract of
tests/regress/test_copy_to_device_converts_silently.py, which runs the real copies."""

from __future__ import annotations

import re

import numpy as np
import pytest

from rocsample import graphs
from rocsample.backends.emulated import EmulatedRuntime
from tests.scratch.test_pool_contract import private_backend


class FakeDeviceArray:
    """Shape, dtype and a CUDA array interface: what a device backend's arrays offer."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.__cuda_array_interface__ = {"shape": self.shape, "typestr": self.dtype.str,
                                         "data": (4096, False), "version": 3}
        self.copies = []


@pytest.fixture(params=["cpu", "device"])
def kind(request, monkeypatch):
    be = private_backend(monkeypatch, EmulatedRuntime(n_devices=1))
    copies = []
    if request.param == "device":
        be.is_device = True
        monkeypatch.setattr(be, "copy_to_device", lambda dst, host, st: copies.append((dst, host, st)))
    else:
        orig = be.copy_to_device
        monkeypatch.setattr(be, "copy_to_device",
                            lambda dst, host, st: (copies.append((dst, host, st)), orig(dst, host, st)))
    return request.param, be, copies


def _dst(kind, shape=(4,), dtype=np.float32):
    return FakeDeviceArray(shape, dtype) if kind == "device" else np.zeros(shape, dtype)


def exact(msg):
    return "^" + re.escape(msg) + "$"


def test_the_same_dtype_and_shape_is_copied_once(kind):
    name, be, copies = kind
    dst = _dst(name, (2, 3), np.float16)
    host = np.arange(6, dtype=np.float16).reshape(2, 3)
    graphs.copy_to_device(dst, host, None)
    assert len(copies) == 1 and copies[0][0] is dst and copies[0][1] is host
    assert copies[0][2] == be.stream(None)
    if name == "cpu":
        np.testing.assert_array_equal(dst, host)


@pytest.mark.parametrize("host, exc, msg", [
    (np.zeros(4, np.float64), TypeError,
     "host: expected dtype float32 (dst's; bytes are copied, not converted), got float64"),
    (np.zeros(4, np.uint32), TypeError,
     "host: expected dtype float32 (dst's; bytes are copied, not converted), got uint32"),
    (np.zeros((2, 2), np.float32), ValueError, "host: expected shape (4,) (dst's), got shape (2, 2)"),
    ([0.0, 1.0, 2.0, 3.0], TypeError,
     "host: expected a NumPy array of dtype float32 and shape (4,), got [0.0, 1.0, 2.0, 3.0]"),
    (None, TypeError, "host: expected a NumPy array of dtype float32 and shape (4,), got None"),
])
def test_another_host_array_is_refused_exactly(kind, host, exc, msg):
    name, _, copies = kind
    with pytest.raises(exc, match=exact(msg)):
        graphs.copy_to_device(_dst(name), host, None)
    assert copies == []


def test_a_uint16_input_takes_uint16_bits_only(kind):
    name, _, copies = kind
    dst = _dst(name, (3,), np.uint16)
    with pytest.raises(TypeError, match=exact(
            "host: expected dtype uint16 (dst's; bytes are copied, not converted), got float16")):
        graphs.copy_to_device(dst, np.zeros(3, np.float16), None)
    graphs.copy_to_device(dst, np.zeros(3, np.float16).view(np.uint16), None)
    assert len(copies) == 1


@pytest.mark.parametrize("dst", [[0.0] * 4, 3.0, None])
def test_a_dst_that_is_no_array_of_the_backend_is_refused_exactly(kind, dst):
    name, _, copies = kind
    from rocsample._validate import describe

    with pytest.raises(TypeError, match=exact(
            "dst: expected a device array (on cpu, a NumPy array: its device memory), got "
            f"{describe(dst)}")):
        graphs.copy_to_device(dst, np.zeros(4, np.float32), None)
    assert copies == []


def test_each_kind_refuses_the_others_array(kind):
    name, _, copies = kind
    other = np.zeros(4, np.float32) if name == "device" else FakeDeviceArray((4,), np.float32)
    with pytest.raises(TypeError, match="^dst: expected a device array"):
        graphs.copy_to_device(other, np.zeros(4, np.float32), None)
    assert copies == []
