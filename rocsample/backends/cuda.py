"""NVIDIA: numba-cuda + cuda-bindings. Every NVIDIA-specific line of rocsample is in this file."""

from __future__ import annotations

import os
import sys

from ..errors import BackendUnavailable
from .gpu import GpuBackend, VendorBase


class Vendor(VendorBase):
    name = "cuda"

    @staticmethod
    def stream_device(rt, handle: int) -> int:
        return int(rt.call("cuStreamGetDevice", handle))

    @staticmethod
    def graph_instantiate(rt, graph):
        return rt.call("cuGraphInstantiate", graph, 0)  # (graph, flags) on NVIDIA

    def kernel_function(self, compiled):
        """The CUfunction of a compiled numba kernel for the current context."""
        cufunc = compiled._codelibrary.get_cufunc()
        h = cufunc.handle
        return self.driver.CUfunction(int(h))

    @staticmethod
    def pointer_device(rt, ptr: int) -> int:
        # The runtime API's answer: on two H200s the driver's CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
        # read 0 for memory that cudaPointerGetAttributes (and the allocation's context) placed
        # on device 1. Proven on the H200 pair (the multi-GPU tests pass with it).
        from cuda.bindings import runtime as cudart

        err, attrs = cudart.cudaPointerGetAttributes(ptr)
        if int(err) != 0:
            raise RuntimeError(f"cudaPointerGetAttributes failed: {err!r}")
        return int(attrs.device)


def load() -> GpuBackend:
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        raise BackendUnavailable(
            "cuda: NUMBA_ENABLE_CUDASIM=1 is set in this process (the simulator); unset it to use a GPU"
        )
    if "numba.hip" in sys.modules:
        raise BackendUnavailable("cuda: numba.hip already posed as numba.cuda in this process")
    try:
        from cuda.bindings import driver
    except ImportError as e:
        raise BackendUnavailable(
            f"cuda: cuda.bindings is not importable ({e}); install rocsample[cuda] "
            "(numba-cuda[cu13], which brings cuda-bindings)"
        ) from e
    # Probe the driver before importing numba.cuda: a failed probe must leave this process free to
    # choose the simulator afterwards.
    try:
        res = driver.cuInit(0)
        err = res[0] if isinstance(res, tuple) else res
    except Exception as e:  # cuda-pathfinder raises when libcuda.so is missing
        raise BackendUnavailable(
            f"cuda: libcuda.so not found ({type(e).__name__}): install the NVIDIA driver, "
            "or choose ROCSAMPLE_BACKEND=cpu"
        ) from e
    if int(err) != 0:
        raise BackendUnavailable(f"cuda: cuInit failed ({err!r}): no usable NVIDIA GPU")
    try:
        from numba import cuda
    except ImportError as e:
        raise BackendUnavailable(f"cuda: numba-cuda is not installed ({e}); install rocsample[cuda]") from e
    try:
        ok = cuda.is_available()
    except Exception as e:  # the driver library itself may be missing
        raise BackendUnavailable(f"cuda: the CUDA driver could not be loaded ({e})") from e
    if not ok:
        raise BackendUnavailable(
            "cuda: no usable NVIDIA GPU (libcuda.so not found or no device); install the NVIDIA "
            "driver, or choose ROCSAMPLE_BACKEND=cpu"
        )
    return GpuBackend("cuda", Vendor(cuda, driver))
