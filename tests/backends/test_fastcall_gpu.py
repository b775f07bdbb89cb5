"""The repeated call in C (rocsample/_fastcall.c, issue #17) on a GPU with real torch tensors: the
calls it serves launch the real driver's graph at this call's addresses on torch's current
stream, with the tokens and rows the Python path gives for the same inputs, and a capture
(torch.cuda.graph) still takes Python's capture path. tests/backends/test_fastcall.py has the
rules over the no-op driver; this checks what only a GPU shows (the driver's function addresses,
real kernels, torch's streams). Needs a GPU backend and torch with CUDA.
"""

from __future__ import annotations

import numpy as np
import pytest

import rocsample as rs
from rocsample import sampling as S

pytestmark = pytest.mark.gpu

CHAIN = dict(temperature=0.8, top_k=50, top_p=0.9, min_p=0.05)
sr = pytest.importorskip("rocsample.set_rows")


@pytest.fixture
def fastcall():
    from rocsample import _fastcall  # (the device scripts build it: tools/gpu/env.sh)

    if S._FAST is None:
        pytest.skip("ROCSAMPLE_FASTCALL=0")
    return _fastcall


def test_decode_loop_calls_served_in_c_match_the_python_path(backend, torch, fastcall,
                                                             monkeypatch):
    rows, vocab, steps = 8, 32000, 12
    dev = torch.device("cuda", torch.cuda.current_device())
    gen = torch.Generator(device=dev).manual_seed(5)
    bufs = [torch.randn((rows, 2, vocab), device=dev, generator=gen) * 3 for _ in range(3)]
    seed = torch.arange(rows, dtype=torch.int64, device=dev)
    pos = torch.zeros(rows, dtype=torch.int64, device=dev)
    s = torch.cuda.Stream()
    plan = rs.Sampler(rows, vocab, "float32")
    got, want = [], []
    with torch.cuda.stream(s):
        for step in range(steps):
            x = bufs[step % 3][:, -1, :]  # a new view each step, three buffers in turn
            pos.fill_(step)
            s0 = fastcall.served()
            tok, status = plan(x, seed=seed, position=pos, check=False, **CHAIN)
            if step >= 3:  # (checked, bound, then noted by the Python repeated call)
                assert fastcall.served() - s0 == 1
            got.append(tok.clone())
            monkeypatch.setattr(S, "_FAST", None)
            tok2, _ = plan(x, seed=seed, position=pos, check=False, **CHAIN)
            monkeypatch.setattr(S, "_FAST", fastcall.repeat)
            want.append(tok2.clone())
            assert int(status.max()) == 0
    s.synchronize()
    for a, b in zip(got, want):
        assert torch.equal(a, b)
    assert len({tuple(t.tolist()) for t in got}) > 1  # the positions moved the draws


def test_set_rows_ring_written_in_c_matches_the_python_path(backend, torch, fastcall,
                                                            monkeypatch):
    dev = torch.device("cuda", torch.cuda.current_device())
    gen = torch.Generator(device=dev).manual_seed(6)
    layers, ring_rows, width = 4, 64, 256
    kv_c = torch.zeros((layers, ring_rows, width), dtype=torch.float16, device=dev)
    kv_py = torch.zeros_like(kv_c)
    s = torch.cuda.Stream()
    s0 = fastcall.served()
    with torch.cuda.stream(s):
        for step in range(10):
            new = torch.randn((layers, 1, width), device=dev, generator=gen)
            idx = torch.tensor([(7 * step) % ring_rows], dtype=torch.int64, device=dev)
            for layer in range(layers):
                sr.set_rows(kv_c[layer], new[layer], idx, check_bounds=False)
                monkeypatch.setattr(sr, "_FAST", None)
                sr.set_rows(kv_py[layer], new[layer], idx, check_bounds=False)
                monkeypatch.setattr(sr, "_FAST", fastcall.set_rows_repeat)
    s.synchronize()
    assert fastcall.served() - s0 >= 10 * layers - 4  # every call after the first few
    assert torch.equal(kv_c, kv_py) and bool(kv_c.abs().sum() > 0)
    host = kv_c.cpu().numpy()
    assert np.isfinite(host).all()


def test_a_torch_capture_after_c_served_calls_replays_exactly(backend, torch, fastcall):
    rows, vocab = 4, 4096
    dev = torch.device("cuda", torch.cuda.current_device())
    gen = torch.Generator(device=dev).manual_seed(7)
    x = torch.randn((rows, vocab), device=dev, generator=gen) * 3
    seed = torch.arange(rows, dtype=torch.int64, device=dev)
    pos = torch.zeros(rows, dtype=torch.int64, device=dev)
    s = torch.cuda.Stream()
    plan = rs.Sampler(rows, vocab, "float32")
    with torch.cuda.stream(s):
        for _ in range(5):  # warmed; the last calls served in C
            plan(x, seed=seed, position=pos, check=False, **CHAIN)
        want = [plan(x, seed=seed, position=pos, check=False, **CHAIN)[0].clone()]
    s.synchronize()
    g = torch.cuda.CUDAGraph()
    s0 = fastcall.served()
    with torch.cuda.graph(g, stream=s):
        tok, _ = plan(x, seed=seed, position=pos, check=False, **CHAIN)
    assert fastcall.served() == s0  # the capture took Python's path
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    assert torch.equal(tok, want[0])


def test_one_off_calls_served_in_c_match_the_python_path(backend, torch, fastcall, monkeypatch):
    rows, vocab = 8, 32000
    dev = torch.device("cuda", torch.cuda.current_device())
    gen = torch.Generator(device=dev).manual_seed(8)
    bufs = [torch.randn((rows, 2, vocab), device=dev, generator=gen) * 3 for _ in range(2)]
    seed = torch.arange(rows, dtype=torch.int64, device=dev)
    pos = torch.zeros(rows, dtype=torch.int64, device=dev)
    s = torch.cuda.Stream()
    served = 0
    with torch.cuda.stream(s):
        for step in range(8):
            x = bufs[step % 2][:, -1, :]
            s0 = fastcall.served()
            tok, status = rs.sample(x, seed=seed, position=pos, check=False, **CHAIN)
            top, st2 = rs.argmax(x, check=False)
            served += fastcall.served() - s0
            monkeypatch.setattr(S, "_FAST", None)
            tok2, _ = rs.sample(x, seed=seed, position=pos, check=False, **CHAIN)
            top2, _ = rs.argmax(x, check=False)
            monkeypatch.setattr(S, "_FAST", fastcall.repeat)
            assert tok.data_ptr() != tok2.data_ptr()  # outputs made for each call
            assert torch.equal(tok, tok2) and torch.equal(top, top2)
            assert torch.equal(top.long(), x.argmax(dim=-1))
            assert int(status.max()) == 0 and int(st2.max()) == 0
    assert served >= 2 * 8 - 6  # every call after the first few of each


def test_one_off_outputs_held_across_many_calls_and_new_addresses_stay_exact(backend, torch,
                                                                          fastcall, monkeypatch):
    # one-off calls with a new logits address every call (more than a bound call's graphs: the
    # C path re-points the oldest graph) and every call's outputs held: each call's rows of a
    # block made for many calls (S._POOL_CALLS) are written by that call alone, so every held
    # result still equals what the Python path gives for the same logits, once all have run
    from rocsample.binder import _EXECS

    rows, vocab, n = 8, 32000, 3 * S._POOL_CALLS
    dev = torch.device("cuda", torch.cuda.current_device())
    gen = torch.Generator(device=dev).manual_seed(9)
    bufs = [torch.randn((rows, 2, vocab), device=dev, generator=gen) * 3
            for _ in range(3 * _EXECS)]
    seed = torch.arange(rows, dtype=torch.int64, device=dev)
    pos = torch.zeros(rows, dtype=torch.int64, device=dev)
    s = torch.cuda.Stream()
    held, served = [], 0
    with torch.cuda.stream(s):
        for step in range(n):
            x = bufs[step % len(bufs)][:, -1, :]
            s0 = fastcall.served()
            held.append((x, rs.sample(x, seed=seed, position=pos, check=False, **CHAIN),
                         rs.argmax(x, check=False)))
            served += fastcall.served() - s0
    spans = sorted((t.data_ptr(), t.data_ptr() + 8 * rows) for _, o, a in held for t in (o[0], a[0]))
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))  # no two calls' outputs meet
    monkeypatch.setattr(S, "_FAST", None)
    with torch.cuda.stream(s):
        for x, (tok, status), (top, st2) in held:
            tok2, _ = rs.sample(x, seed=seed, position=pos, check=False, **CHAIN)
            assert torch.equal(tok, tok2) and torch.equal(top.long(), x.argmax(dim=-1))
            assert int(status.max()) == 0 and int(st2.max()) == 0
    assert served >= 2 * n - 6
