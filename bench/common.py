"""Timing helpers shared by the benchmark suites.

Two GPU figures per benchmark, for rocsample and for every peer alike (``record`` stores both):

``gpu_us``
    GPU time per call: ``GRAPH_CALLS`` back-to-back calls captured into *one* graph
    (``rocsample.graphs.capture`` for rocsample, ``torch.cuda.CUDAGraph`` for PyTorch and
    FlashInfer, both captured on a non-default stream), the graph replayed and timed with device
    events, divided by ``GRAPH_CALLS`` (median over ``GRAPH_SAMPLES`` measurements). No host
    launch path is inside the measured interval, so a shape whose host path is slower than its
    kernels still shows its kernel time.
``eager_us``
    Device events around ``EAGER_CALLS`` back-to-back eager calls (median): what a caller that
    launches op by op pays, host launch gaps included whenever the host is the slower side.

``gpu_method`` says how ``gpu_us`` was obtained: ``graph`` (as above), ``events`` (the call
cannot be captured, or its capture failed: ``gpu_us`` is then ``eager_us``, and ``graph_error``
says why), ``emulated-graph`` (``cpu``/``sim``: host clock around a replay of the emulated graph)
or ``host`` (``cpu``/``sim``, not captured: host clock).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import numpy as np

_COPY_BYTES = 1 << 30

GRAPH_CALLS = 20  # calls captured back to back into one graph
GRAPH_SAMPLES = 5  # timed replays (the median is kept)
GRAPH_REPS = 1  # replays between the two events of one sample
EAGER_CALLS = 10  # eager calls between the two events of one sample


def torch_cuda():
    """torch, if it is importable and has a CUDA device; else None."""
    try:
        import torch
    except Exception:
        return None
    return torch if torch.cuda.is_available() else None


def sync(backend, stream=None) -> None:
    if backend.is_device:
        backend.synchronize(stream)


def _host_clock(backend) -> bool:
    """cpu and the simulator: no device events; the host clock is the only clock."""
    return not backend.is_device or backend.name == "sim"


def device_time(backend, fn, iters: int = 50, warmup: int = 5, stream=None) -> float:
    """Median seconds per call of ``fn`` from device events around ``EAGER_CALLS`` back-to-back
    eager calls (host clock per call on cpu / sim): the *eager* figure, host launch path included.
    """
    if backend.name == "sim":  # a simulated launch takes about a second
        iters, warmup = min(iters, 3), min(warmup, 1)
    for _ in range(warmup):
        fn()
    sync(backend, stream)
    if _host_clock(backend):
        ts = []
        for _ in range(iters):
            t0 = time.perf_counter()
            fn()
            sync(backend, stream)
            ts.append(time.perf_counter() - t0)
        return statistics.median(ts)
    cuda = backend.cuda
    st = backend.stream(stream).numba
    times = []
    for _ in range(max(3, iters // EAGER_CALLS)):
        e0, e1 = cuda.event(timing=True), cuda.event(timing=True)
        e0.record(st)
        for _ in range(EAGER_CALLS):
            fn()
        e1.record(st)
        e1.synchronize()
        times.append(cuda.event_elapsed_time(e0, e1) / 1e3 / EAGER_CALLS)
    return statistics.median(times)


def graph_time(backend, fn, stream, calls: int = GRAPH_CALLS, samples: int = GRAPH_SAMPLES,
               reps: int = GRAPH_REPS) -> float:
    """Median seconds per call of ``fn`` from replays of one graph holding ``calls`` calls of it.

    ``fn`` must issue its work on ``stream`` (not the default stream) and be capture-safe once
    warmed: device arrays for every input that is not a cached host scalar, nothing that
    allocates or synchronizes. One warm call runs first. Raises what the capture raises.
    On cpu / sim the emulated graph is replayed under the host clock.
    """
    from rocsample import graphs

    if backend.name == "sim":
        calls, samples = min(calls, 2), min(samples, 2)
    fn()  # warm: compiles, puts host scalars on the device, sizes the stream's scratch
    sync(backend, stream)
    with graphs.capture(stream) as g:
        for _ in range(calls):
            fn()
    try:
        g.replay(stream)  # the first launch uploads the graph
        sync(backend, stream)
        times = []
        if _host_clock(backend):
            for _ in range(samples):
                t0 = time.perf_counter()
                g.replay(stream)
                sync(backend, stream)
                times.append((time.perf_counter() - t0) / calls)
            return statistics.median(times)
        cuda = backend.cuda
        st = backend.stream(stream).numba
        for _ in range(samples):
            e0, e1 = cuda.event(timing=True), cuda.event(timing=True)
            g.replay(stream)  # lead-in: the GPU is busy while the timed replays are queued
            e0.record(st)
            for _ in range(reps):
                g.replay(stream)
            e1.record(st)
            e1.synchronize()
            times.append(cuda.event_elapsed_time(e0, e1) / 1e3 / (reps * calls))
        return statistics.median(times)
    finally:
        g.release()


@dataclass
class Timing:
    """One benchmark's two GPU figures and how the first was obtained (see the module doc)."""

    gpu_s: float
    eager_s: float
    method: str
    calls: int = 0
    error: str | None = None

    def info(self) -> dict:
        d = dict(gpu_us=self.gpu_s * 1e6, eager_us=self.eager_s * 1e6, gpu_method=self.method,
                 graph_calls=self.calls)
        if self.error:
            d["graph_error"] = self.error
        return d


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:300]


def time_calls(backend, fn, stream, *, capturable: bool = True, strict: bool = True,
               graph_fn=None) -> Timing:
    """Both figures for a rocsample call issued on ``stream`` (a non-default stream).

    ``capturable=False``: the call synchronizes or allocates by design (``gpu_method`` is then
    ``events`` / ``host``). A failed capture raises when ``strict`` (a rocsample call that should
    be capturable and is not is a bug worth a failing benchmark); else it falls back likewise.
    ``graph_fn``: what to capture for the GPU figure when it is not ``fn`` itself (``fn`` a graph
    replay: ``graph_fn`` the call that graph holds).
    """
    eager = device_time(backend, fn, stream=stream)
    plain = "host" if _host_clock(backend) else "events"
    if not capturable:
        return Timing(eager, eager, plain)
    try:
        t = graph_time(backend, graph_fn or fn, stream)
    except Exception as e:
        if strict:
            raise
        sync(backend, stream)
        return Timing(eager, eager, plain, error=_why(e))
    calls = min(GRAPH_CALLS, 2) if backend.name == "sim" else GRAPH_CALLS
    return Timing(t, eager, "emulated-graph" if _host_clock(backend) else "graph", calls)


def torch_device_time(torch, fn, iters: int = 50, warmup: int = 5) -> float:
    """The eager figure for a torch callable: events around back-to-back calls, current stream."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(max(3, iters // EAGER_CALLS)):
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(EAGER_CALLS):
            fn()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) / 1e3 / EAGER_CALLS)
    return statistics.median(times)


def torch_graph_time(torch, fn, *, generators=(), calls: int = GRAPH_CALLS,
                     samples: int = GRAPH_SAMPLES, reps: int = GRAPH_REPS) -> float:
    """The GPU figure for a torch callable: ``calls`` calls captured into one CUDAGraph.

    As the PyTorch CUDA-graphs notes do it: warm-up on a side stream, capture on that
    (non-default) stream with ``torch.cuda.graph``; ``fn`` must read only static tensors made
    before the capture. A non-default ``torch.Generator`` used by ``fn`` is registered with the
    graph so each replay advances it. Replays run on the current stream, timed there with events.
    """
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    for gen in generators:
        g.register_generator_state(gen)  # torch >= 2.5; absent: the capture fails, events are used
    with torch.cuda.graph(g, stream=side):
        for _ in range(calls):
            fn()
    try:
        g.replay()
        torch.cuda.synchronize()
        cur = torch.cuda.current_stream()
        times = []
        for _ in range(samples):
            e0 = torch.cuda.Event(enable_timing=True)
            e1 = torch.cuda.Event(enable_timing=True)
            g.replay()  # lead-in, as in graph_time
            e0.record(cur)
            for _ in range(reps):
                g.replay()
            e1.record(cur)
            e1.synchronize()
            times.append(e0.elapsed_time(e1) / 1e3 / (reps * calls))
        return statistics.median(times)
    finally:
        g.reset()
        del g
        torch.cuda.empty_cache()  # the graph's private pool goes back before the next shape


def time_torch(torch, fn, *, generators=(), capturable: bool = True) -> Timing:
    """Both figures for a peer running on torch tensors; falls back to events if capture fails."""
    eager = torch_device_time(torch, fn)
    if not capturable:
        return Timing(eager, eager, "events")
    try:
        t = torch_graph_time(torch, fn, generators=generators)
    except Exception as e:  # e.g. an op that synchronizes (a host-side check) or a host RNG read
        try:
            torch.cuda.synchronize()
        except Exception:
            pass
        return Timing(eager, eager, "events", error=_why(e))
    return Timing(t, eager, "graph", GRAPH_CALLS)


def measure_copy_bandwidth(backend) -> float:
    """Bytes/s of a large device-to-device copy, counting bytes read plus bytes written."""
    if not backend.is_device or backend.name == "sim":
        a = np.ones(1 << 24, np.uint8)
        b = np.empty_like(a)
        t0 = time.perf_counter()
        for _ in range(5):
            np.copyto(b, a)
        return 2 * a.nbytes * 5 / (time.perf_counter() - t0)
    cuda = backend.cuda
    a = cuda.device_array(_COPY_BYTES // 4, dtype=np.float32)
    b = cuda.device_array(_COPY_BYTES // 4, dtype=np.float32)
    a[:] = 1.0  # not zeros: they can run faster than real data
    t = device_time(backend, lambda: b.copy_to_device(a), iters=20)
    return 2 * _COPY_BYTES / t


def record(benchmark, *, bytes_moved: int, copy_bw: float, timing: Timing | None = None,
           device_s: float | None = None, peer: str | None = None, **extra) -> None:
    """Store the figures in ``benchmark.extra_info``.

    Keys: ``gpu_us``, ``eager_us``, ``gpu_method``, ``graph_calls`` (and ``graph_error``) from
    ``timing``; ``device_time_us`` (= ``gpu_us``, the name older readers use); ``floor_us``,
    ``ratio_to_floor`` and ``effective_GBps`` from ``gpu_us``; ``eager_ratio_to_floor``;
    ``bytes_moved``, ``copy_bandwidth_GBps``; ``peer`` for a peer. ``device_s`` alone (a host
    reference) stands for both figures, measured by the host clock.
    """
    if timing is None:
        timing = Timing(device_s, device_s, "host")
    floor_s = bytes_moved / copy_bw
    benchmark.extra_info.update(
        bytes_moved=int(bytes_moved),
        **timing.info(),
        device_time_us=timing.gpu_s * 1e6,
        effective_GBps=bytes_moved / timing.gpu_s / 1e9,
        floor_us=floor_s * 1e6,
        ratio_to_floor=timing.gpu_s / floor_s,
        eager_ratio_to_floor=timing.eager_s / floor_s,
        copy_bandwidth_GBps=copy_bw / 1e9,
        **({"peer": peer} if peer else {}),
        **extra,
    )
