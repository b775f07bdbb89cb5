"""The scratch pool's contract (SPEC §4), asserted exactly (and written to kill mutants: docs/MUTATION.md).

Every test here runs on its own emulated runtime with two devices, whose events complete only when
the test says so and which logs events, launches and destroys. Allocation and free counts,
pointers, event ordering and error messages are therefore exact, and the tests do not depend on
``--backend`` (the pool's logic is the same on every backend; tests/scratch/test_pool.py runs the
device work).
"""

from __future__ import annotations

import contextlib
import re
import threading
import time

import pytest

import rocsample.scratch as scratch_mod
from rocsample import CaptureError, ScratchNotWarmed, graphs
from rocsample.backends import CaptureStatus, Stream
from rocsample.backends.base import Allocation
from rocsample.backends.cpu import CpuBackend
from rocsample.backends.emulated import EmulatedRuntime
from rocsample.scratch import get_pool
from rocsample.scratch.pool import _CaptureRecord, _Entry


class SpyRuntime(EmulatedRuntime):
    """The emulated runtime with controllable events and a log of what the pool asked of it."""

    def __init__(self) -> None:
        super().__init__(n_devices=2)
        self.complete_events = True  # events recorded from now on are already complete
        self.events: list[dict] = []
        self.destroyed_events: list[dict] = []
        self.launch_streams: list[Stream] = []
        self.destroyed_graphs: list = []
        self.destroyed_execs: list = []
        self.slow = 0.0  # seconds each alloc / free / event record takes, to expose a missing lock
        self._busy: dict[int, int] = {}
        self.max_busy = 0  # most calls in flight at once on one device

    @contextlib.contextmanager
    def _busy_on(self, device):
        with self._lock:
            self._busy[device] = self._busy.get(device, 0) + 1
            self.max_busy = max(self.max_busy, self._busy[device])
        try:
            if self.slow:
                time.sleep(self.slow)
            yield
        finally:
            with self._lock:
                self._busy[device] -= 1

    def mem_alloc(self, nbytes, device):
        with self._busy_on(device):
            return super().mem_alloc(nbytes, device)

    def mem_free(self, alloc):
        with self._busy_on(alloc.device):
            return super().mem_free(alloc)

    def event_record(self, stream):
        with self._busy_on(stream.device):
            ev = {"stream": stream.handle, "device": stream.device, "done": self.complete_events}
        self.events.append(ev)
        return ev

    def event_query(self, event) -> bool:
        return event["done"]  # the pool must ask about the event it recorded (None fails here)

    def event_destroy(self, event) -> None:
        self.destroyed_events.append(event)

    def graph_launch(self, exec_, stream) -> None:
        self.launch_streams.append(stream)
        super().graph_launch(exec_, stream)

    def graph_destroy(self, graph) -> None:
        self.destroyed_graphs.append(graph)
        super().graph_destroy(graph)

    def graph_exec_destroy(self, exec_) -> None:
        self.destroyed_execs.append(exec_)
        super().graph_exec_destroy(exec_)


def private_backend(monkeypatch, runtime):
    """A private cpu backend on ``runtime`` with a fresh pool table; graphs.capture uses it (the
    session's current backend stays)."""
    b = CpuBackend()
    b.runtime = runtime
    monkeypatch.setattr(scratch_mod, "_pools", {})
    monkeypatch.setattr(graphs, "get_backend", lambda: b)
    return b


@pytest.fixture
def be(monkeypatch):
    """A private cpu backend on a SpyRuntime."""
    return private_backend(monkeypatch, SpyRuntime())


@pytest.fixture
def rt(be):
    return be.runtime


@pytest.fixture
def pool(be):
    return get_pool(be)


def exact(msg: str) -> str:
    return "^" + re.escape(msg) + "$"


def st(s) -> Stream:
    return Stream(s.handle, s.device, 0)


# ---- sizes, purposes, growth ---------------------------------------------------------------
@pytest.mark.parametrize("n, cap", [(1, 256), (255, 256), (256, 256), (257, 512), (512, 512), (513, 768)])
def test_capacity_is_rounded_up_to_256(pool, rt, n, cap):
    s = rt.new_stream(0)
    assert pool.request(s, n, "p").shape == (cap,)
    assert pool.capacity(s, "p") == cap
    assert pool.stats()["bytes_by_stream"] == {(0, s.handle): cap}


def test_default_purpose(pool, rt):
    s = rt.new_stream(0)
    assert pool.capacity(s) == 0  # nothing yet, and no entry
    pool.request(s, 100)
    assert list(pool.buffers(s)) == ["default"]
    assert pool.capacity(s) == pool.capacity(s, "default") == 256
    pool.prewarm(s, 1000)  # a bare byte count warms the default purpose
    assert pool.capacity(s) == 1024 and list(pool.buffers(s)) == ["default"]
    pool.prewarm(s, {"p": 300, "q": 0})
    assert sorted(pool.buffers(s)) == ["default", "p", "q"]
    assert pool.capacity(s, "p") == 512 and pool.capacity(s, "q") == 256


def test_zero_bytes_gets_a_buffer(pool, rt):
    s = rt.new_stream(0)
    assert pool.request(s, 0, "p").shape == (256,)
    assert rt.alloc_calls == 1
    with pytest.raises(ValueError, match=exact("nbytes: expected a non-negative integer, got -1")):
        pool.request(s, -1, "p")
    fresh = rt.new_stream(0)
    rt.begin_capture(st(fresh), "relaxed")
    with pytest.raises(ScratchNotWarmed, match="'p' scratch needs 1 bytes, but 0 bytes are warmed"):
        pool.request(fresh, 0, "p")  # nothing warmed: even 0 bytes is refused, never allocated
    rt.end_capture(st(fresh))
    assert rt.alloc_calls == 1


def test_growth_allocates_once_and_frees_after_the_event(pool, rt):
    s = rt.new_stream(1)
    rt.complete_events = False
    pool.request(s, 1000, "p")
    first = pool.buffers(s)["p"]
    assert rt.alloc_calls == 1
    pool.request(s, 1024, "p")  # exactly the capacity: served as is
    assert (rt.alloc_calls, pool.buffers(s)["p"]) == (1, first)
    pool.request(s, 1025, "p")
    assert rt.alloc_calls == 2 and pool.buffers(s)["p"] != first
    assert rt.pointer_device(pool.buffers(s)["p"]) == 1
    # the displaced buffer waits for an event recorded on its stream
    assert [(e["stream"], e["device"]) for e in rt.events] == [(s.handle, 1)]
    assert (pool.stats()["pending_frees"], rt.free_calls) == (1, 0)
    pool.request(s, 10, "p")  # collects, but the event has not completed
    assert (pool.stats()["pending_frees"], rt.free_calls) == (1, 0)
    pool.check_invariants()
    rt.events[0]["done"] = True
    pool.request(s, 10, "p")
    assert (pool.stats()["pending_frees"], rt.free_calls) == (0, 1)
    assert rt.destroyed_events == rt.events
    pool.check_invariants()


# ---- capture --------------------------------------------------------------------------------
def test_capture_serves_exactly_the_warmed_size_and_refuses_more(pool, rt, be):
    s = rt.new_stream(1)
    pool.prewarm(s, {"p": 1024})
    ptr = pool.buffers(s)["p"]
    allocs = rt.alloc_calls
    with pytest.raises(ScratchNotWarmed, match=exact(
        f"stream {s.handle:#x} on device 1 is capturing and 'p' scratch needs 1025 bytes, but 1024 "
        "bytes are warmed; call rocsample.scratch.prewarm(stream, ...) (or Sampler.prewarm) before capture"
    )):
        with graphs.capture(s):
            assert pool.request(s, 1024, "p").shape == (1024,)
            pool.request(s, 1025, "p")
    assert rt.alloc_calls == allocs  # refused before anything was allocated
    assert pool.buffers(s) == {"p": ptr}
    assert pool.stats()["pinned_buffers"] == 0
    pool.check_invariants()


def test_invalidated_capture_raises_capture_error(pool, rt):
    s = rt.new_stream(0)
    pool.prewarm(s, 256)
    allocs = rt.alloc_calls
    rt.begin_capture(st(s), "thread_local")
    with pytest.raises(CaptureError):
        rt.mem_alloc(16, 0)  # invalidates the capture, as cuMemAlloc does
    with pytest.raises(CaptureError, match=exact(
        f"stream {s.handle:#x} on device 0: its capture was invalidated; end it "
        "(rocsample.graphs.capture does) and capture again"
    )):
        pool.request(s, 16)
    assert rt.alloc_calls == allocs + 1  # only the test's own attempt
    with pytest.raises(CaptureError):
        rt.end_capture(st(s))
    assert pool.request(s, 16).shape == (256,)


def test_global_capture_refuses_every_device(pool, rt):
    # CUDA forbids cuMemAlloc / cuMemFree under a global capture process-wide, whatever the
    # device (tests/regress/test_foreign_capture_on_another_device.py)
    g, s, other_dev = rt.new_stream(0), rt.new_stream(0), rt.new_stream(1)
    pool.request(s, 256, "p")
    pool.request(other_dev, 256, "p")
    allocs = rt.alloc_calls
    rt.begin_capture(st(g), "global")
    with pytest.raises(ScratchNotWarmed, match=f"stream {s.handle:#x} on device 0: 'p' scratch needs "
                       "4096 bytes, but 256 bytes are warmed, and allocating now would invalidate a capture"):
        pool.request(s, 4096, "p")
    with pytest.raises(ScratchNotWarmed, match=f"stream {other_dev.handle:#x} on device 1: 'p' scratch "
                       "needs 4096 bytes, but 256 bytes are warmed, and allocating now would invalidate"):
        pool.request(other_dev, 4096, "p")
    assert rt.alloc_calls == allocs
    assert pool.request(other_dev, 256, "p") is not None  # a warmed request is served
    # nothing is freed anywhere while the global capture is open
    assert pool.trim(device=0) == 0
    assert pool.trim(s) == 0
    assert pool.trim() == 0
    assert list(pool.buffers(other_dev)) == ["p"] and list(pool.buffers(s)) == ["p"]
    assert rt.capture_status(st(g)) is CaptureStatus.ACTIVE
    frees = rt.free_calls
    rt.end_capture(st(g))
    assert pool.trim() == 512
    assert rt.free_calls == frees + 2


# ---- trim -----------------------------------------------------------------------------------
def test_trim_scopes_and_returns_bytes(pool, rt):
    a, b, c = rt.new_stream(0), rt.new_stream(0), rt.new_stream(1)
    d0, d1 = Stream(0, 0, 0), Stream(0, 1, 0)  # the default streams of the two devices
    pool.request(b, 512, "p")  # b before a: trimming a must look past b
    pool.request(a, 256, "p")
    pool.request(a, 768, "q")
    pool.request(c, 1024, "p")
    pool.request(d0, 2048, "p")
    pool.request(d1, 4096, "p")
    keep_b = pool.buffers(b)
    assert pool.trim(a) == 256 + 768
    assert pool.buffers(a) == {} and pool.buffers(b) == keep_b
    assert [(e["stream"], e["device"]) for e in rt.events] == [(a.handle, 0), (a.handle, 0)]
    assert pool.trim(d0) == 2048  # the default stream of device 0 only
    assert list(pool.buffers(d1)) == ["p"]
    assert pool.trim(device=1) == 1024 + 4096
    assert pool.buffers(b) == keep_b
    assert [(e["stream"], e["device"]) for e in rt.events[3:]] == [(c.handle, 1), (0, 1)]
    assert pool.trim() == 512
    assert pool.trim() == 0
    assert pool.stats()["bytes_by_stream"] == {}
    assert rt.free_calls == rt.alloc_calls == 6
    pool.check_invariants()


def test_trim_frees_nothing_while_a_capture_is_open(pool, rt):
    # SPEC §4: while any capture is active, rocsample frees nothing (a capture it did not begin
    # may be in any mode: the driver does not say, so even a relaxed one counts)
    cap, other = rt.new_stream(1), rt.new_stream(1)
    pool.request(cap, 256, "p")
    pool.request(other, 512, "p")
    kept, kept_other = pool.buffers(cap), pool.buffers(other)
    rt.begin_capture(st(cap), "relaxed")
    assert pool.trim(device=1) == 0
    assert pool.trim(other) == 0
    assert pool.trim() == 0
    assert pool.buffers(cap) == kept and pool.buffers(other) == kept_other
    assert rt.capture_status(st(cap)) is CaptureStatus.ACTIVE
    rt.end_capture(st(cap))
    assert pool.trim(device=1) == 768


# ---- external captures (a capture rocsample did not start, e.g. torch.cuda.graph) -------------
def test_external_capture_pins_its_buffer_for_good(pool, rt):
    s = rt.new_stream(0)
    pool.prewarm(s, {"p": 256})
    pinned = pool.buffers(s)["p"]
    rt.begin_capture(st(s), "relaxed")
    pool.request(s, 100, "p")
    pool.request(s, 200, "p")  # the same buffer: pinned once
    assert pool.stats()["pinned_buffers"] == 1 and pool.stats()["active_captures"] == 1
    rt.end_capture(st(s))
    pool.request(s, 4096, "p")  # growth displaces the pinned buffer, which is not retired
    assert pool.stats()["pending_frees"] == 0 and rt.free_calls == 0
    assert pool.trim() == 4096
    assert rt.free_calls == 1 and pool.stats()["pinned_buffers"] == 1
    assert pinned not in pool.buffers(s).values()
    pool.check_invariants()


def test_buffer_pinned_by_external_capture_and_graph_outlives_the_graph(pool, rt):
    s = rt.new_stream(0)
    pool.prewarm(s, {"p": 256})
    rt.begin_capture(st(s), "relaxed")
    pool.request(s, 100, "p")
    rt.end_capture(st(s))
    with graphs.capture(s) as g:
        pool.request(s, 100, "p")  # the same buffer, now pinned twice
    frees = rt.free_calls
    g.release()
    assert pool.stats()["pinned_buffers"] == 1  # the external pin still holds it
    assert pool.stats()["pending_frees"] == 0
    assert rt.free_calls == frees
    pool.check_invariants()


# ---- stats, repr, module functions ------------------------------------------------------------
def test_stats_and_repr_are_exact(pool, rt):
    assert repr(pool) == "<ScratchPool empty; pinned=0 graphs=0 pending_frees=0>"
    s, t = rt.new_stream(0), rt.new_stream(1)
    pool.request(s, 256, "a")
    pool.request(s, 512, "b")
    pool.request(t, 256, "a")
    assert pool.stats() == {
        "bytes_by_stream": {(0, s.handle): 768, (1, t.handle): 256},
        "pinned_buffers": 0,
        "live_graphs": 0,
        "active_captures": 0,
        "pending_frees": 0,
        "alloc_calls": 3,
        "free_calls": 0,
    }
    assert repr(pool) == (
        f"<ScratchPool dev0/stream{s.handle:#x}: 768 B, dev1/stream{t.handle:#x}: 256 B; "
        "pinned=0 graphs=0 pending_frees=0>"
    )


def test_get_pool_is_one_per_backend(be, pool, monkeypatch):
    assert get_pool(be) is pool and get_pool() is not pool  # get_pool() is the current backend's
    monkeypatch.setattr(scratch_mod, "get_backend", lambda: be)
    assert get_pool() is pool
    assert pool.backend is be
    other = CpuBackend()
    assert get_pool(other) is not pool and get_pool(other).backend is other


def test_module_functions_use_the_current_backend(be, pool, rt, monkeypatch):
    monkeypatch.setattr(scratch_mod, "get_backend", lambda: be)
    s = rt.new_stream(0)
    scratch_mod.prewarm(s, {"p": 1000})
    scratch_mod.prewarm(s, 300)
    assert rt.alloc_calls == 2
    assert scratch_mod.request(s, 1000, "p").shape == (1024,)
    assert scratch_mod.request(s, 500).shape == (512,)
    assert rt.alloc_calls == 2
    assert pool.buffers(s).keys() == {"p", "default"}
    assert scratch_mod.stats() == pool.stats()
    assert scratch_mod.stats()["bytes_by_stream"] == {(0, s.handle): 1024 + 512}


# ---- thread safety ------------------------------------------------------------------------------
def _together(*fns):
    """Run each fn on its own thread, started together; re-raise the first error."""
    barrier = threading.Barrier(len(fns))
    errors = []

    def run(fn):
        try:
            barrier.wait()
            fn()
        except BaseException as e:  # noqa: B036 - surfaced below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(fn,)) for fn in fns]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    if errors:
        raise errors[0]


def test_growth_on_one_device_is_serialised(pool, rt):
    a, b = rt.new_stream(0), rt.new_stream(0)
    rt.slow = 0.05
    _together(lambda: pool.request(a, 4096, "p"), lambda: pool.request(b, 4096, "p"))
    assert rt.max_busy == 1
    assert rt.alloc_calls == 2
    pool.check_invariants()


def test_graph_release_and_growth_on_one_device_are_serialised(pool, rt):
    a, b = rt.new_stream(0), rt.new_stream(0)
    pool.prewarm(a, {"p": 256})
    pool.prewarm(b, {"p": 256})
    with graphs.capture(a) as g:
        pool.request(a, 256, "p")
    rt.slow = 0.05
    _together(g.release, lambda: pool.request(b, 1 << 20, "p"))
    assert rt.max_busy == 1
    assert pool.stats()["live_graphs"] == 0
    pool.check_invariants()


# ---- the test helper itself --------------------------------------------------------------------
def test_check_invariants_names_each_broken_invariant(pool, rt):
    s, t = rt.new_stream(0), rt.new_stream(0)
    pool.request(s, 256, "a")
    pool.request(t, 256, "a")
    ks, kt = (0, s.handle, "a"), (0, t.handle, "a")
    # an entry without a buffer is skipped, and the scan goes on past it
    pool._entries = {(0, 0x1, "empty"): _Entry(None), **pool._entries}
    pool.check_invariants()
    alloc = pool._entries[ks].alloc
    alloc.freed = True
    with pytest.raises(RuntimeError, match=exact(f"entry {ks} holds a freed buffer")):
        pool.check_invariants()
    alloc.freed = False
    alloc.device = 1
    with pytest.raises(RuntimeError, match=exact(f"entry {ks} holds a buffer of device 1")):
        pool.check_invariants()
    alloc.device = 0
    own_t = pool._entries[kt].alloc
    pool._entries[kt].alloc = alloc
    with pytest.raises(RuntimeError, match=exact(f"buffer {alloc.ptr:#x} shared by {ks} and {kt}")):
        pool.check_invariants()
    pool._entries[kt].alloc = own_t
    pool._graph_records[-1] = _CaptureRecord(0, 0, allocs=[Allocation(0x4000, 256, 0, None, freed=True)])
    with pytest.raises(RuntimeError, match=exact("graph-held buffer 0x4000 was freed")):
        pool.check_invariants()
    del pool._graph_records[-1]
    pool._pins[0x5000] = 0  # zero pins is sound
    pool.check_invariants()
    pool._pins[0x5000] = -1
    with pytest.raises(RuntimeError, match=exact("negative pin count for 0x5000")):
        pool.check_invariants()
    del pool._pins[0x5000]


def _in_thread(fn):
    import threading as _t

    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as e:  # handed back to the test thread
            out["error"] = e

    th = _t.Thread(target=run)
    th.start()
    th.join()
    if "error" in out:
        raise out["error"]
    return out.get("value")


def test_this_threads_capture_blocks_growth_on_other_streams_with_its_name(pool, rt, monkeypatch):
    import rocsample.scratch as scratch_mod

    monkeypatch.setitem(scratch_mod._pools, id(pool.backend), pool)
    cap, other = rt.new_stream(0), rt.new_stream(0)
    pool.prewarm(cap, {"p": 256})
    pool.prewarm(other, {"p": 256})
    allocs = rt.alloc_calls
    with graphs.capture(cap) as g:
        with pytest.raises(ScratchNotWarmed, match=exact(
                f"stream {other.handle:#x} on device 0: 'p' scratch needs 4096 bytes, but 256 bytes are "
                f"warmed, and allocating now would invalidate the thread_local capture of stream "
                f"{cap.handle:#x} on this thread; prewarm every stream used while a capture is open")):
            pool.request(other, 4096, "p")
    assert rt.alloc_calls == allocs  # nothing was allocated, during the capture or after it
    g.release()


def test_another_threads_thread_local_capture_does_not_block_this_thread(pool, rt, monkeypatch):
    import rocsample.scratch as scratch_mod

    monkeypatch.setitem(scratch_mod._pools, id(pool.backend), pool)
    cap, other = rt.new_stream(0), rt.new_stream(0)
    pool.prewarm(cap, {"p": 256})
    ctx = graphs.capture(cap)
    g = _in_thread(ctx.__enter__)  # the capture belongs to the other thread
    try:
        pool.request(other, 4096, "p")  # this thread may allocate
        assert pool.capacity(other, "p") >= 4096
    finally:
        _in_thread(lambda: ctx.__exit__(None, None, None))
    assert g.ready
    g.release()


def test_a_global_capture_from_another_thread_blocks_with_its_name(pool, rt, monkeypatch):
    import rocsample.scratch as scratch_mod

    monkeypatch.setitem(scratch_mod._pools, id(pool.backend), pool)
    cap, other = rt.new_stream(0), rt.new_stream(0)
    pool.prewarm(cap, {"p": 256})
    ctx = graphs.capture(cap, mode="global")
    g = _in_thread(ctx.__enter__)
    try:
        with pytest.raises(ScratchNotWarmed, match=f"would invalidate the global capture of stream {cap.handle:#x}"):
            pool.request(other, 4096, "p")
    finally:
        _in_thread(lambda: ctx.__exit__(None, None, None))
    g.release()


def test_an_external_capture_is_not_named_but_still_blocks(pool, rt):
    # a capture rocsample did not begin (torch.cuda.graph, say) is known only to the runtime
    cap, other = rt.new_stream(0), rt.new_stream(0)
    pool.prewarm(cap, {"p": 256})
    rt.begin_capture(st(cap), "thread_local")
    pool.request(cap, 64, "p")  # served and pinned: an external record
    with pytest.raises(ScratchNotWarmed, match="would invalidate a capture in progress on device 0"):
        pool.request(other, 4096, "p")
    assert rt.capture_status(st(cap)) is CaptureStatus.ACTIVE
    rt.end_capture(st(cap))


def test_pending_frees_wait_out_an_external_global_capture_from_another_thread(pool, rt):
    # the free itself (cuMemFree) would invalidate a global capture on the buffer's device, even
    # one rocsample did not begin and one begun by another thread
    s, g, s1 = rt.new_stream(0), rt.new_stream(0), rt.new_stream(1)
    pool.request(s1, 64, "p")  # warmed before the capture: served during it, no allocation
    rt.complete_events = False
    pool.request(s, 256, "p")
    pool.request(s, 4096, "p")  # the 256-byte buffer is retired behind a pending event
    rt.complete_events = True
    assert pool.stats()["pending_frees"] == 1
    _in_thread(lambda: rt.begin_capture(st(g), "global"))
    for _alloc, ev in pool._retired:
        ev["done"] = True
    frees = rt.free_calls
    pool.request(s1, 64, "p")  # a collect from another device's stream
    assert rt.free_calls == frees and pool.stats()["pending_frees"] == 1
    _in_thread(lambda: rt.end_capture(st(g)))
    pool.request(s1, 64, "p")
    assert rt.free_calls == frees + 1 and pool.stats()["pending_frees"] == 0
