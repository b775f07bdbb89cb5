"""Regression (issue #17): torch and CuPy callers got another framework's conventions.

What broke (H200, torch 2.11): with torch tensors and ``stream=None``, rocsample launched on the
backend's default stream even inside ``with torch.cuda.stream(s):`` (every PyTorch extension runs
on ``torch.cuda.current_stream()``), so with torch's non-blocking streams a call could read its
logits before the torch op that wrote them had run; outputs came back as numba device arrays
whatever the caller passed; a CuPy stream object was refused; a DLPack producer was not accepted.
Now ``stream=None`` means the inputs' framework's current stream (torch's of the tensors'
device, CuPy's ``get_current_stream()``), outputs come back in the caller's framework on the same
device (zero-copy), and ``__dlpack__`` producers are read in place. Needs a GPU with torch/CuPy.
"""

from __future__ import annotations

import numpy as np
import pytest

import rocsample as rs
from rocsample.reference import sampling as R
from rocsample.reference import set_rows as ref

pytestmark = pytest.mark.gpu

CHAIN = dict(temperature=0.8, top_k=50, top_p=0.9, min_p=0.05)


def _slow_fill(torch, dst, value):
    """Write ``value`` into ``dst`` on the current stream after ~10 ms of other work there: a
    call on any other stream reads ``dst`` before it is written."""
    a = torch.randn((2048, 2048), device=dst.device)
    for _ in range(40):
        a = torch.tanh(a @ a)
    dst.copy_(value + 0 * a[0, 0])


def test_side_stream_calls_run_on_torchs_current_stream(backend, torch):
    rows, vocab = 8, 4096
    dev = torch.device("cuda", torch.cuda.current_device())
    gen = torch.Generator(device=dev).manual_seed(3)
    want_logits = torch.randn((rows, vocab), device=dev, generator=gen) * 4
    wl = want_logits.cpu().numpy()
    seed = torch.arange(rows, dtype=torch.int64, device=dev)
    pos = torch.full((rows,), 9, dtype=torch.int64, device=dev)
    plan = rs.Sampler(rows, vocab, "float32")
    ring = torch.zeros((64, 256), dtype=torch.float16, device=dev)
    row = torch.randn((1, 256), device=dev, generator=gen)
    idx = torch.tensor([5], dtype=torch.int64, device=dev)
    # warm everything once on a synchronised side stream (binds on the second call)
    s = torch.cuda.Stream()
    for _ in range(2):
        with torch.cuda.stream(s):
            rs.argmax(want_logits, check=False)
            rs.sample(want_logits, seed=seed, position=pos, check=False, **CHAIN)
            plan(want_logits, seed=seed, position=pos, check=False, **CHAIN)
            rs.set_rows(ring, row, idx, check_bounds=False)
        torch.cuda.synchronize()
    ring.zero_()
    torch.cuda.synchronize()
    # the real run: no synchronisation between the torch op writing the inputs and the calls
    x = torch.zeros((rows, vocab), device=dev)
    src = torch.zeros((1, 256), device=dev)
    with torch.cuda.stream(s):
        _slow_fill(torch, x, want_logits)
        _slow_fill(torch, src, row)
        greedy = rs.argmax(x, check=False)[0].clone()  # torch ops after them, same stream
        one_off = rs.sample(x, seed=seed, position=pos, check=False, **CHAIN)[0].clone()
        planned = plan(x, seed=seed, position=pos, check=False, **CHAIN)[0].clone()
        rs.set_rows(ring, src, idx, check_bounds=False)
        ring_after = ring.clone()
    torch.cuda.synchronize()
    for t in (greedy, one_off, planned):
        assert isinstance(t, torch.Tensor) and t.device == dev and t.dtype == torch.int32
    assert greedy.cpu().tolist() == list(wl.argmax(axis=1))
    want, _, _, near = R.sample_with_margin(wl, seed=np.arange(rows), position=9, **CHAIN)
    for name, t in (("sample", one_off), ("Sampler", planned)):
        got = t.cpu().numpy()
        assert not ((got != want) & ~near).any(), f"{name}: got {got}, want {want}"
    model = np.zeros((64, 256), np.float16)
    ref.set_rows(model, row.cpu().numpy(), np.array([5]))
    assert np.array_equal(ring_after.cpu().numpy().view(np.uint16), model.view(np.uint16))


def test_outputs_in_torch_zero_copy_and_out_accepts_torch(backend, torch):
    dev = torch.device("cuda", torch.cuda.current_device())
    x = torch.randn((4, 1000), device=dev)
    tok, lp = rs.sample(x, seed=1, position=2, return_logprobs=True, **CHAIN)
    assert isinstance(tok, torch.Tensor) and isinstance(lp, torch.Tensor)
    assert tok.dtype == torch.int32 and lp.dtype == torch.float32 and tok.device == dev
    out = torch.full((4,), -7, dtype=torch.int32, device=dev)
    res = rs.argmax(x, out=out)
    assert res is out and out.cpu().tolist() == x.argmax(dim=1).cpu().tolist()
    # bfloat16 torch logits (torch's own array interface refuses bfloat16)
    xb = x.to(torch.bfloat16)
    tb = rs.argmax(xb)
    assert tb.cpu().tolist() == xb.float().argmax(dim=1).cpu().tolist()


class _DLPackOnly:
    """A producer with only the DLPack protocol (no __cuda_array_interface__)."""

    def __init__(self, t):
        self._t = t
        self.shape, self.dtype = tuple(t.shape), np.dtype("float32")

    def __dlpack__(self, stream=None):
        return self._t.__dlpack__()

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


def test_a_dlpack_producer_is_read_in_place(backend, torch):
    dev = torch.device("cuda", torch.cuda.current_device())
    x = torch.randn((3, 500), device=dev)
    tok = rs.argmax(_DLPackOnly(x))
    assert list(backend.to_host(tok)) == x.argmax(dim=1).cpu().tolist()


def test_cupy_arrays_and_a_cupy_stream(backend):
    cp = pytest.importorskip("cupy")
    rows, vocab = 4, 3000
    rng = np.random.default_rng(0)
    xh = (rng.standard_normal((rows, vocab)) * 3).astype(np.float32)
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        x = cp.asarray(xh)
        seed = cp.arange(rows, dtype=cp.int64)
        tok = rs.sample(x, seed=seed, position=4, check=False, **CHAIN)[0]  # stream: CuPy's
        tok2 = rs.sample(x, seed=seed, position=4, check=False, stream=s, **CHAIN)[0]
        plan = rs.Sampler(rows, vocab, "float32")
        tok3 = plan(x, seed=seed, position=4, check=False, **CHAIN)[0]
        ring = cp.zeros((16, 64), cp.float16)
        src = cp.asarray(rng.standard_normal((2, 64)).astype(np.float32))
        rs.set_rows(ring, src, cp.asarray([3, 9], cp.int64), check_bounds=False)
    s.synchronize()
    want, _, _, near = R.sample_with_margin(xh, seed=np.arange(rows), position=4, **CHAIN)
    for t in (tok, tok2, tok3):
        assert isinstance(t, cp.ndarray), "CuPy in, CuPy out"
        got = cp.asnumpy(t)
        assert not ((got != want) & ~near).any(), f"got {got}, want {want}"
    model = np.zeros((16, 64), np.float16)
    ref.set_rows(model, cp.asnumpy(src), np.array([3, 9]))
    assert np.array_equal(cp.asnumpy(ring).view(np.uint16), model.view(np.uint16))
