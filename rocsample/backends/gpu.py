"""The Backend facade for real GPUs (cuda and hip); the vendor object supplies the differences."""

from __future__ import annotations

from ._driver import DriverRuntime
from .numba_arrays import NumbaBackend


class GpuBackend(NumbaBackend):
    def __init__(self, name: str, vendor) -> None:
        super().__init__(name, vendor.cuda, DriverRuntime(vendor))
        self.vendor = vendor
        self._attrs: dict = {}

    def _device(self, device):
        return self.cuda.gpus[self.runtime.current_device() if device is None else device]

    def _attr(self, device, name: str) -> int:
        d = self.runtime.current_device() if device is None else device
        key = (d, name)
        v = self._attrs.get(key)
        if v is None:
            with self.cuda.gpus[d]:
                v = int(getattr(self.cuda.get_current_device(), name))
            self._attrs[key] = v
        return v

    def warp_size(self, device=None) -> int:
        return self._attr(device, "WARP_SIZE")

    def compute_units(self, device=None) -> int:
        return self._attr(device, "MULTIPROCESSOR_COUNT")

    def device_name(self, device=None) -> str:
        d = self.runtime.current_device() if device is None else device
        with self.cuda.gpus[d]:
            name = self.cuda.get_current_device().name
        return name.decode() if isinstance(name, bytes) else str(name)

    def array_device(self, arr) -> int:
        ptr = int(arr.__cuda_array_interface__["data"][0])
        if ptr == 0:
            return self.runtime.current_device()
        return self.runtime.pointer_device(ptr)
