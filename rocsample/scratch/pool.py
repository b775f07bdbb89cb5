"""Scratch ownership: buffers keyed by (device, stream, purpose), safe under capture.

The defect class this prevents (issue #5): partial buffers and their capacity kept in
process-wide statics, so two streams overwrote each other's partials between the two sampling
kernels, a second device reused the first device's pointer, host updates raced, and a graph
captured on first use kept scratch that a graph node had allocated.

Rules
-----
- A buffer belongs to exactly one (device, stream handle, purpose) entry, or to one graph.
- During capture (the stream is capturing, or a global-mode capture is active on the device) a
  request larger than the entry's capacity raises ScratchNotWarmed *before* any allocation and
  before anything is published. A capture found invalidated raises CaptureError.
- A buffer served during a capture is pinned to it. When a capture made by
  ``rocsample.graphs.capture`` ends, its buffers leave the stream's entry and belong to the graph
  alone (the stream is given a fresh buffer of the same size right away), so replays never alias
  uncaptured work on any stream. A buffer pinned by a capture rocsample did not start (say,
  torch.cuda.graph) is never freed: rocsample cannot see when that graph dies.
- Buffers displaced by growth or trim, and those of released graphs, are freed only after an
  event recorded on their last stream has completed (no host-wide synchronize).
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field

import numpy as np

from .._validate import describe
from ..backends import CaptureStatus, Stream, get_backend, interop
from ..errors import CaptureError, ScratchNotWarmed

_ALIGN = 256  # bytes; every capacity is a multiple, so typed views of any dtype stay aligned


def _round_up(n: int) -> int:
    return max(_ALIGN, (int(n) + _ALIGN - 1) // _ALIGN * _ALIGN)


def _size(name: str, n) -> int:
    """A byte count: a non-negative Python or NumPy integer (bool, float and str are refused)."""
    if type(n) is not int and (isinstance(n, bool) or not isinstance(n, (int, np.integer))):
        raise TypeError(f"{name}: expected a non-negative integer, got {describe(n)}")
    if n < 0:
        raise ValueError(f"{name}: expected a non-negative integer, got {n}")
    return int(n)


@dataclass
class _AfterCapture:
    """An event still to be recorded on ``stream``, which was capturing when the buffer retired.

    An event recorded on a capturing stream joins the capture, and the driver never completes it
    for the host (cuEventQuery: CUDA_ERROR_CAPTURED_EVENT): recorded then, the buffer would never
    be freed. Work enqueued before the capture began is ordered before an event recorded after it.
    """

    stream: object


@dataclass
class _Entry:
    alloc: object = None  # backends.base.Allocation or None


@dataclass
class _CaptureRecord:
    """What one capture pinned; owned by a graphs.Graph once the capture ends."""

    device: int
    stream: int
    allocs: list = field(default_factory=list)
    keys: set = field(default_factory=set)
    external: bool = False
    mode: str = "thread_local"
    thread: int = 0


class ScratchPool:
    """Per-process scratch pool; one lock per device.

    Locking: ``_dev_locks_guard`` guards ``_dev_locks``. Each device's lock guards every entry
    of that device in ``_entries``, the records of that device in ``_captures``, and that
    device's items in ``_retired``. ``_graph_records`` (graph-owned records) is guarded by the
    lock of the record's device. ``_retired_lock`` guards the ``_retired`` list itself (shared by
    every device; taken after a device lock, never before). No lock is held while calling user code.
    """

    def __init__(self, backend=None) -> None:
        self._backend = backend
        self._dev_locks_guard = threading.Lock()
        self._dev_locks: dict[int, threading.RLock] = {}
        self._entries: dict[tuple[int, int, str], _Entry] = {}
        self._captures: dict[tuple[int, int], _CaptureRecord] = {}
        self._graph_records: dict[int, _CaptureRecord] = {}
        self._retired: list[tuple[object, object]] = []  # (allocation, event)
        self._retired_lock = threading.Lock()
        # work queued by finalizers (a forgotten Graph's release): the garbage collector may run
        # them inside a pool call that holds these locks, so they run at the start of the next
        # public call instead, outside every lock (_run_deferred)
        self._deferred: list = []
        self._pins: dict[int, int] = {}  # allocation ptr -> number of capture records holding it
        self._numba_held: dict[int, contextlib.ExitStack] = {}  # device -> numba frees deferred

    # ---- helpers ------------------------------------------------------------------------------
    @property
    def backend(self):
        return self._backend if self._backend is not None else get_backend()

    def _lock(self, device: int) -> threading.RLock:
        lk = self._dev_locks.get(device)  # made once per device, never replaced
        if lk is not None:
            return lk
        with self._dev_locks_guard:
            lk = self._dev_locks.get(device)
            if lk is None:
                lk = self._dev_locks[device] = threading.RLock()
            return lk

    def _stream_capturing(self, rt, st) -> bool:
        status = rt.capture_status(st)
        if status is CaptureStatus.INVALIDATED:
            raise CaptureError(
                f"stream {st.handle:#x} on device {st.device}: its capture was invalidated; end it "
                "(rocsample.graphs.capture does) and capture again"
            )
        return status is CaptureStatus.ACTIVE

    def _allocation_blocker(self, rt, device: int) -> str | None:
        """What an allocation (or free) on ``device`` from this thread would invalidate, or None."""
        rec = self._thread_capture()
        if rec is not None:
            return f"the {rec.mode} capture of stream {rec.stream:#x} on this thread"
        # the driver forbids the call under a global capture, or one of this thread's, on ANY
        # device: every device rocsample knows a stream of is asked, this one first
        for d in [device] + sorted(self._known_devices() - {device}):
            if rt.global_capture_active(d):
                return f"a capture in progress on device {d} (global mode, or this thread's)"
            blocker = self._foreign_capture(rt, d)
            if blocker is not None:
                return blocker
        return None

    def _known_devices(self) -> set[int]:
        return {k[0] for k in list(self._entries)} | interop.known_devices()

    def _foreign_capture(self, rt, device: int) -> str | None:
        """A capture rocsample did not begin, active on ``device``, or None.

        The driver's "any capture?" probe (the legacy stream) misses captures on non-blocking
        streams (torch's), so every stream rocsample can know of is asked: those with scratch
        here, the framework streams calls ran on, and torch's and CuPy's current streams. Any
        mode counts (the driver does not tell it). Captures on streams none of these name stay
        unseen (docs/SEMANTICS.md).
        """
        own = {h for (d, h), rec in list(self._captures.items()) if d == device and not rec.external}
        handles = interop.known_streams(device)
        if rt.emulated:
            # the emulation answers for any handle; a driver stream rocsample once saw may have
            # been destroyed since, and asking a destroyed stream is undefined behaviour
            handles.update(k[1] for k in list(self._entries) if k[0] == device)
        for h in handles:
            if not h or h in own:
                continue
            try:
                status = rt.capture_status(Stream(h, device, 0))
            except Exception:  # a stream gone since: it captures nothing
                continue
            if status is not CaptureStatus.NONE:
                return f"the capture of stream {h:#x} on device {device} (not begun by rocsample)"
        return None

    def allocation_blocker(self, stream) -> str | None:
        """What allocating device memory for a call on ``stream`` now would invalidate, or None:
        the stream's own capture, rocsample's captures on this thread, a global capture, or a
        foreign capture on a stream rocsample knows of. Asked before any allocation outside the
        pool (host-array copies, outputs), so a refused call touches no driver allocator."""
        be = self.backend
        rt = be.runtime
        st = be.stream(stream)
        try:
            status = rt.capture_status(st)
        except Exception as e:  # the legacy stream's query fails while a global capture is open
            return f"a capture in progress on device {st.device} (stream status: {e})"
        if status is not CaptureStatus.NONE:
            return f"the capture of stream {st.handle:#x} on device {st.device}"
        return self._allocation_blocker(rt, st.device)

    def note_call(self, stream) -> None:
        """A launcher's call on ``stream`` that requested no scratch (set_rows' one-launch
        path): what ``request`` does besides returning a buffer. The queued work first (graph
        releases, deferred frees), then numba's frees (held while a foreign capture is seen on
        the stream, let go at the first call after it that sees none) and, outside a capture,
        the retired buffers whose streams are done with them. One status query. (Without the
        queued work and the retired buffers, ``unchanged`` kept answering False for a launcher
        that never requests: its repeated calls stayed on this path for good.)"""
        if self._deferred:
            self._run_deferred()
        be = self.backend
        rt = be.runtime
        st = be.stream(stream)
        if rt.capture_status(st) is CaptureStatus.ACTIVE:
            rec = self._captures.get((st.device, st.handle))
            if rec is None or rec.external:
                with self._lock(st.device):
                    self._hold_numba_frees(st.device)
            return
        with self._lock(st.device):
            if self._numba_held and st.device in self._numba_held:
                self._release_numba_frees(rt, st.device)
            self._collect()

    # numba frees a dropped device array of its own through a per-context queue, flushed
    # (cuMemFree) whenever it fills, which would invalidate an open capture. While a capture
    # rocsample did not begin is seen on a device, that queue stays disabled
    # (numba.cuda.defer_cleanup); the first request after it that sees no capture there enables it.
    def _hold_numba_frees(self, device: int) -> None:
        be = self.backend
        if device in self._numba_held or be.cuda is None or not hasattr(be.cuda, "defer_cleanup"):
            return
        stack = contextlib.ExitStack()
        if be.runtime.current_device() == device:  # (no context switch inside the capture)
            stack.enter_context(be.cuda.defer_cleanup())
        else:
            with be.on_device(device):
                stack.enter_context(be.cuda.defer_cleanup())
        self._numba_held[device] = stack

    def _release_numba_frees(self, rt, device: int) -> None:
        if self._allocation_blocker(rt, device) is None:
            stack = self._numba_held.pop(device, None)
            if stack is not None:
                stack.close()

    # ---- the public operations ---------------------------------------------------------------
    def request(self, stream, nbytes: int, purpose: str = "default"):
        """A uint8 device array of at least ``nbytes`` owned by (device, stream, purpose).

        Raises
        ------
        ScratchNotWarmed
            If the stream is capturing and more than the warmed capacity is asked for.
        CaptureError
            If the stream's capture was invalidated.
        """
        if self._deferred:
            self._run_deferred()
        if type(nbytes) is not int or nbytes < 1:
            nbytes = max(_size("nbytes", nbytes), 1)  # 0 bytes still gets a buffer: the entry may not exist yet
        be = self.backend
        rt = be.runtime
        st = be.stream(stream)
        key = (st.device, st.handle, purpose)
        with self._lock(st.device):
            # First, before anything else: may this request allocate at all?
            stream_capturing = self._stream_capturing(rt, st)
            if stream_capturing:
                rec = self._captures.get((st.device, st.handle))
                if rec is None or rec.external:  # a foreign capture (rocsample's own defers)
                    self._hold_numba_frees(st.device)
            elif self._numba_held and st.device in self._numba_held:
                self._release_numba_frees(rt, st.device)
            entry = self._entries.get(key)
            have = entry.alloc.nbytes if entry is not None and entry.alloc is not None else 0
            if nbytes <= have:
                if stream_capturing:
                    self._pin(st, key, entry.alloc)
                else:
                    self._collect()
                return entry.alloc.array
            if stream_capturing:
                raise ScratchNotWarmed(
                    f"stream {st.handle:#x} on device {st.device} is capturing and '{purpose}' "
                    f"scratch needs {int(nbytes)} bytes, but {have} bytes are warmed; call "
                    "rocsample.scratch.prewarm(stream, ...) (or Sampler.prewarm) before capture"
                )
            blocker = self._allocation_blocker(rt, st.device)
            if blocker is not None:
                raise ScratchNotWarmed(
                    f"stream {st.handle:#x} on device {st.device}: '{purpose}' scratch needs "
                    f"{int(nbytes)} bytes, but {have} bytes are warmed, and allocating now would "
                    f"invalidate {blocker}; prewarm every stream used while a capture is open"
                )
            self._collect()
            new = rt.mem_alloc(_round_up(nbytes), st.device)
            if entry is None:
                entry = self._entries[key] = _Entry()
            old, entry.alloc = entry.alloc, new
            if old is not None:
                self._retire(old, st)
            return new.array

    def lease(self, stream, purpose: str, buf) -> tuple | None:
        """What :meth:`unchanged` checks for ``buf``, the buffer a request of (stream, purpose)
        just returned: ``(entry key, allocation)``, or None if ``buf`` is not that entry's
        buffer any more."""
        st = self.backend.stream(stream)
        key = (st.device, st.handle, purpose)
        with self._lock(st.device):
            e = self._entries.get(key)
            if e is None or e.alloc is None or e.alloc.array is not buf:
                return None
            return key, e.alloc

    def unchanged(self, leases) -> bool:
        """Whether, for a call on a stream known not to be capturing, a request of each leased
        buffer would return it and do nothing else: nothing queued (deferred releases, retired
        buffers to free, numba frees held for a foreign capture) and every entry still holding
        its leased allocation. No lock: one read of each table (a concurrent change makes it
        answer False, or True for the state just before it, as a request racing it would)."""
        if self._deferred or self._retired or self._numba_held:
            return False
        entries = self._entries
        for key, alloc in leases:
            e = entries.get(key)
            if e is None or e.alloc is not alloc:
                return False
        return True

    def prewarm(self, stream, sizes) -> None:
        """Size a stream's scratch ahead of capture.

        ``sizes`` is a byte count (purpose ``"default"``) or a mapping ``{purpose: nbytes}``.
        """
        self._run_deferred()
        if isinstance(sizes, dict):
            items = [(p, _size(f"sizes[{p!r}]", n)) for p, n in sizes.items()]
        elif type(sizes) is int or (isinstance(sizes, np.integer) and not isinstance(sizes, bool)):
            items = [("default", _size("sizes", sizes))]
        else:
            raise TypeError(f"sizes: expected a byte count or a mapping {{purpose: bytes}}, got {describe(sizes)}")
        for purpose, n in items:  # every size checked first: a refused call allocates nothing
            self.request(stream, n, purpose)

    def capacity(self, stream, purpose: str = "default") -> int:
        be = self.backend
        st = be.stream(stream)
        with self._lock(st.device):
            e = self._entries.get((st.device, st.handle, purpose))
            return e.alloc.nbytes if e is not None and e.alloc is not None else 0

    def trim(self, stream=None, device: int | None = None) -> int:
        """Give back the buffers of one stream (or every stream of a device, or all).

        Buffers pinned by a live graph stay with the graph. Returns the bytes retired.
        """
        self._run_deferred()
        be = self.backend
        st = be.stream(stream) if stream is not None else None
        devices = [st.device] if st is not None else (
            [device] if device is not None else sorted({k[0] for k in list(self._entries)})
        )
        total = 0
        for dev in devices:
            with self._lock(dev):
                if self._allocation_blocker(be.runtime, dev) is not None:
                    continue  # a free now would invalidate someone's capture
                # a snapshot: other devices' threads add entries meanwhile, under their own locks
                for key in [k for k in list(self._entries) if k[0] == dev]:
                    if st is not None and key[1] != st.handle:
                        continue
                    if be.runtime.capture_status(Stream(key[1], dev, 0)) is not CaptureStatus.NONE:
                        continue
                    e = self._entries.pop(key)
                    if e.alloc is not None:
                        total += e.alloc.nbytes
                        self._retire(e.alloc, Stream(key[1], dev, 0))
                self._collect()
        return total

    def stats(self) -> dict:
        """Bytes per (device, stream), pinned buffers, live graphs, pending frees, runtime counts."""
        self._run_deferred()
        # No lock: every table is read through a snapshot taken in one step, and an entry's
        # buffer is read once (a capture ending on another thread may empty it meanwhile).
        by_stream: dict[tuple[int, int], int] = {}
        for (dev, h, _), e in list(self._entries.items()):
            a = e.alloc
            if a is not None:
                by_stream[(dev, h)] = by_stream.get((dev, h), 0) + a.nbytes
        rt = self.backend.runtime
        return {
            "bytes_by_stream": by_stream,
            "pinned_buffers": sum(1 for v in list(self._pins.values()) if v > 0),
            "live_graphs": len(self._graph_records),
            "active_captures": len(self._captures),
            "pending_frees": len(self._retired),
            "alloc_calls": rt.alloc_calls,
            "free_calls": rt.free_calls,
        }

    def __repr__(self) -> str:
        s = self.stats()
        streams = ", ".join(f"dev{d}/stream{h:#x}: {b} B" for (d, h), b in sorted(s["bytes_by_stream"].items()))
        return (
            f"<ScratchPool {streams or 'empty'}; pinned={s['pinned_buffers']} "
            f"graphs={s['live_graphs']} pending_frees={s['pending_frees']}>"
        )

    def buffers(self, stream) -> dict[str, int]:
        """{purpose: device pointer} of a stream's current buffers (for tests and debugging)."""
        st = self.backend.stream(stream)
        with self._lock(st.device):
            return {
                k[2]: e.alloc.ptr
                for k, e in list(self._entries.items())
                if k[0] == st.device and k[1] == st.handle and e.alloc is not None
            }

    # ---- capture bookkeeping (called by rocsample.graphs) ------------------------------------
    def _pin(self, st, key, alloc) -> None:
        ck = (st.device, st.handle)
        rec = self._captures.get(ck)
        if rec is None:  # a capture rocsample did not start: pinned for good
            rec = self._captures[ck] = _CaptureRecord(st.device, st.handle, external=True)
        if all(a is not alloc for a in rec.allocs):
            rec.allocs.append(alloc)
            rec.keys.add(key)
            self._pins[alloc.ptr] = self._pins.get(alloc.ptr, 0) + 1

    def _begin_capture(self, st, mode: str = "thread_local") -> bool:
        """Register a capture rocsample is about to begin on ``st``; False (and nothing changed)
        when rocsample already captures that stream (the driver refuses the nested begin)."""
        with self._lock(st.device):
            old = self._captures.get((st.device, st.handle))
            if old is not None and not old.external:
                return False
            self._captures[(st.device, st.handle)] = _CaptureRecord(
                st.device, st.handle, mode=mode, thread=threading.get_ident()
            )
            return True

    def _thread_capture(self):
        """A capture begun by rocsample that an allocation from this thread would invalidate.

        cuMemAlloc is refused, and the capture lost, while the calling thread has a thread-local
        capture open or any global capture is open; the driver offers no query for the first.
        """
        me = threading.get_ident()
        for rec in list(self._captures.values()):
            if rec.external:
                continue
            if (rec.mode == "thread_local" and rec.thread == me) or rec.mode == "global":
                return rec
        return None

    def _end_capture(self, st, graph_id: int | None) -> None:
        """Hand the capture's buffers to the graph (or unpin them if the capture failed)."""
        be = self.backend
        with self._lock(st.device):
            rec = self._captures.pop((st.device, st.handle), None)
            if rec is None:
                return
            if graph_id is None:
                for a in rec.allocs:
                    self._pins[a.ptr] -= 1
                return
            self._graph_records[graph_id] = rec
            for key in rec.keys:
                e = self._entries.get(key)
                if e is not None and any(e.alloc is a for a in rec.allocs):
                    n = e.alloc.nbytes
                    e.alloc = None
                    if self._allocation_blocker(be.runtime, st.device) is None:
                        e.alloc = be.runtime.mem_alloc(n, st.device)  # re-warm the stream

    def _release_graph(self, graph_id: int, last_stream) -> None:
        rec = self._graph_records.get(graph_id)
        if rec is None:
            return
        with self._lock(rec.device):
            if self._graph_records.pop(graph_id, None) is None:
                return  # another thread released it first
            for a in rec.allocs:
                self._pins[a.ptr] -= 1
                if self._pins[a.ptr] == 0 and not self._is_current(a):
                    # one event per buffer: _collect destroys each item's event once
                    ev = self._release_event(last_stream) if last_stream is not None else None
                    with self._retired_lock:
                        self._retired.append((a, ev))
            self._collect()

    def _is_current(self, alloc) -> bool:
        return any(e.alloc is alloc for e in list(self._entries.values()))

    def _release_event(self, st):
        """An event after the work enqueued so far on ``st``, or a note to record it later."""
        rt = self.backend.runtime
        if rt.capture_status(st) is not CaptureStatus.NONE:
            return _AfterCapture(st)
        return rt.event_record(st)

    def _retire(self, alloc, st) -> None:
        if self._pins.get(alloc.ptr, 0) > 0:
            return  # the graph holding it frees it on release
        ev = self._release_event(st)
        with self._retired_lock:
            self._retired.append((alloc, ev))

    def _defer(self, fn) -> None:
        """Run ``fn()`` at the start of the next public call (safe from a finalizer: no lock)."""
        self._deferred.append(fn)  # atomic under the GIL

    def _release_blocked(self, device: int) -> bool:
        """Whether destroying a graph on ``device`` now would invalidate an open capture."""
        return self._allocation_blocker(self.backend.runtime, device) is not None

    def _run_deferred(self) -> None:
        # what is queued now, once: a release that a capture still blocks queues itself again
        for _ in range(len(self._deferred)):
            try:
                fn = self._deferred.pop(0)
            except IndexError:  # another thread took the last one
                return
            fn()

    def _collect(self) -> None:
        if not self._retired:  # the common case, read without the lock: nothing to free
            return
        rt = self.backend.runtime
        if self._thread_capture() is not None:
            return  # cuMemFree would invalidate this thread's capture; free later
        blocked: dict = {}  # device -> whether a capture forbids a free there now

        def blocked_on(device):
            if device not in blocked:
                blocked[device] = self._allocation_blocker(rt, device) is not None
            return blocked[device]

        with self._retired_lock:  # one list for all devices: two devices' threads must not both free
            keep = []
            for alloc, ev in self._retired:
                if self._pins.get(alloc.ptr, 0) > 0:
                    keep.append((alloc, ev))
                    continue
                if isinstance(ev, _AfterCapture):
                    ev = self._release_event(ev.stream)  # still a note while the stream captures
                    if isinstance(ev, _AfterCapture):
                        keep.append((alloc, ev))
                        continue
                done = ev is None or rt.event_query(ev)
                if done and not blocked_on(alloc.device):
                    if ev is not None:
                        rt.event_destroy(ev)
                    self._pins.pop(alloc.ptr, None)
                    rt.mem_free(alloc)
                else:
                    keep.append((alloc, ev))
            self._retired = keep

    def check_invariants(self) -> None:
        """Raise RuntimeError if the pool's invariants are broken (used by the tests)."""
        with contextlib.ExitStack() as stack:
            for dev in sorted(self._dev_locks):
                stack.enter_context(self._lock(dev))
            self._check_invariants_locked()

    def _check_invariants_locked(self) -> None:
        seen: dict[int, tuple] = {}
        for key, e in self._entries.items():
            if e.alloc is None:
                continue
            if e.alloc.freed:
                raise RuntimeError(f"entry {key} holds a freed buffer")
            if e.alloc.device != key[0]:
                raise RuntimeError(f"entry {key} holds a buffer of device {e.alloc.device}")
            if e.alloc.ptr in seen:
                raise RuntimeError(f"buffer {e.alloc.ptr:#x} shared by {seen[e.alloc.ptr]} and {key}")
            seen[e.alloc.ptr] = key
        for rec in list(self._graph_records.values()) + list(self._captures.values()):
            for a in rec.allocs:
                if a.freed:
                    raise RuntimeError(f"graph-held buffer {a.ptr:#x} was freed")
        for ptr, n in self._pins.items():
            if n < 0:
                raise RuntimeError(f"negative pin count for {ptr:#x}")
