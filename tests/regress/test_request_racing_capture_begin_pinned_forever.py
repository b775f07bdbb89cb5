"""Regression: a scratch request racing the start of a capture stayed pinned for good.

What broke: ``graphs.capture`` began the driver's capture and only then told the pool. A request
from another thread on that stream in between found the stream capturing but no capture the pool
knew of, so it pinned the buffer to an "external" capture record that nothing ever releases: the
buffer stayed pinned after the graph was released. The pool now learns of the capture first.
"""

from __future__ import annotations

import threading

from rocsample import graphs
from tests.scratch.test_pool_contract import be, pool, rt  # noqa: F401 (fixtures)


def test_request_between_driver_begin_and_pool_registration(pool, rt):  # noqa: F811
    s = rt.new_stream(0)
    pool.prewarm(s, {"p": 256})
    real_begin = rt.begin_capture

    def begin(stream, mode):
        real_begin(stream, mode)
        t = threading.Thread(target=lambda: pool.request(s, 256, "p"))  # another thread, now
        t.start()
        t.join()

    rt.begin_capture = begin
    with graphs.capture(s) as g:
        pass
    rt.begin_capture = real_begin
    assert pool.stats()["pinned_buffers"] == 1  # the racing request's buffer, held by g
    g.release()
    stats = pool.stats()
    assert (stats["pinned_buffers"], stats["live_graphs"], stats["active_captures"]) == (0, 0, 0)
    pool.check_invariants()
