"""The GPU runtime, written once against the ``cuda.bindings.driver`` names.

On NVIDIA those names come from cuda-bindings; on AMD from hip-python-interop, which serves the
same names on top of HIP. The few calls whose signatures differ are methods of the vendor object
(``cuda.Vendor`` / ``hip.Vendor``); nothing else here knows which vendor it runs on.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading

from .._validate import describe
from ..errors import CaptureError
from .base import Allocation, CaptureStatus, Runtime, Stream, stream_handle_of

_MODES = ("global", "thread_local", "relaxed")
_STATUS = (CaptureStatus.NONE, CaptureStatus.ACTIVE, CaptureStatus.INVALIDATED)


class DriverError(RuntimeError):
    pass


class DriverRuntime(Runtime):
    def __init__(self, vendor) -> None:
        super().__init__()
        self.vendor = vendor
        self.drv = vendor.driver
        self.cuda = vendor.cuda
        self._lock = threading.Lock()  # guards _ext_streams
        self._ext_streams: dict[int, object] = {}
        self._stream_devices: dict[int, int] = {}
        self._primary: dict[int, object] = {}
        self._q = False  # the vendor's ctypes stream queries, loaded on first use

    # helpers ---------------------------------------------------------------------------------
    def call(self, name: str, *args):
        res = getattr(self.drv, name)(*args)
        if not isinstance(res, tuple):
            res = (res,)
        err = res[0]
        if int(err) != 0:
            raise DriverError(f"{name} failed: {err!r}")
        return res[1] if len(res) == 2 else res[1:]

    @contextlib.contextmanager
    def _context(self, device: int):
        """numba's context for ``device``, and the driver's primary context pushed explicitly:
        raw driver calls (cuMemAlloc, cuEventCreate) must land on ``device`` whatever numba's
        own bookkeeping does."""
        with self.cuda.gpus[device]:
            self.call("cuCtxPushCurrent", self.primary_context(device))
            try:
                yield
            finally:
                self.call("cuCtxPopCurrent")

    def primary_context(self, device: int):
        """The device's primary context (the one numba uses), retained once per process."""
        with self._lock:
            ctx = self._primary.get(device)
        if ctx is None:
            ctx = self.call("cuDevicePrimaryCtxRetain", device)
            with self._lock:
                ctx = self._primary.setdefault(device, ctx)
        return ctx

    # devices ---------------------------------------------------------------------------------
    def device_count(self) -> int:
        return len(self.cuda.gpus)

    def current_device(self) -> int:
        return int(self.cuda.get_current_device().id)

    # streams ---------------------------------------------------------------------------------
    def new_stream(self, device: int | None = None):
        if device is None:
            return self.cuda.stream()
        with self._context(device):
            return self.cuda.stream()

    def _external(self, handle: int):
        with self._lock:
            s = self._ext_streams.get(handle)
            if s is None:
                s = self.cuda.external_stream(handle)
                self._ext_streams[handle] = s
            return s

    def stream(self, stream) -> Stream:
        if isinstance(stream, Stream):
            if stream.emulated:
                _foreign_stream(stream)
            return stream
        if getattr(type(stream), "_rocsample_emulated", False):
            _foreign_stream(stream)
        dev = self.current_device()
        if stream is None or (isinstance(stream, int) and stream == 0):
            return Stream(0, dev, 0)
        # A stream's device is asked of the driver, never assumed to be the current one: a
        # stream of device 1 used while device 0 is current must get device 1's scratch.
        if hasattr(stream, "handle") and hasattr(stream, "synchronize") \
                and not isinstance(stream, int):  # a numba stream
            h = self.vendor.stream_handle(stream)
            return Stream(h, self._stream_device(h, dev), stream)
        h = stream_handle_of(stream)  # raw handles, torch, CuPy, __cuda_stream__, CUstream
        if h is None:
            raise TypeError(
                "stream: expected None, an int handle, a numba stream (e.g. from "
                "rocsample.get_backend().runtime.new_stream()), a torch or CuPy stream, "
                f"or an object with __cuda_stream__ or .cuda_stream, got {type(stream).__name__}"
            )
        if h == 0:
            return Stream(0, dev, 0)
        return Stream(h, self._stream_device(h, dev), self._external(h))

    def _queries(self):
        q = self._q
        if q is False:
            calls = getattr(self.vendor, "query_calls", None)  # (test vendors may have none)
            q = self._q = calls() if calls is not None else None
        return q

    def _is_capturing(self, handle: int) -> tuple[int, int]:
        """(driver error code, capture status) of a stream handle."""
        q = self._queries()
        if q is not None:
            out = ctypes.c_int(0)
            err = q[0](handle or None, ctypes.byref(out))
            return int(err), int(out.value)
        res = self.drv.cuStreamIsCapturing(handle)
        if not isinstance(res, tuple):
            return int(res), 0
        return int(res[0]), int(res[1])

    def capture_probe(self, stream: Stream):
        """As Runtime.capture_probe, by the vendor's ctypes query with this probe's own argument
        objects (a handle and a result cell made once): a fraction of a microsecond. Its callers
        hold the stream's lock, so no two threads share the cell (the call releases the GIL)."""
        q = self._queries()
        raw = getattr(self.vendor, "unconverted", None)
        if q is None or raw is None:
            return super().capture_probe(stream)
        f = raw(q[0])
        out = ctypes.c_int(0)
        ref = ctypes.byref(out)
        h = ctypes.c_void_p(stream.handle or None)

        def probe() -> bool:
            return f(h, ref) == 0 and out.value == 0

        # the query's address and the handle as integers: rocsample._fastcall makes the same
        # query itself (with a result cell of its own)
        probe.native = (ctypes.cast(f, ctypes.c_void_p).value, h.value or 0)
        return probe

    def _stream_device(self, handle: int, current: int) -> int:
        if handle == 0:
            return current  # the legacy default stream is per-context: the current device's
        # Asked every time outside capture (a fraction of a microsecond; a freed handle can come
        # back on another device); inside a capture the last answer for this handle stands.
        # The query itself is refused inside a capture *and invalidates it*, so capture status
        # (a query capture allows) is asked first.
        err, status = self._is_capturing(handle)
        if err != 0 or status != 0 or self.global_capture_active(current):
            with self._lock:
                return self._stream_devices.get(handle, current)
        q = self._queries()
        if q is not None:
            out = ctypes.c_int(-1)
            e = q[1](handle, ctypes.byref(out))
            if e != 0:
                raise DriverError(f"{self.vendor.queries[1]} failed: error {e}")
            d = int(out.value)
        else:
            d = int(self.vendor.stream_device(self, handle))
        with self._lock:
            self._stream_devices[handle] = d
        return d

    def synchronize(self, stream: Stream) -> None:
        if stream.handle == 0:
            self.cuda.synchronize()
        else:
            self.call("cuStreamSynchronize", stream.handle)

    # capture ---------------------------------------------------------------------------------
    def capture_status(self, stream: Stream) -> CaptureStatus:
        err, st = self._is_capturing(stream.handle)
        if err != 0:
            raise DriverError(f"cuStreamIsCapturing failed: error {err}")
        return _STATUS[st]

    def global_capture_active(self, device: int) -> bool:
        # A legacy-default-stream query fails with STREAM_CAPTURE_IMPLICIT while a capture is
        # open on a blocking stream of the device, in any mode (an H200 showed it for a relaxed
        # one): the driver's own way of telling, which cannot tell the mode, so rocsample then
        # allocates nothing (SPEC §4: no allocation during any capture). (Captures on
        # non-blocking streams, torch's among them, are found by asking their streams.)
        if device != self.current_device():  # the legacy stream of that device's context
            with self._context(device):
                return self._is_capturing(0)[0] != 0
        return self._is_capturing(0)[0] != 0

    def begin_capture(self, stream: Stream, mode: str = "thread_local") -> None:
        if mode not in _MODES:
            raise ValueError(f"mode: expected one of {_MODES}, got {describe(mode)}")
        if stream.handle == 0:
            raise CaptureError("stream: the default stream cannot be captured; use a new stream")
        m = getattr(self.drv.CUstreamCaptureMode, f"CU_STREAM_CAPTURE_MODE_{mode.upper()}")
        self.call("cuStreamBeginCapture", stream.handle, m)

    def end_capture(self, stream: Stream):
        res = self.drv.cuStreamEndCapture(stream.handle)
        err, graph = res[0], res[1]
        if int(err) != 0:
            raise CaptureError(f"cuStreamEndCapture failed: {err!r}")
        return graph

    def instantiate(self, graph):
        return self.vendor.graph_instantiate(self, graph)

    def graph_launch(self, exec_, stream: Stream) -> None:
        native = self.vendor.native_calls()
        if native is not None:
            err = native[1](int(exec_), int(stream.handle) or None)
            if err != 0:
                raise DriverError(f"{self.vendor.native[2]} failed: error {err}")
            return
        self.call("cuGraphLaunch", exec_, stream.handle)

    def graph_destroy(self, graph) -> None:
        self.call("cuGraphDestroy", graph)

    def graph_exec_destroy(self, exec_) -> None:
        self.call("cuGraphExecDestroy", exec_)

    # memory ----------------------------------------------------------------------------------
    def mem_alloc(self, nbytes: int, device: int) -> Allocation:
        self._count("alloc_calls")
        with self._context(device):
            ptr = int(self.call("cuMemAlloc", max(int(nbytes), 1)))
            holder = _Owner(self, ptr)
            desc = {"shape": (int(nbytes),), "typestr": "|u1", "data": (ptr, False), "version": 3,
                    "strides": None}
            arr = self.cuda.from_cuda_array_interface(desc, owner=holder, sync=False)
        return Allocation(ptr, int(nbytes), device, arr)

    def mem_free(self, alloc: Allocation) -> None:
        self._count("free_calls")
        if alloc.freed:
            raise RuntimeError(f"double free of {alloc.ptr:#x}")
        with self._context(alloc.device):
            self.call("cuMemFree", alloc.ptr)
        alloc.freed = True
        alloc.array = None

    def pointer_device(self, ptr: int) -> int:
        return self.vendor.pointer_device(self, ptr)

    # events ----------------------------------------------------------------------------------
    def event_record(self, stream: Stream):
        with self._context(stream.device):
            ev = self.call("cuEventCreate", 2)  # CU_EVENT_DISABLE_TIMING
            self.call("cuEventRecord", ev, stream.handle)
        return ev

    def event_query(self, event) -> bool:
        res = self.drv.cuEventQuery(event)
        err = int(res[0] if isinstance(res, tuple) else res)
        return err == 0

    def event_destroy(self, event) -> None:
        self.call("cuEventDestroy", event)


def _foreign_stream(stream):
    """Refuse a stream of the emulated runtime (cpu / sim) before its handle reaches the driver."""
    raise TypeError(
        f"stream: expected a stream of this GPU backend, got an emulated {type(stream).__name__} "
        f"(handle {int(stream.handle):#x}) of the cpu/sim runtime, which is no driver stream"
    )


class _Owner:
    """Keeps a raw allocation's address alive for numba; the pool frees it explicitly."""

    def __init__(self, rt: DriverRuntime, ptr: int) -> None:
        self.rt = rt
        self.ptr = ptr
