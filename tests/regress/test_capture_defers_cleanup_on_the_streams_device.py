"""Regression: a capture on a stream of another device left that device's frees enabled.

What broke: ``graphs.capture`` stops numba from freeing device memory while the capture is open
(``cuda.defer_cleanup()``: a cuMemFree from the capturing thread invalidates the capture). But
numba's ``defer_cleanup`` acts on the *current* context, and the capture's stream need not belong
to the current device: capturing a stream of device 1 while device 0 was current deferred device
0's frees and left device 1's on, so numba could free a device-1 array in the middle of the
capture. Now the deferral is entered with the stream's device current (and the current device is
the caller's again inside the block).
"""

from __future__ import annotations

import contextlib

import pytest

from rocsample import graphs
from rocsample.backends.emulated import EmulatedRuntime
from tests.scratch.test_pool_contract import private_backend


class _FakeCuda:
    """numba.cuda's ``defer_cleanup``: per context, i.e. per device current when it is entered."""

    def __init__(self, rt) -> None:
        self.rt = rt
        self.deferred: dict[int, int] = {}

    @contextlib.contextmanager
    def defer_cleanup(self):
        dev = self.rt.current_device()
        self.deferred[dev] = self.deferred.get(dev, 0) + 1
        try:
            yield
        finally:
            self.deferred[dev] -= 1


@pytest.fixture
def be(monkeypatch):
    b = private_backend(monkeypatch, EmulatedRuntime(n_devices=2))
    b.cuda = _FakeCuda(b.runtime)
    return b


@pytest.mark.parametrize("stream_device", [0, 1])
def test_frees_are_deferred_on_the_capture_streams_device(be, stream_device):
    rt = be.runtime
    s = rt.new_stream(stream_device)
    assert rt.current_device() == 0
    with graphs.capture(s) as g:
        assert be.cuda.deferred == {stream_device: 1}
        assert rt.current_device() == 0  # the block runs with the caller's device current
    assert be.cuda.deferred == {stream_device: 0}
    g.release()


def test_the_deferral_ends_when_the_capture_fails(be):
    s = be.runtime.new_stream(1)
    with pytest.raises(RuntimeError, match="boom"):
        with graphs.capture(s):
            raise RuntimeError("boom")
    assert be.cuda.deferred == {1: 0}
    assert be.runtime.current_device() == 0
