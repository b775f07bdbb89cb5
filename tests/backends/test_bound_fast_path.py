"""The repeated bound call on a GPU backend, without a GPU (tests/fakegpu: the real GpuBackend,
DriverRuntime, scratch pool and binder over a no-op C driver and a stand-in for torch tensors).

What a warmed repeated call does (docs/DESIGN.md, "The repeated call"): one capture-status query
of its stream and one graph launch of its kernels (a driver graph of kernel nodes made at the
first repeated call), the nodes whose arguments moved re-pointed at this call's arrays first;
under a capture (any: rocsample's, torch's, a raw one) it takes the pool's request path, which
pins the stream's scratch to the capture and holds numba's frees while the capture is foreign,
and launches kernel by kernel. These run
on every backend option (the fake replaces the session's backend for one test at a time).
"""

from __future__ import annotations

import importlib
import threading

import pytest

import rocsample
from rocsample.binder import _EXECS
from tests import fakegpu

sr = importlib.import_module("rocsample.set_rows")

CHAIN = dict(temperature=0.8, top_k=50, top_p=0.9, min_p=0.05)
ROWS, VOCAB = 4, 4096

pytestmark = pytest.mark.skipif(fakegpu.driver_library() is None,
                                reason="no C compiler for the no-op driver")


@pytest.fixture
def fg(monkeypatch):
    yield from fakegpu.installed(monkeypatch)


def _pool(fg):
    from rocsample import scratch

    return scratch.get_pool(fg.backend)


def _views(torch, n, rows=ROWS, vocab=VOCAB):
    bufs = [torch.empty((rows, 2, vocab)) for _ in range(n)]
    return [b[:, -1, :] for b in bufs]


def _plan_on(fg, handle):
    """(torch, a float32 ROWS x VOCAB Sampler, seed, position) with torch stream ``handle``
    current (``torch.cuda.stream(s)``): the plan follows it."""
    torch = fg.torch
    fg.set_torch_stream(handle)
    plan = rocsample.Sampler(ROWS, VOCAB, "float32")
    return (torch, plan, torch.zeros(ROWS, dtype=torch.int64),
            torch.zeros(ROWS, dtype=torch.int64))


def test_fresh_tensors_every_call_take_the_bound_launches_repointed(fg):
    torch = fg.torch
    h = 0x79000
    fg.set_torch_stream(h)  # torch.cuda.stream(s)
    plan = rocsample.Sampler(ROWS, VOCAB, "float32")
    seed = torch.zeros(ROWS, dtype=torch.int64)
    pos = torch.zeros(ROWS, dtype=torch.int64)
    xs = _views(torch, 2 + _EXECS + 3)
    for x in xs[:2]:  # the first call checks everything, the second binds
        plan(x, seed=seed, position=pos, check=False, **CHAIN)
    unbound = fakegpu.FakeCuda.unbound_launches
    i0 = fg.count("instantiate")
    for n, x in enumerate(xs[2:]):
        l0, q0 = fg.count("logged"), fg.count("query")
        c0, g0, s0 = fg.count("launch"), fg.count("graph"), fg.count("setparams")
        tok, status = plan(x, seed=seed, position=pos, check=False, **CHAIN)
        assert type(tok).__module__ == "torch"
        # one graph launch of the chain's two kernels, no kernel launched one by one
        assert fg.count("logged") - l0 == 2 and fg.count("graph") - g0 == 1
        assert fg.count("launch") == c0
        made = n < _EXECS  # a new address gets a graph of its own while the table has room
        # one capture query (making a graph also asks whether any capture is open on the device)
        assert fg.count("query") - q0 == 1 or made
        # a new graph's nodes read the cells as they are; once the table is full a new address
        # re-points the oldest graph's nodes (both: both kernels read the logits)
        assert fg.count("setparams") - s0 == (0 if made else 2)
        # both launches read this call's logits: numba packs an array as meminfo, parent,
        # size, itemsize, data, ... and the logits are each kernel's first argument
        for k in (l0, l0 + 1):
            assert fg.launch_params(k, 5)[4] == x.data_ptr()
            assert fg.launch_stream(k) == h  # torch's current stream
    assert fakegpu.FakeCuda.unbound_launches == unbound
    assert len(plan._binder) == 1
    assert fg.count("instantiate") - i0 == _EXECS
    s0 = fg.count("setparams")
    plan(xs[-1], seed=seed, position=pos, check=False, **CHAIN)  # the same object again
    assert fg.count("setparams") == s0  # nothing moved: no node re-pointed
    fg.set_torch_stream(0)


def test_logits_alternating_between_two_buffers_re_point_nothing(fg):
    # a decode loop's fresh logits tensor comes from two allocator blocks in turn: each keeps
    # a graph of its own, so no node is re-pointed and no graph made after the first of each
    torch, plan, seed, pos = _plan_on(fg, 0x79400)
    a, b = _views(torch, 2)
    for k in range(4):
        plan((a, b)[k % 2][:, :], seed=seed, position=pos, check=False, **CHAIN)
    i0, s0, c0 = fg.count("instantiate"), fg.count("setparams"), fg.count("launch")
    for k in range(12):
        x = (a, b)[k % 2][:, :]  # a new view object of the same buffer each time
        l0, g0 = fg.count("logged"), fg.count("graph")
        plan(x, seed=seed, position=pos, check=False, **CHAIN)
        assert fg.count("graph") - g0 == 1
        for n in (l0, l0 + 1):
            assert fg.launch_params(n, 5)[4] == x.data_ptr()
    assert fg.count("instantiate") == i0 and fg.count("setparams") == s0
    assert fg.count("launch") == c0
    fg.set_torch_stream(0)


def test_a_bound_call_keeps_a_bounded_number_of_graphs_and_destroys_them_all(fg):
    torch, plan, seed, pos = _plan_on(fg, 0x79500)
    i0, d0 = fg.count("instantiate"), fg.count("exec_destroy")
    xs = _views(torch, 3 * _EXECS)
    for n, x in enumerate(xs + xs):  # more addresses than graphs, twice over
        l0 = fg.count("logged")
        plan(x, seed=seed, position=pos, check=False, temperature=0.0)
        if n >= 2:  # bound (the first call checks, the second binds): the oldest re-pointed
            assert fg.launch_params(l0, 5)[4] == x.data_ptr()
    assert fg.count("instantiate") - i0 == _EXECS
    plan._binder.clear()  # the bound call goes; its graphs are destroyed at the pool's next call
    del x
    import gc

    gc.collect()
    plan(xs[0], seed=seed, position=pos, check=False, temperature=0.0)
    assert fg.count("exec_destroy") - d0 == _EXECS
    fg.set_torch_stream(0)


def test_the_legacy_default_stream_takes_one_graph_launch_too(fg):
    # (one cuGraphLaunch on the legacy stream cost the H200's host 1.8 us, as on any other)
    torch = fg.torch
    plan = rocsample.Sampler(ROWS, VOCAB, "float32")  # torch's current stream: the legacy one
    seed = torch.zeros(ROWS, dtype=torch.int64)
    pos = torch.zeros(ROWS, dtype=torch.int64)
    xs = _views(torch, 5)
    for x in xs[:3]:
        plan(x, seed=seed, position=pos, check=False, **CHAIN)
    for x in xs[3:]:
        l0, c0, g0 = fg.count("logged"), fg.count("launch"), fg.count("graph")
        plan(x, seed=seed, position=pos, check=False, **CHAIN)
        assert fg.count("launch") == c0 and fg.count("graph") - g0 == 1
        for k in (l0, l0 + 1):
            assert fg.launch_params(k, 5)[4] == x.data_ptr() and fg.launch_stream(k) == 0


def test_a_capturing_stream_takes_the_request_path_and_pins_the_scratch(fg):
    torch = fg.torch
    h = 0x7A000
    fg.set_torch_stream(h)  # torch.cuda.stream(s) around the calls, torch.cuda.graph(g, stream=s)
    plan = rocsample.Sampler(ROWS, VOCAB, "float32")
    seed = torch.zeros(ROWS, dtype=torch.int64)
    pos = torch.zeros(ROWS, dtype=torch.int64)
    x = _views(torch, 1)[0]
    for _ in range(3):  # warmed on the capture stream, outside the capture
        plan(x, seed=seed, position=pos, check=False, **CHAIN)
    pool = _pool(fg)
    buf = pool.buffers(fg.backend.stream(h))["sample"]
    assert not pool._captures and not pool._numba_held
    fg.set_capturing(h)  # a capture rocsample did not begin (torch.cuda.graph)
    try:
        l0, g0 = fg.count("launch"), fg.count("graph")
        plan(x, seed=seed, position=pos, check=False, **CHAIN)
        # the same bound launches, captured kernel by kernel (no graph launch in a capture)
        assert fg.count("launch") - l0 == 2 and fg.count("graph") == g0
        rec = pool._captures[(0, h)]
        assert rec.external and [a.ptr for a in rec.allocs] == [buf]  # pinned for good
        assert 0 in pool._numba_held  # numba's frees held while the capture is open
    finally:
        fg.set_capturing(h, False)
    plan(x, seed=seed, position=pos, check=False, **CHAIN)
    assert not pool._numba_held  # let go by the first call that sees no capture
    q0 = fg.count("query")
    plan(x, seed=seed, position=pos, check=False, **CHAIN)
    assert fg.count("query") - q0 == 1  # and the repeated call is one query again
    fg.set_torch_stream(0)


def test_moved_scratch_is_never_launched_from_a_bound_call(fg):
    torch = fg.torch
    h = 0x7B000
    fg.set_torch_stream(h)
    plan = rocsample.Sampler(ROWS, VOCAB, "float32")
    seed = torch.zeros(ROWS, dtype=torch.int64)
    x = _views(torch, 1)[0]
    for _ in range(3):
        plan(x, seed=seed, position=3, check=False, temperature=0.0)
    pool = _pool(fg)
    st = fg.backend.stream(h)
    assert pool.trim(st) > 0
    plan.prewarm(st)  # a new buffer (a freed address may come back: the allocation is compared)
    l0 = fg.count("logged")
    plan(x, seed=seed, position=3, check=False, temperature=0.0)
    # the key's bound call addressed the old buffer: dropped, the call checked and launched
    # unbound; the next call binds again, at the new buffer
    assert fg.count("logged") == l0
    plan(x, seed=seed, position=3, check=False, temperature=0.0)
    plan(x, seed=seed, position=3, check=False, temperature=0.0)
    assert fg.count("logged") == l0 + 1  # greedy: phase 1 alone, one kernel
    fg.set_torch_stream(0)


def test_one_off_calls_make_new_outputs_through_the_bound_launches(fg):
    torch = fg.torch
    xs = _views(torch, 4)
    seed = torch.zeros(ROWS, dtype=torch.int64)
    outs = []
    for x in xs:
        outs.append(rocsample.sample(x, seed=seed, position=seed, check=False, **CHAIN))
    l0 = fg.count("logged")
    tok, status = rocsample.argmax(xs[0], check=False)
    tok2, _ = rocsample.argmax(xs[1], check=False)
    tok3, _ = rocsample.argmax(xs[2], check=False)
    assert fg.count("logged") - l0 == 1  # the third call (bound on the second): greedy is one kernel
    ptrs = {t.data_ptr() for t in (tok, tok2, tok3)} | {o[0].data_ptr() for o in outs}
    assert len(ptrs) == 3 + len(outs)  # every call its own outputs
    assert fg.launch_params(l0, 5)[4] == xs[2].data_ptr()


def test_set_rows_repeated_unchecked_call_is_one_query_and_one_graph_launch(fg):
    torch = fg.torch
    fg.set_torch_stream(0x79100)
    kv = torch.zeros(8, 64, 128, dtype=torch.float16)
    new = torch.zeros(8, 1, 128, dtype=torch.float32)
    idx = torch.zeros(1, dtype=torch.int64)
    for layer in range(2):
        sr.set_rows(kv[layer], new[layer], idx, check_bounds=False)
    for layer in range(2, 8):
        l0, q0, g0 = fg.count("logged"), fg.count("query"), fg.count("graph")
        sr.set_rows(kv[layer], new[layer], idx, check_bounds=False)
        # (making the graph, the first repeated call also asks whether a capture is open)
        assert fg.count("logged") - l0 == 1 and (fg.count("query") - q0 == 1 or layer < 2 + sr._binder.execs)
        assert fg.count("graph") - g0 == 1
        p = fg.launch_params(l0, 24)
        assert kv[layer].data_ptr() in p and new[layer].data_ptr() in p  # this layer's rows
    assert len(sr._binder) == 1
    # the next step writes every layer again: each layer's graph as it is, nothing re-pointed
    i0, s0 = fg.count("instantiate"), fg.count("setparams")
    for layer in range(8):
        l0 = fg.count("logged")
        sr.set_rows(kv[layer], new[layer], idx, check_bounds=False)
        p = fg.launch_params(l0, 40)
        assert kv[layer].data_ptr() in p and new[layer].data_ptr() in p
    assert fg.count("setparams") == s0 and fg.count("instantiate") - i0 == 2  # layers 0 and 1
    fg.set_torch_stream(0)


def test_threads_on_their_own_streams_share_one_plan(fg):
    torch = fg.torch
    plan = rocsample.Sampler(ROWS, VOCAB, "float32")
    seed = torch.zeros(ROWS, dtype=torch.int64)
    errors = []

    def work(h):
        try:
            fg.set_torch_stream(h)
            xs = _views(torch, 3)
            for i in range(60):
                tok, _ = plan(xs[i % 3], seed=seed, position=i, check=False, temperature=0.0)
                assert type(tok).__module__ == "torch"
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(0x7C000 + 0x100 * i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert 1 <= len(plan._binder) <= plan._binder.entries


def _bound(fg, plan, x, seed, pos, n=3, **params):
    for _ in range(n):
        plan(x, seed=seed, position=pos, check=False, **params)


def test_graph_nodes_follow_addresses_that_a_launch_by_launch_call_moved(fg):
    # a call that is not a plain repeated one (here: the pool has work queued, as after a
    # graph's release) re-points the cells and launches kernel by kernel; the graph's nodes
    # still hold the earlier addresses, so the next repeated call must re-point them too
    torch, plan, seed, pos = _plan_on(fg, 0x79200)
    x1, x2 = _views(torch, 2)
    _bound(fg, plan, x1, seed, pos, **CHAIN)  # bound, its graph made at x1
    assert len(plan._binder) == 1
    _pool(fg)._defer(lambda: None)
    c0, g0 = fg.count("launch"), fg.count("graph")
    plan(x2, seed=seed, position=pos, check=False, **CHAIN)
    assert fg.count("launch") - c0 == 2 and fg.count("graph") == g0  # kernel by kernel
    l0, s0, i0 = fg.count("logged"), fg.count("setparams"), fg.count("instantiate")
    plan(x2, seed=seed, position=pos, check=False, **CHAIN)  # the same logits again
    # x2's own graph (the table has room), made from the cells as the last call left them
    assert fg.count("graph") == g0 + 1 and fg.count("instantiate") - i0 == 1
    for k in (l0, l0 + 1):
        assert fg.launch_params(k, 5)[4] == x2.data_ptr()
    # back to x1: its graph's nodes still hold x1 (the cells hold x2): launched as it is
    l0 = fg.count("logged")
    plan(x1, seed=seed, position=pos, check=False, **CHAIN)
    assert fg.count("setparams") == s0 and fg.count("instantiate") - i0 == 1
    for k in (l0, l0 + 1):
        assert fg.launch_params(k, 5)[4] == x1.data_ptr()
    # and a launch-by-launch call after that writes x1 into the cells, which hold x2
    _pool(fg)._defer(lambda: None)
    l0 = fg.count("logged")
    plan(x1, seed=seed, position=pos, check=False, **CHAIN)
    assert fg.count("launch") - c0 == 4
    for k in (l0, l0 + 1):
        assert fg.launch_params(k, 5)[4] == x1.data_ptr()
    fg.set_torch_stream(0)


def test_no_graph_is_made_or_destroyed_while_a_capture_is_open_on_the_device(fg):
    torch = fg.torch
    ha, hb = 0x7E000, 0x7E100
    seed = torch.zeros(ROWS, dtype=torch.int64)
    pos = torch.zeros(ROWS, dtype=torch.int64)
    x = _views(torch, 1)[0]
    fg.set_torch_stream(hb)
    other = rocsample.Sampler(ROWS, VOCAB, "float32")
    _bound(fg, other, x, seed, pos, temperature=0.0)
    fg.set_torch_stream(ha)
    plan = rocsample.Sampler(ROWS, VOCAB, "float32")
    _bound(fg, plan, x, seed, pos, n=2, temperature=0.0)  # bound, no graph yet
    fg.set_capturing(hb)  # a foreign capture on another stream of the device
    try:
        fg.set_torch_stream(hb)
        other(x, seed=seed, position=pos, check=False, temperature=0.0)  # the pool sees it
        fg.set_torch_stream(ha)
        i0, c0, d0 = fg.count("instantiate"), fg.count("launch"), fg.count("exec_destroy")
        plan(x, seed=seed, position=pos, check=False, temperature=0.0)
        plan(x, seed=seed, position=pos, check=False, temperature=0.0)
        assert fg.count("instantiate") == i0  # no graph made inside the capture's lifetime
        assert fg.count("launch") - c0 == 2  # the kernels launched one by one
        other._binder.clear()  # other's graph (made before the capture) is collected now
        plan(x, seed=seed, position=pos, check=False, temperature=0.0)
        assert fg.count("exec_destroy") == d0  # its destruction waits for the capture's end
    finally:
        fg.set_capturing(hb, False)
    fg.set_torch_stream(hb)
    other(x, seed=seed, position=pos, check=False, temperature=0.0)  # the pool sees the end
    fg.set_torch_stream(ha)
    for _ in range(2):
        plan(x, seed=seed, position=pos, check=False, temperature=0.0)
    assert fg.count("exec_destroy") == d0 + 1
    assert fg.count("instantiate") == i0 + 1  # plan's graph, made once the capture ended
    fg.set_torch_stream(0)


def test_a_driver_refusing_kernel_nodes_keeps_launch_by_launch_calls(fg):
    torch = fg.torch
    fg.set_torch_stream(0x79300)
    fg.set_fail_add(1)  # CUDA_ERROR_INVALID_VALUE, with and without the node's context set
    try:
        plan = rocsample.Sampler(ROWS, VOCAB, "float32")
        seed = torch.zeros(ROWS, dtype=torch.int64)
        pos = torch.zeros(ROWS, dtype=torch.int64)
        xs = _views(torch, 5)
        for x in xs[:3]:
            plan(x, seed=seed, position=pos, check=False, **CHAIN)
        assert "refused the kernel" in str(fg.backend.vendor.node_graph_error)
        for x in xs[3:]:
            l0, c0, g0 = fg.count("logged"), fg.count("launch"), fg.count("graph")
            plan(x, seed=seed, position=pos, check=False, **CHAIN)
            assert fg.count("launch") - c0 == 2 and fg.count("graph") == g0
            assert fg.launch_params(l0, 5)[4] == x.data_ptr()
    finally:
        fg.set_fail_add(0)
        fg.set_torch_stream(0)


def test_one_off_torch_outputs_are_rows_of_one_block_where_the_kernels_write(fg):
    # tokens, status and logprobs of a one-off torch call: rows 0, 1, 2 of one (k, n) int32
    # block (views by one unbind), at the addresses the launches were given
    torch = fg.torch
    x = _views(torch, 1)[0]
    seed = torch.zeros(ROWS, dtype=torch.int64)
    pos = torch.zeros(ROWS, dtype=torch.int64)
    for _ in range(3):
        tok, lp, status = rocsample.sample(x, seed=seed, position=pos, check=False,
                                           return_logprobs=True, **CHAIN)
        p = tok.data_ptr()
        assert status.data_ptr() == p + 4 * ROWS and lp.data_ptr() == p + 8 * ROWS
        assert tuple(tok.shape) == tuple(status.shape) == tuple(lp.shape) == (ROWS,)
        assert lp.dtype == torch.float32 and tok.dtype == status.dtype == torch.int32
    tok, status = rocsample.argmax(x, check=False)
    assert status.data_ptr() == tok.data_ptr() + 4 * ROWS and tuple(tok.shape) == (ROWS,)


@pytest.mark.parametrize("variant", ["plain", "logprobs", "out", "advance"])
def test_torch_repeated_calls_find_the_key_the_full_path_bound(fg, variant):
    # Sampler._torch_repeat builds _call's key for torch tensors inline: it must find the bound
    # call the full path made, launch it at this call's addresses, and leave every other call
    # (here: a numba out=, a host position) to _call
    torch, plan, seed, pos = _plan_on(fg, 0x79600)
    out = torch.zeros(ROWS, dtype=torch.int32)
    kw = dict(seed=seed, position=pos, check=False, **CHAIN)  # (the fake runs no kernel)
    kw.update({"logprobs": dict(return_logprobs=True), "out": dict(out=out),
               "advance": dict(advance_position=True)}.get(variant, {}))
    xs = _views(torch, 3)
    rep = (xs[0], 0.8, 50, 0.9, 0.05, seed, pos, kw.get("return_logprobs", False),
           kw.get("advance_position", False), kw["check"], kw.get("out"), None)
    assert plan._torch_repeat(*rep) is None  # nothing bound yet: _call does it
    for x in xs[:2]:
        plan(x, **kw)  # checked, then bound by the full path
    l0 = fg.count("logged")
    got = plan._torch_repeat(xs[2], *rep[1:])
    # the chain's two kernels (and the position's advance)
    assert got is not None and fg.count("logged") - l0 == (3 if variant == "advance" else 2)
    for k in (l0, l0 + 1):
        assert fg.launch_params(k, 5)[4] == xs[2].data_ptr()
    if variant == "out":
        assert got[0] is out
        (hit,) = plan._binder._table.values()
        assert hit._gptrs[7] == out.data_ptr()  # the graph launched holds out's address
    if variant == "logprobs":
        assert len(got) == 3
    # what it leaves to _call: another argument kind, or a layout not bound
    assert plan._torch_repeat(xs[2], 0.8, 50, 0.9, 0.05, seed, 3, False, False, False, None,
                              None) is None
    assert plan._torch_repeat(xs[2][:, ::2], *rep[1:]) is None
    fg.set_torch_stream(0)


@pytest.mark.parametrize("op", ["sample", "argmax"])
def test_repeated_one_off_torch_calls_find_plan_and_bound_call_at_once(fg, op, monkeypatch):
    # sample() / argmax() with torch logits on torch's current stream: from the second such call
    # on, the plan comes from one lookup (_TORCH_PLANS) and the bound call through
    # Sampler._torch_repeat with fresh outputs (argmax: Python int seed and position), launched
    # at this call's logits address, with outputs no other call holds
    from rocsample import sampling as S

    torch = fg.torch
    monkeypatch.setattr(S, "_TORCH_PLANS", {})
    seed = torch.zeros(ROWS, dtype=torch.int64)
    pos = torch.zeros(ROWS, dtype=torch.int64)
    xs = _views(torch, 4)
    hits = []
    real = S.Sampler._torch_repeat

    def spy(self, *a):
        got = real(self, *a)
        hits.append((a[-1], got is not None))
        return got

    monkeypatch.setattr(S.Sampler, "_torch_repeat", spy)

    def call(x):
        if op == "argmax":
            return rocsample.argmax(x, check=False)
        return rocsample.sample(x, seed=seed, position=pos, check=False, **CHAIN)

    outs = [call(x) for x in xs[:2]]  # checked, then bound by the full path
    assert len(S._TORCH_PLANS) == 1
    l0 = fg.count("logged")
    tok, status = call(xs[2])
    assert hits[-1] == (True, True)  # fresh, and launched there
    assert fg.launch_params(l0, 5)[4] == xs[2].data_ptr()
    assert status.data_ptr() == tok.data_ptr() + 4 * ROWS and tuple(tok.shape) == (ROWS,)
    assert all(tok.data_ptr() != o[0].data_ptr() for o in outs)  # (those are still alive)
    # another current stream has no plan yet: the full path, which then records one
    n = len(hits)
    fg.set_torch_stream(0x7A000)
    try:
        call(xs[3])
        assert hits[n:] == [] and len(S._TORCH_PLANS) == 2
    finally:
        fg.set_torch_stream(0)


def test_int_seed_and_position_repeat_at_the_full_paths_addresses(fg):
    # Sampler._torch_repeat with Python int seed and position: the device copies _run would
    # use (found by value), so its launches get the full path's parameters exactly
    torch, plan, _, _ = _plan_on(fg, 0x79700)
    try:
        xs = _views(torch, 2)
        kw = dict(seed=7, position=3, check=False, **CHAIN)
        for x in xs:
            plan(x, **kw)
        rep = (xs[1], 0.8, 50, 0.9, 0.05, 7, 3, False, False, False, None, None)
        l0 = fg.count("logged")
        assert plan._torch_repeat(*rep) is not None
        l1 = fg.count("logged")
        plan._call(xs[1], 0.8, 50, 0.9, 0.05, 7, 3, False, False, False, None, None, False, None)
        assert fg.count("logged") - l1 == l1 - l0 == 2
        for k in range(2):
            assert fg.launch_params(l0 + k, 40) == fg.launch_params(l1 + k, 40)
        # a new position value: its own device copy, same bound call
        rep6 = rep[:6] + (6,) + rep[7:]
        assert plan._torch_repeat(*rep6) is not None
        assert plan._torch_repeat(*(rep[:8] + (True,) + rep[9:])) is None  # advance: _call
    finally:
        fg.set_torch_stream(0)


def _dev_params_plan(fg, handle):
    """``_plan_on``'s, with the chain's parameters as per-row device tensors (values the fake's
    kernels never read: the route is decided on the device, so every kernel is launched) and
    logits: (torch, plan, seed, position, parameters, logits)."""
    torch, plan, seed, pos = _plan_on(fg, handle)
    kw = {k: torch.zeros(ROWS, dtype=torch.int64 if k == "top_k" else torch.float32)
          for k in CHAIN}
    return torch, plan, seed, pos, kw, _views(torch, 1)[0]


def test_mixed_rows_bound_call_has_two_branches_in_its_graph_and_under_a_capture(fg):
    # device per-row parameters launch every kernel; the tile finalize and the histogram path
    # serve disjoint rows: two branches after phase 1 (the graph's dependencies; under a capture
    # the histogram and select passes go on a side stream, joined back by events)
    h = 0x7E000
    torch, plan, seed, pos, kw, x = _dev_params_plan(fg, h)
    for _ in range(3):  # unbound, bound, the bound call as one graph
        plan(x, seed=seed, position=pos, advance_position=True, check=False, **kw)
    hit = next(iter(plan._binder._table.values()))
    ex = hit._gx._exec.value
    # phase 1, tile finalize, histogram pass, select pass, position advance
    assert [fg.exec_deps(ex, j) for j in range(5)] == [[], [0], [0], [2], [1, 3]]
    drv = fg.backend.runtime.drv
    w0, r0 = drv.calls.get("cuStreamWaitEvent", 0), drv.calls.get("cuEventRecord", 0)
    fg.set_capturing(h)
    try:
        l0 = fg.count("logged")
        plan(x, seed=seed, position=pos, advance_position=True, check=False, **kw)
        streams = [fg.launch_stream(l0 + k) for k in range(5)]
    finally:
        fg.set_capturing(h, False)
    side = streams[2]
    assert streams == [h, h, side, side, h] and side not in (0, h)
    # the side stream waits for phase 1, the advance for the select pass, and the join
    assert drv.calls["cuStreamWaitEvent"] - w0 == 3 and drv.calls["cuEventRecord"] - r0 == 3
    # a chain (host scalars) stays one stream, one node after another
    plan2 = rocsample.Sampler(ROWS, VOCAB, "float32")
    for _ in range(3):
        plan2(x, seed=seed, position=pos, check=False, **CHAIN)
    hit2 = next(iter(plan2._binder._table.values()))
    assert hit2._fork is None
    assert [fg.exec_deps(hit2._gx._exec.value, j) for j in range(2)] == [[], [0]]
    fg.set_torch_stream(0)


def test_mixed_rows_bound_inside_a_capture_still_branch(fg):
    # the usual decode pattern: one call to warm the plan, then the capture, so the call that
    # binds (the second) runs inside it; the side stream was made at the first call
    h = 0x7F000
    torch, plan, seed, pos, kw, x = _dev_params_plan(fg, h)
    drv = fg.backend.runtime.drv
    plan(x, seed=seed, position=pos, check=False, **kw)  # outside the capture
    made = drv.calls.get("cuStreamCreate", 0)
    fg.set_capturing(h)
    try:
        plan(x, seed=seed, position=pos, check=False, **kw)  # binds, inside the capture
        hit = next(iter(plan._binder._table.values()))
        assert hit._fork is not None
        plan(x, seed=seed, position=pos, check=False, **kw)  # the bound call, forked
        streams = [fg.launch_stream(fg.count("logged") - 4 + k) for k in range(4)]
    finally:
        fg.set_capturing(h, False)
    # (the four kernels of the bound call: phase 1 and the finalize on the stream, the
    # histogram and select passes on its side stream; the driver's log is the process's, so no
    # count from before the test is read: it once asserted one, which failed run alone)
    assert streams[:2] == [h, h] and streams[2] == streams[3] != h
    assert drv.calls.get("cuStreamCreate", 0) == made  # nothing made inside the capture
    fg.set_torch_stream(0)


def test_a_driver_refusing_the_side_stream_keeps_one_chain(fg, monkeypatch):
    h = 0x7F800
    drv = fg.backend.runtime.drv

    def refuse(flags):
        return (1,)  # CUDA_ERROR_INVALID_VALUE

    monkeypatch.setattr(drv, "cuStreamCreate", refuse)
    torch, plan, seed, pos, kw, x = _dev_params_plan(fg, h)
    for _ in range(3):
        plan(x, seed=seed, position=pos, check=False, **kw)
    hit = next(iter(plan._binder._table.values()))
    assert hit._fork is None  # the call went on, its launches one chain under a capture
    fg.set_capturing(h)
    try:
        l0 = fg.count("logged")
        plan(x, seed=seed, position=pos, check=False, **kw)
        assert {fg.launch_stream(l0 + k) for k in range(4)} == {h}
    finally:
        fg.set_capturing(h, False)
    fg.set_torch_stream(0)
