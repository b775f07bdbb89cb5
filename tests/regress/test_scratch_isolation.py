"""Regression suite for the scratch-ownership defect class (issue #5).

What broke: split-sampling partials and their capacity lived in process-wide statics, so
concurrent queues overwrote each other's partials between the two kernels, a call on a second
device reused the first device's allocation, host pointer/capacity updates raced, and a graph
captured on first use kept scratch a graph node had allocated (an uncaptured call before the
graph's first launch then faulted).
"""

from __future__ import annotations

import random
import threading

import numpy as np
import pytest

import rocsample
from rocsample import ScratchNotWarmed, graphs
from rocsample.reference import sampling as ref
from rocsample.scratch import ScratchPool, get_pool

from ..scratch.work import expected, run_job


def _iters(backend, gpu: int, sim: int, cpu: int) -> int:
    return {"cuda": gpu, "hip": gpu, "sim": sim}.get(backend.name, cpu)


def _host(backend, arr, stream=None):
    return backend.to_host(arr, backend.stream(stream)) if backend.is_device else np.asarray(arr)


@pytest.fixture
def logits_sets(backend, rng):
    # the simulator runs every thread in Python: a tiny vocabulary, still split in two
    n_vocab, rows = {"sim": (64, 2)}.get(backend.name, (4096, 3))
    return [rng.standard_normal((rows, n_vocab)).astype(np.float32) * 3 for _ in range(4)]


def test_overlapping_queues_keep_their_partials(backend, new_stream, logits_sets):
    """>= 4 streams run split sampling on different logits, interleaved; every result is exact."""
    streams = [new_stream() for _ in logits_sets]
    n_iter = _iters(backend, gpu=1000, sim=2, cpu=50)
    small = {"_block": backend.warp_size(), "_splits": 2} if backend.name == "sim" else {}
    dev_logits = [backend.as_array(x, "logits", backend.stream(s)) for x, s in zip(logits_sets, streams)]
    samplers = [rocsample.Sampler(x.shape[0], x.shape[1], "float32", stream=s, **small)
                for x, s in zip(logits_sets, streams)]
    params = dict(temperature=0.8, top_k=20, top_p=0.9)
    # each stream's outputs go to its own slot per iteration, read back only at the end, so the
    # streams' work really overlaps
    outs = [[backend.empty(x.shape[0], np.int32, backend.stream(s)) for _ in range(n_iter)]
            for x, s in zip(logits_sets, streams)]
    for it in range(n_iter):
        for k, (sp, x) in enumerate(zip(samplers, dev_logits)):
            sp(x, seed=1000 + k, position=it, check=False, out=outs[k][it], **params)
    for k in range(len(streams)):
        backend.synchronize(streams[k])
        for it in range(n_iter):
            tok = _host(backend, outs[k][it], streams[k])
            exp_tok, _, _, boundary = ref.sample_with_margin(logits_sets[k], seed=1000 + k, position=it,
                                                             **params)
            ok = (tok == exp_tok) | boundary
            assert ok.all(), f"stream {k} iteration {it}: got {tok}, reference {exp_tok}"
    if backend.is_device:
        pool = get_pool(backend)
        ptrs = [tuple(sorted(pool.buffers(s).values())) for s in streams]
        assert len(set(ptrs)) == len(ptrs), "two streams share a partials buffer"


@pytest.mark.multi_gpu
def test_devices_own_their_allocations(backend, new_stream):
    rt = backend.runtime
    if rt.device_count() < 2:
        pytest.skip("needs two devices (two H200s on cuda; emulated on cpu/sim)")
    pool = ScratchPool(backend)
    streams = {d: [new_stream(d) for _ in range(2)] for d in range(2)}
    for _ in range(3):
        for ss in streams.values():
            for s in ss:
                pool.request(s, random.randint(1, 1 << 16), "partials")
    for d, ss in streams.items():
        for s in ss:
            for ptr in pool.buffers(s).values():
                assert rt.pointer_device(ptr) == d, f"stream of device {d} got a buffer of another device"
    pool.check_invariants()
    pool.trim()


@pytest.mark.multi_gpu
def test_sampling_on_each_device_is_exact_and_uses_that_devices_scratch(backend, new_stream, rng):
    """The same plan shape on two devices: each result exact, each scratch buffer on its device."""
    rt = backend.runtime
    if rt.device_count() < 2:
        pytest.skip("needs two devices (two H200s on cuda; emulated on cpu/sim)")
    if not backend.is_device:
        pytest.skip("the cpu backend runs the reference and takes no scratch")
    rows, vocab = (2, 64) if backend.name == "sim" else (8, 32000)
    small = {"_block": backend.warp_size(), "_splits": 2} if backend.name == "sim" else {}
    x = rng.standard_normal((rows, vocab)).astype(np.float32)
    params = dict(temperature=0.9, top_p=0.8)
    want, _, _, near = ref.sample_with_margin(x, seed=5, position=3, **params)
    for d in (1, 0, 1):
        with backend.on_device(d):
            s = new_stream(d)
            st = backend.stream(s)
            xd = backend.as_array(x, "logits", st)
            plan = rocsample.Sampler(rows, vocab, "float32", stream=s, **small)
            tok = _host(backend, plan(xd, seed=5, position=3, check=False, **params)[0], s)
            for ptr in get_pool(backend).buffers(s).values():
                assert rt.pointer_device(ptr) == d
        assert ((tok == want) | near).all(), f"device {d}: got {tok}, want {want}"


def test_host_races_keep_invariants(backend, new_stream):
    """16 threads request, grow and trim on shared and distinct streams concurrently."""
    pool = ScratchPool(backend)
    shared = [new_stream() for _ in range(2)]
    own = [new_stream() for _ in range(16)]
    errors: list[BaseException] = []
    steps = 60 if backend.name != "sim" else 25
    barrier = threading.Barrier(16)

    def worker(i: int) -> None:
        r = random.Random(i)
        try:
            barrier.wait()
            for _ in range(steps):
                s = shared[r.randrange(2)] if r.random() < 0.5 else own[i]
                op = r.random()
                if op < 0.7:
                    buf = pool.request(s, r.randint(1, 1 << 15), f"p{r.randrange(2)}")
                    if buf.shape[0] < 1:
                        raise RuntimeError("empty buffer")
                elif op < 0.9:
                    pool.trim(s)
                else:
                    pool.stats()
                pool.check_invariants()
        except BaseException as e:  # reported below, with the thread's index
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, f"{len(errors)} thread(s) failed, first: {errors[0]!r}"
    pool.check_invariants()
    # distinct streams never share a buffer
    seen = {}
    for s in shared + own:
        for purpose, ptr in pool.buffers(s).items():
            assert ptr not in seen, f"{ptr:#x} shared by {seen[ptr]} and {(s, purpose)}"
            seen[ptr] = (s, purpose)
    pool.trim()


def _device_params(backend, st, *, top_p, seed, position, n=2):
    """Per-row parameters as device arrays: capture forbids host-to-device copies."""
    return {
        "top_p": backend.as_array(np.full(n, top_p, np.float32), "top_p", st),
        "seed": backend.as_array(np.full(n, seed, np.int64), "seed", st),
        "position": backend.as_array(np.full(n, position, np.int64), "position", st),
    }


@pytest.mark.graph
def test_unwarmed_capture_refused_then_recovers(backend, new_stream, rng):
    """No allocation call is made on refusal; prewarm + capture on the same stream then works."""
    if not backend.is_device:
        pytest.skip("the cpu backend runs the reference and takes no scratch (tests/scratch cover its pool)")
    s = new_stream()
    x = rng.standard_normal((2, 300)).astype(np.float32)
    st = backend.stream(s)
    xd = backend.as_array(x, "logits", st)
    small = {"_block": backend.warp_size(), "_splits": 2} if backend.name == "sim" else {}
    sp = rocsample.Sampler(2, 300, "float32", stream=s, **small)
    dev = _device_params(backend, st, top_p=0.9, seed=3, position=0)
    out = backend.empty(2, np.int32, st)
    sp(xd, check=False, out=out, **dev)  # an eager call: the plan's host-side defaults are on the device
    pool = get_pool(backend)
    pool.trim(s)  # as if the plan's scratch had never been warmed on this stream
    rt = backend.runtime
    before = rt.alloc_calls
    with pytest.raises(ScratchNotWarmed, match="warmed"):
        with graphs.capture(s):
            sp(xd, check=False, out=out, **dev)
    assert rt.alloc_calls == before, "an allocation was attempted during capture"
    sp.prewarm()
    with graphs.capture(s) as g:
        sp(xd, check=False, out=out, **dev)
    g.replay(s)
    exp_tok, _, _, boundary = ref.sample_with_margin(x, top_p=0.9, seed=3, position=0)
    tok = _host(backend, out, s)
    assert ((tok == exp_tok) | boundary).all(), (tok, exp_tok)
    g.release()


@pytest.mark.graph
def test_uncaptured_call_before_first_launch_then_replays(backend, new_stream):
    s = new_stream()
    pool = get_pool(backend)
    pool.prewarm(s, {"job": 4096})
    out_g = backend.empty(64, np.int32, backend.stream(s))
    with graphs.capture(s) as g:
        run_job(backend, s, pool.request(s, 256, "job"), out_g, 40)
    out_e = backend.empty(64, np.int32, backend.stream(s))
    run_job(backend, s, pool.request(s, 256, "job"), out_e, 9)  # before the first launch
    np.testing.assert_array_equal(_host(backend, out_e, s), expected(64, 9))
    pool.request(s, 1 << 16, "job")  # growth while the graph holds its buffer
    pool.trim(s)
    for _ in range(_iters(backend, gpu=50, sim=3, cpu=10)):
        g.replay(s)
        np.testing.assert_array_equal(_host(backend, out_g, s), expected(64, 40))
    g.release()
    pool.check_invariants()
