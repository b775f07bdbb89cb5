"""Regression: a stream of the emulated runtime (cpu / sim) reached the real CUDA driver.

What broke: the device gate died with SIGSEGV on an H200. A scratch test undid the patch that gave
``graphs.capture`` a private emulated backend, so the session's cuda backend normalised the test's
``EmulatedStream``: it has ``.cuda_stream`` (the PyTorch protocol), so its fake handle 0x1000 went
to ``cuStreamIsCapturing`` / ``cuStreamGetDevice``, which dereferenced it. Now every GPU backend
refuses an emulated stream object, or a ``Stream`` the emulated runtime normalised, with a
``TypeError`` naming ``stream`` before any driver call. The test itself was fixed too (it undoes
only its own patch: tests/scratch/test_scratch_audit.py).
"""

from __future__ import annotations

import pytest

from rocsample.backends import Stream
from rocsample.backends.emulated import EmulatedRuntime


def _driver_runtime_without_driver():
    """A DriverRuntime whose driver fails the test if it is ever called."""
    from rocsample.backends._driver import DriverRuntime

    class NoDriver:
        def __getattr__(self, name):
            raise AssertionError(f"the driver was called ({name}) with an emulated stream")

    class Vendor:
        driver = NoDriver()
        cuda = NoDriver()

    rt = DriverRuntime.__new__(DriverRuntime)
    DriverRuntime.__init__(rt, Vendor())
    rt.current_device = lambda: 0
    return rt


@pytest.mark.parametrize("form", ["object", "normalised"])
def test_an_emulated_stream_is_refused_before_the_driver(form):
    em = EmulatedRuntime(n_devices=2)
    s = em.new_stream(1)
    arg = s if form == "object" else em.stream(s)
    rt = _driver_runtime_without_driver()
    with pytest.raises(TypeError, match=r"^stream: expected a stream of this GPU backend, got an "
                                        r"emulated \w+ \(handle 0x1000\) of the cpu/sim runtime"):
        rt.stream(arg)


def test_a_plain_stream_still_passes_through():
    rt = _driver_runtime_without_driver()
    assert rt.emulated is False  # the GPU runtime: Backend.on_device switches numba's context
    st = Stream(0x55, 0, 0)
    assert rt.stream(st) is st


def test_the_mark_does_not_change_equality():
    em = EmulatedRuntime(n_devices=1)
    assert em.stream(None) == Stream(0, 0, 0) and hash(em.stream(None)) == hash(Stream(0, 0, 0))


@pytest.mark.gpu
def test_on_the_session_backend(backend):
    """On cuda/hip: an emulated stream is a TypeError (it was a SIGSEGV)."""
    s = EmulatedRuntime(n_devices=1).new_stream(0)
    with pytest.raises(TypeError, match="^stream: expected a stream of this GPU backend"):
        backend.stream(s)
