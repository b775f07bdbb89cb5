"""set_rows benchmarks: decode (1 row into a 4096-row ring), prefill (512 rows), large (64K x 4096).

Each case runs rocsample's set_rows for dst f32, f16 and q8_0 (src float32, ne0 = 4096 unless
noted) on a non-default stream, timed to a finished result by pytest-benchmark, and records the
bytes moved (src read + dst rows written + idx), effective GB/s and the ratio to the memory floor
(bytes / measured device copy bandwidth) in ``extra_info``, with both GPU figures of
``bench/common.py``: ``gpu_us`` (20 calls captured into one graph, replays timed with device
events) and ``eager_us`` (events around back-to-back eager calls, host launch path included).
Peers on the same inputs in the same run: PyTorch ``index_copy_`` (after a ``.to(dtype)`` cast
for f16; no q8_0 peer in torch; captured with ``torch.cuda.CUDAGraph`` on a side stream), and
the NumPy reference (host clock). ``checked`` is the default eager call (it synchronizes once to
raise on a bad index, so it cannot be captured: ``gpu_method`` is ``events`` and ``gpu_us`` is its
eager figure); ``unchecked`` is ``check_bounds=False`` (no host round trip, as inside a graph).
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from rocsample.reference import set_rows as ref
from rocsample.reference.quant import BLOCK_BYTES

from .common import record, time_calls, time_torch, torch_cuda

sr = importlib.import_module("rocsample.set_rows")  # the module; rocsample.set_rows may be the function

NE0 = 4096
CASES = {
    "decode": dict(n_rows=4096, n_src=1),
    "prefill": dict(n_rows=4096, n_src=512),
    "large": dict(n_rows=65536, n_src=65536),
}
DTYPES = ["f32", "f16", "q8_0"]


def _row_bytes(t: str) -> int:
    if t in BLOCK_BYTES:
        return NE0 // 32 * BLOCK_BYTES[t]
    return NE0 * (4 if t == "f32" else 2)


def _sizes(request, backend, case):
    c = dict(CASES[case])
    if backend.name == "sim" or not backend.is_device or request.config.getoption("--bench-quick"):
        # keep CPU / simulator runs short: same shape family, fewer rows
        c = {k: min(v, 64 if backend.name != "sim" else 2) for k, v in c.items()}
    return c


def _inputs(t, n_rows, n_src, rng):
    src = rng.standard_normal((n_src, NE0)).astype(np.float32)
    idx = rng.permutation(n_rows)[:n_src].astype(np.int64)
    if t in BLOCK_BYTES:
        dst = np.zeros((n_rows, _row_bytes(t)), np.uint8)
    else:
        dst = np.zeros((n_rows, NE0), np.float32 if t == "f32" else np.float16)
    return dst, src, idx


@pytest.mark.parametrize("checked", [True, False], ids=["checked", "unchecked"])
@pytest.mark.parametrize("t", DTYPES)
@pytest.mark.parametrize("case", list(CASES))
def test_set_rows(benchmark, request, backend, copy_bandwidth, case, t, checked):
    c = _sizes(request, backend, case)
    rng = np.random.default_rng(0)
    dst, src, idx = _inputs(t, c["n_rows"], c["n_src"], rng)
    moved = src.nbytes + idx.nbytes + c["n_src"] * _row_bytes(t)
    stream = backend.runtime.new_stream()  # not the default stream: the unchecked call is captured
    if backend.is_device:
        st = backend.stream(stream)
        d, s, i = (backend.as_array(a, n, st) for a, n in ((dst, "dst"), (src, "src"), (idx, "idx")))
    else:  # cpu: the NumPy reference, captured by the emulated runtime
        d, s, i = dst, src, idx

    def fn():
        sr.set_rows(d, s, i, dst_type=t, stream=stream, check_bounds=checked)

    def finished():
        fn()
        backend.synchronize(stream)

    benchmark(finished)
    # checked: one host round trip per call by design, so only its eager figure exists
    timing = time_calls(backend, fn, stream, capturable=not checked)
    record(benchmark, bytes_moved=moved, timing=timing, copy_bw=copy_bandwidth, impl="rocsample",
           case=case, dst_type=t, checked=checked, n_src=c["n_src"], n_rows=c["n_rows"], ne0=NE0)


@pytest.mark.parametrize("t", DTYPES)
@pytest.mark.parametrize("case", list(CASES))
def test_reference_peer(benchmark, request, backend, copy_bandwidth, case, t):
    c = _sizes(request, backend, case)
    if case == "large" and t == "q8_0":
        c = {k: min(v, 4096) for k, v in c.items()}  # the NumPy quantizer is slow; same per-row cost
    rng = np.random.default_rng(0)
    dst, src, idx = _inputs(t, c["n_rows"], c["n_src"], rng)
    moved = src.nbytes + idx.nbytes + c["n_src"] * _row_bytes(t)

    def fn():
        ref.set_rows(dst, src, idx, dst_type=t)

    benchmark(fn)
    s = benchmark.stats.stats.median if getattr(benchmark, "stats", None) else 1.0
    record(benchmark, bytes_moved=moved, device_s=s, copy_bw=copy_bandwidth, peer="numpy-reference",
           impl="numpy-reference", case=case, dst_type=t, n_src=c["n_src"], n_rows=c["n_rows"],
           ne0=NE0)


@pytest.mark.parametrize("t", ["f32", "f16"])
@pytest.mark.parametrize("case", list(CASES))
def test_torch_index_copy_peer(benchmark, request, backend, copy_bandwidth, case, t):
    torch = torch_cuda()
    if torch is None or backend.name not in ("cuda", "hip"):
        pytest.skip("PyTorch with a GPU is not available here")
    c = _sizes(request, backend, case)
    dt = torch.float32 if t == "f32" else torch.float16
    # static tensors, made before any capture; every call (eager or captured) reads them
    dst = torch.zeros((c["n_rows"], NE0), dtype=dt, device="cuda")
    src = torch.randn((c["n_src"], NE0), dtype=torch.float32, device="cuda")
    idx = torch.randperm(c["n_rows"], device="cuda")[: c["n_src"]]
    moved = src.numel() * 4 + idx.numel() * 8 + c["n_src"] * NE0 * dst.element_size()

    def fn():
        dst.index_copy_(0, idx, src.to(dt))  # the cast is part of the op for f16

    def finished():
        fn()
        torch.cuda.synchronize()

    benchmark(finished)
    record(benchmark, bytes_moved=moved, timing=time_torch(torch, fn), copy_bw=copy_bandwidth,
           peer="torch.index_copy_", impl="torch.index_copy_", case=case, dst_type=t,
           n_src=c["n_src"], n_rows=c["n_rows"], ne0=NE0)
