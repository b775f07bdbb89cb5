"""Edges of the scratch pool and Graph that the mutation run found untested (docs/MUTATION.md).

Each test names the mutant(s) it kills. They run on tests/scratch/test_pool_contract.py's private
emulated runtime, whose events complete only when the test says so.
"""

from __future__ import annotations

import numpy as np
import pytest

from rocsample import ScratchNotWarmed, graphs
from rocsample.scratch import get_pool
from tests.scratch.test_pool_contract import SpyRuntime, exact, private_backend, st


@pytest.fixture
def rt(monkeypatch):
    return private_backend(monkeypatch, SpyRuntime()).runtime


@pytest.fixture
def pool(rt):
    import rocsample.graphs

    return get_pool(rocsample.graphs.get_backend())  # the private backend graphs.capture uses


@pytest.fixture
def shared_pool(pool):
    return pool


def _replayed_graph(pool, s, purpose="g"):
    pool.prewarm(s, {purpose: 256})
    with graphs.capture(s) as g:
        pool.request(s, 256, purpose)
    g.replay(s)
    return g


def test_first_replay_on_a_bad_stream_is_refused_by_name(shared_pool, rt):
    # Graph.__init__ mutant: the "same stream object as last time" cache starting as "" instead
    # of None let replay("") skip the normalisation and hand "" to the runtime
    s = rt.new_stream(0)
    shared_pool.prewarm(s, {"g": 256})
    with graphs.capture(s) as fresh:
        shared_pool.request(s, 256, "g")
    for bad in ("", object()):
        with pytest.raises(TypeError, match="^stream: expected "):
            fresh.replay(bad)
    assert fresh.replays == 0
    fresh.release()


def test_a_buffer_retired_while_its_stream_captured_waits_for_an_event_after_the_capture(shared_pool, rt):
    # _collect mutants: the note "record the event once the capture is over" replaced by no
    # event (freed at once, ahead of the stream's queued work), and `continue` -> `break` past a
    # note still waiting (every retired buffer listed after it was dropped, never freed)
    pool = shared_pool
    s1, s2 = rt.new_stream(0), rt.new_stream(1)  # s2 on the other device: free to allocate
    g = _replayed_graph(pool, s1)
    # rocsample's own relaxed capture: the only kind under which a graph is released at once
    # (under any other capture it sees, the release waits: test_graph_release_inside_a_capture)
    with graphs.capture(s1, mode="relaxed") as g_rel:
        g.release()  # its buffer's event cannot be recorded on s1 now: a note is kept
        pool.request(s2, 256, "p")
        pool.request(s2, 4096, "p")  # the 256-byte buffer of s2 retires behind a completed event
        frees = rt.free_calls
        pool.request(s2, 16, "p")  # collect: the note waits, the s2 buffer after it is freed
        assert rt.free_calls == frees + 1
        assert pool.stats()["pending_frees"] == 1
    rt.complete_events = False
    events = len(rt.events)
    g_rel.release()  # never launched, holds no buffer: records no event of its own
    pool.request(s2, 16, "p")  # the capture is over: the event is recorded now, not yet done
    assert [e["stream"] for e in rt.events[events:]] == [s1.handle]
    assert rt.free_calls == frees + 1 and pool.stats()["pending_frees"] == 1
    rt.events[-1]["done"] = True
    pool.request(s2, 16, "p")
    assert rt.free_calls == frees + 2 and pool.stats()["pending_frees"] == 0
    pool.check_invariants()


def test_this_threads_capture_is_named_past_an_external_capture(shared_pool, rt):
    # _thread_capture mutant: `continue` -> `break` on an external record listed first lost the
    # name of this thread's own capture from the refusal
    pool = shared_pool
    ext, cap, other = rt.new_stream(0), rt.new_stream(0), rt.new_stream(0)
    pool.prewarm(ext, {"p": 256})
    pool.prewarm(cap, {"p": 256})
    pool.prewarm(other, {"p": 256})
    rt.begin_capture(st(ext), "relaxed")
    pool.request(ext, 64, "p")  # an external record, first in the pool's table
    try:
        with graphs.capture(cap) as g:
            with pytest.raises(ScratchNotWarmed, match=exact(
                    f"stream {other.handle:#x} on device 0: 'p' scratch needs 4096 bytes, but 256 "
                    "bytes are warmed, and allocating now would invalidate the thread_local capture "
                    f"of stream {cap.handle:#x} on this thread; prewarm every stream used while a "
                    "capture is open")):
                pool.request(other, 4096, "p")
        g.release()
    finally:
        rt.end_capture(st(ext))


@pytest.mark.parametrize("n", [np.int64(512), np.int32(300), np.uint16(512)])
def test_prewarm_takes_a_numpy_byte_count(pool, rt, n):
    # prewarm mutant: `not isinstance(sizes, bool)` -> `isinstance(...)` refused NumPy integers
    s = rt.new_stream(1)
    pool.prewarm(s, n)
    assert pool.capacity(s) == 512 and list(pool.buffers(s)) == ["default"]
    for bad in (True, np.bool_(True), 512.0, "512"):
        with pytest.raises(TypeError, match="^sizes: expected a byte count or a mapping"):
            pool.prewarm(s, bad)
