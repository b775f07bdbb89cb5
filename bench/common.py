"""Timing helpers shared by the benchmark suites."""

from __future__ import annotations

import statistics
import time

import numpy as np

_COPY_BYTES = 1 << 30


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


def device_time(backend, fn, iters: int = 50, warmup: int = 5, stream=None) -> float:
    """Median seconds per call of ``fn`` measured with device events (host clock on cpu)."""
    for _ in range(warmup):
        fn()
    sync(backend, stream)
    if not backend.is_device or backend.name == "sim":
        ts = []
        for _ in range(iters):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        return statistics.median(ts)
    cuda = backend.cuda
    st = backend.stream(stream).numba
    times = []
    for _ in range(max(3, iters // 10)):
        e0, e1 = cuda.event(timing=True), cuda.event(timing=True)
        e0.record(st)
        for _ in range(10):
            fn()
        e1.record(st)
        e1.synchronize()
        times.append(cuda.event_elapsed_time(e0, e1) / 1e3 / 10)
    return statistics.median(times)


def torch_device_time(torch, fn, iters: int = 50, warmup: int = 5) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(max(3, iters // 10)):
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(10):
            fn()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) / 1e3 / 10)
    return statistics.median(times)


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


def record(benchmark, *, bytes_moved: int, device_s: float, copy_bw: float, peer: str | None = None,
           **extra) -> None:
    floor_s = bytes_moved / copy_bw
    benchmark.extra_info.update(
        bytes_moved=int(bytes_moved),
        device_time_us=device_s * 1e6,
        effective_GBps=bytes_moved / device_s / 1e9,
        floor_us=floor_s * 1e6,
        ratio_to_floor=device_s / floor_s,
        copy_bandwidth_GBps=copy_bw / 1e9,
        **({"peer": peer} if peer else {}),
        **extra,
    )
