"""AMD: numba-hip (posing as numba.cuda) + hip-python-interop's ``cuda.bindings`` names.

Every AMD-specific line of rocsample is in this file. The kernels and the runtime are the ones
proven on NVIDIA; only the calls whose signatures differ live here.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

from ..errors import BackendUnavailable
from .gpu import GpuBackend, VendorBase

_NEED = "install ROCm >= 7.2 and rocsample[hip] (numba-hip, hip-python-interop)"


class Vendor(VendorBase):
    name = "hip"
    native = ("libamdhip64.so", "hipModuleLaunchKernel", "hipGraphLaunch")

    @staticmethod
    def stream_device(rt, handle: int) -> int:
        # hip-python-interop serves no cuStreamGetDevice; HIP's own call answers it
        from rocm.bindings import hip as _hip

        err, dev = _hip.hipStreamGetDevice(handle)
        if int(err) != 0:
            raise RuntimeError(f"hipStreamGetDevice failed: {err!r}")
        return int(dev)

    @staticmethod
    def graph_instantiate(rt, graph):
        # hip-python-interop: cuGraphInstantiate(graph, bufferSize); the flags form is separate.
        return rt.call("cuGraphInstantiateWithFlags", graph, 0)

    def kernel_function(self, compiled):
        """The hipFunction_t of a compiled numba-hip kernel for the current context."""
        cufunc = compiled._codelibrary.get_cufunc()
        h = cufunc.handle
        return int(getattr(h, "value", h))

    @staticmethod
    def pointer_device(rt, ptr: int) -> int:
        out = ctypes.c_int(-1)
        attr = rt.drv.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
        rt.call("cuPointerGetAttribute", ctypes.addressof(out), attr, ptr)
        return int(out.value)


def _find_hip_runtime() -> str | None:
    """The HIP runtime library that actually loads, or None."""
    rocm = os.environ.get("ROCM_PATH", "/opt/rocm")
    candidates = ["libamdhip64.so", "libamdhip64.so.7", os.path.join(rocm, "lib", "libamdhip64.so")]
    found = ctypes.util.find_library("amdhip64")
    if found:
        candidates.append(found)
    for name in candidates:
        try:
            ctypes.CDLL(name)
            return name
        except OSError:
            continue
    return None


def load() -> GpuBackend:
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        raise BackendUnavailable("hip: NUMBA_ENABLE_CUDASIM=1 is set in this process (the simulator)")
    if _find_hip_runtime() is None:
        raise BackendUnavailable(f"hip: libamdhip64.so not found: {_NEED}")
    mod = sys.modules.get("numba.cuda")
    if mod is not None and "numba.hip" not in sys.modules:
        raise BackendUnavailable("hip: numba.cuda (NVIDIA) is already loaded in this process")
    try:
        from numba import hip
    except ImportError as e:
        raise BackendUnavailable(f"hip: numba-hip is not importable ({e}): {_NEED}") from e
    hip.pose_as_cuda()
    try:
        from cuda.bindings import driver  # served by hip-python-interop on AMD
    except ImportError as e:
        raise BackendUnavailable(f"hip: hip-python-interop's cuda.bindings is missing ({e}): {_NEED}") from e
    if "hip" not in (getattr(driver, "__file__", "") or "") and not hasattr(driver, "cudaGetDevice"):
        raise BackendUnavailable(
            "hip: cuda.bindings in this environment is NVIDIA's cuda-bindings, not hip-python-interop; "
            "the hip extra needs an environment of its own"
        )
    try:
        ok = hip.is_available()
    except Exception as e:
        raise BackendUnavailable(f"hip: the HIP runtime could not be initialised ({e}): {_NEED}") from e
    if not ok:
        raise BackendUnavailable(f"hip: no usable AMD GPU found: {_NEED}")
    return GpuBackend("hip", Vendor(hip, driver))
