"""A batch mixing every row mode: the tile finalize and the histogram path as parallel branches.

Where a route launches both the tile finalize and the histogram / select passes (per-row
parameter arrays, on the device or the host, mixing top-k <= TILE_KMAX rows with others), a
bound call's driver graph makes them two branches after phase 1, and under a stream capture its
launches go on two streams joined by events (``rocsample.sampling_router.after``,
``GpuBackend.forked``). The tokens must be the reference's, every step, eager (unbound, bound)
and captured; on sim the same calls run in stream order (no driver graph), which checks the
calls, not the branches.
"""

from __future__ import annotations

import numpy as np
import pytest

import rocsample
from rocsample import graphs
from rocsample import sampling_router as R
from rocsample.reference import sampling as ref

#: per row: greedy, tile (top_k 5), histogram (top_p alone), min-p alone, unfiltered, tile with
#: top_p, histogram (top_k past the tile limit where the vocabulary allows), min-p with a
#: temperature
TEMP = [0.0, 0.8, 1.0, 1.0, 0.7, 0.9, 1.0, 0.6]
TOPK = [0, 5, 0, 0, 0, 12, 0, 0]
TOPP = [1.0, 1.0, 0.9, 1.0, 1.0, 0.8, 0.95, 1.0]
MINP = [0.0, 0.0, 0.0, 0.05, 0.0, 0.0, 0.0, 0.1]


def _host(backend, a, s):
    return backend.to_host(a, backend.stream(s)) if backend.is_device else np.asarray(a)


@pytest.mark.graph
@pytest.mark.parametrize("where", ["device", "host"])
def test_mixed_rows_branches_match_the_reference(backend, new_stream, rng, where):
    if not backend.is_device:
        pytest.skip("bound calls and captures: a device backend (sim emulates one)")
    if backend.name == "sim" and where == "host":
        pytest.skip("sim: the device case covers the calls (the host case only routes them)")
    rows = len(TEMP)
    vocab = 64 if backend.name == "sim" else 4096
    small = {"_block": backend.warp_size(), "_splits": 2} if backend.name == "sim" else {}
    s = new_stream()
    st = backend.stream(s)
    plan = rocsample.Sampler(rows, vocab, "float32", stream=s, **small)
    host = dict(temperature=np.array(TEMP, np.float32), top_k=np.array(TOPK, np.int64),
                top_p=np.array(TOPP, np.float32), min_p=np.array(MINP, np.float32))
    params = host if where == "host" else {k: backend.as_array(v, k, st) for k, v in host.items()}
    route = R.route(plan.plan, R.Host(*(host[k] if where == "host" else None
                                        for k in ("temperature", "top_k", "top_p", "min_p"))))
    assert R.after(route, True) is not None, "the batch does not take both branches"
    x_host = (rng.standard_normal((rows, vocab)) * 2).astype(np.float32)
    x = backend.as_array(x_host.copy(), "logits", st)
    seeds = np.arange(rows, dtype=np.int64) + 11
    seed = backend.as_array(seeds, "seed", st)
    pos = backend.as_array(np.zeros(rows, np.int64), "position", st)

    def check(step, logits, got):
        want, _, _, near = ref.sample_with_margin(logits, seed=seeds, position=step, **host)
        bad = (got != want) & ~near
        assert not bad.any(), f"step {step}: got {got}, want {want}"

    step = 0
    for _ in range(3):  # unbound, bound on the second call, then the bound call alone
        step_logits = (rng.standard_normal((rows, vocab)) * 2).astype(np.float32)
        graphs.copy_to_device(x, step_logits, s)
        tok = plan(x, seed=seed, position=pos, advance_position=True, check=False, **params)[0]
        check(step, step_logits, _host(backend, tok, s))
        step += 1
    with graphs.capture(s) as g:
        tok = plan(x, seed=seed, position=pos, advance_position=True, check=False, **params)[0]
    for _ in range(3 if backend.name == "sim" else 10):
        step_logits = (rng.standard_normal((rows, vocab)) * 2).astype(np.float32)
        graphs.copy_to_device(x, step_logits, s)
        g.replay(s)
        check(step, step_logits, _host(backend, tok, s))
        step += 1
    np.testing.assert_array_equal(_host(backend, pos, s), np.full(rows, step))
    g.release()


def test_after_is_none_for_a_chain_and_names_both_lanes_otherwise():
    assert R.after(R.Route(draw=True, tile=True), True) is None
    assert R.after(R.Route(hist=True, select=True), False) is None
    assert R.after(R.Route(True, True, True, True), False) == ((0, ()), (0, (0,)), (1, (0,)),
                                                               (1, (2,)))
    assert R.after(R.Route(True, True, True, False), True) == ((0, ()), (0, (0,)), (1, (0,)),
                                                               (0, (1, 2)))


def test_device_parameter_routes_launch_the_drawing_variant(backend):
    if not backend.is_device:
        pytest.skip("kernels: a device backend (sim emulates one)")
    plan = rocsample.Sampler(2, 64, "float32")
    fast = plan._ns.float.fast
    for lp in (False, True):
        assert fast.partials(True, lp) is fast.partials(True, lp)   # built once per variant
    route = R.route(plan.plan, R.Host(None, None, None, None))
    assert route.dev and route.draw
