"""set_rows benchmarks: decode (1 row into a 4096-row ring), prefill (512 rows), large (64K x 4096),
every destination type, and the seed's decode step (four set_rows sites, one ring) as one graph.

Each case runs rocsample's set_rows for every dst type (f32, f16, bf16, q4_0, q4_1, q5_0, q5_1,
q8_0, iq4_nl; src float32, ne0 = 4096) on a non-default stream, timed to a finished result by
pytest-benchmark, and records in ``extra_info`` the bytes moved (src read + dst rows written +
idx), effective GB/s and the ratio to the memory floor (bytes / measured device copy bandwidth),
with both GPU figures of ``bench/common.py``: ``gpu_us`` (20 calls captured into one graph,
replays timed with device events) and ``eager_us`` (events around back-to-back eager calls).
``checked`` is the default eager call (it synchronizes once to raise on a bad index, so it cannot
be captured: its ``gpu_us`` is its eager figure), timed for f32, f16 and q8_0; ``unchecked`` is
``check_bounds=False`` (no host round trip, as inside a graph), timed for every type.

Peers on the same device inputs in the same run:

- ggml's own CUDA ``set_rows`` (ggml 0.25.3, ``bench/ggml_peer.py``; the library is built by
  ``tools/peers/build_ggml.sh``), every type it supports, captured in a ``torch.cuda.CUDAGraph``
  around its ctypes launches (ggml's backend and its own graph reuse are not built), with a byte
  comparison of its rows against ours in ``extra_info`` (``vs_rocsample``);
- PyTorch ``index_copy_`` for f32 / f16 (after a ``.to(dtype)`` cast for f16: two kernels);
- the NumPy reference (host clock), f32 / f16 / q8_0.

``test_decode_step_graph``: the decode step of tests/regress/test_set_rows_graph_reuse.py at
ne0 = 4096 (an f32 state row, an f16 score row, a q8_0 ring of 4096 rows written by
``ring_write`` at a device position that advances and wraps, a q4_0 compressed-cache row),
captured once and replayed, GPU time per step; ggml runs the same four sites (its ring index a
device tensor, as llama.cpp's KV cache passes it) in a torch graph.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from rocsample.reference import set_rows as ref
from rocsample.reference.quant import BLOCK_BYTES

from . import ggml_peer
from .common import record, time_calls, time_torch, torch_cuda

sr = importlib.import_module("rocsample.set_rows")  # the module; rocsample.set_rows may be the function

NE0 = 4096
CASES = {
    "decode": dict(n_rows=4096, n_src=1),
    "prefill": dict(n_rows=4096, n_src=512),
    "large": dict(n_rows=65536, n_src=65536),
}
DTYPES = ["f32", "f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "iq4_nl"]
CHECKED_DTYPES = ["f32", "f16", "q8_0"]
_STORAGE = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16}


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


def _dst_host(t, n_rows):
    if t in BLOCK_BYTES:
        return np.zeros((n_rows, _row_bytes(t)), np.uint8)
    return np.zeros((n_rows, NE0), _STORAGE[t])


def _inputs(t, n_rows, n_src, rng):
    src = rng.standard_normal((n_src, NE0)).astype(np.float32)
    idx = rng.permutation(n_rows)[:n_src].astype(np.int64)
    return _dst_host(t, n_rows), src, idx


_TORCH_INPUTS: dict = {}


def _torch_inputs(torch, c):
    """(src, idx) on the GPU for a case, made once (by torch: the large src is 1 GiB) and shared by
    every type and implementation of the run."""
    key = (c["n_rows"], c["n_src"])
    if key not in _TORCH_INPUTS:
        g = torch.Generator(device="cuda").manual_seed(0)
        src = torch.randn((c["n_src"], NE0), generator=g, device="cuda", dtype=torch.float32)
        idx = torch.randperm(c["n_rows"], generator=g, device="cuda")[: c["n_src"]].contiguous()
        torch.cuda.synchronize()
        _TORCH_INPUTS.clear()  # one case at a time in memory
        _TORCH_INPUTS[key] = (src, idx)
    return _TORCH_INPUTS[key]


def _torch_dst(torch, t, n_rows):
    if t in BLOCK_BYTES:
        return torch.zeros((n_rows, _row_bytes(t)), dtype=torch.uint8, device="cuda")
    dt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[t]
    return torch.zeros((n_rows, NE0), dtype=dt, device="cuda")


def _device_inputs(request, backend, case, t):
    """dst, src, idx for our call: torch tensors on cuda when torch is there (the same src and idx
    as the peers), else backend arrays made from host inputs."""
    c = _sizes(request, backend, case)
    torch = torch_cuda() if backend.name == "cuda" else None
    if torch is not None:
        src, idx = _torch_inputs(torch, c)
        dst = _torch_dst(torch, t, c["n_rows"])
        torch.cuda.synchronize()  # made on torch's stream; our calls run on another
        return c, dst, src, idx
    dst, src, idx = _inputs(t, c["n_rows"], c["n_src"], np.random.default_rng(0))
    if backend.is_device:
        dst, src, idx = (backend.as_array(a, n) for a, n in ((dst, "dst"), (src, "src"), (idx, "idx")))
    return c, dst, src, idx


def _moved(c, t):
    return c["n_src"] * NE0 * 4 + c["n_src"] * 8 + c["n_src"] * _row_bytes(t)


_OURS = [(t, False) for t in DTYPES] + [(t, True) for t in CHECKED_DTYPES]


@pytest.mark.parametrize("t,checked", _OURS, ids=[f"{t}-{'checked' if c else 'unchecked'}" for t, c in _OURS])
@pytest.mark.parametrize("case", list(CASES))
def test_set_rows(benchmark, request, backend, copy_bandwidth, case, t, checked):
    c, d, s, i = _device_inputs(request, backend, case, t)
    stream = backend.runtime.new_stream()  # not the default stream: the unchecked call is captured

    def fn():
        sr.set_rows(d, s, i, dst_type=t, stream=stream, check_bounds=checked)

    def finished():
        fn()
        backend.synchronize(stream)

    benchmark(finished)
    # checked: one host round trip per call by design, so only its eager figure exists
    timing = time_calls(backend, fn, stream, capturable=not checked)
    record(benchmark, bytes_moved=_moved(c, t), timing=timing, copy_bw=copy_bandwidth,
           impl="rocsample", case=case, dst_type=t, checked=checked, n_src=c["n_src"],
           n_rows=c["n_rows"], ne0=NE0)


@pytest.mark.parametrize("t", DTYPES)
@pytest.mark.parametrize("case", list(CASES))
def test_ggml_peer(benchmark, request, backend, copy_bandwidth, case, t):
    torch = torch_cuda()
    if torch is None or backend.name != "cuda":
        pytest.skip("ggml's CUDA set_rows needs PyTorch with an NVIDIA GPU (--backend cuda)")
    if ggml_peer.load() is None:
        pytest.skip(f"ggml peer not built: bash tools/peers/build_ggml.sh ({ggml_peer.library_path()})")
    c = _sizes(request, backend, case)
    src, idx = _torch_inputs(torch, c)
    dst = _torch_dst(torch, t, c["n_rows"])
    op = ggml_peer.SetRows(dst, src, idx, t)

    def fn():
        op()

    def finished():
        fn()
        torch.cuda.synchronize()

    benchmark(finished)
    timing = time_torch(torch, fn)
    # the same inputs through rocsample (unchecked, its own stream), rows compared byte for byte
    ours = _torch_dst(torch, t, c["n_rows"])
    st = backend.runtime.new_stream()
    torch.cuda.synchronize()
    sr.set_rows(ours, src, idx, dst_type=t, stream=st, check_bounds=False)
    backend.synchronize(st)
    dst.zero_()
    torch.cuda.synchronize()
    op()
    torch.cuda.synchronize()
    n_diff = ggml_peer.differing_rows(dst, ours)
    vs = dict(rows_written=c["n_src"], rows_differing=n_diff)
    if n_diff:
        vs["first"] = ggml_peer.first_difference(dst, ours)
    record(benchmark, bytes_moved=_moved(c, t), timing=timing, copy_bw=copy_bandwidth,
           peer="ggml-cuda set_rows", impl="ggml", case=case, dst_type=t, n_src=c["n_src"],
           n_rows=c["n_rows"], ne0=NE0, vs_rocsample=vs, ggml="0.25.3 (llama-cpp-python 0.3.36)",
           ggml_graph="torch.cuda.CUDAGraph around ctypes launches")
    op.close()


@pytest.mark.parametrize("t", ["f32", "f16", "q8_0"])
@pytest.mark.parametrize("case", list(CASES))
def test_reference_peer(benchmark, request, backend, copy_bandwidth, case, t):
    c = _sizes(request, backend, case)
    if case == "large":
        c = {k: min(v, 4096) for k, v in c.items()}  # the NumPy reference is slow; same per-row cost
    rng = np.random.default_rng(0)
    dst, src, idx = _inputs(t, c["n_rows"], c["n_src"], rng)

    def fn():
        ref.set_rows(dst, src, idx, dst_type=t)

    benchmark(fn)
    s = benchmark.stats.stats.median if getattr(benchmark, "stats", None) else 1.0
    record(benchmark, bytes_moved=_moved(c, t), device_s=s, copy_bw=copy_bandwidth,
           peer="numpy-reference", impl="numpy-reference", case=case, dst_type=t,
           n_src=c["n_src"], n_rows=c["n_rows"], ne0=NE0)


@pytest.mark.parametrize("t", ["f32", "f16"])
@pytest.mark.parametrize("case", list(CASES))
def test_torch_index_copy_peer(benchmark, request, backend, copy_bandwidth, case, t):
    torch = torch_cuda()
    if torch is None or backend.name not in ("cuda", "hip"):
        pytest.skip("PyTorch with a GPU is not available here")
    c = _sizes(request, backend, case)
    dt = torch.float32 if t == "f32" else torch.float16
    # static tensors, made before any capture; every call (eager or captured) reads them
    src, idx = _torch_inputs(torch, c)
    dst = torch.zeros((c["n_rows"], NE0), dtype=dt, device="cuda")

    def fn():
        dst.index_copy_(0, idx, src.to(dt))  # the cast is part of the op for f16

    def finished():
        fn()
        torch.cuda.synchronize()

    benchmark(finished)
    record(benchmark, bytes_moved=_moved(c, t), timing=time_torch(torch, fn), copy_bw=copy_bandwidth,
           peer="torch.index_copy_", impl="torch.index_copy_", case=case, dst_type=t,
           n_src=c["n_src"], n_rows=c["n_rows"], ne0=NE0)


# ---- the seed's decode step: four set_rows sites in one graph -------------------------------

STEP = dict(n_state=8, n_score=4, n_ring=4096, n_comp=64)


def _step_buffers(backend, quick):
    """Host buffers of one decode step (tests/regress/test_set_rows_graph_reuse.py's four sites)."""
    D = 64 if quick else NE0
    n_ring = 8 if quick else STEP["n_ring"]
    rng = np.random.default_rng(7)
    qb = lambda t: D // 32 * BLOCK_BYTES[t]  # noqa: E731
    return dict(
        comp_state=rng.standard_normal((STEP["n_state"], D)).astype(np.float32),
        score=rng.standard_normal((STEP["n_score"], D)).astype(np.float16),
        kv_ring=np.zeros((n_ring, qb("q8_0")), np.uint8),
        comp_cache=np.zeros((STEP["n_comp"], qb("q4_0")), np.uint8),
        new_state=rng.standard_normal((1, D)).astype(np.float32),
        new_score=rng.standard_normal((1, D)).astype(np.float32),
        new_kv=(rng.standard_normal((1, D)) * 4).astype(np.float32),
        comp_row=rng.standard_normal((1, D)).astype(np.float32),
        state_idx=np.array([3], np.int64),
        score_idx=np.array([1], np.int64),
        pos=np.array([n_ring - 2], np.int64),  # the ring wraps on the third replay
        ring_idx=np.array([n_ring - 2], np.int64),
        comp_idx=np.array([5], np.int64),
    )


def _step_bytes(h):
    rows = [("comp_state", "new_state"), ("score", "new_score"), ("kv_ring", "new_kv"), ("comp_cache", "comp_row")]
    return sum(h[s].nbytes + h[d][0].nbytes + 8 for d, s in rows)


@pytest.mark.parametrize("impl", ["rocsample", "ggml"])
def test_decode_step_graph(benchmark, request, backend, copy_bandwidth, impl):
    quick = backend.name == "sim" or not backend.is_device or request.config.getoption("--bench-quick")
    h = _step_buffers(backend, quick)
    if impl == "rocsample":
        stream = backend.runtime.new_stream()
        st = backend.stream(stream)
        d = {k: backend.as_array(v, k, st) for k, v in h.items()} if backend.is_device else h
        sr.prewarm(stream, n_rows_total=STEP["n_state"], ring_rows=1)

        def step():
            sr.set_rows(d["comp_state"], d["new_state"], d["state_idx"], stream=stream, check_bounds=False)
            sr.set_rows(d["score"], d["new_score"], d["score_idx"], stream=stream, check_bounds=False)
            sr.ring_write(d["kv_ring"], d["new_kv"], d["pos"], dst_type="q8_0", stream=stream,
                          check_bounds=False, advance=True)
            sr.set_rows(d["comp_cache"], d["comp_row"], d["comp_idx"], dst_type="q4_0", stream=stream,
                        check_bounds=False)

        def finished():
            step()
            backend.synchronize(stream)

        benchmark(finished)
        timing = time_calls(backend, step, stream)
    else:
        torch = torch_cuda()
        if torch is None or backend.name != "cuda":
            pytest.skip("ggml's CUDA set_rows needs PyTorch with an NVIDIA GPU (--backend cuda)")
        if ggml_peer.load() is None:
            pytest.skip(f"ggml peer not built: bash tools/peers/build_ggml.sh ({ggml_peer.library_path()})")
        t = {k: torch.from_numpy(v).cuda() for k, v in h.items()}
        ops = [ggml_peer.SetRows(t["comp_state"], t["new_state"], t["state_idx"], "f32"),
               ggml_peer.SetRows(t["score"], t["new_score"], t["score_idx"], "f16"),
               ggml_peer.SetRows(t["kv_ring"], t["new_kv"], t["ring_idx"], "q8_0"),
               ggml_peer.SetRows(t["comp_cache"], t["comp_row"], t["comp_idx"], "q4_0")]

        def step():
            for op in ops:
                op()

        def finished():
            step()
            torch.cuda.synchronize()

        benchmark(finished)
        timing = time_torch(torch, step)
    record(benchmark, bytes_moved=_step_bytes(h), timing=timing, copy_bw=copy_bandwidth,
           impl=impl, case="decode_step_graph", dst_type="f32+f16+q8_0 ring+q4_0",
           ne0=h["new_state"].shape[1], sites=4, n_ring=h["kv_ring"].shape[0],
           **({"peer": "ggml-cuda set_rows", "ggml_graph": "torch.cuda.CUDAGraph around ctypes launches"}
              if impl == "ggml" else {}))
