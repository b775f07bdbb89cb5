"""A repeated unchecked set_rows wrote src into dst although src overlapped it (issue #17 work).

What broke: a ``check_bounds=False`` call whose key (dst, src and idx layouts, devices, stream,
dst_type) was bound ran the bound launch with no check at all. The key names layouts, not
addresses, so it cannot prove what SPEC §3 refuses by address: src (or idx) memory overlapping
dst's. Two calls with views of one buffer that lay apart bound the key; a third with views of
the same layouts that overlapped wrote dst from bytes it was overwriting (a result that depends
on block order), where every first call raises ``src: expected memory apart from dst's``. The
bound path now compares the three address ranges (the layout extents are fixed by the key) and
takes the checked path, which raises, when dst meets src or idx. Views that do not overlap still
take the bound launch.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from rocsample.binder import Binder
from tests.kernels.test_set_rows import assert_bytes_equal

sr = importlib.import_module("rocsample.set_rows")  # the module; rocsample.set_rows may be the function

MSG = r"src: expected memory apart from dst's"


def test_overlap_refused_after_the_layouts_were_bound(backend, monkeypatch):
    monkeypatch.setattr(sr, "_FAST_ON_SIM", True)
    monkeypatch.setattr(sr, "_binder", Binder(entries=16, execs=64))
    host = np.arange(10 * 32, dtype=np.float32).reshape(10, 32)
    buf = backend.as_array(host, "buf") if backend.is_device else host.copy()
    idx = np.array([2], np.int64)
    d_idx = backend.as_array(idx, "idx") if backend.is_device else idx
    want = host.copy()
    for _ in range(3):  # apart: dst rows 0..4, src row 8 (bound on the second call)
        sr.set_rows(buf[0:5], buf[8:9], d_idx, check_bounds=False)
        want[2] = want[8]
    if backend.is_device:
        assert len(sr._binder) == 1
    got = backend.to_host(buf) if backend.is_device else buf
    assert_bytes_equal(got, want, "apart")
    # the same layouts, overlapping: dst rows 1..5, src row 3 (dst's own row 3)
    with pytest.raises(ValueError, match=MSG):
        sr.set_rows(buf[1:6], buf[3:4], d_idx, check_bounds=False)
    got = backend.to_host(buf) if backend.is_device else buf
    assert_bytes_equal(got, want, "refused call wrote nothing")
    # apart again: the bound launch serves it
    sr.set_rows(buf[1:6], buf[9:10], d_idx, check_bounds=False)
    want[3] = want[9]
    got = backend.to_host(buf) if backend.is_device else buf
    assert_bytes_equal(got, want, "apart after the refusal")
