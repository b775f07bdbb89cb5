"""Regression: two devices' threads collecting retired scratch at once double-freed a buffer.

What broke: ``_retired`` is one list for every device, but ``_collect`` rewrote it under only the
calling device's lock. A thread on device 1 could collect (and free) an item while a thread on
device 0 was part-way through the same list, which then freed it again (or dropped items appended
meanwhile, leaking them).
"""

from __future__ import annotations

import threading

from rocsample.backends.cpu import CpuBackend
from rocsample.backends.emulated import EmulatedRuntime
from rocsample.scratch import ScratchPool


class _HookedEvents(EmulatedRuntime):
    """Events complete when ``done`` is set; the first query after ``hook`` is set runs it."""

    def __init__(self) -> None:
        super().__init__(n_devices=2)
        self.done = False
        self.hook = None

    def event_record(self, stream):
        return {"stream": stream.handle}

    def event_query(self, event) -> bool:
        hook, self.hook = self.hook, None
        if hook is not None:
            hook()
        return self.done


def test_concurrent_collect_on_two_devices_frees_once():
    be = CpuBackend()
    be.runtime = rt = _HookedEvents()
    pool = ScratchPool(be)
    a, b = rt.new_stream(0), rt.new_stream(1)
    pool.request(a, 256)
    pool.request(a, 1024)  # retires a's first buffer; its event is pending
    pool.request(b, 256)
    rt.done = True
    errors = []

    def device1_work():
        try:
            pool.request(b, 4096)  # collects, then retires b's first buffer
        except Exception as e:
            errors.append(e)

    def in_the_middle_of_device0_collect():
        t = threading.Thread(target=device1_work)
        t.start()
        t.join(0.3)  # fixed pool: t waits for device 0's collect to finish
        threads.append(t)

    threads = []
    rt.hook = in_the_middle_of_device0_collect
    pool.request(a, 10)  # device 0 collects; the hook runs device 1's request meanwhile
    for t in threads:
        t.join(10)
    assert errors == []
    pool.trim()
    assert rt.free_calls == rt.alloc_calls == 4
    assert pool.stats()["pending_frees"] == 0
    pool.check_invariants()
