"""A repeated unchecked set_rows wrote into a dst whose array interface says read-only.

What broke (GPU backends; found while reworking the repeated-call path for issue #17): the key of
a bound set_rows call named each array's framework, shape, strides, dtype, device and alignment,
not whether ``__cuda_array_interface__`` marks it read-only. A writable dst bound the key; a
read-only one of the same layout then ran the bound launch and was written, where every call
that is checked refuses it (``dst: expected a writable array``, SPEC §3). The read-only flag (and
the object's type, which the skipped ``dtype``/``shape`` checks read) is now part of a CAI
array's key, so the read-only dst takes the checked path and is refused before any launch.
Runs on the real GPU backend code over tests/fakegpu's no-op driver (no GPU needed).
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from rocsample.binder import Binder
from tests import fakegpu

sr = importlib.import_module("rocsample.set_rows")  # the module; rocsample.set_rows may be the function


class _CAI:
    """A device array seen through its ``__cuda_array_interface__`` (plus dtype and shape)."""

    def __init__(self, like, readonly=False):
        c = dict(like.__cuda_array_interface__)
        c["data"] = (c["data"][0], readonly)
        self._cai = c
        self.shape = tuple(c["shape"])
        self.dtype = np.dtype(c["typestr"])

    @property
    def __cuda_array_interface__(self):
        return self._cai


@pytest.mark.skipif(fakegpu.driver_library() is None, reason="no C compiler for the no-op driver")
def test_read_only_dst_refused_after_a_writable_one_bound_the_layout(monkeypatch):
    from rocsample.backends import interop

    monkeypatch.setattr(sr, "_binder", Binder(entries=16, execs=64))
    monkeypatch.setattr(interop, "_durable", set(interop._durable))
    fg = fakegpu.install(torch=False)
    try:
        cuda = fg.backend.cuda
        dst = cuda.device_array((16, 64), np.float32)
        src = cuda.device_array((1, 64), np.float32)
        idx = cuda.to_device(np.array([3], np.int64))
        for _ in range(3):  # bound on the second call
            sr.set_rows(_CAI(dst), _CAI(src), _CAI(idx), check_bounds=False)
        launches = fg.count("logged")
        with pytest.raises(ValueError, match=r"dst: expected a writable array \(it is written "
                                             r"in place\), got a read-only array"):
            sr.set_rows(_CAI(dst, readonly=True), _CAI(src), _CAI(idx), check_bounds=False)
        assert fg.count("logged") == launches  # nothing launched
        sr.set_rows(_CAI(dst), _CAI(src), _CAI(idx), check_bounds=False)
        assert fg.count("logged") == launches + 1  # the writable one: the bound launch still
    finally:
        fg.uninstall()
