"""The AMD vendor module's logic, with HIP faked (no ROCm here): what load() checks and in which
order, and the calls whose signatures differ from NVIDIA's (SPEC §1)."""

from __future__ import annotations

import sys
import types

import pytest

from rocsample.backends import hip as hipmod
from rocsample.errors import BackendUnavailable


class _Rt:
    """Just enough runtime for the vendor's static helpers."""

    def __init__(self, drv):
        self.drv = drv
        self.calls = []

    def call(self, name, *args):
        self.calls.append((name, args))
        return getattr(self.drv, name)(*args)[1]


def _fake_driver():
    attr = types.SimpleNamespace(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL=9)

    def get_attr(out_addr, attribute, ptr):
        import ctypes

        ctypes.c_int.from_address(out_addr).value = 1  # hipPointerGetAttribute writes through `data`
        return (0, None)

    return types.SimpleNamespace(
        cudaGetDevice=lambda: (0, 0),  # only hip-python-interop serves this name in cuda.bindings
        CUpointer_attribute=attr,
        cuPointerGetAttribute=get_attr,
        cuGraphInstantiateWithFlags=lambda graph, flags: (0, ("exec", graph, flags)),
    )


def test_graph_instantiate_uses_the_flags_form():
    drv = _fake_driver()
    rt = _Rt(drv)
    assert hipmod.Vendor.graph_instantiate(rt, "g") == ("exec", "g", 0)
    assert rt.calls == [("cuGraphInstantiateWithFlags", ("g", 0))]


def test_pointer_device_reads_the_out_parameter():
    rt = _Rt(_fake_driver())
    assert hipmod.Vendor.pointer_device(rt, 0x1000) == 1


def test_stream_device_asks_hip(monkeypatch):
    fake = types.ModuleType("rocm.bindings.hip")
    fake.hipStreamGetDevice = lambda h: (0, 3)
    monkeypatch.setitem(sys.modules, "rocm", types.ModuleType("rocm"))
    monkeypatch.setitem(sys.modules, "rocm.bindings", types.ModuleType("rocm.bindings"))
    monkeypatch.setitem(sys.modules, "rocm.bindings.hip", fake)
    sys.modules["rocm.bindings"].hip = fake
    assert hipmod.Vendor.stream_device(None, 0x20) == 3


def test_load_refuses_under_the_simulator(monkeypatch):
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    with pytest.raises(BackendUnavailable, match="hip: NUMBA_ENABLE_CUDASIM=1"):
        hipmod.load()


def test_load_names_the_missing_runtime_first(monkeypatch):
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    monkeypatch.setattr(hipmod, "_find_hip_runtime", lambda: None)
    with pytest.raises(BackendUnavailable, match=r"hip: libamdhip64.so not found: install ROCm >= 7.2"):
        hipmod.load()


def test_load_refuses_nvidias_cuda_bindings(monkeypatch):
    # hip-python-interop and cuda-bindings both install cuda.bindings: a mixed environment is named
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    monkeypatch.setattr(hipmod, "_find_hip_runtime", lambda: "libamdhip64.so")
    fake_hip = types.ModuleType("numba.hip")
    fake_hip.pose_as_cuda = lambda: None
    fake_hip.is_available = lambda: True
    import numba

    monkeypatch.setitem(sys.modules, "numba.hip", fake_hip)
    monkeypatch.setattr(numba, "hip", fake_hip, raising=False)
    nv_driver = types.SimpleNamespace(__file__="/site-packages/cuda/bindings/driver.so")
    bindings = types.ModuleType("cuda.bindings")
    bindings.driver = nv_driver
    monkeypatch.setitem(sys.modules, "cuda.bindings", bindings)
    monkeypatch.setitem(sys.modules, "cuda.bindings.driver", nv_driver)
    saved = sys.modules.pop("numba.cuda", None)
    try:
        with pytest.raises(BackendUnavailable, match="NVIDIA's cuda-bindings, not hip-python-interop"):
            hipmod.load()
    finally:
        if saved is not None:
            sys.modules["numba.cuda"] = saved
