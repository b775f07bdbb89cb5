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


def _fake_numba_hip(monkeypatch, *, available=True):
    fake_hip = types.ModuleType("numba.hip")
    fake_hip.posed = []
    fake_hip.pose_as_cuda = lambda: fake_hip.posed.append(True)
    fake_hip.is_available = lambda: available
    ext = types.ModuleType("numba.hip.extending")
    ext.intrinsic = object()
    fake_hip.extending = ext
    import numba

    monkeypatch.setitem(sys.modules, "numba.hip", fake_hip)
    monkeypatch.setitem(sys.modules, "numba.hip.extending", ext)
    monkeypatch.setattr(numba, "hip", fake_hip, raising=False)
    return fake_hip


def _hip_interop(monkeypatch):
    drv = _fake_driver()
    drv.__file__ = "/site-packages/cuda/bindings/driver.py"  # hip-python-interop's
    bindings = types.ModuleType("cuda.bindings")
    bindings.driver = drv
    monkeypatch.setitem(sys.modules, "cuda.bindings", bindings)
    monkeypatch.setitem(sys.modules, "cuda.bindings.driver", drv)


@pytest.fixture
def no_numba_cuda():
    saved = sys.modules.pop("numba.cuda", None)
    yield
    if saved is not None:
        sys.modules["numba.cuda"] = saved


def test_load_turns_numba_hips_runtime_errors_into_unavailable(monkeypatch, no_numba_cuda):
    # numba-hip raises RuntimeError / FileNotFoundError (not ImportError) when comgr, libclang or
    # the hiprtc header is missing: that is "hip unavailable", not a crash of auto-detection
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    monkeypatch.setattr(hipmod, "_find_hip_runtime", lambda: "libamdhip64.so")
    import builtins

    real_import = builtins.__import__

    def fake_import(name, *a, **kw):
        if name == "numba" and a and a[2] and "hip" in a[2]:
            raise RuntimeError("libclang: cannot find the clang resource directory")
        return real_import(name, *a, **kw)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(BackendUnavailable, match="numba-hip is not importable .RuntimeError: libclang"):
        hipmod.load()


def test_load_poses_as_cuda_only_after_every_check(monkeypatch, no_numba_cuda):
    # pose_as_cuda cannot be undone: a failed load must leave numba.cuda alone
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    monkeypatch.setattr(hipmod, "_find_hip_runtime", lambda: "libamdhip64.so")
    fake_hip = _fake_numba_hip(monkeypatch, available=False)
    _hip_interop(monkeypatch)
    with pytest.raises(BackendUnavailable, match="no usable AMD GPU"):
        hipmod.load()
    assert fake_hip.posed == []


def test_runtime_search_prefers_the_bindings_library(monkeypatch):
    # the ctypes launch path must call into the runtime numba-hip loaded, not another copy
    monkeypatch.setattr(hipmod, "_bindings_library_path", lambda: "/opt/rocm-7.2/lib/libamdhip64.so")
    tried = []

    def cdll(name):
        tried.append(name)
        return object()

    monkeypatch.setattr(hipmod.ctypes, "CDLL", cdll)
    assert hipmod._find_hip_runtime() == "/opt/rocm-7.2/lib/libamdhip64.so"
    assert tried == ["/opt/rocm-7.2/lib/libamdhip64.so"]


def test_load_refuses_nvidias_cuda_bindings(monkeypatch):
    # hip-python-interop and cuda-bindings both install cuda.bindings: a mixed environment is named
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    monkeypatch.setattr(hipmod, "_find_hip_runtime", lambda: "libamdhip64.so")
    _fake_numba_hip(monkeypatch)
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
