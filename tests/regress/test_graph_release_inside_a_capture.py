"""Regression: releasing a graph while another capture was open invalidated that capture.

What broke (found by the scratch state-machine fuzz on an H200): a forgotten graph's queued
release ran at the start of a pool request made inside ``graphs.capture`` of another stream, and
``cuGraphExecDestroy`` failed with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: destroying a graph is
an "unsafe" call under a global or this thread's capture, like cuMemFree, so the open capture
was invalidated too (its end raised CAPTURE_INVALIDATED). The same happened to an explicit
``release()`` inside a capture. Now a release that an open capture forbids makes the graph
unreplayable at once and is carried out at the pool's first public call after the capture ends.
The emulated runtime models the driver's rule (a graph destroyed under such a capture
invalidates it), so this runs on cpu and sim.
"""

from __future__ import annotations

import gc

import pytest

from rocsample import CaptureError, graphs
from tests.scratch.test_pool_contract import be, pool, rt  # noqa: F401 (fixtures)


def _graph(pool, rt):  # noqa: F811
    s = rt.new_stream(0)
    pool.prewarm(s, {"p": 256})
    with graphs.capture(s) as g:
        pool.request(s, 256, "p")
    return g


@pytest.mark.parametrize("mode", ["thread_local", "global"])
def test_explicit_release_inside_another_capture(pool, rt, mode):  # noqa: F811
    g = _graph(pool, rt)
    s2 = rt.new_stream(0)
    pool.prewarm(s2, {"q": 256})
    with graphs.capture(s2, mode=mode) as g2:
        pool.request(s2, 256, "q")
        g.release()  # would destroy the graph now: invalidates this capture
        assert not g.ready
        with pytest.raises(CaptureError, match="not replayable"):
            g.replay()
    assert g2.ready  # the capture ended valid
    assert not g.released  # its destruction waits for the pool's next call, outside the capture
    pool.request(s2, 16, "q")
    assert g.released and pool.stats()["live_graphs"] == 1
    g2.release()
    assert pool.stats()["live_graphs"] == 0


def test_forgotten_graph_released_inside_a_capture(pool, rt):  # noqa: F811
    g = _graph(pool, rt)
    del g
    gc.collect()  # the finalizer queues the release
    s2 = rt.new_stream(0)
    pool.prewarm(s2, {"q": 256})
    with graphs.capture(s2) as g2:
        pool.request(s2, 256, "q")  # runs the queued release: deferred again, not done here
    assert g2.ready
    pool.stats()  # a public call outside the capture: now it is released
    assert pool.stats()["live_graphs"] == 1
    g2.release()
    pool.check_invariants()


def test_release_outside_any_capture_is_immediate(pool, rt):  # noqa: F811
    g = _graph(pool, rt)
    g.release()
    assert g.released and pool.stats()["live_graphs"] == 0
