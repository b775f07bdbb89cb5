"""AMD: numba-hip (posing as numba.cuda) + hip-python-interop's ``cuda.bindings`` names.

Every AMD-specific line of rocsample is in this file. The kernels and the runtime are the ones
proven on NVIDIA; only the calls whose signatures differ live here, and one addition: numba-hip
has no array atomics, so ``load`` registers numba-hip's ``intrinsic`` with
``rocsample.kernels.atomics``, which then builds the kernels' atomic add / min / max as LLVM
``atomicrmw`` (the same target-neutral code is tested with numba's CPU target, and what it
becomes in gfx1151 / gfx942 code by tests/backends/test_hip_offline.py in the offline AMD
toolchain, which also drives this module against the real hip-python-interop; docs/DESIGN.md,
"The hip backend without AMD hardware").
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

from ..errors import BackendUnavailable
from ..kernels import atomics as _atomics
from .gpu import GpuBackend, VendorBase

_NEED = "install ROCm >= 7.2 and rocsample[hip] (numba-hip, hip-python-interop)"


class Vendor(VendorBase):
    name = "hip"
    native = ("libamdhip64.so", "hipModuleLaunchKernel", "hipGraphLaunch")
    queries = ("hipStreamIsCapturing", "hipStreamGetDevice")

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


def _bindings_library_path() -> str | None:
    """Where hip-python's bindings (and so numba-hip) load libamdhip64 from, if they say."""
    try:
        from rocm.bindings.util.paths import get_library_path

        p = get_library_path("amdhip64")
    except Exception:  # not installed, or it found nothing: the plain candidates follow
        return None
    return os.fsdecode(p) if p else None


def _find_hip_runtime() -> str | None:
    """The HIP runtime library that actually loads, or None.

    The bindings' own choice first, so that the ctypes launch path (``Vendor.native``) calls into
    the same runtime numba-hip loaded, not a second copy found on another path.
    """
    rocm = os.environ.get("ROCM_PATH", "/opt/rocm")
    candidates = [c for c in (_bindings_library_path(),) if c]
    candidates += ["libamdhip64.so", "libamdhip64.so.7", os.path.join(rocm, "lib", "libamdhip64.so")]
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
    lib = _find_hip_runtime()
    if lib is None:
        raise BackendUnavailable(f"hip: libamdhip64.so not found: {_NEED}")
    mod = sys.modules.get("numba.cuda")
    if mod is not None and "numba.hip" not in sys.modules:
        raise BackendUnavailable("hip: numba.cuda (NVIDIA) is already loaded in this process")
    try:
        from numba import hip
        from numba.hip.extending import intrinsic
    except Exception as e:
        # numba-hip reports a missing ROCm piece (comgr, libclang, the clang resource folder, the
        # hiprtc header) as RuntimeError, FileNotFoundError or a libclang error, not ImportError
        raise BackendUnavailable(
            f"hip: numba-hip is not importable ({type(e).__name__}: {e}): {_NEED}") from e
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
    # numba-hip's is_available only says that hipInit succeeded; a runtime that initialises but
    # lists no device (every GPU hidden, say) must not be chosen either
    try:
        count = len(hip.gpus)
    except Exception as e:
        raise BackendUnavailable(f"hip: the HIP runtime could not list its devices ({e}): {_NEED}") from e
    if count == 0:
        raise BackendUnavailable(f"hip: no usable AMD GPU found (the HIP runtime lists 0 devices): {_NEED}")
    # Only now, with every check passed: posing as numba.cuda cannot be undone in this process.
    hip.pose_as_cuda()
    # numba-hip has no array atomics: the kernels' atomic add / min / max become atomicrmw
    _atomics.register(hip.__name__, intrinsic)
    vendor = Vendor(hip, driver)
    vendor.native = (lib,) + Vendor.native[1:]
    return GpuBackend("hip", vendor)
