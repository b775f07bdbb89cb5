"""An in-process model of devices, streams and stream capture, for ``sim`` and ``cpu``.

It follows what the driver does (SPEC §4, measured on an H200): capture status is NONE /
ACTIVE / INVALIDATED per stream; work enqueued on a capturing stream is recorded, not run; an
allocation while a capture is active in global mode on that device, or on the capturing stream's
thread, invalidates the capture (``cuMemAlloc`` returns CAPTURE_UNSUPPORTED and the capture is
lost); ending an invalidated capture raises. That lets CI test the scratch contract without a GPU.
"""

from __future__ import annotations

import itertools
import os
import threading
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .._validate import describe
from ..errors import CaptureError
from .base import Allocation, CaptureStatus, Runtime, Stream, stream_handle_of


@dataclass
class EmulatedStream:
    """A stream of the emulation; pass it wherever rocsample takes ``stream=``."""

    handle: int
    device: int
    #: GPU backends refuse these objects by this mark (their handles are not driver streams)
    _rocsample_emulated = True

    @property
    def cuda_stream(self) -> int:  # same protocol as torch.cuda.Stream
        return self.handle


@dataclass
class _Capture:
    mode: str
    thread: int
    ops: list = field(default_factory=list)
    invalidated: bool = False


@dataclass
class EmulatedGraph:
    ops: list
    device: int


@dataclass
class EmulatedGraphExec:
    ops: list
    device: int
    destroyed: bool = False


class EmulatedRuntime(Runtime):
    emulated = True

    def __init__(self, n_devices: int | None = None, alloc_array: Callable | None = None) -> None:
        super().__init__()
        if n_devices is None:
            n_devices = int(os.environ.get("ROCSAMPLE_EMULATED_DEVICES", "2"))
        self.n_devices = n_devices
        self._alloc_array = alloc_array
        self._lock = threading.RLock()  # guards every field below
        self._handles = itertools.count(0x1000, 0x10)
        self._ptrs = itertools.count(1 << 32, 1 << 24)  # fake, never-reused addresses
        self._ptr_device: dict[int, int] = {}
        self._stream_devices: dict[int, int] = {}  # handle -> device, of every stream made here
        self._captures: dict[int, _Capture] = {}  # stream handle -> capture in progress
        self._non_blocking: set[int] = set()  # handles the legacy-stream probe does not see
        self._local = threading.local()
        self._defaults = {d: EmulatedStream(0, d) for d in range(n_devices)}

    # devices -------------------------------------------------------------------------------
    def device_count(self) -> int:
        return self.n_devices

    def current_device(self) -> int:
        return getattr(self._local, "device", 0)

    def select_device(self, device: int) -> None:
        if not 0 <= device < self.n_devices:
            raise ValueError(f"device: expected 0..{self.n_devices - 1}, got {device}")
        self._local.device = device

    # streams -------------------------------------------------------------------------------
    def new_stream(self, device: int | None = None, *, non_blocking: bool = False) -> EmulatedStream:
        """A new stream; ``non_blocking`` models a stream that does not synchronise with the
        legacy default stream (torch's streams): the driver's "any global capture?" probe (a
        query of the legacy stream) does not see a capture on it."""
        dev = self.current_device() if device is None else device
        with self._lock:
            s = EmulatedStream(next(self._handles), dev)
            self._stream_devices[s.handle] = dev
            if non_blocking:
                self._non_blocking.add(s.handle)
            return s

    def stream(self, stream) -> Stream:
        if stream is None:
            return Stream(0, self.current_device(), 0, emulated=True)
        if isinstance(stream, Stream):
            return stream
        if isinstance(stream, EmulatedStream):
            return Stream(stream.handle, stream.device, 0, emulated=True)
        # SPEC §1's other forms: a raw handle, .cuda_stream (PyTorch's), __cuda_stream__, ...
        h = stream_handle_of(stream)
        if h is None:
            raise TypeError(
                "stream: expected None, 0, a stream from rocsample.get_backend().runtime.new_stream(), "
                f"its handle or an object with .cuda_stream or __cuda_stream__, got {describe(stream)}"
            )
        if h == 0:
            return Stream(0, self.current_device(), 0, emulated=True)
        with self._lock:
            dev = self._stream_devices.get(h)
        if dev is None:
            raise ValueError(
                "stream: expected a stream from rocsample.get_backend().runtime.new_stream() or its "
                f"handle, got handle {h:#x} (no such stream)"
            )
        return Stream(h, dev, 0, emulated=True)

    def synchronize(self, stream: Stream) -> None:
        return None

    # capture -------------------------------------------------------------------------------
    def _key(self, stream: Stream) -> tuple[int, int]:
        return (stream.device, stream.handle)

    def capture_status(self, stream: Stream) -> CaptureStatus:
        with self._lock:
            cap = self._captures.get(self._key(stream))
        if cap is None:
            return CaptureStatus.NONE
        return CaptureStatus.INVALIDATED if cap.invalidated else CaptureStatus.ACTIVE

    def global_capture_active(self, device: int) -> bool:
        # As the driver answers it (seen on an H200: the legacy-stream query fails): a global
        # capture on the device, or a thread-local one begun by this thread, forbids allocation.
        # A capture on a non-blocking stream (torch's) is not seen by that query (H200, torch
        # 2.11), though it forbids allocation all the same (_invalidate_for_alloc).
        me = threading.get_ident()
        with self._lock:
            return any(
                not c.invalidated and k[1] not in self._non_blocking
                and ((k[0] == device and c.mode == "global") or (c.mode == "thread_local" and c.thread == me))
                for k, c in self._captures.items()
            )

    def begin_capture(self, stream: Stream, mode: str = "thread_local") -> None:
        if mode not in ("global", "thread_local", "relaxed"):
            raise ValueError(f"mode: expected 'global', 'thread_local' or 'relaxed', got {describe(mode)}")
        if stream.handle == 0:
            raise CaptureError("stream: the default stream cannot be captured; use a new stream")
        with self._lock:
            if self._key(stream) in self._captures:
                raise CaptureError(f"stream {stream.handle:#x} is already capturing")
            self._captures[self._key(stream)] = _Capture(mode, threading.get_ident())

    def end_capture(self, stream: Stream) -> EmulatedGraph:
        with self._lock:
            cap = self._captures.pop(self._key(stream), None)
        if cap is None:
            raise CaptureError(f"stream {stream.handle:#x} is not capturing")
        if cap.invalidated:
            raise CaptureError("capture was invalidated (CAPTURE_INVALIDATED)")
        return EmulatedGraph(cap.ops, stream.device)

    def instantiate(self, graph: EmulatedGraph) -> EmulatedGraphExec:
        return EmulatedGraphExec(list(graph.ops), graph.device)

    def graph_launch(self, exec_: EmulatedGraphExec, stream: Stream) -> None:
        if exec_.destroyed:
            raise CaptureError("graph: launched after release")
        for op in exec_.ops:
            self.enqueue(stream, op)

    # cuGraphDestroy / cuGraphExecDestroy are "unsafe" calls under a global or this thread's
    # capture, like cuMemFree: the driver refuses them and invalidates that capture (seen on an
    # H200: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, then CAPTURE_INVALIDATED at the end)
    def graph_destroy(self, graph) -> None:
        self._invalidate_for_alloc(graph.device)
        graph.ops = []

    def graph_exec_destroy(self, exec_) -> None:
        self._invalidate_for_alloc(exec_.device)
        exec_.destroyed = True
        exec_.ops = []

    def _invalidate_for_alloc(self, device: int) -> bool:
        """Model cuMemAlloc's rule (on any ``device``); return True if the allocation is refused."""
        me = threading.get_ident()
        hit = False
        with self._lock:
            for (_dev, _), cap in self._captures.items():
                if cap.invalidated:
                    continue
                # CUDA's rule is process-wide, whatever the device: any global capture, or one
                # of this thread's own (not relaxed), forbids the "unsafe" call
                if cap.mode == "global" or (cap.mode == "thread_local" and cap.thread == me):
                    cap.invalidated = True
                    hit = True
        return hit

    # memory --------------------------------------------------------------------------------
    def mem_alloc(self, nbytes: int, device: int) -> Allocation:
        self._count("alloc_calls")
        if self._invalidate_for_alloc(device):
            raise CaptureError(
                "allocation during stream capture (CAPTURE_UNSUPPORTED); the capture is invalidated"
            )
        arr = self._alloc_array(nbytes) if self._alloc_array else np.empty(nbytes, np.uint8)
        with self._lock:
            ptr = next(self._ptrs)
            self._ptr_device[ptr] = device
        return Allocation(ptr, nbytes, device, arr)

    def mem_free(self, alloc: Allocation) -> None:
        self._count("free_calls")
        if alloc.freed:
            raise RuntimeError(f"double free of {alloc.ptr:#x}")
        self._invalidate_for_alloc(alloc.device)  # cuMemFree is forbidden in capture too
        with self._lock:
            self._ptr_device.pop(alloc.ptr, None)
        alloc.freed = True
        alloc.array = None

    def pointer_device(self, ptr: int) -> int:
        with self._lock:
            return self._ptr_device[ptr]

    # events: emulated work completes when enqueued, so an event is done once recorded ------
    # -- except one recorded on a capturing stream: the driver's cuEventQuery answers
    # CUDA_ERROR_CAPTURED_EVENT for it, never success, so it never reads as done.
    def event_record(self, stream: Stream):
        return {"stream": stream.handle, "done": self.capture_status(stream) is CaptureStatus.NONE}

    def event_query(self, event) -> bool:
        return bool(event["done"])

    def event_destroy(self, event) -> None:
        return None

    # work ----------------------------------------------------------------------------------
    def enqueue(self, stream: Stream, fn: Callable[[], None]) -> None:
        with self._lock:
            cap = self._captures.get(self._key(stream))
        if cap is not None:
            if not cap.invalidated:
                cap.ops.append(fn)
            return
        # device arithmetic overflows to inf and makes NaN silently: the emulated work (the cpu
        # backend's reference calls) must not warn where a GPU would not
        with np.errstate(all="ignore"):
            fn()
