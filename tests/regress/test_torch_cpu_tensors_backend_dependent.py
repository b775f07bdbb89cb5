"""Torch CPU tensors read as NumPy views of their memory, on every backend (DLPack's CPU rule).

What broke (issue #12, defect 7, its torch part): ``cpu`` took torch CPU tensors through their
``__array__`` (a copy for positions, so ``advance_position`` bumped a copy), while sim and the
GPUs refused them or read them as device tensors (``get_device() == -1``). Code written on cpu
then broke on the GPU. Now ``rocsample.backends.interop.adopt`` turns a torch CPU tensor into
a NumPy array sharing its memory (``np.from_dlpack`` of the detached tensor; bfloat16 as its
uint16 bit patterns) wherever an argument is read, on every backend: logits, parameters, seeds,
positions (advanced in place), ``out=`` (written in place, returned as given), set_rows /
ring_write arrays and ``graphs.copy_to_device``'s host array.

torch is not a dependency: the ``fake`` variant is a stand-in with the attributes rocsample
reads (``get_device``, ``detach``, ``view``, ``dtype``, ``__dlpack__``); the ``real`` variant
runs where torch is installed (the H200 image).
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import rocsample as rs
from rocsample import graphs
from rocsample.reference import sampling as R
from rocsample.reference import set_rows as ref


class _DType:
    def __init__(self, name, np_dtype):
        self.name, self.np = name, np.dtype(np_dtype)

    def __str__(self):
        return f"torch.{self.name}"

    __repr__ = __str__


def _fake_torch():
    """A module named torch whose CPU tensors behave as torch's do where rocsample looks."""
    mod = types.ModuleType("torch")
    names = {"float32": np.float32, "float16": np.float16, "float64": np.float64,
             "int64": np.int64, "int32": np.int32, "int16": np.int16, "uint64": np.uint64,
             "bfloat16": np.uint16}
    for n, d in names.items():
        setattr(mod, n, _DType(n, d))
    by_np = {np.dtype(d): getattr(mod, n) for n, d in names.items() if n != "bfloat16"}

    class Tensor:
        def __init__(self, a, dtype=None, requires_grad=False):
            self._a = a
            self.dtype = dtype if dtype is not None else by_np[a.dtype]
            self.requires_grad = requires_grad

        shape = property(lambda self: self._a.shape)

        def get_device(self):
            return -1  # torch: -1 for a CPU tensor

        def detach(self):
            return Tensor(self._a, self.dtype)  # the same memory

        def view(self, dtype):
            return Tensor(self._a.view(dtype.np), dtype)

        def __dlpack__(self, **kw):
            if self.requires_grad:
                raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
            if self.dtype is mod.bfloat16:
                raise BufferError("NumPy has no bfloat16")  # what np.from_dlpack meets
            return self._a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return (1, 0)

        def __array__(self, dtype=None, copy=None):  # torch's: a NumPy copy or view
            return np.array(self._a, dtype=dtype, copy=True)

    Tensor.__module__ = "torch"
    mod.Tensor = Tensor
    mod.cuda = types.SimpleNamespace(is_initialized=lambda: False)
    mod.tensor = lambda a, dtype=None, requires_grad=False: Tensor(
        np.array(a, dtype=None if dtype is None else dtype.np), dtype, requires_grad)
    return mod


def _numpy_of(torch, t):
    """The tensor's memory as NumPy (to read what a call wrote into it)."""
    if isinstance(torch, types.ModuleType) and not hasattr(torch, "from_numpy"):  # the fake
        return t._a
    t = t.detach()
    return t.view(torch.int16).numpy().view(np.uint16) if t.dtype == torch.bfloat16 else t.numpy()


@pytest.fixture(params=["fake", "real"])
def torch(request, monkeypatch):
    if request.param == "real":
        return pytest.importorskip("torch")
    fake = _fake_torch()
    monkeypatch.setitem(sys.modules, "torch", fake)
    return fake


def _t(torch, a, dtype=None, requires_grad=False):
    a = np.ascontiguousarray(a)
    if dtype is torch.bfloat16:
        t = torch.tensor(a.view(np.int16), dtype=torch.int16).view(torch.bfloat16)
        t.requires_grad = requires_grad
        return t
    return torch.tensor(a, dtype=getattr(torch, a.dtype.name), requires_grad=requires_grad)


def _blk(backend):
    return {"_block": backend.warp_size()} if backend.name == "sim" else {}


def _host(backend, a):
    return np.asarray(backend.to_host(a)) if backend.is_device_array(a) else np.asarray(a)


def test_sample_reads_torch_cpu_tensors_and_writes_them_in_place(backend, torch, rng):
    lg = rng.standard_normal((3, 40)).astype(np.float32)
    temps = np.array([0.7, 1.0, 0.0], np.float32)
    pos0 = np.array([5, 2**63 - 1, 9], np.int64)
    x = _t(torch, lg, requires_grad=True)  # detached for the read, as torch wants
    pos = _t(torch, pos0.copy())
    out = _t(torch, np.full(3, -7, np.int32))
    res = rs.sample(x, temperature=_t(torch, temps), top_k=_t(torch, np.array([5, 0, 3])),
                    seed=_t(torch, np.arange(3)), position=pos, advance_position=True, out=out,
                    **_blk(backend))
    want = R.sample(lg, temperature=temps, top_k=[5, 0, 3], seed=np.arange(3), position=pos0)
    assert res is out  # returned as given
    np.testing.assert_array_equal(_numpy_of(torch, out), want)
    # advanced in place, mod 2**64 (an int64 wraps as its uint64 bits)
    np.testing.assert_array_equal(_numpy_of(torch, pos), [6, -(2**63), 10])


def test_sampler_and_argmax_read_torch_cpu_logits(backend, torch, rng):
    lg = rng.standard_normal((2, 33)).astype(np.float32)
    plan = rs.Sampler(2, 33, "float32", **_blk(backend))
    tok = _host(backend, plan(_t(torch, lg), seed=3, position=4, top_p=0.9))
    np.testing.assert_array_equal(tok, R.sample(lg, seed=3, position=4, top_p=0.9))
    np.testing.assert_array_equal(_host(backend, rs.argmax(_t(torch, lg), **_blk(backend))),
                                  lg.argmax(axis=1))


def test_bfloat16_torch_cpu_logits_read_as_their_bits(backend, torch, rng):
    bits = (rng.standard_normal((2, 20)).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    x = _t(torch, bits, torch.bfloat16)
    got = _host(backend, rs.sample(x, seed=1, position=2, dtype="bfloat16", **_blk(backend)))
    np.testing.assert_array_equal(got, R.sample(bits, seed=1, position=2, dtype="bfloat16"))


def test_set_rows_and_ring_write_write_torch_cpu_tensors(backend, torch, rng):
    dst0 = rng.standard_normal((6, 8)).astype(np.float32)
    src = rng.standard_normal((2, 8)).astype(np.float32)
    dst = _t(torch, dst0.copy())
    assert rs.set_rows(dst, _t(torch, src), _t(torch, np.array([4, 1]))) is dst
    want = dst0.copy()
    ref.set_rows(want, src, np.array([4, 1]))
    np.testing.assert_array_equal(_numpy_of(torch, dst), want)
    pos = _t(torch, np.array([5], np.int64))
    rs.ring_write(dst, _t(torch, src), pos, advance=True)
    ref.set_rows(want, src, np.array([5, 0]))
    np.testing.assert_array_equal(_numpy_of(torch, dst), want)
    np.testing.assert_array_equal(_numpy_of(torch, pos), [7])


def test_copy_to_device_takes_a_torch_cpu_host_array(backend, torch, new_stream):
    s = new_stream()
    st = backend.stream(s)
    dst = backend.as_array(np.zeros(4, np.float32), "x", st) if backend.is_device \
        else np.zeros(4, np.float32)
    graphs.copy_to_device(dst, _t(torch, np.arange(4, dtype=np.float32)), s)
    backend.synchronize(s)
    np.testing.assert_array_equal(_host(backend, dst), np.arange(4))
    with pytest.raises(TypeError, match=r"^host: expected dtype float32"):
        graphs.copy_to_device(dst, _t(torch, np.arange(4, dtype=np.float64)), s)


def test_a_torch_cpu_tensor_is_no_graph_input(backend, torch, new_stream):
    """Sampler.capture needs device arrays (NumPy ones on cpu): a CPU tensor, refilled between
    replays, would be baked into the graph on a GPU, so it is refused on every backend."""
    plan = rs.Sampler(1, 8, "float32", stream=new_stream(), **_blk(backend))
    seed = backend.as_array(np.zeros(1, np.int64), "s", plan.stream) if backend.is_device \
        else np.zeros(1, np.int64)
    with pytest.raises(TypeError, match=r"^logits: expected a device array"):
        plan.capture(_t(torch, np.zeros((1, 8), np.float32)), seed=seed, position=seed)
