"""VendorBase.native_calls: the ctypes launch symbols of the repeated-call paths (DESIGN.md,
"Repeated calls"). Loaded once per vendor, with the driver API's argument types; None (and the
binding-layer fallback) where the library or a symbol is missing. No GPU needed: the C library
stands in for the driver."""

from __future__ import annotations

import ctypes
import ctypes.util

import pytest

from rocsample.backends import cuda as cudamod
from rocsample.backends import hip as hipmod
from rocsample.backends.gpu import VendorBase

_LIBC = ctypes.util.find_library("c")


def _vendor(native):
    v = VendorBase(cuda=None, driver=None)
    v.native = native
    return v


@pytest.mark.skipif(_LIBC is None, reason="no C library to stand in for the driver")
def test_loaded_once_with_the_driver_signatures():
    v = _vendor((_LIBC, "abs", "labs"))
    lk, gl = v.native_calls()
    assert len(lk.argtypes) == 11 and lk.restype is ctypes.c_int
    assert gl.argtypes == [ctypes.c_void_p, ctypes.c_void_p] and gl.restype is ctypes.c_int
    assert v.native_calls()[0] is lk  # cached


@pytest.mark.parametrize("native", [None, ("libno-such-driver.so.1", "a", "b"),
                                    (_LIBC, "abs", "no_such_symbol_here")])
def test_missing_library_or_symbol_falls_back(native):
    v = _vendor(native)
    assert v.native_calls() is None
    assert v.native_calls() is None  # and stays so


def test_each_vendor_names_its_launch_symbols():
    assert cudamod.Vendor.native == ("libcuda.so.1", "cuLaunchKernel", "cuGraphLaunch")
    assert hipmod.Vendor.native == ("libamdhip64.so", "hipModuleLaunchKernel", "hipGraphLaunch")


@pytest.mark.skipif(_LIBC is None, reason="no C library to stand in for the driver")
def test_stream_queries_loaded_once_with_their_signatures():
    v = _vendor((_LIBC, "abs", "labs"))
    v.queries = ("abs", "labs")
    cap, dev = v.query_calls()
    for f in (cap, dev):
        assert f.argtypes == [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        assert f.restype is ctypes.c_int
    assert v.query_calls()[0] is cap  # cached


@pytest.mark.parametrize("native, queries", [(None, ("a", "b")), ((_LIBC, "abs", "labs"), ()),
                                             ((_LIBC, "abs", "labs"), ("abs", "no_such_symbol"))])
def test_missing_query_symbols_fall_back_to_the_bindings(native, queries):
    v = _vendor(native)
    v.queries = queries
    assert v.query_calls() is None
    assert v.query_calls() is None


def test_each_vendor_names_its_stream_queries():
    assert cudamod.Vendor.queries == ("cuStreamIsCapturing", "cuStreamGetDevice")
    assert hipmod.Vendor.queries == ("hipStreamIsCapturing", "hipStreamGetDevice")


def test_packed_parameters_keep_each_scalar_at_its_own_width():
    # bound launches pass one buffer in the kernel's parameter layout (each value at its natural
    # alignment): a NumPy scalar widened to 8 bytes would shift every parameter after it
    import ctypes

    import numpy as np

    from rocsample.backends.gpu import _as_ctype

    for v, size in ((np.bool_(True), 1), (True, 1), (np.int32(-5), 4), (np.float32(1.5), 4),
                    (np.uint64(7), 8), (3, 8), (ctypes.c_float(2.0), 4)):
        c = _as_ctype(v)
        assert ctypes.sizeof(c) == size and c.value == (v.value if isinstance(v, ctypes.c_float)
                                                         else v.item() if hasattr(v, "item") else v)
