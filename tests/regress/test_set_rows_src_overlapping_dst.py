"""src overlapping dst gave different bytes on sim and cpu (issue #12, defect 4).

What broke: ``set_rows(dA, dA[0:3], [1, 2, 3])`` gave rows ``[0, 0, 0, 0]`` on sim (each thread
block read a row another block had already overwritten) and ``[0, 0, 64, 128]`` on cpu (NumPy
converted all of src first): the result depended on the backend and, on a GPU, on block order.
SPEC §3 now refuses src overlapping dst with a named error on every backend: the address ranges
of the two arrays' memory are compared before anything is launched (idx overlapping dst is
refused the same way), so dst is left as it was. Views of one buffer that do not overlap work.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from tests.kernels.test_set_rows import assert_bytes_equal

sr = importlib.import_module("rocsample.set_rows")  # the module; rocsample.set_rows may be the function

MSG = r"src: expected memory apart from dst's \(set_rows does not read what it overwrites\), got an array"

S = np.s_
# (name, dst slice, src slice, idx): views of one (6, 32) float32 buffer
OVERLAPS = [
    ("issue_reproducer", S[0:4], S[0:3], [1, 2, 3]),
    ("src_is_dst", S[0:4], S[0:4], [3, 2, 1, 0]),
    ("one_shared_row", S[0:3], S[2:4], [0, 1]),
    ("interleaved_rows", S[::2], S[1::2], [2, 0, 1]),  # no byte in common, ranges overlap
    ("src_inside_dst", S[:], S[2:3], [5]),
]


def _buffer(backend):
    a = np.arange(6 * 32, dtype=np.float32).reshape(6, 32)
    return a, (backend.as_array(a, "buf") if backend.is_device else a.copy())


def _host(backend, buf):
    return backend.to_host(buf) if backend.is_device else buf


@pytest.mark.parametrize("case", OVERLAPS, ids=[c[0] for c in OVERLAPS])
def test_overlapping_src_is_refused_before_any_launch(backend, launches, case):
    name, dsl, ssl, idx = case
    before, buf = _buffer(backend)
    with pytest.raises(ValueError, match=MSG):
        sr.set_rows(buf[dsl], buf[ssl], np.array(idx, np.int64))
    if launches is not None:
        assert launches == []
    assert_bytes_equal(_host(backend, buf), before, name)


def test_overlapping_src_is_refused_by_ring_write(backend, launches):
    before, buf = _buffer(backend)
    with pytest.raises(ValueError, match=MSG):
        sr.ring_write(buf, buf[1:2], 3)
    pos = np.array([3], np.int64)
    d_pos = backend.as_array(pos, "position") if backend.is_device else pos
    with pytest.raises(ValueError, match=MSG):
        sr.ring_write(buf, buf[1:2], d_pos, advance=True)
    if launches is not None:
        assert launches == []
    assert_bytes_equal(_host(backend, buf), before, "ring_write")
    assert (backend.to_host(d_pos) if backend.is_device else d_pos)[0] == 3


def test_idx_overlapping_dst_is_refused(backend, launches):
    before, buf = _buffer(backend)
    idx = buf.view(np.int32)[5, 0:2]  # the bits of 160.0, 161.0: no valid row, but refused first
    with pytest.raises(ValueError, match=r"idx: expected memory apart from dst's"):
        sr.set_rows(buf, np.ones((2, 32), np.float32), idx)
    if launches is not None:
        assert launches == []
    assert_bytes_equal(_host(backend, buf), before, "idx overlapping dst")


def test_views_of_one_buffer_that_do_not_overlap_are_written(backend):
    before, buf = _buffer(backend)
    sr.set_rows(buf[0:3], buf[3:6], np.array([2, 0, 1], np.int64))
    want = before.copy()
    want[[2, 0, 1]] = before[3:6]
    assert_bytes_equal(_host(backend, buf), want, "disjoint views")


def test_overlapping_host_arrays_refused_on_device_backends_too(backend, launches):
    # a NumPy dst and a NumPy src that share memory: the cpu backend and the device ones (which
    # copy both over) agree: refused
    a = np.arange(4 * 32, dtype=np.float32).reshape(4, 32)
    before = a.copy()
    with pytest.raises(ValueError, match=MSG):
        sr.set_rows(a, a[0:3], np.array([1, 2, 3], np.int64))
    if launches is not None:
        assert launches == []
    assert_bytes_equal(a, before, "host arrays")
