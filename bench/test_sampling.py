"""Sampling benchmarks: rocsample against PyTorch and FlashInfer on the same logits, same run.

Modes with host-scalar parameters (``MODES``): greedy, temperature-only (T=0.8), top_k=50,
top_k=1000, top_p=0.95 alone, min_p=0.05 alone (T=1 and T=0.8), and the full chain (top_k=50,
top_p=0.9, min_p=0.05, T=0.8); n_rows in {1, 8, 64, 256}; n_vocab in {32000, 151936, 262144};
float32 logits drawn from N(0, 3^2) (never zeros).

Per-row modes (``ROW_MODES``, n_rows in {1, 64}): the parameters as device arrays of one value per
row, as vLLM and SGLang keep a batch's requests on the GPU. ``chain_dev`` holds the chain's values
in every row (compare with ``chain``, the same values as host scalars: the 1.2x target of issue
#13); ``mixed_dev`` is a decode-typical mixed batch (T in {0.6, 0.7, 0.8, 1.0}, top_k in
{20, 50, 100}, top_p in {0.8, 0.85, 0.9, 0.95, 1.0}, cycling with different periods; no min_p,
which FlashInfer's fused call lacks). rocsample gets numba device arrays (int64 top_k, float32
T/top_p/min_p); FlashInfer and PyTorch get torch tensors (int32 top_k for FlashInfer).

What is timed (``bench/common.py``), the same way for rocsample and every peer
-----------------------------------------------------------------------------
- pytest-benchmark's own statistics: one call *to a finished result* (launch + synchronize);
  ``--benchmark-max-time`` / ``--benchmark-min-rounds`` set how many rounds (``make bench``).
- ``extra_info["gpu_us"]``: GPU time per call, from device events around replays of one graph
  holding 20 back-to-back calls (rocsample: ``rocsample.graphs.capture``; PyTorch and
  FlashInfer: ``torch.cuda.CUDAGraph``; both captured on a non-default stream, static inputs).
  ``gpu_method`` is ``graph``, or ``events`` where a peer could not be captured (then
  ``gpu_us == eager_us`` and ``graph_error`` says why). ``device_time_us`` is the same number.
- ``extra_info["eager_us"]``: device events around 10 back-to-back eager calls, host launch path
  included (what a caller launching op by op pays), the same input objects every call.
- ``extra_info["eager_fresh_us"]`` (rocsample, cuda with torch): the same on a torch stream with
  a *fresh* torch view of the logits each call (per-row parameters as torch tensors), as a decode
  loop passes ``out.logits[:, -1, :]``: the host path for a new object included.
- ``ratio_to_floor`` divides ``gpu_us`` by the floor: one read of the logits at the measured
  device copy bandwidth (``eager_ratio_to_floor`` the same for ``eager_us``).

On ``cpu`` the rocsample benchmark runs at one tiny shape (a smoke test of the timing path, the
NumPy reference under the emulated graph); on ``sim`` it is skipped (a simulated chain takes
seconds per call); the peers need a CUDA device.

Peers: PyTorch (argmax; softmax+multinomial; topk+softmax+multinomial; softmax + min-p mask +
multinomial; sort-based top-p, full chain and per-row chain), FlashInfer where importable
(``bench/peers.py``: sampling_from_logits; top_k / top_p / min_p sampling from probs after its
softmax; top_k_top_p_sampling_from_logits in its default ``top_k_first`` order, and in ``joint``
order as mode ``chain_joint``; its chain has no min-p stage), labelled ``flashinfer-<version>``,
and the NumPy reference at one small shape.

``--bench-quick`` (or ``--bench-shapes=quick``): the shapes the issue targets name (1 x 151936,
64 x 151936), every mode; ``--bench-shapes=rest``: the other ten, for the second half of a
time-limited run (``tools/gpu/bench.sh``).
Run: ``make bench`` or ``pytest bench/test_sampling.py --backend cuda --benchmark-json=out.json``.
"""

from __future__ import annotations

import functools
import os

import numpy as np
import pytest

import rocsample

from .common import record, time_calls, time_torch, torch_cuda, torch_device_time
from .peers import flashinfer

ROWS = [1, 8, 64, 256]
VOCABS = [32000, 151936, 262144]
MODES = {
    "greedy": dict(temperature=0.0),
    "temperature": dict(temperature=0.8),
    "top_k50": dict(top_k=50, temperature=1.0),
    "top_k1000": dict(top_k=1000, temperature=1.0),
    "top_p095": dict(top_p=0.95, temperature=1.0),
    "min_p005": dict(min_p=0.05, temperature=1.0),
    "min_p005_t08": dict(min_p=0.05, temperature=0.8),
    "chain": dict(top_k=50, top_p=0.9, min_p=0.05, temperature=0.8),
}
ROW_MODES = ["chain_dev", "mixed_dev"]
ROW_ROWS = (1, 64)
QUICK_SHAPES = [(1, 151936), (64, 151936)]
CPU_SHAPES = [(2, 256)]  # the cpu smoke run: NumPy reference, emulated graphs


def _shapes(config, rows=None):
    backend = config.getoption("--backend") or os.environ.get("ROCSAMPLE_BACKEND", "")
    if backend == "cpu":
        return CPU_SHAPES
    which = config.getoption("--bench-shapes") or ("quick" if config.getoption("--bench-quick")
                                                   else "all")
    shapes = [(r, v) for r in ROWS for v in VOCABS]
    if which == "quick":
        shapes = QUICK_SHAPES
    elif which == "rest":
        shapes = [s for s in shapes if s not in QUICK_SHAPES]
    return [s for s in shapes if rows is None or s[0] in rows]


def pytest_generate_tests(metafunc):
    for name, rows in (("shape", None), ("row_shape", ROW_ROWS)):
        if name in metafunc.fixturenames:
            shapes = _shapes(metafunc.config, rows)
            metafunc.parametrize(name, shapes, ids=[f"{r}x{v}" for r, v in shapes])


@functools.lru_cache(maxsize=None)
def _host_logits(rows, vocab):
    """The logits of a shape, made once per process (NumPy takes ~0.5 s at 256 x 262144)."""
    rng = np.random.default_rng(rows * 7 + vocab)
    x = rng.standard_normal((rows, vocab), dtype=np.float32)
    x *= 3
    return x  # read only, by convention


def _row_params(mode, rows):
    """Per-row parameters of a ``ROW_MODES`` mode as host arrays (dict of the Sampler's names)."""
    i = np.arange(rows)
    if mode == "chain_dev":
        p = dict(temperature=np.full(rows, 0.8), top_k=np.full(rows, 50), top_p=np.full(rows, 0.9),
                 min_p=np.full(rows, 0.05))
    elif mode == "mixed_dev":
        p = dict(temperature=np.array([0.6, 0.8, 1.0, 0.7])[i % 4],
                 top_k=np.array([20, 50, 100])[i % 3],
                 top_p=np.array([0.8, 0.9, 0.95, 1.0, 0.85])[i % 5])
    else:
        raise ValueError(mode)
    return {k: v.astype(np.int64 if k == "top_k" else np.float32) for k, v in p.items()}


def _gpu_only(backend):
    if not backend.is_device or backend.name == "sim":
        pytest.skip("needs a GPU backend (--backend cuda or hip)")


def _rocsample_runs(backend, shape):
    if backend.name == "cpu" and tuple(shape) in CPU_SHAPES:
        return  # smoke run of the timing path on the NumPy reference
    _gpu_only(backend)


def _time_rocsample(benchmark, backend, copy_bandwidth, mode, shape, params_of):
    """Time one rocsample Sampler call: end to end, both GPU figures, the fresh-view eager figure.

    ``params_of(put)`` returns the call's filter parameters, ``put(host_array, name)`` making a
    device copy of a per-row array (host scalars pass through as they are).
    """
    rows, vocab = shape
    host = _host_logits(rows, vocab)
    s = backend.runtime.new_stream()  # not the default stream: it is captured below
    st = backend.stream(s)
    # device arrays for the inputs; scalar filter parameters become cached device copies on the
    # first call (Sampler._host_param), so the warmed call is capture-safe
    x = backend.as_array(host, "logits", st)
    seed = backend.as_array(np.arange(rows, dtype=np.int64), "seed", st)
    pos = backend.as_array(np.zeros(rows, np.int64), "position", st)
    params = params_of(lambda a, name: backend.as_array(a, name, st))
    plan = rocsample.Sampler(rows, vocab, "float32", stream=s)

    def call():
        plan(x, seed=seed, position=pos, check=False, **params)

    def finished():
        call()
        backend.synchronize(s)

    finished()
    benchmark.group = f"sampling {mode} {rows}x{vocab}"
    benchmark(finished)
    timing = time_calls(backend, call, s)  # strict: a Sampler call must be capturable
    fresh = _fresh_eager_us(backend, host, params_of)
    record(benchmark, bytes_moved=host.nbytes, timing=timing, copy_bw=copy_bandwidth,
           impl="rocsample", mode=mode, rows=rows, vocab=vocab,
           splits=getattr(plan, "splits", None), **fresh)


def _fresh_eager_us(backend, host, params_of) -> dict:
    """``eager_fresh_us``: eager calls on a torch stream, each given a new torch view of the
    logits (per-row parameters as torch tensors). Empty where torch or the cuda backend is absent.
    """
    torch = torch_cuda()
    if torch is None or backend.name != "cuda":
        return {}
    rows, vocab = host.shape
    ts = torch.cuda.Stream()
    try:
        with torch.cuda.stream(ts):
            big = torch.from_numpy(host).cuda()
            seed = torch.arange(rows, dtype=torch.int64, device="cuda")
            pos = torch.zeros(rows, dtype=torch.int64, device="cuda")
            params = params_of(lambda a, name: torch.from_numpy(np.ascontiguousarray(a)).cuda())
            plan = rocsample.Sampler(rows, vocab, "float32", stream=ts)

            def call():
                plan(big[:], seed=seed, position=pos, check=False, **params)  # a new view each call

            t = torch_device_time(torch, call, iters=30, warmup=3)
        ts.synchronize()
    except Exception as e:  # the main figures stand; say why this one is missing
        torch.cuda.synchronize()
        return {"eager_fresh_error": f"{type(e).__name__}: {e}".splitlines()[0][:300]}
    return {"eager_fresh_us": t * 1e6}


@pytest.mark.parametrize("mode", list(MODES))
def test_rocsample(benchmark, backend, copy_bandwidth, mode, shape):
    _rocsample_runs(backend, shape)
    _time_rocsample(benchmark, backend, copy_bandwidth, mode, shape, lambda put: MODES[mode])


@pytest.mark.parametrize("mode", ROW_MODES)
def test_rocsample_rows(benchmark, backend, copy_bandwidth, mode, row_shape):
    """Per-row device parameters (``ROW_MODES``)."""
    _gpu_only(backend)
    rows = row_shape[0]
    hp = _row_params(mode, rows)
    _time_rocsample(benchmark, backend, copy_bandwidth, mode, row_shape,
                    lambda put: {k: put(v, k) for k, v in hp.items()})


def _torch_fn(torch, mode, x, gen):
    p = MODES[mode]
    t = p.get("temperature", 1.0)
    if mode == "greedy":
        return lambda: torch.argmax(x, dim=-1)
    if mode == "temperature":
        return lambda: torch.multinomial(torch.softmax(x / t, -1), 1, generator=gen)
    if mode.startswith("top_k"):
        def topk():
            v, i = torch.topk(x, p["top_k"], dim=-1)
            return i.gather(-1, torch.multinomial(torch.softmax(v / t, -1), 1, generator=gen))
        return topk
    if mode.startswith("min_p"):
        def min_p():  # as vLLM's min-p: probabilities below min_p * the row's largest are dropped
            probs = torch.softmax(x / t, -1)
            probs = probs.masked_fill(probs < probs.amax(-1, keepdim=True) * p["min_p"], 0.0)
            return torch.multinomial(probs, 1, generator=gen)
        return min_p

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


def _torch_rows_fn(torch, x, rp, gen):
    """The sort-based chain with per-row tensors (temperature first, as vLLM applies it)."""
    cols = torch.arange(x.shape[1], device=x.device)
    t, k, p = rp["temperature"], rp["top_k"], rp["top_p"]
    log_mp = torch.log(rp["min_p"]) if "min_p" in rp else None

    def rows():
        s, i = torch.sort(x / t[:, None], dim=-1, descending=True)
        s = s.masked_fill(cols[None, :] >= k[:, None], -float("inf"))
        probs = torch.softmax(s, -1)
        s = s.masked_fill((probs.cumsum(-1) - probs) >= p[:, None], -float("inf"))
        if log_mp is not None:
            s = s.masked_fill(s < s[:, :1] + log_mp[:, None], -float("inf"))
        return i.gather(-1, torch.multinomial(torch.softmax(s, -1), 1, generator=gen))
    return rows


def _torch_or_skip(backend):
    _gpu_only(backend)
    torch = torch_cuda()
    if torch is None:
        pytest.skip("torch with CUDA not importable")
    return torch


@pytest.mark.parametrize("mode", list(MODES))
def test_torch_peer(benchmark, backend, copy_bandwidth, mode, shape):
    torch = _torch_or_skip(backend)
    gen = torch.Generator(device="cuda").manual_seed(0)
    _time_torch_based(benchmark, torch, copy_bandwidth, "torch", mode, shape,
                      lambda x: _torch_fn(torch, mode, x, gen), generators=(gen,))


@pytest.mark.parametrize("mode", ROW_MODES)
def test_torch_peer_rows(benchmark, backend, copy_bandwidth, mode, row_shape):
    torch = _torch_or_skip(backend)
    gen = torch.Generator(device="cuda").manual_seed(0)
    rp = {k: torch.from_numpy(v).cuda() for k, v in _row_params(mode, row_shape[0]).items()}
    _time_torch_based(benchmark, torch, copy_bandwidth, "torch", mode, row_shape,
                      lambda x: _torch_rows_fn(torch, x, rp, gen), generators=(gen,))


def _time_torch_based(benchmark, torch, copy_bandwidth, impl, mode, shape, make_fn, generators=(),
                      **extra):
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
    benchmark(finished)
    timing = time_torch(torch, fn, generators=generators)
    record(benchmark, bytes_moved=x.numel() * 4, timing=timing, copy_bw=copy_bandwidth, peer=impl,
           impl=impl, mode=mode, rows=rows, vocab=vocab, **extra)


FI_MODES = [m for m in MODES if m != "greedy"] + ["chain_joint"]


def _flashinfer_fn(fi, mode, x):
    if mode == "chain_joint":
        p = MODES["chain"]
        t = p["temperature"]
        return lambda: fi.top_k_top_p_from_logits(x / t, p["top_k"], p["top_p"], order="joint")
    p = MODES[mode]
    t = p.get("temperature", 1.0)
    if mode == "temperature":
        return lambda: fi.sampling_from_logits(x / t)
    if mode.startswith("top_k"):
        return lambda: fi.top_k(fi.softmax(x, t), p["top_k"])
    if mode == "top_p095":
        return lambda: fi.top_p(fi.softmax(x, t), p["top_p"])
    if mode.startswith("min_p"):
        return lambda: fi.min_p(fi.softmax(x, t), p["min_p"])
    return lambda: fi.top_k_top_p_from_logits(x / t, p["top_k"], p["top_p"])  # chain: no min-p


def _flashinfer_or_skip(backend):
    _gpu_only(backend)
    fi = flashinfer()
    if isinstance(fi, str):
        pytest.skip(fi)
    return fi


@pytest.mark.parametrize("mode", FI_MODES)
def test_flashinfer_peer(benchmark, backend, copy_bandwidth, mode, shape):
    fi = _flashinfer_or_skip(backend)
    _time_torch_based(benchmark, fi.torch, copy_bandwidth, fi.label, mode, shape,
                      lambda x: _flashinfer_fn(fi, mode, x), flashinfer_version=fi.version)


@pytest.mark.parametrize("mode", ROW_MODES)
def test_flashinfer_peer_rows(benchmark, backend, copy_bandwidth, mode, row_shape):
    """Per-row tensors: ``x / T[:, None]`` then top_k_top_p_sampling_from_logits (int32 top_k,
    ``top_k_max`` where the version takes it: its top_k_first fast path); no min-p."""
    fi = _flashinfer_or_skip(backend)
    torch = fi.torch
    hp = _row_params(mode, row_shape[0])
    t = torch.from_numpy(hp["temperature"]).cuda()[:, None]
    k = torch.from_numpy(hp["top_k"].astype(np.int32)).cuda()
    p = torch.from_numpy(hp["top_p"]).cuda()
    kmax = int(hp["top_k"].max())
    _time_torch_based(benchmark, torch, copy_bandwidth, fi.label, mode, row_shape,
                      lambda x: lambda: fi.top_k_top_p_from_logits(x / t, k, p, top_k_max=kmax),
                      flashinfer_version=fi.version)


@pytest.mark.parametrize("mode", list(MODES))
def test_reference_peer(benchmark, mode):
    from rocsample.reference import sampling as R

    x = _host_logits(1, 32000)
    benchmark.group = f"sampling {mode} reference 1x32000"
    benchmark(lambda: R.sample(x, seed=0, position=0, **MODES[mode]))
    host_us = benchmark.stats.stats.median * 1e6 if getattr(benchmark, "stats", None) else None
    benchmark.extra_info.update(impl="numpy-reference", peer="numpy-reference", mode=mode, rows=1,
                                vocab=32000, gpu_us=host_us, eager_us=host_us, gpu_method="host")
