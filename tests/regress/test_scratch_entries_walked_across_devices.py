"""Regression: a thread on one device walked the pool's tables while a thread on another changed them.

What broke: ``ScratchPool._entries`` holds every device's buffers in one dict, but each device's
lock guards only that device's entries. ``trim`` and ``buffers`` (under device 0's lock) and
``_is_current`` looped over the whole dict in Python, so a request on device 1 that added an entry
meanwhile made them raise ``RuntimeError: dictionary changed size during iteration``; ``stats``
(which takes no lock) did the same over the pin table while a capture on another stream pinned a
buffer. Now each walks a snapshot of the table, taken in one step.
"""

from __future__ import annotations

import sys
import threading
import time

from rocsample.backends import Stream
from rocsample.backends.cpu import CpuBackend
from rocsample.backends.emulated import EmulatedRuntime
from rocsample.scratch import ScratchPool


class _Dev0(int):
    """Device 0, with a hook run the first time the pool compares it (a thread switch, on cue)."""

    hook = None

    def __eq__(self, other):
        hook, _Dev0.hook = _Dev0.hook, None
        if hook is not None:
            hook()
        return int(self) == int(other)

    __hash__ = int.__hash__


_DEV0 = _Dev0(0)  # one object: dict lookups match it by identity and never run the hook


class _Runtime(EmulatedRuntime):
    def __init__(self) -> None:
        super().__init__(n_devices=2)

    def stream(self, stream) -> Stream:
        st = super().stream(stream)
        return Stream(st.handle, _DEV0, st.numba) if st.device == 0 else st


def _on_another_thread(fn):
    errors = []

    def run():
        try:
            fn()
        except BaseException as e:  # noqa: B036 - handed back below
            errors.append(e)

    t = threading.Thread(target=run)
    t.start()
    t.join(10)
    assert not t.is_alive(), "the device-1 thread never finished (deadlock)"
    if errors:
        raise errors[0]


def _pool_with_entries():
    be = CpuBackend()
    be.runtime = rt = _Runtime()
    pool = ScratchPool(be)
    s0, other0, s1 = rt.new_stream(0), rt.new_stream(0), rt.new_stream(1)
    for p in ("a", "b", "c"):
        pool.request(s0, 256, p)
        pool.request(other0, 256, p)
    pool.request(s1, 256, "a")
    return pool, rt, s0, other0, s1


def test_trim_on_device_0_while_device_1_adds_a_buffer():
    pool, rt, s0, other0, s1 = _pool_with_entries()
    _Dev0.hook = lambda: _on_another_thread(lambda: pool.request(s1, 256, "new"))
    assert pool.trim(s0) == 3 * 256
    assert _Dev0.hook is None, "the hook never ran: the test did not exercise the walk"
    assert sorted(pool.buffers(other0)) == ["a", "b", "c"] and pool.buffers(s0) == {}
    assert sorted(pool.buffers(s1)) == ["a", "new"]
    pool.check_invariants()


def test_buffers_of_device_0_while_device_1_adds_a_buffer():
    pool, rt, s0, other0, s1 = _pool_with_entries()
    _Dev0.hook = lambda: _on_another_thread(lambda: pool.request(s1, 256, "new"))
    assert sorted(pool.buffers(s0)) == ["a", "b", "c"]
    assert _Dev0.hook is None
    pool.check_invariants()


def test_stats_while_another_device_pins_buffers():
    # stats takes no lock; a capture on device 1 pins a buffer per request meanwhile
    be = CpuBackend()
    be.runtime = rt = EmulatedRuntime(n_devices=2)
    pool = ScratchPool(be)
    s1 = rt.new_stream(1)
    n = 3000
    for i in range(n):
        pool.request(s1, 1, f"p{i}")
    for i in range(n // 2):  # a table worth walking
        pool._pins[-1 - i] = 1
    rt.begin_capture(Stream(s1.handle, 1, 0), "relaxed")  # a capture rocsample did not begin
    errors: list[BaseException] = []
    stop = threading.Event()

    def pin():
        try:
            for i in range(n):
                if stop.is_set():
                    return
                pool.request(s1, 1, f"p{i}")  # served and pinned: the pin table grows
        finally:
            stop.set()

    def read():
        try:
            while not stop.is_set():
                pool.stats()
        except BaseException as e:  # noqa: B036 - reported below
            errors.append(e)
            stop.set()

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=pin), threading.Thread(target=read)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    finally:
        sys.setswitchinterval(old)
        rt.end_capture(Stream(s1.handle, 1, 0))
    assert not errors, f"stats failed after {time.monotonic() - t0:.2f}s: {errors[0]!r}"
    assert pool.stats()["pinned_buffers"] == n + n // 2
