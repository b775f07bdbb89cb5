"""graphs.copy_to_device copies bytes: a host array of another dtype or shape is refused by name,
on every backend.

What broke (issue #12, defect 7, its copy_to_device part): on ``cpu`` a float64 array copied into
a float32 graph input was cast silently (and a (2, 2) array reshaped into a (4,) one), while sim
and the GPUs raised numba's unnamed "incompatible dtype: float32 vs. float64" / "incompatible
shape". Code written on cpu then broke on the GPU. Now every backend checks dst's dtype and shape
exactly before enqueueing anything, and names the argument.
"""

from __future__ import annotations

import numpy as np
import pytest

from rocsample import graphs


def _dev(backend, a, st):
    return backend.as_array(a, "x", backend.stream(st)) if backend.is_device else a


def _host(backend, a, st):
    return backend.to_host(a, backend.stream(st)) if backend.is_device else np.array(a)


BAD = [
    (np.arange(4, dtype=np.float64), TypeError, r"^host: expected dtype float32 \(dst's; bytes are "
     r"copied, not converted\), got float64$"),
    (np.arange(4, dtype=np.int32), TypeError, r"^host: expected dtype float32"),
    (np.zeros((2, 2), np.float32), ValueError, r"^host: expected shape \(4,\) \(dst's\), got shape \(2, 2\)$"),
    (np.zeros(3, np.float32), ValueError, r"^host: expected shape \(4,\)"),
    ([1.0, 2.0, 3.0, 4.0], TypeError, r"^host: expected a NumPy array of dtype float32 and shape \(4,\)"),
    (2.0, TypeError, r"^host: expected a NumPy array"),
]


@pytest.mark.parametrize("host, exc, msg", BAD, ids=["float64", "int32", "2x2", "short", "list", "scalar"])
def test_copy_to_device_refuses_another_dtype_or_shape(backend, new_stream, host, exc, msg):
    s = new_stream()
    dst = _dev(backend, np.full(4, 7, np.float32), s)
    with pytest.raises(exc, match=msg):
        graphs.copy_to_device(dst, host, s)
    np.testing.assert_array_equal(_host(backend, dst, s), np.full(4, 7, np.float32))


def test_copy_to_device_refuses_a_dst_that_is_not_an_array(backend, new_stream):
    with pytest.raises(TypeError, match=r"^dst: expected a "):
        graphs.copy_to_device([0.0] * 4, np.zeros(4, np.float32), new_stream())


def test_copy_to_device_copies_the_same_dtype_and_shape(backend, new_stream):
    s = new_stream()
    dst = _dev(backend, np.zeros((2, 3), np.float16), s)
    src = np.arange(6, dtype=np.float16).reshape(2, 3)
    graphs.copy_to_device(dst, src[:, ::-1], s)  # a non-contiguous view is fine
    backend.synchronize(s)
    np.testing.assert_array_equal(_host(backend, dst, s), src[:, ::-1])
