"""Regression: the hip backend loaded on a HIP runtime that lists no device.

What broke: ``hip.load`` took numba-hip's ``is_available()`` as "an AMD GPU is here". numba-hip's
answer only says that hipInit succeeded (its driver initialised), so a runtime that initialises
but lists 0 devices (every GPU hidden, say) passed: numba-hip was posed as ``numba.cuda`` for
good and auto-detection chose hip instead of moving on, to fail at the first device call. Found
by the offline AMD tests (tests/backends/test_hip_offline.py, with tools/amd/hipstub.c answering
hipInit with success and hipGetDeviceCount with 0). Now load also asks for the device list and
refuses an empty one, before posing.
"""

from __future__ import annotations

import sys
import types

import pytest

from rocsample.backends import hip as hipmod
from rocsample.errors import BackendUnavailable


def test_load_refuses_a_runtime_listing_no_device(monkeypatch):
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    monkeypatch.setattr(hipmod, "_find_hip_runtime", lambda: "libamdhip64.so")
    fake_hip = types.ModuleType("numba.hip")
    fake_hip.posed = []
    fake_hip.pose_as_cuda = lambda: fake_hip.posed.append(True)
    fake_hip.is_available = lambda: True  # hipInit succeeded
    fake_hip.gpus = []  # ... and the runtime lists no device
    ext = types.ModuleType("numba.hip.extending")
    ext.intrinsic = object()
    fake_hip.extending = ext
    import numba

    monkeypatch.setitem(sys.modules, "numba.hip", fake_hip)
    monkeypatch.setitem(sys.modules, "numba.hip.extending", ext)
    monkeypatch.setattr(numba, "hip", fake_hip, raising=False)
    drv = types.SimpleNamespace(cudaGetDevice=lambda: (0, 0), __file__="/x/cuda/bindings/driver.py")
    bindings = types.ModuleType("cuda.bindings")
    bindings.driver = drv
    monkeypatch.setitem(sys.modules, "cuda.bindings", bindings)
    monkeypatch.setitem(sys.modules, "cuda.bindings.driver", drv)
    saved = sys.modules.pop("numba.cuda", None)
    try:
        with pytest.raises(BackendUnavailable, match=r"the HIP runtime lists 0 devices"):
            hipmod.load()
    finally:
        if saved is not None:
            sys.modules["numba.cuda"] = saved
    assert fake_hip.posed == []
