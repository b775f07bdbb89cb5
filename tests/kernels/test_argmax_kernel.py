"""Phase 1's argmax kernel (``kernels.sampling_fast``'s ``argmax()``: calls whose every row is
greedy and wants no logprob) against the reference: ties inside a round, across rounds of one
thread, across threads and across splits; zeros of both signs, NaN, +inf and rows with nothing
finite; every split count and block; its slot and count back at 0; and its launch shape rule."""

from __future__ import annotations

import numpy as np
import pytest

import rocsample.sampling as rs
from rocsample import sampling_plan
from rocsample.kernels import sampling_fast as KF
from tests.kernels.test_sampling import compare, host


def _rows(rng, vocab, block, splits):
    """Adversarial greedy rows of ``vocab`` logits for a launch of ``splits`` x ``block``."""
    chunk = -(-vocab // splits)
    span = 4 * block * KF.ARGMAX_V   # one thread's round (vectors of 4 logits)
    rows = []
    r = rng.integers(-3, 3, vocab).astype(np.float32)       # many ties everywhere
    rows.append(r)
    r = rng.normal(size=vocab).astype(np.float32)
    r[[2, 1]] = 9.0                                          # one vector, two slots
    rows.append(r)
    r = rng.normal(size=vocab).astype(np.float32)
    r[[min(1 + 4 * block, vocab - 1), 3]] = 9.0              # one thread, one round, two vectors
    rows.append(r)
    r = rng.normal(size=vocab).astype(np.float32)
    r[[min(3 + span, vocab - 1), 3]] = 9.0                   # one thread, two rounds
    rows.append(r)
    r = rng.normal(size=vocab).astype(np.float32)
    r[[7, 2]] = 9.0                                          # two threads of one round
    rows.append(r)
    r = rng.normal(size=vocab).astype(np.float32)
    r[[vocab - 1, min(chunk, vocab - 1)]] = 9.0              # across splits (the later first)
    rows.append(r)
    r = np.zeros(vocab, np.float32)
    r[rng.integers(0, vocab, vocab // 8)] = -0.0             # zeros of both signs
    r[rng.integers(0, vocab, 4)] = np.nan
    rows.append(r)
    r = rng.normal(size=vocab).astype(np.float32)
    r[rng.integers(0, vocab, 9)] = np.inf                    # +inf is never taken
    r[rng.integers(0, vocab, 9)] = np.nan
    rows.append(r)
    r = np.full(vocab, np.nan, np.float32)
    r[vocab - 1] = -5.0                                      # one finite logit, the last
    rows.append(r)
    rows.append(np.full(vocab, -np.inf, np.float32))         # nothing finite
    r = np.full(vocab, np.inf, np.float32)
    r[::2] = np.nan                                          # nothing finite either
    rows.append(r)
    r = np.full(vocab, -np.inf, np.float32)
    r[0] = np.inf
    r[vocab // 2] = -3e38                                    # the smallest finite wins
    rows.append(r)
    return np.stack(rows)


@pytest.fixture(autouse=True)
def _argmax_on(monkeypatch):
    """The argmax kernel on (``KF.ARGMAX``, whatever ROCSAMPLE_ARGMAX says), with no cached plan
    bound without it."""
    monkeypatch.setattr(KF, "ARGMAX", True)
    monkeypatch.setattr(rs, "_PLANS", {})


def _kernel_name(k):
    f = getattr(k, "py_func", None) or getattr(k, "fn", None) or k
    return getattr(f, "__name__", "")


@pytest.fixture
def launched(backend, monkeypatch):
    """The names of the kernels ``backend.launch`` is given (a one-off call launches through it)."""
    names = []
    real = backend.launch

    def spy(kernel, *a, **kw):
        names.append(_kernel_name(kernel))
        return real(kernel, *a, **kw)

    monkeypatch.setattr(backend, "launch", spy)
    return names


def _points(backend):
    if not backend.is_device:
        pytest.skip("the argmax kernel is a device launch (cpu runs the reference)")
    if backend.name == "sim":
        w = backend.warp_size()
        return 300, [(1, w), (2, w), (3, 2 * w), (7, w)]
    return 151936, [(None, None), (1, 256), (2, 512), (5, 256), (64, 256), (1024, 256)]


def test_argmax_kernel_matches_the_reference(backend, rng, launched):
    vocab, points = _points(backend)
    for splits, block in points:
        lg = _rows(rng, vocab, block or 256, splits or 4)
        launched.clear()
        tok, status = rs.sample(lg, temperature=0.0, seed=0, position=0, check=False,
                                _splits=splits, _block=block)
        assert launched == ["_argmax_kernel"], (splits, block, launched)
        got = compare(backend, lg, tok, temperature=0.0)
        st = host(backend, status)
        np.testing.assert_array_equal(st, np.where(got < 0, 1, 0), err_msg=f"{splits} {block}")
        assert list(got[-4:]) == [vocab - 1, -1, -1, vocab // 2]


def _edge_rows(rng, vocab):
    """Rows whose largest logits sit among the first and last three (which a row's address
    may leave outside the 4-logit vectors: single loads) and tie with the vectors' or with each
    other."""
    rows = []
    for first, second in ((0, 8), (8, 0), (1, 2), (2, 1), (vocab - 1, 5), (5, vocab - 1),
                          (vocab - 2, vocab - 1), (vocab - 1, vocab - 2), (vocab - 3, 3),
                          (0, vocab - 1)):
        r = rng.normal(size=vocab).astype(np.float32)
        r[[first, second]] = 9.0
        rows.append(r)
    r = rng.normal(size=vocab).astype(np.float32)
    r[vocab - 1] = 9.0                                       # the last alone
    rows.append(r)
    r = np.full(vocab, np.nan, np.float32)
    r[[0, vocab - 1]] = [np.inf, -1.0]                       # +inf first, the last finite
    rows.append(r)
    r = np.full(vocab, np.nan, np.float32)
    r[1] = -0.0
    r[vocab - 2] = 0.0                                       # zeros of both signs at the edges
    rows.append(r)
    return np.stack(rows)


def _views(backend):
    """(vocabulary, offsets, launch points) of the views below. On the simulator, whose loads
    keep no alignment, a row's head comes from its offset in the array (``vload.head4``), which
    the wider array's odd row length turns through 0 to 3 row by row; on a GPU from the
    address, which the offsets move as well."""
    vocab, points = _points(backend)
    if backend.name == "sim":
        return vocab + 1, (0, 1), points[:1]
    return vocab + 1, range(4), [(None, None), (1, 256), (4, 256), (7, 512)]


def test_argmax_kernel_rows_at_any_alignment(backend, rng, launched):
    # Row views at offsets of a wider array (rows of vocab + 6 logits), with an odd vocabulary:
    # the rows start at every place on the 4-logit grid, so the head and tail logits outside the
    # vectors take each of their sizes; the tokens are the reference's whatever the address.
    vocab, offs, pts = _views(backend)
    lg = np.concatenate([_edge_rows(rng, vocab), _rows(rng, vocab, 64, 3)])
    for off in offs:
        big_h = np.full((lg.shape[0], vocab + 6), 99.0, np.float32)   # never in a view
        big_h[:, off:off + vocab] = lg
        big = backend.as_array(big_h, "logits")
        for splits, block in pts:
            launched.clear()
            tok, _ = rs.sample(big[:, off:off + vocab], temperature=0.0, seed=0, position=0,
                               check=False, _splits=splits, _block=block)
            assert launched == ["_argmax_kernel"], (off, splits, block, launched)
            compare(backend, lg, tok, temperature=0.0)


def test_argmax_kernel_same_tokens_as_the_general_phase_1(backend, rng, monkeypatch):
    # The same calls through the general phase 1 (ROCSAMPLE_ARGMAX=0's route) give the same
    # tokens, at the plan's launch shapes
    vocab, points = _points(backend)
    lg = _rows(rng, vocab, 256, 4)
    a = host(backend, rs.argmax(lg, check=False)[0])
    monkeypatch.setattr(KF, "ARGMAX", False)
    monkeypatch.setattr(rs, "_PLANS", {})
    b = host(backend, rs.argmax(lg, check=False)[0])
    np.testing.assert_array_equal(a, b)


def test_argmax_slot_and_count_return_to_zero(backend, rng):
    # Each launch leaves its per-row slot and count at 0 (the next launch folds into an empty
    # slot); calls of other routes on the same plan do not touch them. The count is the plan's
    # last counter row, phase 1's count_done at the argmax kernel's own split count.
    vocab, points = _points(backend)
    splits, block = points[2] if backend.name == "sim" else (5, 256)
    lg = _rows(rng, vocab, block, splits)
    s = rs.Sampler(lg.shape[0], vocab, "float32", _splits=splits, _block=block)
    want = None
    for params in (dict(temperature=0.0), dict(temperature=0.7), dict(temperature=0.0)):
        tok, _ = s(lg, seed=1, position=2, check=False, **params)
        if params["temperature"] == 0.0:
            got = host(backend, tok)
            if want is None:
                want = compare(backend, lg, tok, temperature=0.0)
            np.testing.assert_array_equal(got, want)
        assert not host(backend, s._gslot).any()
        assert not host(backend, s._counts[3]).any()
    # a count at a multiple of the split count (as racing launches of the plan leave it) works
    # the same and stays there: the count is read by residues (count_done)
    done = host(backend, s._row_done).copy()
    done[-1] = 3 * splits
    s._row_done.copy_to_device(done)
    tok, _ = s(lg, seed=1, position=2, check=False, temperature=0.0)
    np.testing.assert_array_equal(host(backend, tok), want)
    np.testing.assert_array_equal(host(backend, s._row_done), done)


@pytest.mark.parametrize("rows, vocab, cus, want", [
    (1, 32000, 132, (15, 256)), (1, 151936, 132, (74, 256)),
    (8, 151936, 132, (16, 256)), (64, 151936, 132, (4, 256)),
    (64, 262144, 132, (4, 256)), (256, 32000, 132, (1, 256)),
    (256, 151936, 132, (1, 256)), (256, 262144, 132, (1, 256)),
    (4096, 1000, 40, (1, 256)), (2, 100, 40, (1, 256))])
def test_argmax_launch_shape(rows, vocab, cus, want):
    # About a block a compute unit below 32 rows and two from there on, splits of 2048 logits
    # or more, blocks of 256 (the H200 sweeps in sampling_plan.argmax_shape's docstring).
    assert sampling_plan.argmax_shape(rows, vocab, cus) == want


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_argmax_kernel_half_precision_rows_at_any_alignment(backend, rng, launched, dtype):
    # 16-bit logits travel as their bits and are read four a load (8 bytes): the same edges,
    # ties and offsets as float32, widened exactly, against the reference of the same dtype
    vocab, offs, pts = _views(backend)
    pts = pts[:1] + pts[2:3]   # the plan's shape, and 4 splits on a GPU
    f = np.concatenate([_edge_rows(rng, vocab), _rows(rng, vocab, 64, 3)])
    if dtype == "float16":
        with np.errstate(over="ignore"):   # (-3e38 becomes -inf)
            lg, kw = f.astype(np.float16), {}
    else:
        lg, kw = (f.view(np.uint32) >> 16).astype(np.uint16), {"dtype": "bfloat16"}
    for off in offs:
        big_h = np.zeros((lg.shape[0], vocab + 6), lg.dtype)
        big_h[:, off:off + vocab] = lg
        big = backend.as_array(big_h, "logits")
        for splits, block in pts:
            launched.clear()
            tok, _ = rs.sample(big[:, off:off + vocab], temperature=0.0, seed=0, position=0,
                               check=False, _splits=splits, _block=block, **kw)
            assert launched == ["_argmax_kernel"], (off, splits, block, launched)
            compare(backend, lg, tok, temperature=0.0, **kw)
