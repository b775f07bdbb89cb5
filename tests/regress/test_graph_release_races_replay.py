"""Regression: ``Graph.release`` and ``Graph.replay`` from two threads were not serialised.

What broke: ``release`` tested ``released`` and set it after destroying the executable graph, and
``replay`` tested ``ready`` and then launched, with nothing between them. Two threads releasing one
graph both destroyed its executable graph (a double ``cuGraphExecDestroy``) and both returned its
scratch to the pool. A release made while another thread's replay was being launched destroyed the
executable graph under that launch and recorded the release event *before* the launch was enqueued,
so the graph's scratch could be freed while the replay that reads it was still to run. Now a graph's
replays and its release hold one lock: a release waits for a launch in progress, and runs once.
"""

from __future__ import annotations

import threading
import time

import pytest

from rocsample import CaptureError, graphs
from rocsample.backends.emulated import EmulatedRuntime
from rocsample.scratch import get_pool
from tests.scratch.test_pool_contract import private_backend


class _SlowRuntime(EmulatedRuntime):
    """Logs launches, destroys and events; the driver calls that matter take a while."""

    def __init__(self) -> None:
        super().__init__(n_devices=2)
        self.log: list[str] = []
        self.in_call = threading.Event()

    def graph_launch(self, exec_, stream) -> None:
        self.log.append("launch")
        self.in_call.set()
        time.sleep(0.2)  # a launch being enqueued
        super().graph_launch(exec_, stream)
        self.log.append("launched")

    def graph_exec_destroy(self, exec_) -> None:
        self.log.append("destroy")
        self.in_call.set()
        time.sleep(0.2)
        super().graph_exec_destroy(exec_)

    def event_record(self, stream):
        self.log.append("event")
        return super().event_record(stream)


@pytest.fixture
def setup(monkeypatch):
    be = private_backend(monkeypatch, _SlowRuntime())
    rt = be.runtime
    pool = get_pool(be)
    s = rt.new_stream(1)
    pool.prewarm(s, {"a": 256, "b": 256})
    with graphs.capture(s) as g:
        pool.request(s, 256, "a")
        pool.request(s, 256, "b")
    rt.log.clear()
    return pool, rt, s, g


def _threads(*fns):
    errors: list[BaseException] = []

    def run(fn):
        try:
            fn()
        except BaseException as e:  # noqa: B036 - handed back below
            errors.append(e)

    ts = [threading.Thread(target=run, args=(fn,)) for fn in fns]
    for t in ts:
        t.start()
    for t in ts:
        t.join(10)
    return errors


def test_two_threads_releasing_one_graph_release_it_once(setup):
    pool, rt, s, g = setup
    frees = rt.free_calls

    def second():
        rt.in_call.wait(5)  # the first release is inside cuGraphExecDestroy
        g.release()

    errors = _threads(g.release, second)
    assert errors == []
    assert rt.log.count("destroy") == 1, rt.log
    assert rt.free_calls == frees + 2  # each of the graph's two buffers freed once
    assert pool.stats()["pinned_buffers"] == 0 and pool.stats()["live_graphs"] == 0
    pool.check_invariants()


def test_release_waits_for_a_replay_being_launched(setup):
    pool, rt, s, g = setup

    def release_during_launch():
        rt.in_call.wait(5)  # the replay is inside cuGraphLaunch
        g.release()

    errors = _threads(lambda: g.replay(s), release_during_launch)
    assert errors == [], errors  # the replay's launch was not pulled from under it
    # the release's events come after the launch it must wait for, on the stream it ran on
    assert rt.log == ["launch", "launched", "destroy", "event", "event"], rt.log
    assert g.replays == 1 and g.released
    with pytest.raises(CaptureError, match="released"):
        g.replay(s)
    pool.check_invariants()
