"""rocsample.graphs (SPEC §5) and its scratch hand-over (SPEC §4), asserted exactly.

Runs on the private spy runtime of test_pool_contract (emulated, two devices, events that complete
when the test says so), whatever ``--backend`` is.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

from rocsample import CaptureError, ScratchNotWarmed, graphs
from rocsample.backends import CaptureStatus

from . import test_pool_contract as _contract
from .test_pool_contract import exact, st

# the same fixtures: a private backend on the spy runtime, its pool and runtime
be, pool, rt = _contract.be, _contract.pool, _contract.rt


def test_capture_hands_buffers_to_the_graph_and_rewarms_the_stream(pool, rt):
    s = rt.new_stream(1)
    pool.prewarm(s, {"a": 256, "b": 512})
    before = pool.buffers(s)
    allocs = rt.alloc_calls
    with graphs.capture(s) as g:
        pool.check_invariants()
        assert pool.stats()["active_captures"] == 1
        pool.request(s, 256, "a")
        pool.request(s, 512, "b")
        pool.request(s, 100, "a")  # again: pinned once
    after = pool.buffers(s)
    assert set(after) == {"a", "b"}
    assert after["a"] != before["a"] and after["b"] != before["b"]  # the graph owns the old ones
    assert (pool.capacity(s, "a"), pool.capacity(s, "b")) == (256, 512)
    assert rt.alloc_calls == allocs + 2  # exactly one re-warm per captured buffer
    assert {rt.pointer_device(p) for p in after.values()} == {1}
    stats = pool.stats()
    assert (stats["pinned_buffers"], stats["live_graphs"], stats["active_captures"]) == (2, 1, 0)
    pool.check_invariants()
    # release: the graph's buffers wait for an event on the stream it last ran on
    rt.complete_events = False
    g.replay()
    g.release()
    assert [(e["stream"], e["device"]) for e in rt.events] == [(s.handle, 1)] * 2  # one per buffer
    stats = pool.stats()
    assert (stats["pinned_buffers"], stats["live_graphs"], stats["pending_frees"]) == (0, 0, 2)
    assert rt.free_calls == 0
    pool.check_invariants()
    pool.request(s, 10, "a")
    assert rt.free_calls == 0  # still running
    for e in rt.events:
        e["done"] = True
    pool.request(s, 10, "a")
    assert rt.free_calls == 2 and pool.stats()["pending_frees"] == 0
    assert rt.destroyed_events == rt.events
    assert pool.buffers(s) == after


def test_replay_streams_count_and_release_event(pool, rt):
    s, other = rt.new_stream(0), rt.new_stream(0)
    pool.prewarm(s, {"p": 256})
    out = np.zeros(4, np.int32)
    with graphs.capture(s) as g:
        pool.request(s, 256, "p")
        graphs.copy_to_device(out, np.array([1, 2, 3, 4], np.int32), s)
        assert out.tolist() == [0, 0, 0, 0]  # recorded, not run
    assert g.stream == st(s)
    assert (g.replays, g.released) == (0, False)
    g.replay()
    assert out.tolist() == [1, 2, 3, 4]
    g.replay(other)
    assert rt.launch_streams == [st(s), st(other)]
    assert g.replays == 2
    rt.complete_events = False
    g.release()
    assert [e["stream"] for e in rt.events] == [other.handle]  # the stream it last ran on
    assert rt.free_calls == 0


def test_replay_reuses_the_stream_of_the_same_object_only(pool, rt):
    # replay caches the normalised stream of the last stream object it was given: an
    # alternation with the default (None) and another object must still launch where asked
    s, other = rt.new_stream(0), rt.new_stream(1)
    pool.prewarm(s, {"p": 256})
    with graphs.capture(s) as g:
        pool.request(s, 256, "p")
    for arg in (other, None, other, s, other, None):
        g.replay(arg)
    want = [st(other), st(s), st(other), st(s), st(other), st(s)]
    assert rt.launch_streams == want
    assert g.replays == 6


def test_replay_on_an_int_handle_is_normalised_every_time(pool, rt):
    # an int handle is never cached: 0 is the current device's legacy stream, so the same int
    # means another stream once the current device changes
    s = rt.new_stream(0)
    pool.prewarm(s, {"p": 256})
    with graphs.capture(s) as g:
        pool.request(s, 256, "p")
    try:
        rt.select_device(0)
        g.replay(0)
        rt.select_device(1)
        g.replay(0)
    finally:
        rt.select_device(0)
    assert [(x.handle, x.device) for x in rt.launch_streams] == [(0, 0), (0, 1)]


def test_replay_errors_and_release_destroys_once(pool, rt):
    s = rt.new_stream(0)
    with graphs.capture(s) as g:
        assert not g.ready
        assert repr(g) == f"<rocsample Graph #{g.id} capturing, 0 replays>"
        with pytest.raises(CaptureError, match=exact("graph: not replayable (capture not finished)")):
            g.replay()
    assert g.ready and g.released is False
    g.replay(s)
    assert repr(g) == f"<rocsample Graph #{g.id} ready, 1 replays>"
    exec_, graph = g._exec, g._graph
    g.release()
    g.release()
    assert rt.destroyed_execs == [exec_] and rt.destroyed_graphs == [graph]
    assert not g.ready and g.released is True
    assert repr(g) == f"<rocsample Graph #{g.id} released, 1 replays>"
    with pytest.raises(CaptureError, match=exact("graph: not replayable (released)")):
        g.replay(s)


def test_failed_capture_unpins_and_its_graph_releases_harmlessly(pool, rt):
    s = rt.new_stream(0)
    pool.prewarm(s, {"p": 256})
    ptr = pool.buffers(s)["p"]
    with pytest.raises(RuntimeError, match="boom"):
        with graphs.capture(s) as g:
            pool.request(s, 256, "p")
            raise RuntimeError("boom")
    assert len(rt.destroyed_graphs) == 1  # the partial graph
    assert not g.ready
    g.release()
    assert len(rt.destroyed_graphs) == 1 and rt.destroyed_execs == []
    assert pool.buffers(s) == {"p": ptr}
    assert pool.stats()["pinned_buffers"] == 0
    pool.check_invariants()  # pin counts back to zero, not below
    with graphs.capture(s) as g2:
        pool.request(s, 256, "p")
    assert g2.ready
    g2.release()


def test_forgotten_graph_releases_its_scratch(pool, rt):
    s = rt.new_stream(0)
    pool.prewarm(s, {"p": 256})
    with graphs.capture(s) as g:
        pool.request(s, 256, "p")
    assert pool.stats()["live_graphs"] == 1
    del g
    gc.collect()
    assert (pool.stats()["live_graphs"], pool.stats()["pinned_buffers"]) == (0, 0)
    assert rt.free_calls == 1


def test_invalidated_capture_is_ended_and_the_stream_recovers(pool, rt):
    s = rt.new_stream(0)
    pool.prewarm(s, {"p": 256})
    with pytest.raises(CaptureError, match=exact(
        f"stream {s.handle:#x} on device 0: its capture was invalidated; end it "
        "(rocsample.graphs.capture does) and capture again"
    )):
        with graphs.capture(s):
            with pytest.raises(CaptureError):
                rt.mem_alloc(16, 0)  # someone allocates: the driver invalidates the capture
            pool.request(s, 16, "p")
    assert rt.capture_status(st(s)) is CaptureStatus.NONE
    assert pool.stats()["active_captures"] == 0
    with graphs.capture(s) as g:
        pool.request(s, 16, "p")
    g.release()


def test_global_mode_capture(pool, rt):
    s, other, old = rt.new_stream(0), rt.new_stream(0), rt.new_stream(0)
    pool.prewarm(s, {"p": 256})
    pool.prewarm(other, {"p": 256})
    pool.prewarm(old, {"p": 256})
    with graphs.capture(old) as g_old:
        pool.request(old, 256, "p")
    frees = rt.free_calls
    with graphs.capture(s, mode="global") as g:
        pool.request(s, 256, "p")
        with pytest.raises(ScratchNotWarmed, match=f"stream {other.handle:#x} on device 0: 'p' scratch "
                           f"needs 4096 bytes.*would invalidate the global capture of stream {s.handle:#x}"):
            pool.request(other, 4096, "p")
        assert pool.trim(other) == 0
        # destroying the graph (and freeing its buffer) now would invalidate the capture: the
        # release waits (tests/regress/test_graph_release_inside_a_capture.py)
        g_old.release()
        assert not g_old.ready and not g_old.released and rt.free_calls == frees
    assert g.ready
    assert not g_old.released and rt.free_calls == frees
    pool.request(other, 16, "p")  # the next public call releases it and frees its buffer
    assert g_old.released
    assert pool.stats()["pending_frees"] == 0 and rt.free_calls == frees + 1
    g.release()


def test_capture_ending_during_another_global_capture_defers_the_rewarm(pool, rt):
    glob, s = rt.new_stream(0), rt.new_stream(0)
    pool.prewarm(s, {"p": 256})
    rt.begin_capture(st(glob), "global")
    allocs = rt.alloc_calls
    with graphs.capture(s) as g:
        pool.request(s, 256, "p")
    # no allocation while the global capture is open: the stream is left unwarmed
    assert rt.alloc_calls == allocs
    assert pool.capacity(s, "p") == 0 and pool.buffers(s) == {}
    assert rt.capture_status(st(glob)) is CaptureStatus.ACTIVE
    pool.check_invariants()
    rt.end_capture(st(glob))
    g.release()
    assert rt.free_calls == 1 and pool.stats()["pinned_buffers"] == 0
    assert pool.request(s, 100, "p").shape == (256,)
    pool.check_invariants()


def test_hold_keeps_objects_for_the_graph_being_captured_on_that_stream(pool, rt):
    s, other = rt.new_stream(0), rt.new_stream(1)
    a, b, c = object(), object(), object()
    graphs.hold(st(s), a)  # no capture: nothing kept anywhere
    pool.prewarm(s, {"p": 64})
    with graphs.capture(s) as g:
        graphs.hold(st(s), b, None)  # None is skipped
        graphs.hold(st(other), c)  # another stream: not this graph's
    graphs.hold(st(s), a)  # the capture is over
    assert g._held == [b]
    g.release()
    assert g._held == []
    with pytest.raises(RuntimeError):
        with graphs.capture(s) as g2:
            graphs.hold(st(s), c)
            raise RuntimeError("the block fails")
    graphs.hold(st(s), a)  # a failed capture is no longer registered either
    assert g2._held == [c]
