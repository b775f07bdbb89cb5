"""The scratch pool's contract (SPEC §4) on every backend; emulated devices on cpu and sim."""

from __future__ import annotations

import numpy as np
import pytest

from rocsample import CaptureError, ScratchNotWarmed, graphs
from rocsample.scratch import ScratchPool

from .work import expected, run_job


@pytest.fixture
def pool(backend):
    p = ScratchPool(backend)
    yield p
    p.trim()


def test_request_is_per_stream_and_grows(backend, pool, new_stream):
    s1, s2 = new_stream(), new_stream()
    a = pool.request(s1, 1000, "p")
    b = pool.request(s2, 1000, "p")
    assert pool.buffers(s1)["p"] != pool.buffers(s2)["p"]
    assert a.shape[0] >= 1000 and b.shape[0] >= 1000
    ptr = pool.buffers(s1)["p"]
    pool.request(s1, 500, "p")  # fits: no new allocation
    assert pool.buffers(s1)["p"] == ptr
    pool.request(s1, 100_000, "p")
    assert pool.buffers(s1)["p"] != ptr
    assert pool.capacity(s1, "p") >= 100_000
    pool.check_invariants()


def test_purposes_are_separate(pool, new_stream):
    s = new_stream()
    pool.request(s, 256, "a")
    pool.request(s, 256, "b")
    bufs = pool.buffers(s)
    assert bufs["a"] != bufs["b"]


def test_negative_request_rejected(pool, new_stream):
    with pytest.raises(ValueError, match="nbytes"):
        pool.request(new_stream(), -1)


@pytest.mark.multi_gpu
def test_devices_never_share_buffers(backend, pool, new_stream):
    rt = backend.runtime
    if rt.device_count() < 2:
        pytest.skip("needs two devices")
    s0, s1 = new_stream(0), new_stream(1)
    pool.request(s0, 4096, "p")
    pool.request(s1, 4096, "p")
    p0, p1 = pool.buffers(s0)["p"], pool.buffers(s1)["p"]
    assert rt.pointer_device(p0) == 0
    assert rt.pointer_device(p1) == 1
    pool.check_invariants()


def test_stats_and_repr(pool, new_stream):
    s = new_stream()
    pool.request(s, 300, "p")
    st = pool.stats()
    assert sum(st["bytes_by_stream"].values()) >= 300
    assert "ScratchPool" in repr(pool)


@pytest.mark.graph
def test_unwarmed_capture_refused_before_allocation(backend, pool, new_stream):
    s = new_stream()
    rt = backend.runtime
    before = (rt.alloc_calls, pool.stats()["bytes_by_stream"])
    with pytest.raises(ScratchNotWarmed, match=r"needs 4096 bytes, but 0 bytes are warmed"):
        with graphs.capture(s):
            pool.request(s, 4096, "p")
    assert rt.alloc_calls == before[0]
    assert pool.stats()["bytes_by_stream"] == before[1]
    assert pool.buffers(s) == {}
    # recovery: the capture was ended, so prewarm then capture works on the same stream
    pool.prewarm(s, {"p": 4096})
    out = backend.empty(16, np.int32) if backend.is_device else np.empty(16, np.int32)
    with graphs.capture(s) as g:
        run_job(backend, s, pool.request(s, 64, "p"), out, 7)
    g.replay(s)
    np.testing.assert_array_equal(backend.to_host(out, backend.stream(s)), expected(16, 7))
    g.release()


@pytest.mark.graph
def test_warmed_capture_pins_and_rewarms(backend, pool, new_stream, monkeypatch):
    import rocsample.scratch as scratch_mod

    monkeypatch.setitem(scratch_mod._pools, id(backend), pool)
    s = new_stream()
    pool.prewarm(s, {"p": 1024})
    ptr_before = pool.buffers(s)["p"]
    out = backend.empty(32, np.int32) if backend.is_device else np.empty(32, np.int32)
    with graphs.capture(s) as g:
        run_job(backend, s, pool.request(s, 128, "p"), out, 100)
    # the graph owns the captured buffer; the stream got a fresh one of the same size
    assert pool.buffers(s)["p"] != ptr_before
    assert pool.capacity(s, "p") >= 1024
    assert pool.stats()["pinned_buffers"] == 1
    # an uncaptured call before the first launch is correct and does not disturb the graph
    out2 = backend.empty(32, np.int32) if backend.is_device else np.empty(32, np.int32)
    run_job(backend, s, pool.request(s, 128, "p"), out2, 5)
    np.testing.assert_array_equal(backend.to_host(out2, backend.stream(s)), expected(32, 5))
    # growth and trim while the graph holds its buffer leave its replays correct
    pool.request(s, 1 << 16, "p")
    pool.trim(s)
    for _ in range(3):
        g.replay(s)
        np.testing.assert_array_equal(backend.to_host(out, backend.stream(s)), expected(32, 100))
    pool.check_invariants()
    g.release()
    pool.trim()
    assert pool.stats()["pinned_buffers"] == 0


@pytest.mark.graph
def test_failed_capture_unpins_and_stream_recovers(backend, pool, new_stream, monkeypatch):
    import rocsample.scratch as scratch_mod

    monkeypatch.setitem(scratch_mod._pools, id(backend), pool)
    s = new_stream()
    pool.prewarm(s, {"p": 256})
    with pytest.raises(RuntimeError, match="boom"):
        with graphs.capture(s):
            pool.request(s, 64, "p")
            raise RuntimeError("boom")
    assert pool.stats()["pinned_buffers"] == 0
    assert pool.stats()["active_captures"] == 0
    pool.request(s, 64, "p")  # not capturing any more


@pytest.mark.graph
def test_default_stream_cannot_be_captured(backend):
    with pytest.raises(CaptureError, match="default stream"):
        with graphs.capture(None):
            pass


@pytest.mark.graph
def test_released_graph_cannot_replay(backend, pool, new_stream):
    s = new_stream()
    with graphs.capture(s) as g:
        pass
    g.release()
    with pytest.raises(CaptureError, match="released"):
        g.replay(s)
