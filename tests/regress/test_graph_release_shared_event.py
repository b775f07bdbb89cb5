"""Regression: releasing a graph with several scratch buffers destroyed one event several times.

What broke: ``_release_graph`` recorded one event for all of the graph's buffers and ``_collect``
destroyed each retired item's event, so the event was destroyed once per buffer. On the driver
runtime the second ``cuEventQuery`` then hit a destroyed handle (non-zero status, read as "not
done"), so every buffer after the first was never freed. Also an event was recorded (and never
destroyed) when a release retired nothing.
"""

from __future__ import annotations

from rocsample import graphs
from rocsample.backends.emulated import EmulatedRuntime
from rocsample.scratch import get_pool
from tests.scratch.test_pool_contract import private_backend


class _StrictEvents(EmulatedRuntime):
    """Events as handles: querying or destroying a destroyed one fails, as the driver's do."""

    def __init__(self) -> None:
        super().__init__(n_devices=1)
        self.live: set[int] = set()
        self.recorded = 0

    def event_record(self, stream):
        self.recorded += 1
        self.live.add(self.recorded)
        return self.recorded

    def event_query(self, event) -> bool:
        return event in self.live  # a destroyed handle reads as "not done", like CUDA_ERROR_INVALID_HANDLE

    def event_destroy(self, event) -> None:
        if event not in self.live:
            raise RuntimeError(f"cuEventDestroy of destroyed event {event}")
        self.live.remove(event)


def test_release_frees_every_buffer_and_destroys_each_event_once(monkeypatch):
    be = private_backend(monkeypatch, _StrictEvents())
    rt = be.runtime
    pool = get_pool(be)
    s = rt.new_stream(0)
    pool.prewarm(s, {"a": 256, "b": 256, "c": 256})
    frees = rt.free_calls
    with graphs.capture(s) as g:
        for p in "abc":
            pool.request(s, 256, p)
    g.release()
    assert rt.free_calls == frees + 3
    assert pool.stats()["pending_frees"] == 0
    assert rt.live == set()  # every event recorded was destroyed
    with graphs.capture(s) as empty:
        pass
    empty.release()  # retires nothing: records no event
    assert rt.live == set()
