"""A read-only dst (or a read-only position with advance) gave NumPy's unnamed error, on sim only
after the kernels ran (issue #12, defect 8).

What broke: ``set_rows`` into a NumPy array with ``writeable=False`` raised "assignment
destination is read-only" from deep inside NumPy: on cpu from the reference's assignment, on the
device backends only when the device result was copied back, i.e. after every kernel had run;
``ring_write(..., advance=True)`` with a read-only NumPy position wrote the rows and then failed to
bump it. Both are now refused by name (``dst: expected a writable array``, ``position: ...``)
before anything is read, launched or written, on every backend; a device array whose
``__cuda_array_interface__`` says read-only is refused the same way.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from tests.kernels.test_set_rows import assert_bytes_equal

sr = importlib.import_module("rocsample.set_rows")  # the module; rocsample.set_rows may be the function

MSG = r"dst: expected a writable array \(it is written in place\), got a read-only array of shape \(4, 32\)"


def _read_only(a):
    a.setflags(write=False)
    return a


@pytest.mark.parametrize("call", ["set_rows", "ring_write"])
def test_read_only_numpy_dst_refused_before_anything_runs(backend, launches, call):
    dst = _read_only(np.zeros((4, 32), np.float32))
    src = np.ones((2, 32), np.float32)
    with pytest.raises(ValueError, match=MSG):
        if call == "set_rows":
            sr.set_rows(dst, src, np.array([0, 3], np.int64))
        else:
            sr.ring_write(dst, src, 1)
    if launches is not None:
        assert launches == []
    assert not dst.any()


@pytest.mark.parametrize("where", ["host", "device"])
def test_read_only_position_with_advance_refused_before_the_write(backend, launches, where):
    ring = np.zeros((4, 32), np.float32)
    d = backend.as_array(ring, "dst") if backend.is_device else ring
    src = np.ones((1, 32), np.float32)
    s = backend.as_array(src, "src") if backend.is_device else src
    pos = _read_only(np.array([2], np.int64))
    if where == "device":
        if not backend.is_device:
            pytest.skip("cpu-only: no device arrays (the host case is the one that runs)")
        pos = _ReadOnlyDevice(backend.as_array(pos, "position"))
        if backend.name == "sim":
            pytest.skip("sim: the simulator's arrays have no __cuda_array_interface__ to mark read-only")
    with pytest.raises(ValueError, match=r"position: expected a writable array \(it is written in place\), "
                                         r"got a read-only array of shape \(1,\)"):
        sr.ring_write(d, s, pos, advance=True)
    if launches is not None:
        assert launches == []
    assert_bytes_equal(backend.to_host(d) if backend.is_device else d, ring, "ring")
    # without advance a read-only position is only read: fine
    if where == "host":
        sr.ring_write(d, s, pos)
        want = ring.copy()
        want[2] = 1
        assert_bytes_equal(backend.to_host(d) if backend.is_device else d, want, "ring after a read")


class _ReadOnlyDevice:
    """A device array seen through a __cuda_array_interface__ that marks it read-only."""

    def __init__(self, arr):
        self._arr = arr
        cai = dict(arr.__cuda_array_interface__) if hasattr(arr, "__cuda_array_interface__") else {}
        if cai:
            cai["data"] = (cai["data"][0], True)
        self.__cuda_array_interface__ = cai
        self.shape, self.dtype = arr.shape, arr.dtype


def test_read_only_device_dst_refused(backend, launches):
    if backend.name not in ("cuda", "hip"):
        pytest.skip("gpu: needs a real __cuda_array_interface__ (the simulator's arrays have none)")
    d = _ReadOnlyDevice(backend.as_array(np.zeros((4, 32), np.float32), "dst"))
    with pytest.raises(ValueError, match=MSG):
        sr.set_rows(d, np.ones((2, 32), np.float32), np.array([0, 3], np.int64))
    assert launches == []
    assert not backend.to_host(d._arr).any()
