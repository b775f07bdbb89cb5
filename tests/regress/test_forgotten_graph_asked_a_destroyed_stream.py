"""Regression: a forgotten graph's deferred release asked the driver about a destroyed stream.

What broke (compute-sanitizer racecheck and synccheck over the fuzz tests on an H200: SIGSEGV in
``cuStreamIsCapturing``): a graph dropped without ``release()`` queues its release from
``Graph.__del__``; the queued release ran at the start of a later pool call and recorded its
buffers' free-event on the graph's last stream, asking that stream's capture status first. When
the graph was collected together with its stream (a reference cycle), the stream's own finalizer
(cuStreamDestroy) had already run: the handle was dead, and asking it is undefined behaviour.
Now a forgotten graph's release touches none of its streams; its buffers are freed with no
event (cuMemFree waits for the device).
"""

from __future__ import annotations

from rocsample import graphs
from tests.scratch.test_pool_contract import be, pool, rt  # noqa: F401 (fixtures)


def test_forgotten_graph_release_asks_no_stream(pool, rt, monkeypatch):  # noqa: F811
    s = rt.new_stream(0)
    pool.prewarm(s, {"p": 256})
    with graphs.capture(s) as g:
        pool.request(s, 256, "p")
    g.replay(s)
    handed = []
    orig = pool._release_graph
    monkeypatch.setattr(pool, "_release_graph", lambda gid, last: handed.append(last) or orig(gid, last))
    recorded = []
    orig_rec = rt.event_record
    monkeypatch.setattr(rt, "event_record",
                        lambda st, *a, **kw: recorded.append(st.handle) or orig_rec(st, *a, **kw))
    g.__del__()  # what the collector runs for a graph nobody released
    assert not g.released
    other = rt.new_stream(0)
    pool.request(other, 16, "q")  # the pool's next public call runs the queued release
    assert g.released
    assert handed == [None]  # no stream of the graph to ask or record on
    assert s.handle not in recorded
    assert pool.stats()["live_graphs"] == 0 and pool.stats()["pinned_buffers"] == 0
    pool.check_invariants()


def test_an_explicit_release_still_waits_for_the_last_replay(pool, rt, monkeypatch):  # noqa: F811
    s = rt.new_stream(0)
    pool.prewarm(s, {"p": 256})
    with graphs.capture(s) as g:
        pool.request(s, 256, "p")
    g.replay(s)
    recorded = []
    orig = rt.event_record
    monkeypatch.setattr(rt, "event_record", lambda st, *a, **kw: recorded.append(st.handle) or orig(st, *a, **kw))
    pool.trim(s)  # the stream's own buffer is now the graph's only
    g.release()
    assert s.handle in recorded
