"""What every backend provides: the runtime interface and the Backend facade.

The runtime (devices, streams, capture status, allocation, events, graphs) has two
implementations: ``_driver.DriverRuntime`` written once against the ``cuda.bindings.driver``
names (NVIDIA's cuda-bindings, or hip-python-interop on AMD), and ``emulated.EmulatedRuntime``
that models devices, streams and capture in-process for ``sim`` and ``cpu``.
"""

from __future__ import annotations

import abc
import enum
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np


class CaptureStatus(enum.Enum):
    NONE = 0
    ACTIVE = 1
    INVALIDATED = 2


@dataclass(frozen=True)
class Stream:
    """A normalised stream: raw handle, owning device, and the object numba launches take."""

    handle: int
    device: int
    numba: Any = 0
    #: made by the emulated runtime (cpu, sim): a GPU backend refuses it, since its handle is
    #: not a driver stream (the driver would dereference it)
    emulated: bool = field(default=False, compare=False)

    def __int__(self) -> int:
        return self.handle


def stream_handle_of(stream) -> int | None:
    """The raw handle of a stream given in one of SPEC §1's foreign forms, or None.

    Forms: an int (or NumPy integer) handle; an object with ``__cuda_stream__`` (the CUDA stream
    protocol: ``(version, handle)``); ``.cuda_stream`` (PyTorch, and the emulated streams);
    a CuPy stream (``.ptr``); a ``cuda.bindings`` ``CUstream`` (``int()`` of it). Backend stream
    objects (numba's) are recognised by the runtimes themselves, before this.
    """
    if isinstance(stream, (bool, np.bool_)):
        return None
    if isinstance(stream, (int, np.integer)):
        return int(stream)
    proto = getattr(type(stream), "__cuda_stream__", None)
    if proto is not None:
        v = stream.__cuda_stream__()
        return int(v[1])
    h = getattr(stream, "cuda_stream", None)
    if h is not None:
        return int(h)
    mod = type(stream).__module__ or ""
    if mod.startswith("cupy") and hasattr(stream, "ptr"):
        return int(stream.ptr)
    if mod.startswith("cuda.") and type(stream).__name__ in ("CUstream", "cudaStream_t"):
        return int(stream)
    return None


@dataclass
class Allocation:
    """A device allocation made by a runtime (or an emulated one)."""

    ptr: int
    nbytes: int
    device: int
    array: Any  # uint8 array of nbytes: numba device array, simulator array or numpy
    freed: bool = False


class Runtime(abc.ABC):
    """Interface of the runtime layer; see DriverRuntime and EmulatedRuntime."""

    emulated: bool = False

    def __init__(self) -> None:
        self._count_lock = threading.Lock()
        self.alloc_calls = 0  # every device allocation made through mem_alloc (tests count these)
        self.free_calls = 0

    def _count(self, what: str) -> None:
        with self._count_lock:
            setattr(self, what, getattr(self, what) + 1)

    # devices
    @abc.abstractmethod
    def device_count(self) -> int:
        ...

    @abc.abstractmethod
    def current_device(self) -> int:
        ...

    # streams
    @abc.abstractmethod
    def stream(self, stream) -> Stream:
        ...

    @abc.abstractmethod
    def new_stream(self, device: int | None = None):
        ...

    @abc.abstractmethod
    def synchronize(self, stream: Stream) -> None:
        ...

    # capture
    @abc.abstractmethod
    def capture_status(self, stream: Stream) -> CaptureStatus:
        ...

    def capture_probe(self, stream: Stream) -> Callable[[], bool]:
        """A function answering whether ``stream`` is idle of capture now (status NONE, the query
        itself succeeding): the one driver query of a repeated bound call
        (``rocsample.binder.BoundCall.ready``). Call it holding the stream's lock
        (``rocsample.binder.stream_lock``): a runtime may keep one result cell per probe."""
        none = CaptureStatus.NONE
        status = self.capture_status
        return lambda: status(stream) is none

    @abc.abstractmethod
    def global_capture_active(self, device: int) -> bool:
        """Whether a capture that forbids allocation on ``device`` from this thread is open."""

    @abc.abstractmethod
    def begin_capture(self, stream: Stream, mode: str = "thread_local") -> None:
        ...

    @abc.abstractmethod
    def end_capture(self, stream: Stream):
        ...

    @abc.abstractmethod
    def instantiate(self, graph):
        ...

    @abc.abstractmethod
    def graph_launch(self, exec_, stream: Stream) -> None:
        ...

    @abc.abstractmethod
    def graph_destroy(self, graph) -> None:
        ...

    @abc.abstractmethod
    def graph_exec_destroy(self, exec_) -> None:
        ...

    # memory
    @abc.abstractmethod
    def mem_alloc(self, nbytes: int, device: int) -> Allocation:
        ...

    @abc.abstractmethod
    def mem_free(self, alloc: Allocation) -> None:
        ...

    @abc.abstractmethod
    def pointer_device(self, ptr: int) -> int:
        ...

    # events
    @abc.abstractmethod
    def event_record(self, stream: Stream):
        ...

    @abc.abstractmethod
    def event_query(self, event) -> bool:
        ...

    @abc.abstractmethod
    def event_destroy(self, event) -> None:
        ...

    # work
    def enqueue(self, stream: Stream, fn: Callable[[], None]) -> None:
        """Run device work now (real GPUs: the driver captures it when the stream is capturing)."""
        fn()


class Backend(abc.ABC):
    """The facade launchers use. Built by the backend modules; see DESIGN.md."""

    def __init__(self, name: str, cuda, runtime: Runtime, *, is_device: bool = True) -> None:
        self.name = name
        self.cuda = cuda
        self.runtime = runtime
        self.is_device = is_device
        self._kernel_cache: dict = {}
        self._kernel_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<rocsample backend {self.name!r}>"

    # ---- kernels --------------------------------------------------------------------------
    def kernels(self, build: Callable):
        """``build(cuda)`` once per backend; numba then compiles per signature and device."""
        key = (build.__module__, build.__qualname__)
        ns = self._kernel_cache.get(key)
        if ns is None:
            with self._kernel_lock:
                ns = self._kernel_cache.get(key)
                if ns is None:
                    ns = build(self.cuda)
                    self._kernel_cache[key] = ns
        return ns

    @abc.abstractmethod
    def warp_size(self, device: int | None = None) -> int:
        ...

    def on_device(self, device: int):
        """Context manager making ``device`` current (arrays and default streams go there)."""
        import contextlib

        rt = self.runtime

        @contextlib.contextmanager
        def ctx():
            if self.cuda is not None and not rt.emulated:
                with self.cuda.gpus[device]:
                    yield
                return
            prev = rt.current_device()
            rt.select_device(device)
            try:
                yield
            finally:
                rt.select_device(prev)

        return ctx()

    @abc.abstractmethod
    def compute_units(self, device: int | None = None) -> int:
        ...

    def device_name(self, device: int | None = None) -> str:
        return self.name

    # ---- streams and arrays ---------------------------------------------------------------
    def stream(self, stream=None) -> Stream:
        return self.runtime.stream(stream)

    def is_device_array(self, obj) -> bool:
        if isinstance(obj, np.ndarray):
            return False
        return hasattr(obj, "__cuda_array_interface__")

    @abc.abstractmethod
    def as_array(self, obj, name: str, stream: Stream | None = None, *, copy_host: bool = True):
        """NumPy -> device copy (stream-ordered); device arrays -> zero-copy view."""

    @abc.abstractmethod
    def empty(self, shape, dtype, stream: Stream | None = None):
        ...

    @abc.abstractmethod
    def to_host(self, arr, stream: Stream | None = None) -> np.ndarray:
        ...

    @abc.abstractmethod
    def copy_to_device(self, dst, src: np.ndarray, stream: Stream) -> None:
        """Stream-ordered host-to-device copy into an existing device array."""

    @abc.abstractmethod
    def array_device(self, arr) -> int:
        ...

    def launch(self, kernel, grid, block, stream: Stream, *args) -> None:
        self.runtime.enqueue(stream, lambda: kernel[grid, block, stream.numba](*args))

    def bind(self, kernel, grid, block, stream: Stream, *args) -> EmulatedBound:
        """A launch resolved once: calling the result launches ``kernel`` again with ``args``.

        The arguments are captured as they are now (array addresses, scalar values); the data
        address of each array argument sits in a cell (``BoundLaunch.cells``) that
        :mod:`rocsample.binder` rewrites to point the launch at another array of the same layout.
        GPU backends skip numba's per-call typing and argument marshalling (one driver call per
        launch); the emulated backends rebuild each re-pointed array argument at its new
        address and make a plain :meth:`launch`.
        """
        return EmulatedBound(self, kernel, grid, block, stream, args)

    def array_span(self, arr) -> tuple[int, int, int] | None:
        """(data address, lowest byte, one past the highest byte) of a device array, or None.

        Used when binding, to tell which bound array arguments are views of which caller array.
        """
        return None

    def array_layout(self, arr):
        """(dtype, shape, byte strides) of a device array (what ``array_at`` rebuilds)."""
        raise TypeError(f"the {self.name} backend has no device arrays")

    def array_at(self, address: int, layout):
        """An array of ``layout`` (``array_layout``'s answer) whose data starts at ``address``.

        Emulated backends only (their "device" memory is host memory): a bound launch re-pointed
        at another array is rebuilt from the new address, as a driver launch would read it.
        """
        raise TypeError(f"the {self.name} backend cannot rebuild arrays from addresses")

    def enqueue(self, stream: Stream, fn: Callable[[], None]) -> None:
        self.runtime.enqueue(stream, fn)

    def synchronize(self, stream=None) -> None:
        self.runtime.synchronize(self.stream(stream))

    def check_can_allocate(self, stream: Stream, what: str) -> None:
        """Raise ScratchNotWarmed, before any driver call, if allocating device memory for a call
        on ``stream`` now would invalidate a capture (its own stream's, rocsample's, a global
        one, or a foreign capture on a stream rocsample knows of: ``ScratchPool.allocation_blocker``)."""
        from ..scratch import get_pool

        blocker = get_pool(self).allocation_blocker(stream)
        if blocker is not None:
            from ..errors import ScratchNotWarmed

            raise ScratchNotWarmed(
                f"{what} needs a device allocation, which {blocker} forbids; warm this call "
                "outside the capture (a Sampler / its prewarm(), set_rows.prewarm, or one call "
                "with the same arguments) or make it after the capture"
            )

    def check_not_capturing(self, stream: Stream, what: str) -> None:
        st = self.runtime.capture_status(stream)
        if st is not CaptureStatus.NONE:
            from ..errors import CaptureError

            raise CaptureError(
                f"{what} needs a host round trip or an allocation, which stream capture forbids "
                f"(stream {stream.handle:#x} is {st.name.lower()}); use a prewarmed plan "
                "(Sampler / its capture()) or call it outside capture"
            )


class Cell:
    """A mutable data address (what a ctypes ``c_int64`` cell is on GPU backends)."""

    __slots__ = ("value",)

    def __init__(self, value: int) -> None:
        self.value = value


class EmulatedBound:
    """A bound launch of an emulated backend (sim): re-pointed array arguments are rebuilt at
    their new address (``Backend.array_at``) and launched through ``Backend.launch``.

    ``cells`` holds one data address per array argument, in argument order; ``release(k)`` drops
    the Python reference to the k-th array argument (the binder does so for caller arrays, whose
    memory the caller owns); from then on that argument is always rebuilt from its cell.
    """

    def __init__(self, be: Backend, kernel, grid, block, stream: Stream, args) -> None:
        self._be = be
        self._launch = (kernel, grid, block, stream)
        self._args = list(args)
        self._arrays: list[list] = []  # [position in args, cell, address bound, array or None, layout]
        self.cells: list[Cell] = []
        for j, a in enumerate(args):
            span = None if isinstance(a, (bool, int, float, np.generic)) else be.array_span(a)
            if span is not None:
                cell = Cell(span[0])
                self.cells.append(cell)
                self._arrays.append([j, cell, span[0], a, be.array_layout(a)])

    def release(self, k: int) -> None:
        entry = self._arrays[k]
        entry[3] = None
        self._args[entry[0]] = None

    def __call__(self) -> None:
        args = self._args[:]
        for j, cell, bound, obj, layout in self._arrays:
            if obj is None or cell.value != bound:
                args[j] = self._be.array_at(cell.value, layout)
        kernel, grid, block, stream = self._launch
        self._be.launch(kernel, grid, block, stream, *args)
