"""Regression: releasing a graph whose stream was capturing leaked the graph's scratch for good.

What broke: ``Graph.release`` returns the graph's buffers to the pool behind an event recorded on
the stream the graph last ran on. When that stream was capturing at the time (the release made
inside another ``graphs.capture`` of the same stream, or while another thread captured it), the
event was recorded *into the capture*. The driver never completes such an event for the host:
``cuEventQuery`` on it returns CUDA_ERROR_CAPTURED_EVENT, so the pool read it as "still running" on
every collect and never freed the buffers. (The emulated runtime answered every query "done", so
the tests could not see it; it now models that rule.) Now the pool records the event once the
stream has stopped capturing; the graph's replays enqueued before the capture are still ordered
before it.
"""

from __future__ import annotations

import threading

import pytest

from rocsample import graphs
from rocsample.backends import CaptureStatus, Stream
from rocsample.backends.emulated import EmulatedRuntime
from rocsample.scratch import get_pool
from tests.scratch.test_pool_contract import private_backend


@pytest.fixture
def env(monkeypatch):
    be = private_backend(monkeypatch, EmulatedRuntime(n_devices=2))
    rt = be.runtime
    return get_pool(be), rt


def test_the_emulated_runtime_never_completes_an_event_recorded_in_a_capture(env):
    _, rt = env
    s = rt.new_stream(0)
    st = Stream(s.handle, 0, 0)
    assert rt.event_query(rt.event_record(st)) is True
    rt.begin_capture(st, "relaxed")
    captured = rt.event_record(st)
    rt.end_capture(st)
    assert rt.event_query(captured) is False  # CUDA_ERROR_CAPTURED_EVENT, read as "not done"


def _graph(pool, s):
    pool.prewarm(s, {"p": 256})
    with graphs.capture(s) as g:
        pool.request(s, 256, "p")
    g.replay(s)
    return g


def test_release_inside_a_capture_of_its_stream_frees_after_the_capture(env):
    pool, rt = env
    s = rt.new_stream(1)
    old = _graph(pool, s)
    frees = rt.free_calls
    with graphs.capture(s) as g2:
        pool.request(s, 256, "p")
        old.release()
        assert rt.free_calls == frees  # nothing freed inside a capture
    assert g2.ready
    pool.request(s, 16, "p")  # the next collect, the capture over
    assert rt.free_calls == frees + 1
    assert pool.stats()["pending_frees"] == 0 and pool.stats()["live_graphs"] == 1
    g2.release()
    assert rt.free_calls == frees + 2 and pool.stats()["pending_frees"] == 0
    pool.check_invariants()


def test_release_while_another_thread_captures_its_stream(env):
    pool, rt = env
    s = rt.new_stream(0)
    old = _graph(pool, s)
    frees = rt.free_calls
    begun, released = threading.Event(), threading.Event()
    out = {}

    def capture_in_a_thread():
        with graphs.capture(s) as g:
            pool.request(s, 256, "p")
            begun.set()
            released.wait(5)
        out["g"] = g

    t = threading.Thread(target=capture_in_a_thread)
    t.start()
    begun.wait(5)
    assert rt.capture_status(Stream(s.handle, 0, 0)) is CaptureStatus.ACTIVE
    old.release()  # this thread is not capturing: it collects, but the event must wait
    released.set()
    t.join(10)
    pool.request(s, 16, "p")
    assert rt.free_calls == frees + 1 and pool.stats()["pending_frees"] == 0
    out["g"].release()
    pool.check_invariants()
