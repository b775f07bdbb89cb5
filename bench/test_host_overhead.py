"""Host overhead alone (issue #6): what a decode loop pays on the CPU per call, at a tiny shape.

Each benchmark times the *call* only (no synchronize inside the timed region; the queue is drained
between rounds), 1 x 1024 float32 logits, so the GPU work is negligible:
one-off ``rocsample.sample`` / ``argmax``; ``Sampler.__call__`` (greedy: the two-phase path; and
the full chain); graph replay of a captured step; set_rows unchecked repeated call; and the PyTorch
peers (``torch.argmax``, softmax + multinomial, ``index_copy_``).

Beside the host figure (``host_us_median``), each records the two GPU figures of
``bench/common.py`` at this shape: ``gpu_us`` (20 calls captured into one graph, replays timed
with device events; ``gpu_method`` ``events`` for the one-off calls, which allocate their
outputs and cannot be captured) and ``eager_us`` (events around back-to-back calls). For the
graph-replay benchmark ``eager_us`` is back-to-back replays and ``gpu_us`` the captured step.

The decode-loop targets themselves (issue #6) are at 1 x 151936: ``test_graph_replay_decode_shape``
(the captured full-chain and greedy steps) and the ``torch.argmax`` peer at that shape.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import rocsample

from .common import time_calls, time_torch, torch_cuda

sr = importlib.import_module("rocsample.set_rows")
ROWS, VOCAB = 1, 1024
DECODE_VOCAB = 151936
CHAIN = dict(top_k=50, top_p=0.9, min_p=0.05, temperature=0.8)
_ITER = 200


def _gpu_only(backend):
    if not backend.is_device or backend.name == "sim":
        pytest.skip("needs a GPU backend")


def _time(benchmark, backend, fn, stream=None, *, capturable=False, gpu_fn=None, **info):
    """Host time per call of ``fn``; then its eager GPU figure and, where ``capturable``, the
    graph figure of ``gpu_fn`` (default ``fn``) captured on ``stream``."""
    def setup():
        backend.synchronize(stream)

    fn()
    backend.synchronize(stream)
    benchmark.group = "host overhead"
    benchmark.pedantic(fn, setup=setup, rounds=_ITER, warmup_rounds=20, iterations=1)
    timing = time_calls(backend, fn, stream, capturable=capturable, graph_fn=gpu_fn)
    benchmark.extra_info.update(host_us_median=benchmark.stats.stats.median * 1e6, **timing.info(),
                                **info)


@pytest.fixture
def setup_dev(backend):
    _gpu_only(backend)
    s = backend.runtime.new_stream()
    st = backend.stream(s)
    x = backend.as_array(np.random.default_rng(0).standard_normal((ROWS, VOCAB)).astype(np.float32),
                         "logits", st)
    seed = backend.as_array(np.arange(ROWS, dtype=np.int64), "seed", st)
    pos = backend.as_array(np.zeros(ROWS, np.int64), "position", st)
    return s, x, seed, pos


def test_one_off_argmax(benchmark, backend, setup_dev):
    s, x, _, _ = setup_dev
    # one-off calls allocate their outputs: not capturable
    _time(benchmark, backend, lambda: rocsample.argmax(x, check=False, stream=s), s, impl="rocsample.argmax")


def test_one_off_sample_chain(benchmark, backend, setup_dev):
    s, x, seed, pos = setup_dev
    _time(benchmark, backend, lambda: rocsample.sample(x, seed=seed, position=pos, check=False, stream=s, **CHAIN),
          s, impl="rocsample.sample chain")


@pytest.mark.parametrize("label, params", [
    ("Sampler greedy (two-phase)", dict(temperature=0.0)),
    ("Sampler temperature (two-phase)", dict(temperature=0.8)),
    ("Sampler full chain", CHAIN),
], ids=["greedy", "temperature", "chain"])
def test_sampler_call(benchmark, backend, setup_dev, label, params):
    s, x, seed, pos = setup_dev
    plan = rocsample.Sampler(ROWS, VOCAB, "float32", stream=s)
    _time(benchmark, backend, lambda: plan(x, seed=seed, position=pos, check=False, **params), s,
          capturable=True, impl=label)


def test_graph_replay_chain(benchmark, backend, setup_dev):
    s, x, seed, pos = setup_dev
    plan = rocsample.Sampler(ROWS, VOCAB, "float32", stream=s)
    g = plan.capture(x, seed=seed, position=pos, **CHAIN)
    _time(benchmark, backend, lambda: g.replay(s), s, capturable=True,
          gpu_fn=lambda: plan(x, seed=seed, position=pos, check=False, **CHAIN),
          impl="graph replay (full chain step)")
    g.release()


@pytest.mark.parametrize("label, params", [
    ("graph replay (full chain step, 1 x 151936)", CHAIN),
    ("graph replay (greedy step, 1 x 151936)", dict(temperature=0.0)),
], ids=["chain", "greedy"])
def test_graph_replay_decode_shape(benchmark, backend, label, params):
    # the decode-loop target of issue #6: one row of a 151936-token vocabulary, captured
    _gpu_only(backend)
    s = backend.runtime.new_stream()
    st = backend.stream(s)
    x = backend.as_array(np.random.default_rng(1).standard_normal((1, DECODE_VOCAB))
                         .astype(np.float32), "logits", st)
    seed = backend.as_array(np.zeros(1, np.int64), "seed", st)
    pos = backend.as_array(np.zeros(1, np.int64), "position", st)
    plan = rocsample.Sampler(1, DECODE_VOCAB, "float32", stream=s)
    g = plan.capture(x, seed=seed, position=pos, **params)
    _time(benchmark, backend, lambda: g.replay(s), s, capturable=True,
          gpu_fn=lambda: plan(x, seed=seed, position=pos, check=False, **params), impl=label)
    g.release()


def test_set_rows_repeated(benchmark, backend, setup_dev):
    s, _, _, _ = setup_dev
    st = backend.stream(s)
    dst = backend.as_array(np.zeros((4096, 128), np.float16), "dst", st)
    src = backend.as_array(np.ones((1, 128), np.float32), "src", st)
    idx = backend.as_array(np.array([7], np.int64), "idx", st)
    _time(benchmark, backend, lambda: sr.set_rows(dst, src, idx, stream=s, check_bounds=False), s,
          capturable=True, impl="set_rows unchecked (repeated)")


@pytest.mark.parametrize("peer", ["argmax", "softmax_multinomial", "index_copy_",
                                  "argmax (1 x 151936)"])
def test_torch_peer(benchmark, backend, peer):
    _gpu_only(backend)
    torch = torch_cuda()
    if torch is None:
        pytest.skip("torch with CUDA not importable")
    # static tensors, made before any capture (bench/common.py captures the peer's graph)
    x = torch.randn(ROWS, VOCAB, device="cuda")
    xd = torch.randn(1, DECODE_VOCAB, device="cuda")
    kv = torch.zeros(4096, 128, device="cuda", dtype=torch.float16)
    row = torch.ones(1, 128, device="cuda")
    ix = torch.tensor([7], device="cuda")
    fn = {
        "argmax": lambda: torch.argmax(x, dim=-1),
        "softmax_multinomial": lambda: torch.multinomial(torch.softmax(x, -1), 1),
        "index_copy_": lambda: kv.index_copy_(0, ix, row.to(torch.float16)),
        "argmax (1 x 151936)": lambda: torch.argmax(xd, dim=-1),
    }[peer]

    def setup():
        torch.cuda.synchronize()

    fn()
    benchmark.group = "host overhead"
    benchmark.pedantic(fn, setup=setup, rounds=_ITER, warmup_rounds=20, iterations=1)
    benchmark.extra_info.update(host_us_median=benchmark.stats.stats.median * 1e6, **time_torch(torch, fn).info(),
                                impl=f"torch {peer}", peer=f"torch {peer}")
