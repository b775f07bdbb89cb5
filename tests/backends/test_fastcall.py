"""The repeated call with torch tensors in C (rocsample/_fastcall.c, issue #17), without a GPU.

tests/fakegpu runs the real GpuBackend, DriverRuntime, scratch pool and binder over a no-op C
driver; the extension calls that driver's capture query and graph launch by their addresses, as
it calls CUDA's (or HIP's) on a GPU. What it must do: serve exactly the calls
``Sampler._torch_repeat`` serves with torch seed and position and no ``out`` (the same launches
at the same addresses, the same outputs), return None for every other call (then Python does it),
keep no caller tensor alive, and follow the binder's table (an entry goes when its bound call
goes). ``make test`` builds the extension (``pip install -e .``) and sets
ROCSAMPLE_REQUIRE_FASTCALL=1, so a missing build fails there instead of skipping.
"""

from __future__ import annotations

import importlib
import threading

import numpy as np
import pytest

import rocsample
from rocsample import sampling as S
from tests import fakegpu

sr = importlib.import_module("rocsample.set_rows")

CHAIN = dict(temperature=0.8, top_k=50, top_p=0.9, min_p=0.05)
ROWS, VOCAB = 4, 4096

_fastcall, pytestmark = fakegpu.fastcall()


@pytest.fixture
def fg(monkeypatch):
    monkeypatch.setattr(S, "_FAST", _fastcall.repeat)
    monkeypatch.setattr(sr, "_FAST", _fastcall.set_rows_repeat)
    yield from fakegpu.installed(monkeypatch)


def _setup(fg, handle=0x7B000, n_views=3):
    torch = fg.torch
    fg.set_torch_stream(handle)  # torch.cuda.stream(s): the plan follows it
    plan = rocsample.Sampler(ROWS, VOCAB, "float32")
    seed = torch.zeros(ROWS, dtype=torch.int64)
    pos = torch.zeros(ROWS, dtype=torch.int64)
    bufs = [torch.empty((ROWS, 2, VOCAB)) for _ in range(n_views)]
    return torch, plan, seed, pos, bufs


def _warm(plan, x, **kw):
    """Three calls: checked, bound, then served by _torch_repeat (which notes the C entry)."""
    for _ in range(3):
        plan(x, **kw)


def _warmed(fg, handle=0x7B000):
    """_setup's plan warmed (_warm) on the first buffer's view with the chain and torch seed and
    position: (torch, plan, that view, the warm-up's arguments, the buffers)."""
    torch, plan, seed, pos, bufs = _setup(fg, handle)
    x = bufs[0][:, -1, :]
    kw = dict(seed=seed, position=pos, check=False, **CHAIN)
    _warm(plan, x, **kw)
    return torch, plan, x, kw, bufs


def _served():
    return _fastcall.served()


def _launches(fg, l0, n=40):
    return [fg.launch_params(k, n) for k in range(l0, fg.count("logged"))]


@pytest.mark.parametrize("variant", ["plain", "logprobs", "advance", "checked"])
def test_c_serves_what_python_serves_with_the_same_launches(fg, variant, monkeypatch):
    torch, plan, seed, pos, bufs = _setup(fg)
    plan._outputs[2].copy_to_device(np.zeros(ROWS, np.int32))  # (no kernel runs: rows "ok")
    kw = dict(seed=seed, position=pos, check=variant == "checked", **CHAIN)
    kw.update({"logprobs": dict(return_logprobs=True),
               "advance": dict(advance_position=True)}.get(variant, {}))
    _warm(plan, bufs[0][:, -1, :], **kw)
    assert len(plan._fast) == 1
    for n in range(6):
        x = bufs[n % 3][:, -1, :]  # a new view each call, three buffers in turn
        s0, l0, g0 = _served(), fg.count("logged"), fg.count("graph")
        got = plan(x, **kw)
        assert _served() - s0 == 1 and fg.count("graph") - g0 == 1
        in_c = _launches(fg, l0)
        monkeypatch.setattr(S, "_FAST", None)  # the same call in Python
        l1 = fg.count("logged")
        want = plan(x, **kw)
        monkeypatch.setattr(S, "_FAST", _fastcall.repeat)
        assert in_c == _launches(fg, l1) and len(in_c) == (3 if variant == "advance" else 2)
        assert in_c[0][4] == x.data_ptr()  # the logits' address, as numba packs it
        assert type(got) is type(want)
        if variant == "checked":
            assert got.data_ptr() == want.data_ptr()  # the tokens (the status was read)
        else:
            assert len(got) == len(want) == (3 if variant == "logprobs" else 2)
            assert [t.data_ptr() for t in got] == [t.data_ptr() for t in want]


@pytest.mark.parametrize("op", ["Sampler", "one-off sample"])
def test_a_new_address_past_the_graphs_is_re_pointed_in_c(fg, op, monkeypatch):
    # once a bound call holds its eight graphs, a new logits address re-points the oldest
    # graph's nodes of the launches reading the logits (both the chain's kernels), in C: the
    # launches and outputs Python's BoundCall.run makes, without calling it
    from rocsample.binder import _EXECS, BoundCall

    torch, plan, seed, pos, bufs = _setup(fg, 0x7B080, n_views=_EXECS + 6)
    kw = dict(seed=seed, position=pos, check=False, **CHAIN)
    if op == "Sampler":
        call = plan
    else:
        monkeypatch.setattr(S, "_TORCH_PLANS", {})

        def call(x, **kw):
            return rocsample.sample(x, **kw)
    for b in bufs[:_EXECS + 2]:  # checked, bound, then a graph for each of eight addresses
        call(b[:, -1, :], **kw)
    owner = plan if op == "Sampler" else next(iter(S._TORCH_PLANS.values()))
    (hit,) = owner._binder._table.values()
    assert len(hit._execs) == _EXECS and hit._nlive is not None
    runs = []
    real_run = BoundCall.run
    monkeypatch.setattr(BoundCall, "run", lambda self, *a, **k: runs.append(1) or real_run(self, *a, **k))
    for b in bufs[_EXECS + 2:] + bufs[:2]:  # new to the graphs (the first two: long gone)
        x = b[:, -1, :]
        s0, l0, g0, p0 = _served(), fg.count("logged"), fg.count("graph"), fg.count("setparams")
        i0 = fg.count("instantiate")
        got = call(x, **kw)
        assert _served() - s0 == 1 and fg.count("graph") - g0 == 1 and runs == []
        assert fg.count("setparams") - p0 == 2 and fg.count("instantiate") == i0
        in_c = _launches(fg, l0)
        assert [lp[4] for lp in in_c] == [x.data_ptr()] * 2  # both kernels read these logits
        assert len(hit._execs) == _EXECS and list(hit._execs)[-1][0] == x.data_ptr()
        assert hit._gx is hit._execs[list(hit._execs)[-1]]
        monkeypatch.setattr(S, "_FAST", None)  # the same call in Python: the same launches
        l1 = fg.count("logged")
        want = call(x, **kw)
        monkeypatch.setattr(S, "_FAST", _fastcall.repeat)
        assert len(runs) == 1
        runs.clear()
        if op == "Sampler":
            assert in_c == _launches(fg, l1)
            assert [t.data_ptr() for t in got] == [t.data_ptr() for t in want]
        else:  # (new outputs each call: compared relative to each call's block)
            assert _masked(in_c, got[0].data_ptr()) == _masked(_launches(fg, l1), want[0].data_ptr())


@pytest.mark.parametrize("change", ["out", "numba logits", "advancing int position"])
def test_other_argument_kinds_are_left_to_python(fg, change):
    torch, plan, x, kw, bufs = _warmed(fg)
    if change == "out":
        kw["out"] = torch.zeros(ROWS, dtype=torch.int32)
    elif change == "numba logits":
        x = fg.backend.cuda.device_array((ROWS, VOCAB), "float32")
    else:  # (advanced on the host, in place: a NumPy array)
        kw.update(position=np.zeros(ROWS, np.int64), advance_position=True)
    s0 = _served()
    for _ in range(5):
        assert plan(x, **kw) is not None
    assert _served() == s0 and len(plan._fast) == 1


@pytest.mark.parametrize("change", ["temperature value", "temperature type", "return_logprobs",
                                    "dtype", "strided logits", "strided seed", "int seed",
                                    "int position"])
def test_another_key_is_not_served_by_this_keys_entry(fg, change):
    # a call differing in anything the key holds misses the entry; once its own key is bound
    # and served by _torch_repeat, it gets an entry of its own
    torch, plan, x, kw, bufs = _warmed(fg)
    if change == "temperature value":
        kw["temperature"] = 0.7
    elif change == "temperature type":
        kw["temperature"] = 1
    elif change == "return_logprobs":
        kw["return_logprobs"] = True
    elif change == "dtype":
        kw["dtype"] = "float32"
    elif change == "strided logits":
        x = torch.empty((ROWS, 3 * VOCAB))[:, :VOCAB]  # (the views' row stride is 2 * VOCAB)
    elif change == "strided seed":
        kw["seed"] = torch.zeros(2 * ROWS, dtype=torch.int64)[::2]
    elif change == "int seed":
        kw["seed"] = 7
    else:
        kw["position"] = 3
    s0 = _served()
    for _ in range(3):  # checked and remembered, bound, served by _torch_repeat
        plan(x, **kw)
    assert _served() == s0 and len(plan._fast) == 2
    plan(x, **kw)
    assert _served() == s0 + 1


def test_a_capturing_stream_is_left_to_python(fg):
    torch, plan, x, kw, bufs = _warmed(fg, 0x7B100)
    s0, g0, c0 = _served(), fg.count("graph"), fg.count("launch")
    fg.set_capturing(0x7B100)  # a capture rocsample did not begin (torch.cuda.graph)
    try:
        plan(x, **kw)
    finally:
        fg.set_capturing(0x7B100, False)
    # the probe said capturing: Python's request path launched kernel by kernel
    assert _served() == s0
    assert fg.count("graph") == g0 and fg.count("launch") - c0 == 2
    for _ in range(3):
        plan(x, **kw)
    assert _served() > s0  # and C again once the capture is over


def test_pool_work_queued_sends_the_call_to_python(fg):
    torch, plan, x, kw, bufs = _warmed(fg, 0x7B200)
    pool = S._pool(fg.backend)
    ran = []
    pool._deferred.append(lambda: ran.append(1))
    s0 = _served()
    plan(x, **kw)
    assert _served() == s0 and ran == [1]  # the request path ran the deferred work
    plan(x, **kw)
    assert _served() == s0 + 1


def test_an_entry_goes_with_its_bound_call(fg):
    torch, plan, x, kw, bufs = _warmed(fg, 0x7B300)
    assert len(plan._fast) == 1
    (key,) = plan._binder._table
    plan._binder.drop(key)
    assert plan._fast == []
    s0 = _served()
    plan(x, **kw)  # the full path: remembered, not bound
    plan(x, **kw)  # bound again
    assert _served() == s0 and plan._fast == []
    plan(x, **kw)  # _torch_repeat, which notes it again
    plan(x, **kw)
    assert _served() == s0 + 1 and len(plan._fast) == 1
    plan._binder.clear()
    assert plan._fast == []


def test_entries_are_bounded_and_keep_no_caller_tensor(fg):
    torch, plan, seed, pos, bufs = _setup(fg, 0x7B400)
    x = bufs[0][:, -1, :]
    for t in range(10):  # ten temperature values: ten keys (the binder keeps its 8)
        kw = dict(CHAIN, temperature=0.5 + t / 10)
        # (four calls: past 8 keys a binding drops the oldest bound call, whose graphs are
        # destroyed through the pool's deferred work, which the third call's request path runs)
        for _ in range(4):
            plan(x, seed=seed, position=pos, check=False, **kw)
        assert 1 <= len(plan._fast) <= 8

    def walk(o):
        yield o
        if isinstance(o, (tuple, list)):
            for v in o:
                yield from walk(v)

    # layouts and the plan's own outputs only: never the caller's tensors (nor their buffers)
    held = list(walk(plan._fast))
    for t in (x, seed, pos, *bufs):
        assert all(o is not t for o in held)


def test_another_current_stream_is_not_served_by_this_ones_entry(fg):
    torch, plan, x, kw, bufs = _warmed(fg, 0x7B500)
    fg.set_torch_stream(0x7B600)
    s0 = _served()
    for _ in range(3):  # this stream's key: checked, bound, served by _torch_repeat
        l0 = fg.count("logged")
        plan(x, **kw)
    assert _served() == s0
    assert fg.launch_stream(l0) == 0x7B600
    fg.set_torch_stream(0x7B500)
    l0 = fg.count("logged")
    plan(x, **kw)
    assert _served() == s0 + 1 and fg.launch_stream(l0) == 0x7B500


def test_a_stream_lock_held_elsewhere_leaves_the_call_to_python(fg):
    torch, plan, x, kw, bufs = _warmed(fg, 0x7B700)
    (hit,) = plan._binder._table.values()
    held, go = threading.Event(), threading.Event()

    def hold():
        with hit.lock:
            held.set()
            go.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    held.wait(10)
    try:
        args = (plan._fast, x, 0.8, 50, 0.9, 0.05, kw["seed"], kw["position"], False, False,
                False, None, None, False)
        assert _fastcall.repeat(*args) is None  # busy: Python waits for the lock
    finally:
        go.set()
        t.join()
    assert _fastcall.repeat(*args) is not None


def test_int_seed_and_position_values_each_have_their_device_copy(fg, monkeypatch):
    # a Python int seed/position matches its entry by value, at the device copy the Python path
    # launches with; another value is Python's (a new copy, the same bound call re-pointed)
    torch, plan, _, _, bufs = _setup(fg, 0x7BA00)
    x = bufs[0][:, -1, :]
    kw = dict(seed=7, position=3, check=False, **CHAIN)
    _warm(plan, x, **kw)
    (entry,) = plan._fast
    assert entry[3][0] == 7 and entry[4][0] == 3
    for pos in (3, 4, 3):
        s0, l0 = _served(), fg.count("logged")
        plan(x, **dict(kw, position=pos))
        assert _served() - s0 == (pos == 3)
        in_c = _launches(fg, l0)
        monkeypatch.setattr(S, "_FAST", None)
        l1 = fg.count("logged")
        plan(x, **dict(kw, position=pos))
        monkeypatch.setattr(S, "_FAST", _fastcall.repeat)
        assert in_c == _launches(fg, l1) and len(in_c) == 2


def _masked(launches, base):
    """Launch parameters with the addresses inside one call's outputs block made relative."""
    return [[("out", v - base) if base <= v < base + 12 * ROWS else v for v in lp]
            for lp in launches]


@pytest.mark.parametrize("op", ["sample", "argmax"])
def test_one_off_calls_are_served_in_c_with_new_outputs(fg, op, monkeypatch):
    # rocsample.sample / argmax with torch logits on torch's current stream: the plan from
    # _TORCH_PLANS, then C with outputs made for each call (new torch tensors), launched where
    # Python launches them
    monkeypatch.setattr(S, "_TORCH_PLANS", {})
    torch = fg.torch
    fg.set_torch_stream(0x7BB00)
    seed = torch.zeros(ROWS, dtype=torch.int64)
    pos = torch.zeros(ROWS, dtype=torch.int64)
    bufs = [torch.empty((ROWS, 2, VOCAB)) for _ in range(2)]

    def call(x):
        if op == "argmax":
            return rocsample.argmax(x, check=False)
        return rocsample.sample(x, seed=seed, position=pos, check=False, **CHAIN)

    for _ in range(3):  # checked and remembered, bound, served by _torch_repeat
        call(bufs[0][:, -1, :])
    held = []
    for n in range(4):
        x = bufs[n % 2][:, -1, :]
        s0, l0 = _served(), fg.count("logged")
        tok, status = call(x)
        assert _served() - s0 == 1
        assert status.data_ptr() == tok.data_ptr() + 4 * ROWS
        assert all(tok.data_ptr() != t.data_ptr() for t in held)  # new outputs, every call
        held.append(tok)
        in_c = _launches(fg, l0)
        assert in_c[0][4] == x.data_ptr()
        (plan,) = S._TORCH_PLANS.values()
        (hit,) = plan._binder._table.values()
        # the graph launched holds this call's outputs (one (3, rows) block: tokens, status)
        assert hit._gptrs[7] == tok.data_ptr() and hit._gptrs[9] == status.data_ptr()
        monkeypatch.setattr(S, "_FAST", None)
        l1 = fg.count("logged")
        tok2, _ = call(x)
        monkeypatch.setattr(S, "_FAST", _fastcall.repeat)
        held.append(tok2)
        py = _launches(fg, l1)
        # the same launches but for where each call's own outputs are (one (3, rows) block)
        assert tok2.data_ptr() != tok.data_ptr()
        assert _masked(in_c, tok.data_ptr()) == _masked(py, tok2.data_ptr())


def _one_off_warmed(fg, handle, monkeypatch, logprobs=False):
    monkeypatch.setattr(S, "_TORCH_PLANS", {})
    torch = fg.torch
    fg.set_torch_stream(handle)
    seed = torch.zeros(ROWS, dtype=torch.int64)
    pos = torch.zeros(ROWS, dtype=torch.int64)
    x = torch.empty((ROWS, 2, VOCAB))[:, -1, :]
    kw = dict(seed=seed, position=pos, check=False, return_logprobs=logprobs, **CHAIN)
    for _ in range(3):  # checked and remembered, bound, served by _torch_repeat
        rocsample.sample(x, **kw)
    return torch, x, kw


@pytest.mark.parametrize("logprobs", [False, True])
def test_repeated_one_off_outputs_are_each_calls_own_from_a_block_made_for_many(
        fg, logprobs, monkeypatch):
    # a repeated one-off call's outputs: the next call's rows of a block torch.empty made for
    # S._POOL_CALLS calls, never two calls' bytes shared, each call's launches writing its own
    torch, x, kw = _one_off_warmed(fg, 0x7BC00 + 0x10 * logprobs, monkeypatch, logprobs)
    made = []
    empty = torch.empty
    monkeypatch.setattr(torch, "empty", lambda *a, **k: made.append(a[0]) or empty(*a, **k))
    spans = []
    for _ in range(2 * S._POOL_CALLS + 3):
        s0 = _served()
        got = rocsample.sample(x, **kw)
        assert _served() - s0 == 1
        tok, status = got[0], got[-1]
        assert status.data_ptr() == tok.data_ptr() + 4 * ROWS
        if logprobs:
            assert got[1].dtype == torch.float32 and got[1].data_ptr() == tok.data_ptr() + 8 * ROWS
        k = 3 if logprobs else 2
        spans.append((tok.data_ptr(), tok.data_ptr() + 4 * k * ROWS, got))
        # the graph launched writes this call's outputs
        (plan,) = S._TORCH_PLANS.values()
        (hit,) = plan._binder._table.values()
        assert hit._gptrs[7] == tok.data_ptr() and hit._gptrs[9] == status.data_ptr()
        assert hit._gptrs[8] == (got[1].data_ptr() if logprobs else plan._out_ptrs[1])
    spans.sort(key=lambda t: t[0])
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))  # no byte shared by two calls
    # one allocation a block of _POOL_CALLS calls, made by the call that finds none left (the
    # warm-up's last call made the first: 15 calls left, then 2 x 16 for the 35 calls here)
    k = 3 if logprobs else 2
    assert made == [(S._POOL_CALLS * k, ROWS)] * 2


def test_a_captured_one_off_call_takes_its_outputs_from_torch_not_the_block(fg, monkeypatch):
    # inside a capture the outputs come from torch's allocator (torch.cuda.graph's own pool):
    # a block's rows outlive a capture's graph's hold on them
    torch, x, kw = _one_off_warmed(fg, 0x7BD00, monkeypatch)
    rocsample.sample(x, **kw)  # (a block made)
    made = []
    empty = torch.empty
    monkeypatch.setattr(torch, "empty", lambda *a, **k: made.append(a[0]) or empty(*a, **k))
    fg.set_capturing(0x7BD00)
    try:
        s0 = _served()
        tok, status = rocsample.sample(x, **kw)
        assert _served() == s0 and made == [(2, ROWS)]  # Python's path, one call's own block
    finally:
        fg.set_capturing(0x7BD00, False)
    rocsample.sample(x, **kw)  # (the first call after a capture: Python's path lets go of it)
    n, s0 = len(made), _served()
    tok2, _ = rocsample.sample(x, **kw)
    assert _served() - s0 == 1 and len(made) == n  # in C again, from the block's next rows
    assert tok2.data_ptr() != tok.data_ptr()


def test_timing_counts_the_served_calls_parts_only_when_asked(fg):
    torch, plan, x, kw, bufs = _warmed(fg, 0x7BE00)
    _fastcall.timing(False)  # (reset)
    plan(x, **kw)
    assert _fastcall.timing(True)["calls"] == 0  # off: nothing counted
    for _ in range(3):
        plan(x, **kw)
    t = _fastcall.timing(False)
    assert t["calls"] == 3 and t["outputs_ns"] == 0 and t["node_update_ns"] == 0
    assert 0 < t["probe_ns"] + t["graph_launch_ns"] <= t["total_ns"]
    # the arguments' reads and the entry match: parts of the whole call, apart from the launch
    parts = t["reads_ns"] + t["match_ns"]
    assert t["reads_ns"] > 0 and t["match_ns"] > 0
    assert parts + t["probe_ns"] + t["graph_launch_ns"] <= t["total_ns"]
    plan(x, **kw)
    assert _fastcall.timing(False) == dict.fromkeys(t, 0)


def test_the_switch_off_serves_nothing_in_c(fg, monkeypatch):
    monkeypatch.setattr(S, "_FAST", None)
    torch, plan, seed, pos, bufs = _setup(fg, 0x7B800)
    x = bufs[0][:, -1, :]
    s0 = _served()
    for _ in range(5):
        plan(x, seed=seed, position=pos, check=False, **CHAIN)
    assert _served() == s0 and plan._fast == []


def _kv(fg, handle=0x7C000, layers=4):
    torch = fg.torch
    fg.set_torch_stream(handle)
    kv = torch.zeros(layers, 64, 128, dtype=torch.float16)
    new = torch.zeros(layers, 1, 128, dtype=torch.float32)
    idx = torch.zeros(1, dtype=torch.int64)
    for _ in range(3):  # checked and remembered, bound, served by the Python repeated path
        sr.set_rows(kv[0], new[0], idx, check_bounds=False)
    return torch, kv, new, idx


def test_set_rows_repeated_calls_are_served_in_c_with_pythons_launches(fg, monkeypatch):
    torch, kv, new, idx = _kv(fg)
    assert len(sr._binder.fast) == 1
    for _step in range(2):
        for layer in range(4):  # a new view of each layer every call
            s0, l0, g0 = _served(), fg.count("logged"), fg.count("graph")
            got = sr.set_rows(kv[layer], new[layer], idx, check_bounds=False)
            assert _served() - s0 == 1 and fg.count("graph") - g0 == 1
            assert got.data_ptr() == kv[layer].data_ptr()
            in_c = _launches(fg, l0)
            monkeypatch.setattr(sr, "_FAST", None)
            l1 = fg.count("logged")
            sr.set_rows(kv[layer], new[layer], idx, check_bounds=False)
            monkeypatch.setattr(sr, "_FAST", _fastcall.set_rows_repeat)
            assert in_c == _launches(fg, l1) and len(in_c) == 1
            assert kv[layer].data_ptr() in in_c[0] and new[layer].data_ptr() in in_c[0]


@pytest.mark.parametrize("change", ["checked", "stream", "dst_type", "int32 idx", "another backend"])
def test_set_rows_other_calls_are_left_to_python(fg, change, monkeypatch):
    torch, kv, new, idx = _kv(fg, 0x7C100)
    kw = dict(check_bounds=False)
    if change == "checked":  # (asked directly: the fake's checked call reads no real indices)
        from rocsample import backends

        assert _fastcall.set_rows_repeat(sr._binder.fast, backends, kv[1], new[1], idx, None,
                                         None, False) is not None
        assert _fastcall.set_rows_repeat(sr._binder.fast, backends, kv[1], new[1], idx, None,
                                         None, True) is None
        return
    if change == "stream":
        kw["stream"] = 0x7C100
    elif change == "dst_type":
        kw["dst_type"] = "f16"
    elif change == "int32 idx":
        idx = torch.zeros(1, dtype=torch.int32)
    else:
        import types

        args = (sr._binder.fast, types.SimpleNamespace(_current=object()), kv[1], new[1], idx,
                None, None, False)
        assert _fastcall.set_rows_repeat(*args) is None
        return
    s0 = _served()
    sr.set_rows(kv[1], new[1], idx, **kw)
    assert _served() == s0


def test_set_rows_overlap_is_refused_by_the_full_path(fg):
    # src of the bound layout but inside dst's bytes: C leaves the call to Python, whose full
    # path refuses it (nothing written)
    torch = fg.torch
    fg.set_torch_stream(0x7C200)
    raw = np.zeros(1 << 16, np.uint8)
    off = -raw.__array_interface__["data"][0] % 256
    dst = torch.Tensor(raw[off:off + 16384].view(np.float16).reshape(64, 128))
    ok = torch.Tensor(raw[off + 32768:off + 33280].view(np.float32).reshape(1, 128))
    bad = torch.Tensor(raw[off + 512:off + 1024].view(np.float32).reshape(1, 128))
    idx = torch.zeros(1, dtype=torch.int64)
    for _ in range(4):
        sr.set_rows(dst, ok, idx, check_bounds=False)
    s0 = _served()
    sr.set_rows(dst, ok, idx, check_bounds=False)
    assert _served() == s0 + 1
    with pytest.raises(ValueError, match="overlap"):
        sr.set_rows(dst, bad, idx, check_bounds=False)
    assert _served() == s0 + 1
