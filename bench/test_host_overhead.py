"""Host overhead alone (issues #6, #17): what a decode loop pays on the CPU per call.

Each benchmark times the *call* only (no synchronize inside the timed region). The torch cases
time it as a decode loop's sampling call meets the GPU: the queue is drained between rounds and
one spin kernel (``torch.cuda._sleep``, about 100 us) is queued ahead of the call, as the step's
forward is in a decode loop; that is pytest-benchmark's figure and ``host_us_median``, the one
the targets read. ``host_us_idle_median`` is the same call right after a synchronize (an idle
GPU: a notebook's one-off call), for PyTorch's calls too.

``extra_info["args"]`` says which argument kinds a case used: **fresh** torch tensors (a new
view object every call, as ``out.logits[:, -1, :]`` makes each decode step, cycling over eight
buffers so the data address changes every call too: as many as a bound call keeps driver graphs
for, so none is re-pointed), **new** (the same over 24 buffers: every call's address is new to
the bound call, which re-points a graph's nodes: the worst case), **alternating** (a new view every call of
two buffers in turn: what a decode loop's logits do, bench/test_decode_loop.py records the
addresses its loop sees), the **same** object every call, or numba device arrays; the torch cases
run once on torch's legacy default stream and once with a ``torch.cuda.Stream()`` current
(``stream`` in ``extra_info``). Targets (issue #17, on the H200): ``Sampler.__call__`` <= 10 us
with fresh torch tensors and with the same object, one-off ``sample`` / ``argmax`` <= 30 us,
unchecked ``set_rows`` <= 10 us.

The numba-array cases at 1 x 1024 also record the two GPU figures of ``bench/common.py``:
``gpu_us`` (20 calls captured into one graph; ``gpu_method`` ``events`` for the one-off calls,
which allocate their outputs) and ``eager_us``; their host figure is the idle one. The PyTorch
peers (``torch.argmax``, ``topk + softmax + multinomial``, ``index_copy_``) run in the same
session on torch tensors, timed the same way.
"""

from __future__ import annotations

import importlib
import itertools
import statistics
import time

import numpy as np
import pytest

import rocsample

try:  # the repeated call in C: how many of a case's calls it served (extra_info["c_served"]),
    # and where a served call's host time went (extra_info["c_idle_parts_us"])
    from rocsample._fastcall import served as _served
    from rocsample._fastcall import timing as _c_timing
except ImportError:
    _served = _c_timing = None

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
def test_torch_peer_legacy(benchmark, backend, peer):
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



# ---- torch tensors: fresh objects every call vs the same object (issue #17) ----------------------

DECODE_SHAPES = [(1, DECODE_VOCAB), (64, DECODE_VOCAB)]
_BUFFERS = 8  # fresh views cycle over this many buffers: the data address changes every call
#: the "new" kind's buffers: three times the graphs a bound call keeps (binder._EXECS), so every
#: call's address is one its graphs do not hold
_NEW_BUFFERS = 24
#: torch's current stream during a case: ``default`` (the legacy default stream: a notebook, HF
#: generate) or ``side`` (a ``torch.cuda.Stream()`` made current: vLLM-style engines)
STREAMS = ["default", "side"]


@pytest.fixture(params=STREAMS)
def torch_on(request, backend):
    """(torch, stream kind) with that kind of stream current for the whole case."""
    torch = _torch(backend)
    if request.param == "default":
        yield torch, "default"
        return
    with torch.cuda.stream(torch.cuda.Stream()):
        yield torch, request.param


def _torch(backend):
    _gpu_only(backend)
    torch = torch_cuda()
    if torch is None:
        pytest.skip("torch with CUDA not importable")
    return torch


#: GPU clock cycles of the spin kernel queued ahead of each timed call (about 100 us on the
#: H200: longer than any timed call, so the call meets a busy stream, as in a decode loop)
_BUSY_CYCLES = 200_000


def _host_time(benchmark, torch, fn, **info):
    """Host time per call of ``fn``, as a decode loop's sampling call meets the GPU: the step's
    earlier work still queued on the stream (here one spin kernel, ``torch.cuda._sleep``, queued
    after the drain), so the call neither waits nor finds an idle queue. That is pytest-benchmark's
    figure (``host_us_median``, what the targets read). ``host_us_idle_median``: the same call
    right after a synchronize (an idle GPU, the call alone: a notebook's one-off call), for
    PyTorch's calls as for ours; for ours with the C path's part timers on (``c_idle_parts_us``:
    ten clock reads a call, a fraction of a microsecond), off for the busy-queue figure."""
    def setup():
        torch.cuda.synchronize()
        torch.cuda._sleep(_BUSY_CYCLES)

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    idle = []
    cpus = {_cpu()}
    if _c_timing is not None:
        _c_timing(True)
    for _ in range(_ITER):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        idle.append(time.perf_counter() - t0)
    parts = _c_parts(_c_timing(False)) if _c_timing is not None else None
    torch.cuda.synchronize()
    benchmark.group = "host overhead"
    n0 = None if _served is None else _served()
    benchmark.pedantic(fn, setup=setup, rounds=_ITER, warmup_rounds=20, iterations=1)
    torch.cuda.synchronize()
    # the share of the timed calls (warm-up rounds included) rocsample._fastcall served: the
    # rest went through Python (None: the extension is not built; 0 for a peer's calls)
    c = None if n0 is None else f"{_served() - n0}/{_ITER + 20}"
    cpus.add(_cpu())
    benchmark.extra_info.update(host_us_median=benchmark.stats.stats.median * 1e6,
                                host_us_idle_median=statistics.median(idle) * 1e6, c_served=c,
                                c_idle_parts_us=parts, cpus=sorted(c for c in cpus if c >= 0),
                                queue="busy (a spin kernel queued ahead); idle figure beside it",
                                gpu_method="not measured (host-overhead case)", **info)


def _c_parts(t):
    """``rocsample._fastcall.timing``'s counters as us a served call (None: none served): where
    the C path's host time went in the idle loop (the whole call, the capture probe, the
    outputs, node updates, the graph launch)."""
    if not t or not t["calls"]:
        return None
    return {k[:-3]: round(v / t["calls"] / 1e3, 2) for k, v in t.items() if k.endswith("_ns")}


def _cpu():
    """The CPU the calling thread runs on (sched_getcpu), -1 where unknown: a case's figure
    read beside the core it ran on."""
    try:
        import ctypes

        return int(ctypes.CDLL(None).sched_getcpu())
    except (OSError, AttributeError):
        return -1


def _fresh_views(torch, rows, vocab, kind="fresh"):
    """Fresh (rows, vocab) views ``big[:, -1, :]`` of the kind's buffers (``_NEW_BUFFERS`` for
    "new", else ``_BUFFERS``), one new object per call (made before the timing: the figure is
    rocsample's, not torch's slicing), and the buffers."""
    n = _NEW_BUFFERS if kind == "new" else _BUFFERS
    bufs = [torch.randn(rows, 2, vocab, device="cuda") for _ in range(n)]
    views = [bufs[i % n][:, -1, :] for i in range(4 * _ITER)]  # no object comes back
    return itertools.cycle(views), bufs


@pytest.mark.parametrize("kind", ["fresh", "new", "alternating", "same"])
@pytest.mark.parametrize("shape", DECODE_SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("mode", ["chain", "greedy"])
def test_sampler_call_torch(benchmark, torch_on, kind, shape, mode):
    torch, stream = torch_on
    rows, vocab = shape
    params = CHAIN if mode == "chain" else dict(temperature=0.0)
    plan = rocsample.Sampler(rows, vocab, "float32")  # stream=None: torch's current stream
    seed = torch.arange(rows, dtype=torch.int64, device="cuda")
    pos = torch.zeros(rows, dtype=torch.int64, device="cuda")
    it, bufs = _fresh_views(torch, rows, vocab, kind)
    if kind in ("fresh", "new"):
        def fn():
            return plan(next(it), seed=seed, position=pos, check=False, **params)
        args = (f"logits: a fresh torch view big[:, -1, :] every call ({len(bufs)} buffers in turn: "
                "a new address every call, " + ("each one a driver graph of its own" if kind == "fresh"
                                                else "new to the bound call's graphs: re-pointed")
                + "); seed, position: the same int64 torch tensors; host scalar filters")
    elif kind == "alternating":
        two = itertools.cycle([bufs[i % 2][:, -1, :] for i in range(4 * _ITER)])

        def fn():
            return plan(next(two), seed=seed, position=pos, check=False, **params)
        args = ("logits: a fresh torch view every call of two buffers in turn (a decode loop's "
                "logits: bench/test_decode_loop.py records the addresses it sees); seed, "
                "position: the same int64 torch tensors; host scalar filters")
    else:
        x = bufs[0][:, -1, :]

        def fn():
            return plan(x, seed=seed, position=pos, check=False, **params)
        args = "logits, seed, position: the same torch tensors every call; host scalar filters"
    _host_time(benchmark, torch, fn,
               impl=f"Sampler.__call__ {mode} (torch, {kind}, {stream} stream) {rows}x{vocab}",
               args=args, shape=f"{rows}x{vocab}", stream=stream, target_us=10)
    res = fn()
    assert type(res[0]).__module__.startswith("torch"), "torch in, torch out"


@pytest.mark.parametrize("kind", ["fresh", "new", "alternating", "same"])
@pytest.mark.parametrize("op", ["sample", "argmax"])
def test_one_off_torch(benchmark, torch_on, kind, op):
    torch, stream = torch_on
    rows, vocab = 64, DECODE_VOCAB
    seed = torch.arange(rows, dtype=torch.int64, device="cuda")
    pos = torch.zeros(rows, dtype=torch.int64, device="cuda")
    it, bufs = _fresh_views(torch, rows, vocab, kind)
    x = bufs[0][:, -1, :]

    def call(v):
        if op == "argmax":
            return rocsample.argmax(v, check=False)
        return rocsample.sample(v, seed=seed, position=pos, check=False, **CHAIN)

    two = itertools.cycle([bufs[i % 2][:, -1, :] for i in range(4 * _ITER)])
    fn = {"fresh": lambda: call(next(it)), "new": lambda: call(next(it)),
          "alternating": lambda: call(next(two)), "same": lambda: call(x)}[kind]
    args = {"fresh": "logits: a fresh torch view every call (8 buffers: a new address every call,"
                     " each one a driver graph of its own)",
            "new": "logits: a fresh torch view every call (24 buffers: a new address every call,"
                   " new to the plan's graphs: re-pointed)",
            "alternating": "logits: a fresh torch view every call of two buffers in turn",
            "same": "logits: the same torch tensor"}[kind] + (
        "; seed, position: the same int64 torch tensors; outputs: new torch tensors per call"
        " (torch's caching allocator); check=False")
    _host_time(benchmark, torch, fn,
               impl=f"rocsample.{op} one-off (torch, {kind}, {stream} stream) {rows}x{vocab}",
               args=args, shape=f"{rows}x{vocab}", stream=stream, target_us=30)


@pytest.mark.parametrize("kind", ["fresh", "same"])
@pytest.mark.parametrize("dst_type", ["f16", "q8_0"])
def test_set_rows_torch(benchmark, torch_on, kind, dst_type):
    torch, stream = torch_on
    layers, rows, ne0 = _BUFFERS, 4096, 128
    if dst_type == "f16":
        kv = torch.zeros(layers, rows, ne0, dtype=torch.float16, device="cuda")
    else:
        kv = torch.zeros(layers, rows, ne0 // 32 * 34, dtype=torch.uint8, device="cuda")
    new = torch.randn(layers, 1, ne0, device="cuda")
    idx = torch.tensor([7], dtype=torch.int64, device="cuda")
    views = itertools.cycle([(kv[i % layers], new[i % layers]) for i in range(4 * _ITER)])
    if kind == "fresh":
        def fn():
            d, s_ = next(views)
            return sr.set_rows(d, s_, idx, dst_type=dst_type, check_bounds=False)
        args = ("dst kv[layer], src new[layer]: fresh torch views every call (8 layers: new "
                "addresses); idx: the same int64 tensor; check_bounds=False")
    else:
        d, s_ = kv[0], new[0]

        def fn():
            return sr.set_rows(d, s_, idx, dst_type=dst_type, check_bounds=False)
        args = "dst, src, idx: the same torch tensors; check_bounds=False"
    _host_time(benchmark, torch, fn,
               impl=f"set_rows {dst_type} unchecked (torch, {kind}, {stream} stream) {rows}x{ne0}",
               args=args, shape=f"{rows}x{ne0}", stream=stream, target_us=10)


@pytest.mark.parametrize("peer", ["argmax", "topk_softmax_multinomial", "index_copy_"])
def test_torch_peer(benchmark, torch_on, peer):
    torch, stream = torch_on
    x = torch.randn(64, DECODE_VOCAB, device="cuda")
    kv = torch.zeros(4096, 128, device="cuda", dtype=torch.float16)
    row = torch.ones(1, 128, device="cuda", dtype=torch.float16)
    ix = torch.tensor([7], device="cuda")

    def topk_chain():
        v, i = torch.topk(x, 50, dim=-1)
        p = torch.softmax(v / 0.8, dim=-1)
        return i.gather(-1, torch.multinomial(p, 1))

    fn = {
        "argmax": lambda: torch.argmax(x, dim=-1),
        "topk_softmax_multinomial": topk_chain,
        "index_copy_": lambda: kv.index_copy_(0, ix, row),
    }[peer]
    shape = "64x151936" if peer != "index_copy_" else "4096x128"
    _host_time(benchmark, torch, fn, impl=f"torch {peer} ({stream} stream) {shape}",
               peer=f"torch {peer}", args="the same torch tensors every call", shape=shape,
               stream=stream)
