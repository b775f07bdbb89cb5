"""Array handling shared by every numba-driven backend (cuda, hip, sim)."""

from __future__ import annotations

import contextlib

import numpy as np

from .._validate import describe, dtype_of, fail
from . import interop
from .base import Backend, Stream


class NumbaBackend(Backend):
    """Backends whose arrays are numba device arrays (real or simulated)."""

    def _is_own_array(self, obj) -> bool:
        """A device array of this backend's numba (the simulator's have no CUDA interface)."""
        return False

    def _on_stream_device(self, st: Stream):
        """numba allocates in the current device's context: make the stream's device current
        around an allocation for that stream (a no-op when it already is)."""
        if st.device == self.runtime.current_device():
            return contextlib.nullcontext()
        return self.on_device(st.device)

    def _allocated(self, arr, device: int):
        """Hook: ``arr`` was just allocated on ``device`` (the simulator records it)."""
        return arr

    def as_array(self, obj, name: str, stream: Stream | None = None, *, copy_host: bool = True):
        cuda = self.cuda
        st = stream if stream is not None else self.stream(None)
        if isinstance(obj, np.ndarray):
            if not copy_host:
                fail(name, "a device array", describe(obj), TypeError)
            self.check_can_allocate(st, f"{name}: copying a host array to the device")
            host = obj
            if dtype_of(obj) == "bfloat16":  # ml_dtypes bfloat16: keep the bits
                host = obj.view(np.uint16)
            with self._on_stream_device(st):
                return self._allocated(cuda.to_device(host, stream=st.numba), st.device)
        if self._is_own_array(obj):
            return obj
        holder = interop.as_cai(obj)  # torch (bfloat16, requires_grad) and DLPack producers
        if holder is not None:
            return cuda.from_cuda_array_interface(holder.__cuda_array_interface__, owner=holder,
                                                  sync=False)
        if not isinstance(obj, np.ndarray) and hasattr(obj, "__cuda_array_interface__"):
            if dtype_of(obj) == "bfloat16":
                cai = dict(obj.__cuda_array_interface__)
                cai["typestr"] = "<u2"
                return cuda.from_cuda_array_interface(cai, owner=obj, sync=False)
            return cuda.as_cuda_array(obj, sync=False)
        fail(name, "a NumPy array or a device array (__cuda_array_interface__)", describe(obj), TypeError)

    def empty(self, shape, dtype, stream: Stream | None = None):
        st = stream if stream is not None else self.stream(None)
        self.check_can_allocate(st, "allocating an output array")
        with self._on_stream_device(st):
            return self._allocated(self.cuda.device_array(shape, dtype=dtype, stream=st.numba),
                                   st.device)

    def array_span(self, arr):
        cai = getattr(arr, "__cuda_array_interface__", None)
        if cai is None or isinstance(arr, np.ndarray):
            return None
        itemsize = np.dtype(cai["typestr"]).itemsize
        return span(int(cai["data"][0]), tuple(cai["shape"]), cai.get("strides"), itemsize)

    def to_host(self, arr, stream: Stream | None = None) -> np.ndarray:
        st = stream if stream is not None else self.stream(None)
        out = arr.copy_to_host(stream=st.numba)
        self.runtime.synchronize(st)
        return out

    def copy_to_device(self, dst, src: np.ndarray, stream: Stream) -> None:
        src = np.ascontiguousarray(src)
        self.enqueue(stream, lambda: dst.copy_to_device(src, stream=stream.numba))


def c_strides(shape, itemsize: int) -> tuple[int, ...]:
    """Byte strides of a C-contiguous array of ``shape``."""
    out, acc = [], itemsize
    for n in reversed(tuple(shape)):
        out.append(acc)
        acc *= max(int(n), 1)
    return tuple(reversed(out))


def span(ptr: int, shape, strides, itemsize: int) -> tuple[int, int, int]:
    """(ptr, lowest byte, one past the highest byte) an array of this layout may touch; an empty
    array touches nothing (lo == hi == ptr)."""
    shape = tuple(int(n) for n in shape)
    if strides is None:
        strides = c_strides(shape, itemsize)
    if 0 in shape:
        return ptr, ptr, ptr
    lo = hi = ptr
    for n, s in zip(shape, strides):
        if s < 0:
            lo += (n - 1) * int(s)
        else:
            hi += (n - 1) * int(s)
    return ptr, lo, hi + itemsize
