"""rocsample.binder: bound launches keyed by argument layouts, re-pointed at each call's arrays.

The pure-Python part (which bound argument follows which slot) runs on every backend against a
fake backend; the rest runs the Sampler on a device backend (sim emulates the driver's packed
parameters: a re-pointed argument is rebuilt at its new address, so a stale address would read
the previous call's logits and give the previous call's tokens).
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import rocsample as rs
from rocsample.backends.base import Cell
from rocsample.binder import Binder, bind_call, gaps
from rocsample.reference import sampling as R


class _Arr:
    """A fake device array: an address and a byte length."""

    def __init__(self, ptr, nbytes):
        self.ptr, self.nbytes = ptr, nbytes


class _Bound:
    def __init__(self, args, log):
        self.cells = [Cell(a.ptr) for a in args if isinstance(a, _Arr)]
        self.released = []
        self._log = log

    def release(self, k):
        self.released.append(k)

    def __call__(self):
        self._log.append([c.value for c in self.cells])


class _FakeBackend:
    def __init__(self):
        self.log = []

    def array_span(self, a):
        return (a.ptr, a.ptr, a.ptr + a.nbytes)

    def bind(self, kernel, grid, block, stream, *args):
        return _Bound(args, self.log)


def test_each_bound_argument_follows_the_slot_it_lies_in():
    be = _FakeBackend()
    x, seed, own = _Arr(1000, 64), _Arr(2000, 16), _Arr(9000, 8)
    view = _Arr(1032, 8)  # a view into x, 32 bytes in
    launches = [("k1", 1, 32, (x, own, 3)), ("k2", 1, 32, (view, seed, own))]
    call = bind_call(be, None, launches, [x, None, seed])
    assert call is not None and call.ptrs == (1000, None, 2000)
    call.run((5000, None, 7000))
    assert be.log == [[5000, 9000], [5032, 7000, 9000]]  # own buffer never re-pointed
    assert [b.released for b in call.keep] == [[0], [0, 1]]  # caller views dropped, own kept
    call.run((5000, None, 7100))
    assert be.log[-1] == [5032, 7100, 9000]


def test_adjacent_slots_are_told_apart_by_their_own_addresses():
    be = _FakeBackend()
    tokens, status = _Arr(100, 16), _Arr(116, 16)  # one buffer cut in two
    call = bind_call(be, None, [("k", 1, 32, (status, tokens))], [tokens, status])
    call.run((500, 900))
    assert be.log == [[900, 500]]


def test_overlapping_slots_are_never_bound():
    be = _FakeBackend()
    a = _Arr(100, 16)
    assert bind_call(be, None, [("k", 1, 32, (a,))], [a, a]) is None
    assert bind_call(be, None, [("k", 1, 32, (a,))], [a, _Arr(108, 16)]) is None


def test_gaps_tell_when_slots_meet_from_the_bound_extents():
    be = _FakeBackend()
    dst, src, idx = _Arr(1000, 64), _Arr(2000, 16), _Arr(3000, 8)
    call = bind_call(be, None, [("k", 1, 32, (dst, src, idx))], [dst, src, idx])
    (ls, hs), (li, hi) = gaps(call, 0, (1, 2))

    def meets(pd, p, lo, hi_):
        return lo < pd - p < hi_

    # src (16 bytes) against dst (64 bytes) at new addresses: a byte in common or not
    assert not meets(5000, 5064, ls, hs) and not meets(5000, 4984, ls, hs)  # adjacent
    assert meets(5000, 5063, ls, hs) and meets(5000, 4985, ls, hs) and meets(5000, 5000, ls, hs)
    assert not meets(5000, 5064, li, hi) and meets(5000, 4993, li, hi)
    empty = _Arr(4000, 0)
    call = bind_call(be, None, [("k", 1, 32, (dst, empty))], [dst, empty])
    assert gaps(call, 0, (1,)) == ((0, 0),)  # an empty array meets nothing


def test_a_key_is_bound_on_its_second_call_and_the_table_is_bounded():
    be = _FakeBackend()
    b = Binder(entries=2)
    x = _Arr(100, 8)
    L = [("k", 1, 32, (x,))]
    assert b.offer("a", be, None, L, [x]) is None and b.lookup("a") is None
    assert b.offer("a", be, None, L, [x]) is not None and b.lookup("a") is not None
    for key in ("b", "c"):
        b.offer(key, be, None, L, [x])
        b.offer(key, be, None, L, [x])
    assert len(b) == 2 and b.lookup("a") is None  # the oldest went first


# ---- the Sampler on a device backend ----------------------------------------------------------

def _device(backend):
    if not backend.is_device:
        pytest.skip("bound launches are for device backends (cpu runs the reference)")


def _small(backend):
    return {"_block": backend.warp_size(), "_splits": 2} if backend.name == "sim" else {}


@pytest.mark.parametrize("params", [dict(temperature=0.0), dict(temperature=0.8, top_k=5),
                                    dict(temperature=0.7, top_p=0.9)],
                         ids=["greedy", "fast-topk", "general-topp"])
def test_fresh_arrays_every_call_reuse_the_bound_launches(backend, rng, new_stream, params):
    _device(backend)
    s = new_stream()
    st = backend.stream(s)
    rows, vocab = 2, 64
    plan = rs.Sampler(rows, vocab, "float32", stream=s, **_small(backend))
    alive = []  # earlier calls' arrays stay alive: a stale address would read them
    for step in range(4):
        xh = (rng.standard_normal((rows, vocab)) * 3).astype(np.float32)
        x = backend.as_array(xh, "logits", st)
        seed = backend.as_array(np.array([3, 4 + step], np.int64), "seed", st)
        pos = backend.as_array(np.array([step, 2 * step], np.int64), "position", st)
        alive += [x, seed, pos]
        tok = plan(x, seed=seed, position=pos, check=False, **params)[0]
        got = backend.to_host(tok, st)
        want, _, _, near = R.sample_with_margin(xh, seed=np.array([3, 4 + step]),
                                                position=np.array([step, 2 * step]), **params)
        assert not ((got != want) & ~near).any(), f"step {step}: got {got}, want {want}"
        assert len(plan._binder) == (0 if step == 0 else 1)  # bound on the second call


def test_a_bound_call_keeps_no_caller_array_alive(backend, rng, new_stream):
    _device(backend)
    s = new_stream()
    st = backend.stream(s)
    plan = rs.Sampler(2, 64, "float32", stream=s, **_small(backend))
    seed = backend.as_array(np.array([1, 2], np.int64), "seed", st)
    refs = []
    for step in range(3):
        x = backend.as_array(rng.standard_normal((2, 64)).astype(np.float32), "logits", st)
        out = backend.empty((2,), np.int32, st)
        plan(x, seed=seed, position=step, temperature=0.5, check=False, out=out)
        refs += [weakref.ref(x), weakref.ref(out)]
        del x, out
    gc.collect()
    assert len(plan._binder) == 1
    assert all(r() is None for r in refs), "a bound call kept a caller's array alive"


def test_another_layout_is_another_key(backend, rng, new_stream):
    _device(backend)
    s = new_stream()
    st = backend.stream(s)
    plan = rs.Sampler(2, 64, "float32", stream=s, **_small(backend))
    big_h = (rng.standard_normal((2, 96)) * 3).astype(np.float32)
    big = backend.as_array(big_h, "logits", st)
    dense_h = np.ascontiguousarray(big_h[:, 32:])
    dense = backend.as_array(dense_h, "logits", st)
    for _ in range(3):
        tok = plan(dense, seed=0, position=0, temperature=0.0, check=False)[0]
        assert list(backend.to_host(tok, st)) == list(dense_h.argmax(1))
    # a row-strided view of the same shape: its own launches, never the dense ones re-pointed
    tok = plan(big[:, :64], seed=0, position=0, temperature=0.0, check=False)[0]
    assert list(backend.to_host(tok, st)) == list(big_h[:, :64].argmax(1))


def test_one_array_for_seed_and_position_is_never_bound_but_correct(backend, rng, new_stream):
    _device(backend)
    s = new_stream()
    st = backend.stream(s)
    plan = rs.Sampler(2, 64, "float32", stream=s, **_small(backend))
    xh = (rng.standard_normal((2, 64)) * 3).astype(np.float32)
    x = backend.as_array(xh, "logits", st)
    both = backend.as_array(np.array([5, 6], np.int64), "seed", st)
    for _ in range(3):
        tok = plan(x, seed=both, position=both, temperature=0.9, check=False)[0]
        want = R.sample(xh, temperature=0.9, seed=np.array([5, 6]), position=np.array([5, 6]))
        assert list(backend.to_host(tok, st)) == list(want)
    assert len(plan._binder) == 0
