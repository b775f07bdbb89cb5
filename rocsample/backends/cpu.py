"""The ``cpu`` backend: the NumPy reference, with the emulated runtime for streams and capture."""

from __future__ import annotations

import numpy as np

from .._validate import describe, fail
from .base import Backend, Stream
from .emulated import EmulatedRuntime


class CpuBackend(Backend):
    def __init__(self) -> None:
        super().__init__("cpu", None, EmulatedRuntime(), is_device=False)

    def warp_size(self, device=None) -> int:
        return 1

    def compute_units(self, device=None) -> int:
        import os

        return os.cpu_count() or 1

    def device_name(self, device=None) -> str:
        import platform

        return f"CPU ({platform.processor() or platform.machine()})"

    def as_array(self, obj, name: str, stream: Stream | None = None, *, copy_host: bool = True):
        if isinstance(obj, np.ndarray):
            return obj
        if hasattr(obj, "__array__") and not hasattr(obj, "__cuda_array_interface__"):
            return np.asarray(obj)
        fail(name, "a NumPy array (the cpu backend has no device memory)", describe(obj), TypeError)

    def empty(self, shape, dtype, stream=None):
        return np.empty(shape, dtype=dtype)

    def to_host(self, arr, stream=None) -> np.ndarray:
        return np.asarray(arr)

    def copy_to_device(self, dst, src, stream) -> None:
        src = np.array(src, copy=True)
        self.enqueue(stream, lambda: np.copyto(dst, src.reshape(dst.shape)))

    def array_device(self, arr) -> int:
        return self.runtime.current_device()

    def launch(self, kernel, grid, block, stream, *args) -> None:
        raise TypeError("the cpu backend runs the NumPy reference; it launches no kernels")


def load() -> CpuBackend:
    return CpuBackend()
