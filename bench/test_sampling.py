"""pytest-benchmark suite for rocsample.sample / argmax (issue 3, item 7).

Modes: greedy, temperature-only, top_k=50, top_p=0.95 alone, and the full chain
(top_k=50, top_p=0.9, min_p=0.05, T=0.8); n_rows in {1, 8, 64, 256}; n_vocab in
{32000, 151936, 262144}; float32 logits. Peers in the same run: PyTorch (argmax;
softmax+multinomial; topk+softmax+multinomial; sort-based top-p; sort-based full chain) where
torch with a GPU is installed, and the NumPy reference at the smallest shapes.

``extra_info`` of every device case: ``bytes`` (one read of the logits), ``gbps`` (effective,
bytes / median time), ``floor_us`` (bytes / measured device copy bandwidth) and
``ratio_to_floor`` (median time / floor). Run: ``pytest bench/test_sampling.py --backend cuda
--benchmark-json=out.json`` (``make bench``).
"""

from __future__ import annotations

import numpy as np
import pytest

import rocsample.sampling as rs

ROWS = [1, 8, 64, 256]
VOCABS = [32000, 151936, 262144]
MODES = {
    "greedy": dict(temperature=0.0),
    "temperature": dict(temperature=0.8),
    "top_k50": dict(top_k=50, temperature=1.0),
    "top_p095": dict(top_p=0.95, temperature=1.0),
    "chain": dict(top_k=50, top_p=0.9, min_p=0.05, temperature=0.8),
}

_copy_bw: dict = {}


def _device_or_skip(backend):
    if not backend.is_device or backend.name == "sim":
        pytest.skip("benchmarks need a GPU backend (--backend cuda or hip)")


def copy_bandwidth(backend) -> float:
    """Device-to-device copy bandwidth in bytes/s (read + write counted), measured once."""
    if backend.name in _copy_bw:
        return _copy_bw[backend.name]
    import time

    cuda = backend.cuda
    n = 256 << 20
    src = cuda.device_array(n, dtype=np.uint8)
    dst = cuda.device_array(n, dtype=np.uint8)
    dst.copy_to_device(src)
    cuda.synchronize()
    reps = 20
    t0 = time.perf_counter()
    for _ in range(reps):
        dst.copy_to_device(src)
    cuda.synchronize()
    bw = 2 * n * reps / (time.perf_counter() - t0)
    _copy_bw[backend.name] = bw
    return bw


def _median(benchmark):
    st = getattr(benchmark, "stats", None)
    return None if st is None else st.stats.median  # None under --benchmark-disable


def _record(benchmark, backend, nbytes):
    med = _median(benchmark)
    if med is None:
        return
    floor = nbytes / copy_bandwidth(backend)
    benchmark.extra_info.update(bytes=nbytes, gbps=nbytes / med / 1e9, floor_us=floor * 1e6,
                                ratio_to_floor=med / floor, backend=backend.name)


@pytest.fixture(scope="module")
def inputs(backend):
    cache = {}

    def get(rows, vocab):
        key = (rows, vocab)
        if key not in cache:
            rng = np.random.default_rng(rows * 7 + vocab)
            host = (rng.standard_normal((rows, vocab)) * 3).astype(np.float32)
            cache.clear()  # keep one shape resident
            cache[key] = (host, backend.cuda.to_device(host))
        return cache[key]

    return get


@pytest.mark.parametrize("vocab", VOCABS)
@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("mode", list(MODES))
def test_rocsample(benchmark, backend, inputs, mode, rows, vocab):
    _device_or_skip(backend)
    host, x = inputs(rows, vocab)
    cuda = backend.cuda
    plan = rs.Sampler(rows, vocab, "float32")
    seed = cuda.to_device(np.arange(rows, dtype=np.uint64))
    pos = cuda.to_device(np.zeros(rows, np.uint64))
    # Host scalars: the plan keeps their device copies, so the timed calls copy nothing and
    # passes no row needs are not launched.
    params = dict(MODES[mode])

    def run():
        plan(x, seed=seed, position=pos, check=False, **params)
        backend.synchronize(plan.stream)

    run()
    benchmark.group = f"{mode}-{rows}x{vocab}"
    benchmark.pedantic(run, rounds=30, warmup_rounds=3, iterations=1)
    _record(benchmark, backend, host.nbytes)
    benchmark.extra_info.update(splits=plan.splits, block=plan.block)


def _torch_peer(mode, x, gen):
    import torch

    if mode == "greedy":
        return torch.argmax(x, dim=-1)
    p = MODES[mode]
    t = p.get("temperature", 1.0)
    if mode == "temperature":
        return torch.multinomial(torch.softmax(x / t, -1), 1, generator=gen)
    if mode == "top_k50":
        v, i = torch.topk(x, 50, dim=-1)
        return i.gather(-1, torch.multinomial(torch.softmax(v / t, -1), 1, generator=gen))
    # Sort-based top-p (and the full chain), as the common PyTorch samplers do.
    s, i = torch.sort(x, dim=-1, descending=True)
    if "top_k" in p:
        s[:, p["top_k"]:] = -float("inf")
    probs = torch.softmax(s, -1)
    cum = probs.cumsum(-1)
    s = s.masked_fill((cum - probs) >= p["top_p"], -float("inf"))
    if "min_p" in p:
        s = s.masked_fill(s < s[:, :1] + np.log(p["min_p"]), -float("inf"))
    j = torch.multinomial(torch.softmax(s / t, -1), 1, generator=gen)
    return i.gather(-1, j)


@pytest.mark.parametrize("vocab", VOCABS)
@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("mode", list(MODES))
def test_torch_peer(benchmark, backend, mode, rows, vocab):
    _device_or_skip(backend)
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without a GPU")
    rng = np.random.default_rng(rows * 7 + vocab)
    x = torch.from_numpy((rng.standard_normal((rows, vocab)) * 3).astype(np.float32)).cuda()
    gen = torch.Generator(device="cuda").manual_seed(0)

    def run():
        _torch_peer(mode, x, gen)
        torch.cuda.synchronize()

    run()
    benchmark.group = f"{mode}-{rows}x{vocab}"
    benchmark.pedantic(run, rounds=30, warmup_rounds=3, iterations=1)
    _record(benchmark, backend, x.numel() * 4)


@pytest.mark.parametrize("mode", list(MODES))
def test_reference_peer(benchmark, mode):
    from rocsample.reference import sampling as R

    rows, vocab = 1, 32000
    x = (np.random.default_rng(0).standard_normal((rows, vocab)) * 3).astype(np.float32)
    benchmark.group = f"{mode}-{rows}x{vocab}"
    benchmark.pedantic(lambda: R.sample(x, seed=0, position=0, **MODES[mode]), rounds=5,
                       iterations=1)
    med = _median(benchmark)
    if med is not None:
        benchmark.extra_info.update(bytes=x.nbytes, gbps=x.nbytes / med / 1e9)
