"""Regression: a foreign capture on one device did not stop allocations on another.

What broke (found by mutation testing's new pool tests, on the emulated runtime): the pool asked
for foreign captures (a torch.cuda.graph on a non-blocking stream, which the legacy-stream probe
misses) only on the device of the request. CUDA forbids cuMemAlloc / cuMemFree while any global
capture is open in the process, or while this thread has a capture open, whatever the device;
so a scratch request on device 0 made during the user's capture on device 1 allocated and
invalidated that capture. Now every device rocsample knows a stream of is asked, and the request
is refused with ScratchNotWarmed before any allocation. The emulated runtime's rule was
per-device too and is now process-wide, as the driver's is.
"""

from __future__ import annotations

import pytest

import rocsample as rs
from rocsample import scratch
from rocsample.backends import CaptureStatus


@pytest.mark.parametrize("mode", ["global", "thread_local"])
def test_growth_on_device_0_refused_during_a_capture_on_device_1(backend, new_stream, mode):
    rt = backend.runtime
    if not rt.emulated:
        pytest.skip("cpu-only: the emulated runtime's non-blocking streams on two devices")
    if rt.device_count() < 2:
        pytest.skip("needs two devices (emulated on cpu/sim)")
    s1 = rt.new_stream(1, non_blocking=True)
    st1 = backend.stream(s1)
    scratch.prewarm(s1, 256)  # a call ran on it: the pool knows the stream
    s0 = new_stream(0)
    rt.begin_capture(st1, mode)
    try:
        calls = rt.alloc_calls
        with pytest.raises(rs.ScratchNotWarmed, match="device 1 \\(not begun by rocsample\\)"):
            scratch.request(s0, 4096, "grow")
        assert rt.alloc_calls == calls
        assert rt.capture_status(st1) is CaptureStatus.ACTIVE, "the capture was invalidated"
    finally:
        rt.end_capture(st1)
    scratch.request(s0, 4096, "grow")  # after the capture: allowed
