"""The pool under captures rocsample did not begin: numba's deferred frees held while one is seen
and let go after it, the foreign-capture probe, and the pool's double-checked lookups.

docs/MUTATION.md's final run found these untested on cpu (`note_call`, `_hold_numba_frees` and
`_release_numba_frees` had no test at all; each test names the mutants it kills). They run on
tests/scratch/test_pool_contract.py's private emulated backend, given a stand-in for numba's
``cuda.defer_cleanup`` (the context manager that keeps numba from calling cuMemFree, which an
open capture forbids). A "foreign" capture is begun on the runtime directly, as torch.cuda.graph
or a raw cuStreamBeginCapture would be; on a non-blocking stream (torch's kind) the driver's
legacy-stream probe does not see it, so only the pool's own probe of the streams it knows does.
"""

from __future__ import annotations

import threading
import types

import pytest

import rocsample.scratch as scratch_mod
from rocsample import ScratchNotWarmed, graphs
from rocsample.backends import interop
from rocsample.scratch import get_pool
from tests.scratch.test_pool_contract import SpyRuntime, private_backend, st


class _Numba:
    """``numba.cuda`` as the pool uses it: ``defer_cleanup()``, entered with a device current.

    A plain context manager object (not a generator): dropping it releases nothing, so the pool
    must close what it entered (a generator-based one would also be closed by the garbage
    collector, which hides a missing ``close``)."""

    def __init__(self, rt):
        self.rt = rt
        self.log: list[tuple[str, int]] = []

    def defer_cleanup(self):
        log, dev = self.log, self.rt.current_device()

        class _Held:
            def __enter__(self):
                log.append(("hold", dev))

            def __exit__(self, *exc):
                log.append(("release", dev))

        return _Held()


@pytest.fixture
def be(monkeypatch):
    b = private_backend(monkeypatch, SpyRuntime())
    b.cuda = _Numba(b.runtime)
    monkeypatch.setattr(interop, "_durable", set())  # no torch stream of another test
    return b


@pytest.fixture
def rt(be):
    return be.runtime


@pytest.fixture
def pool(be):
    return get_pool(be)


def _foreign(rt, device=0):
    """A stream for a foreign capture, non-blocking like torch's (the legacy probe misses it)."""
    return rt.new_stream(device, non_blocking=True)


def _begin(rt, s, mode="thread_local"):
    rt.begin_capture(st(s), mode)


def _end(rt, s):
    rt.end_capture(st(s))


def _no_stray_locks(pool):
    assert set(pool._dev_locks) <= {0, 1}, f"a lock for no device: {set(pool._dev_locks)}"


# ---- numba's frees: held while a foreign capture is seen, let go after ---------------------------
@pytest.mark.parametrize("call", ["request", "note_call"])
@pytest.mark.parametrize("non_blocking", [False, True], ids=["blocking", "non-blocking"])
def test_a_foreign_capture_holds_numbas_frees_once_until_a_call_sees_none(pool, rt, be, call,
                                                                            non_blocking):
    # request 35/37-41; note_call 1-6, 9, 10, 12, 14, 16-19; _hold_numba_frees 3-13, 15, 18;
    # _release_numba_frees 3, 4, 6, 8-13, 15
    s = rt.new_stream(0, non_blocking=non_blocking)
    pool.prewarm(s, {"p": 256})

    def touch():
        if call == "request":
            pool.request(s, 256, "p")
        else:
            pool.note_call(s)

    _begin(rt, s)
    touch()
    assert list(pool._numba_held) == [0] and be.cuda.log == [("hold", 0)]
    touch()  # already held: not entered twice
    assert be.cuda.log == [("hold", 0)]
    _end(rt, s)
    touch()  # the first call that sees no capture lets numba free again
    assert pool._numba_held == {} and be.cuda.log == [("hold", 0), ("release", 0)]
    touch()
    assert be.cuda.log == [("hold", 0), ("release", 0)]
    _no_stray_locks(pool)


@pytest.mark.parametrize("call", ["request", "note_call"])
def test_the_hold_is_entered_with_the_captured_streams_device_current(pool, rt, be, call):
    # _hold_numba_frees 14, 16, 17: numba's deferral is per context, the current one
    s = rt.new_stream(1, non_blocking=True)
    pool.prewarm(s, {"p": 256})
    assert rt.current_device() == 0
    _begin(rt, s)
    pool.request(s, 256, "p") if call == "request" else pool.note_call(s)
    assert be.cuda.log == [("hold", 1)] and list(pool._numba_held) == [1]
    assert rt.current_device() == 0  # switched back
    _end(rt, s)
    pool.request(s, 256, "p") if call == "request" else pool.note_call(s)
    assert be.cuda.log == [("hold", 1), ("release", 1)] and pool._numba_held == {}


@pytest.mark.parametrize("call", ["request", "note_call"])
def test_rocsamples_own_capture_needs_no_hold(pool, rt, be, call):
    # request 31, 32; note_call 7, 8: graphs.capture defers numba's frees itself
    s = rt.new_stream(0)
    pool.prewarm(s, {"p": 256})
    with graphs.capture(s) as g:
        pool.request(s, 256, "p") if call == "request" else pool.note_call(s)
        assert pool._numba_held == {}
        assert be.cuda.log == [("hold", 0)]  # graphs.capture's own deferral
    g.release()
    assert be.cuda.log == [("hold", 0), ("release", 0)]


def test_a_numba_without_defer_cleanup_holds_nothing(pool, rt, be):
    # _hold_numba_frees 2: a cuda module without defer_cleanup (not numba's) is left alone
    be.cuda = types.SimpleNamespace()
    s = _foreign(rt)
    pool.prewarm(s, {"p": 256})
    _begin(rt, s)
    pool.request(s, 256, "p")
    pool.note_call(s)
    assert pool._numba_held == {}
    _end(rt, s)


def test_the_frees_stay_held_while_any_capture_is_seen_on_the_device(pool, rt, be):
    # _release_numba_frees 1, 2, 5, 7: released only when no rocsample capture, no capture the
    # legacy-stream probe reports (a global one here) and no foreign capture the pool can see
    s1 = _foreign(rt)
    s2 = rt.new_stream(0)
    pool.prewarm(s1, {"p": 256})
    pool.prewarm(s2, {"p": 256})
    _begin(rt, s1)
    pool.request(s1, 256, "p")
    assert list(pool._numba_held) == [0]
    pool.request(s2, 256, "p")  # s1 (non-blocking, known to the pool) still captures
    assert list(pool._numba_held) == [0]
    _end(rt, s1)
    s3 = rt.new_stream(0)  # unknown to the pool: seen only by the global probe
    _begin(rt, s3, "global")
    pool.request(s2, 256, "p")
    assert list(pool._numba_held) == [0]
    _end(rt, s3)
    pool.request(s2, 256, "p")
    assert pool._numba_held == {} and be.cuda.log == [("hold", 0), ("release", 0)]


# ---- the foreign-capture probe -----------------------------------------------------------------
def test_a_pinned_foreign_capture_still_blocks_growth_on_its_device(pool, rt):
    # _foreign_capture 3: a foreign capture whose stream pinned a buffer (an external record)
    # is not one of rocsample's own
    s1, s2 = _foreign(rt), rt.new_stream(0)
    pool.prewarm(s1, {"p": 256})
    _begin(rt, s1)
    pool.request(s1, 256, "p")  # pinned for good under the foreign capture
    with pytest.raises(ScratchNotWarmed, match=r"not begun by rocsample"):
        pool.request(s2, 4096, "q")
    _end(rt, s1)


def test_a_torch_stream_a_call_ran_on_is_asked(pool, rt):
    # _foreign_capture 7: the torch streams noted on this device are asked, with no pool entry
    s = _foreign(rt)
    interop.note_torch_stream(0, s.handle)
    _begin(rt, s)
    with pytest.raises(ScratchNotWarmed, match=r"not begun by rocsample"):
        pool.request(rt.new_stream(0), 256, "p")
    _end(rt, s)


def test_a_foreign_capture_on_the_other_device_is_asked_there(pool, rt):
    # _foreign_capture 23: the probe's stream carries its device
    s1, s2 = _foreign(rt, 1), rt.new_stream(1)
    pool.prewarm(s1, {"p": 256})
    _begin(rt, s1)
    with pytest.raises(ScratchNotWarmed, match=r"not begun by rocsample"):
        pool.request(s2, 256, "p")
    _end(rt, s1)


class _Ordered(set):
    """A set iterated in insertion order (the probe's loop order, made deterministic)."""

    def __init__(self, items=()):
        super().__init__()
        self._order: list = []
        self.update(items)

    def add(self, x):
        if x not in self:
            self._order.append(x)
        super().add(x)

    def update(self, *its):
        for it in its:
            for x in it:
                self.add(x)

    def __iter__(self):
        return iter(list(self._order))


def test_the_probe_skips_a_null_handle_and_a_stream_gone_and_asks_the_rest(pool, rt, monkeypatch):
    # _foreign_capture 16, 26: `continue` (not `break`) past a null handle and past a stream
    # whose status query fails (destroyed since)
    gone, s = 0x7777000, _foreign(rt)
    monkeypatch.setattr(interop, "known_streams", lambda device: _Ordered([0, gone, s.handle]))
    real = rt.capture_status

    def status(stream):
        if stream.handle == gone:
            raise RuntimeError("invalid resource handle")
        return real(stream)

    monkeypatch.setattr(rt, "capture_status", status)
    _begin(rt, s)
    with pytest.raises(ScratchNotWarmed, match=r"not begun by rocsample"):
        pool.request(rt.new_stream(0), 256, "p")
    monkeypatch.setattr(interop, "known_streams", lambda device: _Ordered([gone, s.handle]))
    with pytest.raises(ScratchNotWarmed, match=r"not begun by rocsample"):
        pool.request(rt.new_stream(0), 256, "p")
    _end(rt, s)


def test_allocation_blocker_asks_the_calls_own_stream_and_device(pool, rt):
    # allocation_blocker 4, 9
    s = _foreign(rt)  # unknown to the pool: only its own status says it captures
    _begin(rt, s)
    assert pool.allocation_blocker(s) == f"the capture of stream {s.handle:#x} on device 0"
    _end(rt, s)
    s1, s2 = _foreign(rt, 1), rt.new_stream(1)
    pool.prewarm(s1, {"p": 256})
    _begin(rt, s1)
    assert "not begun by rocsample" in (pool.allocation_blocker(s2) or "")
    _end(rt, s1)


def test_a_graph_release_waits_for_a_foreign_capture_on_its_device(pool, rt):
    # _release_blocked 2, Graph.release 5: the graph's device is the one asked
    sg = rt.new_stream(1)
    pool.prewarm(sg, {"g": 256})
    with graphs.capture(sg) as g:
        pool.request(sg, 256, "g")
    s1 = _foreign(rt, 1)
    pool.prewarm(s1, {"p": 256})
    _begin(rt, s1)
    destroyed = len(rt.destroyed_execs)
    g.release()
    assert len(rt.destroyed_execs) == destroyed and not g.ready  # deferred, unreplayable
    _end(rt, s1)
    pool.request(s1, 256, "p")  # the next call after the capture carries it out
    assert len(rt.destroyed_execs) == destroyed + 1 and g.released


# ---- double-checked lookups: no lock in the common case, one object ever ------------------------
class _MissOnce(dict):
    """A table whose first read misses, as if another thread inserted the value between the
    unlocked read and the lock."""

    def __init__(self, *a):
        super().__init__(*a)
        self.misses = 1

    def get(self, k, default=None):
        if self.misses:
            self.misses -= 1
            return default
        return super().get(k, default)


def _returns_while_held(lock, fn):
    """Whether ``fn()`` returns while another thread holds ``lock`` (it must not take it)."""
    done = threading.Event()
    with lock:
        t = threading.Thread(target=lambda: (fn(), done.set()), daemon=True)
        t.start()
        ok = done.wait(2.0)
    t.join(5.0)
    return ok


def test_get_pool_finds_the_pool_without_the_lock_and_never_makes_a_second(be, monkeypatch):
    # scratch.get_pool 5-7 (the unlocked read), 9-11 (the locked read)
    p = get_pool(be)
    assert _returns_while_held(scratch_mod._guard, lambda: get_pool(be))
    monkeypatch.setattr(scratch_mod, "_pools", _MissOnce({id(be): p}))
    assert get_pool(be) is p


def test_a_devices_lock_is_found_without_the_guard_and_made_once(pool):
    # ScratchPool._lock 1, 2 (the unlocked read), 4, 5 (the locked read)
    lk = pool._lock(0)
    assert _returns_while_held(pool._dev_locks_guard, lambda: pool._lock(0))
    pool._dev_locks = _MissOnce({0: lk})
    assert pool._lock(0) is lk
