"""Regression: a forgotten graph finalized inside a scratch-pool call deadlocked.

What broke: ``Graph.__del__`` released the graph at once, and a release takes the pool's lock of
retired buffers. The garbage collector can run that finalizer at any allocation, including
inside ``_collect`` while the same thread holds that (non-reentrant) lock: the thread waited for
itself forever. The finalizer now queues the release, and the pool runs it at the start of its
next public call (request, prewarm, trim, stats), outside every lock.
"""

from __future__ import annotations

import gc
import threading

from rocsample import graphs
from tests.scratch.test_pool_contract import be, pool, rt  # noqa: F401 (fixtures)


def test_graph_finalized_while_the_pool_collects(pool, rt):  # noqa: F811
    s = rt.new_stream(0)
    pool.prewarm(s, {"p": 256})
    with graphs.capture(s) as g:
        pool.request(s, 256, "p")
    box = [g]
    del g
    rt.complete_events = False
    pool.request(s, 4096, "p")  # the 256-byte buffer is retired behind a pending event
    real_query = rt.event_query

    def query(event):  # the collector runs here, inside _collect, with the retired lock held
        if box:
            box.clear()  # the last reference to the graph
            gc.collect()
        return real_query(event)

    rt.event_query = query
    done = threading.Event()

    def collect():
        pool.request(s, 16, "p")  # collects the retired buffer: event_query runs
        done.set()

    t = threading.Thread(target=collect, daemon=True)
    t.start()
    t.join(10)
    assert done.is_set(), "the pool deadlocked finalizing a graph inside _collect"
    assert pool.stats()["live_graphs"] == 0  # the queued release ran at the next public call
    assert pool.stats()["pinned_buffers"] == 0
