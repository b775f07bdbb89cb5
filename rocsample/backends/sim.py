"""The ``sim`` backend: the same kernels under numba-cuda's simulator, thread by thread.

The simulator is chosen when ``numba.cuda`` is first imported (``NUMBA_ENABLE_CUDASIM=1``), so
``sim`` cannot share a process with a real ``cuda`` backend that already loaded numba.cuda.
"""

from __future__ import annotations

import os
import sys

import numpy as np

from ..errors import BackendUnavailable
from .emulated import EmulatedRuntime
from .numba_arrays import NumbaBackend


class _SimCuda:
    """The module kernels see as ``cuda`` under the simulator.

    The simulator swaps the ``cuda`` module in a kernel's *globals* for a per-launch fake that
    knows grid, threadIdx, shared memory and so on. Our kernels get ``cuda`` through
    ``build(cuda)``, a closure the swap never reaches, so this proxy forwards to the fake while a
    simulated kernel runs and to the simulator's numba.cuda otherwise.
    """

    def __init__(self, cuda, kernel_mod) -> None:
        object.__setattr__(self, "_cuda", cuda)
        object.__setattr__(self, "_kmod", kernel_mod)

    def __getattr__(self, name):
        ctx = self._kmod._kernel_context
        if ctx is not None and hasattr(ctx, name):
            return getattr(ctx, name)
        return getattr(self._cuda, name)


class SimBackend(NumbaBackend):
    def __init__(self, cuda) -> None:
        from numba.cuda.simulator import kernel as kernel_mod

        cuda = _SimCuda(cuda, kernel_mod)
        super().__init__(
            "sim", cuda, EmulatedRuntime(alloc_array=lambda n: cuda.device_array(n, dtype=np.uint8))
        )

    def _is_own_array(self, obj) -> bool:
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

        return isinstance(obj, FakeCUDAArray)

    def is_device_array(self, obj) -> bool:
        return self._is_own_array(obj) or super().is_device_array(obj)

    def warp_size(self, device=None) -> int:
        # The simulator has no wavefront; ROCSAMPLE_SIM_WARP=64 exercises wave64 layouts.
        return int(os.environ.get("ROCSAMPLE_SIM_WARP", "32"))

    def compute_units(self, device=None) -> int:
        return 4

    def device_name(self, device=None) -> str:
        return "numba-cuda simulator"

    def array_device(self, arr) -> int:
        return self.runtime.current_device()


def _is_simulator(cuda) -> bool:
    return "simulator" in type(cuda.get_current_device()).__module__


def load() -> SimBackend:
    mod = sys.modules.get("numba.cuda")
    if mod is not None and not _is_simulator(mod):
        raise BackendUnavailable(
            "sim: numba.cuda was already imported for a real GPU in this process; set "
            "ROCSAMPLE_BACKEND=sim (or NUMBA_ENABLE_CUDASIM=1) before anything imports numba.cuda"
        )
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    try:
        from numba import config

        config.ENABLE_CUDASIM = True
        from numba import cuda
    except ImportError as e:  # pragma: no cover - depends on the install
        raise BackendUnavailable(
            f"sim: numba-cuda is not installed ({e}); install rocsample[dev]"
        ) from e
    if not _is_simulator(cuda):
        raise BackendUnavailable("sim: numba.cuda loaded without the simulator in this process")
    return SimBackend(cuda)
