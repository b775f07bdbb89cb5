"""SPEC §4 statements no other test pinned down (audit): each test here fails if its statement breaks.

Most tests run on the private spy runtime of test_pool_contract (emulated, two devices, logged
events and launches), whatever ``--backend`` is; the last ones run Sampler.capture on the backend
under test (cpu: the reference under the emulated capture; sim: the kernels, at tiny sizes).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import rocsample
from rocsample import CaptureError, ScratchNotWarmed, graphs
from rocsample.backends import CaptureStatus, Stream
from rocsample.reference import sampling as ref
from rocsample.scratch import get_pool

from . import test_pool_contract as _contract
from .test_pool_contract import _in_thread, _together, exact, st

# the spy fixtures: a private cpu backend on SpyRuntime (two emulated devices), its pool and runtime
be, pool, rt = _contract.be, _contract.pool, _contract.rt


@pytest.fixture
def freed(rt, monkeypatch):
    """Pointers the runtime freed, in order."""
    log: list[int] = []
    orig = rt.mem_free

    def mem_free(alloc):
        log.append(alloc.ptr)
        return orig(alloc)

    monkeypatch.setattr(rt, "mem_free", mem_free)
    return log


# ---- the capture contract --------------------------------------------------------------------
def test_a_warmed_request_in_capture_is_the_prewarmed_buffer_itself(pool, rt):
    s = rt.new_stream(0)
    pool.prewarm(s, {"p": 1024})
    warmed = pool.request(s, 1024, "p")
    allocs = rt.alloc_calls
    with graphs.capture(s) as g:
        assert pool.request(s, 1, "p") is warmed
        assert pool.request(s, 1024, "p") is warmed
        assert rt.alloc_calls == allocs  # served, not allocated
        assert pool.stats()["pinned_buffers"] == 1
    assert pool.request(s, 1024, "p") is not warmed  # it went to the graph
    g.release()


def test_a_live_graphs_buffer_is_never_handed_out_or_freed(pool, rt, freed):
    s = rt.new_stream(0)
    pool.prewarm(s, {"a": 256, "b": 512})
    held = pool.buffers(s)
    with graphs.capture(s) as g:
        pool.request(s, 256, "a")
        pool.request(s, 512, "b")
    streams = [s] + [rt.new_stream(d) for d in (0, 1, 0, 1)]

    def handed_out():
        return {p for x in streams for p in pool.buffers(x).values()}

    # the pool grows and trims every way it can while the graph lives
    for size in (256, 512, 4096, 1 << 16):
        for x in streams:
            for purpose in ("a", "b", "c"):
                pool.request(x, size, purpose)
        assert not handed_out() & set(held.values())
    assert pool.trim(s) > 0 and pool.trim(device=0) > 0 and pool.trim() > 0
    for x in streams:
        pool.request(x, 256, "a")
    assert not handed_out() & set(held.values())
    assert not set(freed) & set(held.values()), "a buffer of a live graph was freed"
    assert pool.stats()["pinned_buffers"] == 2 and pool.stats()["live_graphs"] == 1
    pool.check_invariants()
    g.replay()
    g.release()
    assert sorted(p for p in freed if p in held.values()) == sorted(held.values())  # once each
    pool.check_invariants()


def test_a_nested_capture_of_the_same_stream_is_refused_and_the_outer_one_is_intact(pool, rt):
    s = rt.new_stream(1)
    pool.prewarm(s, {"p": 256})
    held = pool.buffers(s)["p"]
    with graphs.capture(s) as outer:
        pool.request(s, 256, "p")
        before = pool.stats()
        with pytest.raises(CaptureError, match="already capturing"):
            with graphs.capture(s):
                pass
        assert pool.stats() == before  # the refused capture left the pool as it was
        assert rt.capture_status(st(s)) is CaptureStatus.ACTIVE
        pool.request(s, 256, "p")  # still pinned to the outer capture
    assert outer.ready
    assert pool.buffers(s)["p"] != held  # the outer graph took its buffer, as always
    assert (pool.stats()["pinned_buffers"], pool.stats()["live_graphs"]) == (1, 1)
    outer.release()
    assert pool.stats()["pinned_buffers"] == 0
    pool.check_invariants()


def test_a_capture_invalidated_under_a_block_that_ends_normally(pool, rt):
    s = rt.new_stream(0)
    pool.prewarm(s, {"p": 256})
    held = pool.buffers(s)
    with pytest.raises(CaptureError, match="invalidated"):
        with graphs.capture(s):
            pool.request(s, 256, "p")  # pinned
            with pytest.raises(CaptureError):
                rt.mem_alloc(16, 0)  # someone else's allocation invalidates the capture
            # the block ends without an error: end_capture is what reports it
    assert rt.capture_status(st(s)) is CaptureStatus.NONE
    assert pool.buffers(s) == held  # the pool is unchanged: the buffer stays the stream's
    stats = pool.stats()
    assert (stats["pinned_buffers"], stats["live_graphs"], stats["active_captures"]) == (0, 0, 0)
    with graphs.capture(s) as g:  # and the stream captures again
        pool.request(s, 256, "p")
    assert g.ready
    g.release()
    pool.check_invariants()


def test_a_failed_instantiate_ends_the_capture_and_leaves_the_pool_unchanged(pool, rt, monkeypatch):
    s = rt.new_stream(0)
    pool.prewarm(s, {"p": 256})
    held = pool.buffers(s)

    def refuse(graph):
        raise CaptureError("cuGraphInstantiate failed: out of memory")

    # only this patch is undone below: monkeypatch.undo() would also undo the private backend
    # (the fixtures' patches), and graphs.capture would then hand this emulated stream to the
    # session's backend (on cuda: its fake handle to the driver, SIGSEGV)
    with monkeypatch.context() as m:
        m.setattr(rt, "instantiate", refuse)
        with pytest.raises(CaptureError, match="cuGraphInstantiate failed"):
            with graphs.capture(s) as g:
                pool.request(s, 256, "p")
        assert len(rt.destroyed_graphs) == 1 and not g.ready
        assert pool.buffers(s) == held
        assert (pool.stats()["pinned_buffers"], pool.stats()["live_graphs"]) == (0, 0)
    with graphs.capture(s) as g:
        pool.request(s, 256, "p")
    assert g.ready
    g.release()


# ---- devices ---------------------------------------------------------------------------------
def test_capture_on_a_stream_of_another_device(pool, rt):
    assert rt.current_device() == 0
    s = rt.new_stream(1)
    pool.prewarm(s, {"p": 256})
    held = pool.buffers(s)["p"]
    allocs = rt.alloc_calls
    with pytest.raises(ScratchNotWarmed, match=exact(
        f"stream {s.handle:#x} on device 1 is capturing and 'q' scratch needs 16 bytes, but 0 "
        "bytes are warmed; call rocsample.scratch.prewarm(stream, ...) (or Sampler.prewarm) before capture"
    )):
        with graphs.capture(s):
            pool.request(s, 16, "q")
    assert rt.alloc_calls == allocs
    with graphs.capture(s) as g:
        pool.request(s, 256, "p")
    new = pool.buffers(s)["p"]
    assert new != held
    assert rt.pointer_device(held) == 1 and rt.pointer_device(new) == 1  # re-warmed on device 1
    assert pool.buffers(Stream(s.handle, 0, 0)) == {}  # nothing was filed under device 0
    rt.complete_events = False
    g.replay()
    g.release()
    assert [(e["stream"], e["device"]) for e in rt.events[-1:]] == [(s.handle, 1)]
    pool.check_invariants()


def test_the_default_streams_of_two_devices_have_their_own_scratch(be, pool, rt):
    ptrs = {}
    for d in (1, 0):
        with be.on_device(d):
            pool.request(None, 256, "p")
            ptrs[d] = pool.buffers(None)["p"]
    assert ptrs[0] != ptrs[1]
    assert {d: rt.pointer_device(p) for d, p in ptrs.items()} == {0: 0, 1: 1}
    assert set(pool.stats()["bytes_by_stream"]) == {(0, 0), (1, 0)}


# ---- threads ---------------------------------------------------------------------------------
def test_threads_growing_one_stream_each_get_what_they_asked(pool, rt):
    s = rt.new_stream(0)
    sizes = [256 * (i + 1) for i in range(8)]
    got = {}
    rt.slow = 0.01

    def ask(n):
        got[n] = pool.request(s, n, "p").shape[0]

    _together(*[lambda n=n: ask(n) for n in sizes])
    assert all(got[n] >= n for n in sizes), got
    assert pool.capacity(s, "p") == max(sizes)  # one buffer, as large as the largest request
    assert rt.max_busy == 1
    pool.trim()
    assert rt.free_calls == rt.alloc_calls  # every buffer grown past was retired and freed
    pool.check_invariants()


def test_threads_on_two_devices_keep_their_devices_buffers(pool, rt):
    streams = [rt.new_stream(d) for d in (0, 1, 0, 1)]
    rt.slow = 0.005

    def grow(x):
        for n in (256, 1024, 4096):
            pool.request(x, n, "p")
            pool.request(x, n, "q")

    _together(*[lambda x=x: grow(x) for x in streams])
    seen = set()
    for x in streams:
        bufs = pool.buffers(x)
        assert {rt.pointer_device(p) for p in bufs.values()} == {x.device}
        assert not seen & set(bufs.values())
        seen |= set(bufs.values())
    pool.check_invariants()


def test_another_threads_request_on_the_capturing_stream_belongs_to_that_capture(pool, rt, monkeypatch):
    monkeypatch.setitem(_contract.scratch_mod._pools, id(pool.backend), pool)
    s = rt.new_stream(0)
    pool.prewarm(s, {"p": 256, "q": 256})
    held = pool.buffers(s)
    ctx = graphs.capture(s)
    g = _in_thread(ctx.__enter__)  # another thread captures s (thread-local mode)
    allocs = rt.alloc_calls
    try:
        pool.request(s, 256, "q")  # this thread's work on s is captured: pinned to that graph
        with pytest.raises(ScratchNotWarmed, match="is capturing"):
            pool.request(s, 4096, "p")
        assert rt.alloc_calls == allocs
    finally:
        _in_thread(lambda: ctx.__exit__(None, None, None))
    assert g.ready
    after = pool.buffers(s)
    assert after["q"] != held["q"]  # the graph took it
    assert after["p"] == held["p"]  # never requested in the capture: still the stream's
    g.release()
    pool.check_invariants()


def test_captures_on_two_streams_and_two_devices_at_once(pool, rt, monkeypatch):
    monkeypatch.setitem(_contract.scratch_mod._pools, id(pool.backend), pool)
    streams = [rt.new_stream(d) for d in (0, 0, 1)]
    for x in streams:
        pool.prewarm(x, {"p": 512})
    held = {x.handle: pool.buffers(x)["p"] for x in streams}
    inside = threading.Barrier(len(streams))
    graphs_by_stream = {}

    def capture(x):
        with graphs.capture(x) as g:
            pool.request(x, 512, "p")
            inside.wait(5)  # every capture is open at once
        graphs_by_stream[x.handle] = g

    _together(*[lambda x=x: capture(x) for x in streams])
    assert all(g.ready for g in graphs_by_stream.values())
    for x in streams:
        now = pool.buffers(x)["p"]
        assert now != held[x.handle] and rt.pointer_device(now) == x.device
    assert pool.stats()["pinned_buffers"] == 3 and pool.stats()["live_graphs"] == 3
    for g in graphs_by_stream.values():
        g.release()
    assert pool.stats()["pinned_buffers"] == 0
    assert len(set(held.values())) == 3  # three streams, three buffers
    pool.check_invariants()


# ---- Sampler.capture on the backend under test -------------------------------------------------
def _host(backend, a, s):
    return backend.to_host(a, backend.stream(s)) if backend.is_device else np.asarray(a)


def _plan(backend, s):
    rows, vocab = (2, 64) if backend.name == "sim" else (3, 1000)
    small = {"_block": backend.warp_size(), "_splits": 2} if backend.name == "sim" else {}
    return rocsample.Sampler(rows, vocab, "float32", stream=s, **small), rows, vocab


def _dev(backend, a, s):
    return backend.as_array(a, "x", backend.stream(s)) if backend.is_device else a


def _ok(got, x, **kw):
    want, _, _, near = ref.sample_with_margin(x, **kw)
    assert ((got == want) | near).all(), f"got {got}, want {want}"


@pytest.mark.graph
def test_an_eager_sampler_call_between_capture_and_first_replay(backend, new_stream, rng):
    s = new_stream()
    plan, rows, vocab = _plan(backend, s)
    params = dict(temperature=0.8, top_k=5)
    x_g = rng.standard_normal((rows, vocab)).astype(np.float32)
    x, seed = _dev(backend, x_g.copy(), s), _dev(backend, np.full(rows, 11, np.int64), s)
    pos = _dev(backend, np.zeros(rows, np.int64), s)
    g = plan.capture(x, seed=seed, position=pos, advance_position=False, **params)
    # before the graph's first launch: an uncaptured call of the same plan on other logits
    x_e = rng.standard_normal((rows, vocab)).astype(np.float32)
    tok_e = plan(_dev(backend, x_e, s), seed=5, position=3, check=False, **params)[0]
    _ok(_host(backend, tok_e, s), x_e, seed=5, position=3, **params)
    g.replay(s)
    _ok(_host(backend, g.outputs[0], s), x_g, seed=11, position=0, **params)
    g.release()


@pytest.mark.graph
@pytest.mark.multi_gpu
def test_sampler_capture_on_a_stream_of_device_1(backend, new_stream, rng):
    if backend.runtime.device_count() < 2:
        pytest.skip("needs two devices (emulated on cpu/sim)")
    params = dict(temperature=0.7, top_p=0.9)
    with backend.on_device(1):
        s = new_stream(1)
        plan, rows, vocab = _plan(backend, s)
        xh = rng.standard_normal((rows, vocab)).astype(np.float32)
        x, seed = _dev(backend, xh, s), _dev(backend, np.full(rows, 4, np.int64), s)
        pos = _dev(backend, np.full(rows, 9, np.int64), s)
        pool = get_pool(backend)
        before = pool.buffers(s)
        g = plan.capture(x, seed=seed, position=pos, **params)
        after = pool.buffers(s)
        g.replay(s)
        _ok(_host(backend, g.outputs[0], s), xh, seed=4, position=9, **params)
        np.testing.assert_array_equal(_host(backend, pos, s), np.full(rows, 10))  # advanced once
        if backend.is_device:  # the cpu backend runs the reference and takes no scratch
            # the graph took the prewarmed buffer and the stream got a new one: all on device 1
            assert before and before != after
            ptrs = list(before.values()) + list(after.values())
            assert {backend.runtime.pointer_device(p) for p in ptrs} == {1}
        g.release()
