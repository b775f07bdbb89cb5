"""Sampling benchmarks: rocsample against PyTorch and FlashInfer on the same logits, same run.

Modes: greedy, temperature-only, top_k=50, top_p=0.95 alone, and the full chain (top_k=50,
top_p=0.9, min_p=0.05, T=0.8); n_rows in {1, 8, 64, 256}; n_vocab in {32000, 151936, 262144};
float32 logits drawn from N(0, 3^2) (never zeros).

What is timed (``bench/common.py``), the same way for rocsample and every peer
-----------------------------------------------------------------------------
- pytest-benchmark's own statistics: one call *to a finished result* (launch + synchronize).
- ``extra_info["gpu_us"]``: GPU time per call, from device events around replays of one graph
  holding 20 back-to-back calls (rocsample: ``rocsample.graphs.capture``; PyTorch and
  FlashInfer: ``torch.cuda.CUDAGraph``; both captured on a non-default stream, static inputs).
  ``gpu_method`` is ``graph``, or ``events`` where a peer could not be captured (then
  ``gpu_us == eager_us`` and ``graph_error`` says why). ``device_time_us`` is the same number.
- ``extra_info["eager_us"]``: device events around 10 back-to-back eager calls, host launch path
  included (what a caller launching op by op pays).
- ``ratio_to_floor`` divides ``gpu_us`` by the floor: one read of the logits at the measured
  device copy bandwidth (``eager_ratio_to_floor`` the same for ``eager_us``).

On ``cpu`` the rocsample benchmark runs at one tiny shape (a smoke test of the timing path, the
NumPy reference under the emulated graph); on ``sim`` it is skipped (a simulated chain takes
seconds per call); the peers need a CUDA device.

Peers: PyTorch (argmax; softmax+multinomial; topk+softmax+multinomial; sort-based top-p and
full chain), FlashInfer 0.2.14 sampling kernels where importable (sampling_from_logits,
top_k / top_p sampling from probs after softmax, top_k_top_p_sampling_from_logits; its full chain
has no min-p stage), and the NumPy reference at one small shape.
Run: ``make bench`` or ``pytest bench/test_sampling.py --backend cuda --benchmark-json=out.json``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import rocsample

from .common import record, time_calls, time_torch, torch_cuda

ROWS = [1, 8, 64, 256]
VOCABS = [32000, 151936, 262144]
MODES = {
    "greedy": dict(temperature=0.0),
    "temperature": dict(temperature=0.8),
    "top_k50": dict(top_k=50, temperature=1.0),
    "top_p095": dict(top_p=0.95, temperature=1.0),
    "chain": dict(top_k=50, top_p=0.9, min_p=0.05, temperature=0.8),
}
_ROUNDS = 20
CPU_SHAPES = [(2, 256)]  # the cpu smoke run: NumPy reference, emulated graphs


def _shapes(request):
    backend = request.config.getoption("--backend") or os.environ.get("ROCSAMPLE_BACKEND", "")
    if backend == "cpu":
        return CPU_SHAPES
    if request.config.getoption("--bench-quick"):
        return [(8, 32000), (64, 151936)]
    return [(r, v) for r in ROWS for v in VOCABS]


def pytest_generate_tests(metafunc):
    if "shape" in metafunc.fixturenames:
        shapes = _shapes(metafunc)
        metafunc.parametrize("shape", shapes, ids=[f"{r}x{v}" for r, v in shapes])


def _host_logits(rows, vocab):
    rng = np.random.default_rng(rows * 7 + vocab)
    return (rng.standard_normal((rows, vocab)) * 3).astype(np.float32)


def _gpu_only(backend):
    if not backend.is_device or backend.name == "sim":
        pytest.skip("needs a GPU backend (--backend cuda or hip)")


def _rocsample_runs(backend, shape):
    if backend.name == "cpu" and tuple(shape) in CPU_SHAPES:
        return  # smoke run of the timing path on the NumPy reference
    _gpu_only(backend)


@pytest.mark.parametrize("mode", list(MODES))
def test_rocsample(benchmark, backend, copy_bandwidth, mode, shape):
    _rocsample_runs(backend, shape)
    rows, vocab = shape
    host = _host_logits(rows, vocab)
    s = backend.runtime.new_stream()  # not the default stream: it is captured below
    st = backend.stream(s)
    # device arrays for the inputs; the scalar filter parameters become cached device copies on
    # the first call (Sampler._host_param), so the warmed call is capture-safe
    x = backend.as_array(host, "logits", st)
    seed = backend.as_array(np.arange(rows, dtype=np.int64), "seed", st)
    pos = backend.as_array(np.zeros(rows, np.int64), "position", st)
    plan = rocsample.Sampler(rows, vocab, "float32", stream=s)
    params = MODES[mode]

    def call():
        plan(x, seed=seed, position=pos, check=False, **params)

    def finished():
        call()
        backend.synchronize(s)

    finished()
    benchmark.group = f"sampling {mode} {rows}x{vocab}"
    benchmark.pedantic(finished, rounds=_ROUNDS, warmup_rounds=3, iterations=1)
    timing = time_calls(backend, call, s)  # strict: a Sampler call must be capturable
    record(benchmark, bytes_moved=host.nbytes, timing=timing, copy_bw=copy_bandwidth,
           impl="rocsample", mode=mode, rows=rows, vocab=vocab,
           splits=getattr(plan, "splits", None))


def _torch_fn(torch, mode, x, gen):
    p = MODES[mode]
    t = p.get("temperature", 1.0)
    if mode == "greedy":
        return lambda: torch.argmax(x, dim=-1)
    if mode == "temperature":
        return lambda: torch.multinomial(torch.softmax(x / t, -1), 1, generator=gen)
    if mode == "top_k50":
        def topk():
            v, i = torch.topk(x, 50, dim=-1)
            return i.gather(-1, torch.multinomial(torch.softmax(v / t, -1), 1, generator=gen))
        return topk

    def sort_based():  # as the common PyTorch samplers (HF, vLLM's fallback) do it
        s, i = torch.sort(x, dim=-1, descending=True)
        if "top_k" in p:
            s[:, p["top_k"]:] = -float("inf")
        probs = torch.softmax(s, -1)
        cum = probs.cumsum(-1)
        s = s.masked_fill((cum - probs) >= p["top_p"], -float("inf"))
        if "min_p" in p:
            s = s.masked_fill(s < s[:, :1] + float(np.log(p["min_p"])), -float("inf"))
        j = torch.multinomial(torch.softmax(s / t, -1), 1, generator=gen)
        return i.gather(-1, j)
    return sort_based


@pytest.mark.parametrize("mode", list(MODES))
def test_torch_peer(benchmark, backend, copy_bandwidth, mode, shape):
    _gpu_only(backend)
    torch = torch_cuda()
    if torch is None:
        pytest.skip("torch with CUDA not importable")
    gen = torch.Generator(device="cuda").manual_seed(0)
    _time_torch_based(benchmark, torch, copy_bandwidth, "torch", mode, shape,
                      lambda x: _torch_fn(torch, mode, x, gen), generators=(gen,))


def _time_torch_based(benchmark, torch, copy_bandwidth, impl, mode, shape, make_fn, generators=()):
    """Time a peer that runs on torch tensors: end to end, then both GPU figures.

    ``x`` is made once, before any capture, and every call reads it: the static input of the
    peer's graph. ``generators`` are the non-default torch generators the peer draws from.
    """
    rows, vocab = shape
    x = torch.from_numpy(_host_logits(rows, vocab)).cuda()
    fn = make_fn(x)

    def finished():
        fn()
        torch.cuda.synchronize()

    finished()
    benchmark.group = f"sampling {mode} {rows}x{vocab}"
    benchmark.pedantic(finished, rounds=_ROUNDS, warmup_rounds=3, iterations=1)
    timing = time_torch(torch, fn, generators=generators)
    record(benchmark, bytes_moved=x.numel() * 4, timing=timing, copy_bw=copy_bandwidth, peer=impl,
           impl=impl, mode=mode, rows=rows, vocab=vocab)


def _flashinfer():
    try:
        import flashinfer.sampling as fs
    except Exception:
        return None
    return fs


def _flashinfer_fn(torch, fs, mode, x):
    p = MODES[mode]
    t = p.get("temperature", 1.0)
    if mode == "greedy":
        return None  # FlashInfer has no argmax kernel; torch.argmax is the peer
    if mode == "temperature":
        return lambda: fs.sampling_from_logits(x / t)
    if mode == "top_k50":
        return lambda: fs.top_k_sampling_from_probs(torch.softmax(x / t, -1), p["top_k"])
    if mode == "top_p095":
        return lambda: fs.top_p_sampling_from_probs(torch.softmax(x / t, -1), p["top_p"])
    return lambda: fs.top_k_top_p_sampling_from_logits(x / t, p["top_k"], p["top_p"])


@pytest.mark.parametrize("mode", [m for m in MODES if m != "greedy"])
def test_flashinfer_peer(benchmark, backend, copy_bandwidth, mode, shape):
    _gpu_only(backend)
    torch = torch_cuda()
    fs = _flashinfer() if torch is not None else None
    if fs is None:
        pytest.skip("flashinfer not importable (carry .flashinfer; see BENCHMARKS.md)")
    _time_torch_based(benchmark, torch, copy_bandwidth, "flashinfer", mode, shape,
                      lambda x: _flashinfer_fn(torch, fs, mode, x))


@pytest.mark.parametrize("mode", list(MODES))
def test_reference_peer(benchmark, mode):
    from rocsample.reference import sampling as R

    x = _host_logits(1, 32000)
    benchmark.group = f"sampling {mode} reference 1x32000"
    benchmark.pedantic(lambda: R.sample(x, seed=0, position=0, **MODES[mode]), rounds=3, iterations=1)
    host_us = benchmark.stats.stats.median * 1e6 if getattr(benchmark, "stats", None) else None
    benchmark.extra_info.update(impl="numpy-reference", peer="numpy-reference", mode=mode, rows=1,
                                vocab=32000, gpu_us=host_us, eager_us=host_us, gpu_method="host")
