"""The histogram path (rocsample.kernels.sampling_hist) against the reference: top_p alone, min_p
alone and with temperature, top_k above the tile path's limit, every combination in both orders,
its three ways to finish a row (the candidates down to the tile bound, the boundary bins, the
radix fallback), ties, NaN / inf, and device per-row parameters deciding each row's path."""

from __future__ import annotations

import numpy as np
import pytest

import rocsample.sampling as rs
from rocsample import sampling_router as router
from rocsample.kernels import sampling_hist as KH
from rocsample.reference.sampling import minp_threshold
from tests.kernels.test_sampling import (
    compare,
    device_params,
    host,
    path_shape,
)
from tests.kernels.test_sampling import run_shape as _run

# sim: the tile path's limit lowered so that top_k 40 / 100 of 150 take this path; 3 splits of
# a 32-thread block make 96 tile maxima: top_k 40 gets the tile bound, 100 does not
shape = path_shape("the histogram path", sim=dict(splits=3, kmax=4, k=(40, 100)),
                   gpu=dict(kmax=router.TILE_KMAX, k=(1000, 20000)))


@pytest.fixture
def kmax(shape, monkeypatch):
    # the one-off calls' cached plans (and their bound launches) are set aside: none was made
    # with this limit
    monkeypatch.setattr(router, "TILE_KMAX", shape["kmax"])
    monkeypatch.setattr(router, "TILE_LARGE", False)  # (top_k 1000 through this path on a GPU)
    # top-p-only rows through this path from phase 1 on (tests/kernels/test_sampling_nucleus.py
    # has the nucleus pass, which finishes most of them before it)
    monkeypatch.setattr(router, "NUCLEUS", False)
    monkeypatch.setattr(rs, "_PLANS", {})


def _cases(shape):
    ka, kb = shape["k"]
    return [
        dict(temperature=0.8, top_p=0.9),
        dict(temperature=1.0, top_p=0.3),
        dict(temperature=0.8, min_p=0.1),
        dict(temperature=1.3, min_p=0.02),
        dict(temperature=0.8, top_p=0.5, min_p=0.05),
        dict(temperature=0.7, top_p=0.95, min_p=0.4),
        dict(temperature=1.0, top_k=ka),
        dict(temperature=1.0, top_k=kb),
        dict(temperature=1.0, top_k=ka, top_p=0.7),
        dict(temperature=1.0, top_k=kb, top_p=0.8),
        dict(temperature=0.9, top_k=kb, top_p=0.95, min_p=0.02),
        dict(temperature=0.7, top_k=ka, top_p=0.99, min_p=0.5),
    ]


def _rows(rng, shape, kind):
    rows, vocab = shape["rows"], shape["vocab"]
    lg = (rng.normal(size=(rows, vocab)) * rng.uniform(0.5, 3, (rows, 1))).astype(np.float32)
    if kind == "ties":
        lg = np.round(lg * 2).astype(np.float32) / 2
        lg[0] = 1.0                        # one value: every token in one bin
    elif kind == "special":
        lg[0, ::5] = np.nan
        lg[1, 3] = np.inf
        lg[1, 7] = -np.inf
        lg[2] = (rng.normal(size=vocab) * 0.3).astype(np.float32)   # a flat row
    return lg


# cap=1: no row's candidates fit, so every histogram row is finished by the radix selects
# (about 20 reads of the row by one block: every other case, on tied and special rows only; a
# generated skip would be a disallowed skip in the device gate)
@pytest.mark.parametrize("kind,cap", [("normal", None), ("ties", None), ("special", None),
                                      ("ties", 1), ("special", 1)],
                         ids=["normal-candidates", "ties-candidates", "special-candidates",
                              "ties-radix-fallback", "special-radix-fallback"])
@pytest.mark.parametrize("order", ["llama", "vllm"])
def test_matches_reference(backend, shape, rng, kmax, order, kind, cap):
    cases = _cases(shape)
    for params in cases[::2] if cap == 1 else cases:
        lg = _rows(rng, shape, kind)
        seed = rng.integers(0, 2**63, shape["rows"])
        tok, lp = _run(shape, lg, seed=seed, position=5, order=order, _cap=cap, **params)
        compare(backend, lg, tok, lp, seed=seed, position=5, order=order, **params)


@pytest.mark.parametrize("order", ["llama", "vllm"])
def test_top_k_cut_inside_a_bin_sets_the_top_p_mass(backend, shape, rng, kmax, order):
    # Z (top_p's total) is the mass of the first K tokens; when the K-th token's bin holds more
    # tokens than K takes and the top-p crossing lies in an earlier bin, Z needs the sorted
    # tokens of that later bin too (BkP). 10 tokens at 0, many at -0.5 (one bin), the rest at
    # -3: K - 1 falls inside the -0.5 bin and p = 0.1 crosses among the zeros. Without the
    # partial bin's mass the target drops and fewer of the tied zeros survive.
    rows, vocab = shape["rows"], max(shape["vocab"], 200)
    k = shape["k"][1] if backend.name == "sim" else 20000
    lg = np.full((rows, vocab), -3.0, np.float32)
    for r in range(rows):
        idx = rng.permutation(vocab)
        lg[r, idx[:10]] = 0.0
        lg[r, idx[10:10 + max(k, vocab // 2)]] = -0.5
    # p: half the zeros' share of Z, so the crossing lies among them
    params = dict(temperature=1.0, top_k=k, top_p=float(np.float32(5 / (10 + (k - 10) * 0.6065))))
    for pos in range(4):
        seed = rng.integers(0, 2**63, rows)
        tok, lp = _run(shape, lg, seed=seed, position=pos, order=order, **params)
        compare(backend, lg, tok, lp, seed=seed, position=pos, order=order, **params)


@pytest.mark.parametrize("order", ["llama", "vllm"])
@pytest.mark.parametrize("mp", [0.3, 0.35, 0.05])  # (float32(thr) below, above, below thr)
def test_min_p_threshold_between_two_float32_logits(backend, shape, rng, kmax, order, mp):
    # min_p keeps a token when float64(its filter value) >= max + log(min_p) (SPEC §2). Every
    # token but the maximum (0.0) sits on one of the two float32 values either side of that
    # threshold, neither within the reference's rounding margin of it: those below never
    # survive, those above do. A float32 threshold rounded the wrong way lets the lower ones in
    # (or keeps the upper ones out); min_p alone takes the MINP kernel.
    rows, vocab = shape["rows"], shape["vocab"]
    thr = minp_threshold(0.0, mp)  # (min_p as the float32 the kernels read)
    t = np.float32(thr)
    if float(t) < thr:
        below, above = t, np.nextafter(t, np.float32(np.inf))
    else:
        above, below = t, np.nextafter(t, np.float32(-np.inf))
    assert thr - float(below) > 1e-12 and float(above) - thr > 1e-12
    lg = np.full((rows, vocab), below, np.float32)
    for r in range(rows):
        idx = rng.permutation(vocab)
        lg[r, idx[0]] = 0.0
        lg[r, idx[1:1 + (vocab - 1) // 2]] = above
    params = dict(temperature=1.0, min_p=mp, order=order)
    for pos in range(3):
        seed = rng.integers(0, 2**63, rows)
        tok, lp = _run(shape, lg, seed=seed, position=pos, **params)
        compare(backend, lg, tok, lp, seed=seed, position=pos, **params)
        t_ = host(backend, tok)
        assert (lg[np.arange(rows), t_] != below).all()


@pytest.mark.parametrize("order", ["llama", "vllm"])
@pytest.mark.parametrize("via", ["minp_kernel", "hist_kernel"])
def test_min_p_stream_whole_rounds_and_tail(backend, shape, rng, kmax, order, via):
    # The MINP stream loads U logits a thread a round (the MINP kernel: KH._MINP_UNROLL; the
    # histogram kernel, which serves MINP rows when a top-p row shares the batch: KH._UNROLL),
    # without a bounds test while the round fits the split, then one predicated round. Splits
    # of several whole rounds and a ragged tail (the 3 x 150 shape has neither on the
    # simulator). Rows with one survivor each (the maximum) at every slot of a whole round, in
    # the second round, at the tail's first and last tokens and at each split's edges: a token
    # the stream skips leaves its row without a draw. Then a row with survivors at all those
    # places, the winner checked against the reference.
    splits = 2
    U = KH._MINP_UNROLL if via == "minp_kernel" else KH._UNROLL
    bs = shape["block"] or 256
    vocab = 2 * (2 * bs * KH._MINP_UNROLL + 37)
    chunk = vocab // splits
    full = (chunk // (bs * U)) * bs * U
    at = [u * bs + (5 * u) % bs for u in range(U)] + [chunk]
    for s0 in (0, chunk):
        at += [s0 + bs * U + 3, s0 + full, s0 + chunk - 1]
    n_at = len(at)
    rows = n_at + (1 if via == "minp_kernel" else 2)
    lg = (rng.normal(size=(rows, vocab)) - 8).astype(np.float32)
    for r, j in enumerate(at):
        lg[r, j] = 1.0
    lg[n_at, at] = rng.uniform(1.0, 2.0, n_at).astype(np.float32)
    params = dict(temperature=0.9, min_p=0.2, order=order)
    if via == "hist_kernel":   # the last row: top_p alone, random logits
        lg[-1] = rng.normal(size=vocab).astype(np.float32)
        params.update(min_p=np.full(rows, 0.2, np.float32), top_p=np.ones(rows, np.float32))
        params["min_p"][-1] = 0.0
        params["top_p"][-1] = 0.9
    seed = rng.integers(0, 2**63, rows)
    tok, lp = _run(dict(shape, splits=splits), lg, seed=seed, position=3, **params)
    compare(backend, lg, tok, lp, seed=seed, position=3, **params)
    t_ = host(backend, tok)
    assert (t_[:n_at] == np.array(at)).all()
    assert lg[n_at, t_[n_at]] >= 1.0


def test_split_counts_never_change_tokens(backend, shape, rng, kmax):
    rows, vocab = (2, 60) if backend.name == "sim" else (4, 151936)
    lg = np.round(rng.normal(size=(rows, vocab)) * 4).astype(np.float32) / 4
    k = shape["k"][0] if backend.name != "sim" else 30
    seed = rng.integers(0, 2**63, rows)
    for params in (dict(temperature=0.9, top_p=0.8, min_p=0.01),
                   dict(temperature=0.9, top_k=k, top_p=0.9)):
        got = []
        for splits in (1, 2, 3, 7):
            tok, lp = _run(dict(shape, splits=splits), lg, seed=seed, position=4, **params)
            got.append(compare(backend, lg, tok, lp, seed=seed, position=4, **params))
        for g in got[1:]:
            np.testing.assert_array_equal(g, got[0])


@pytest.mark.parametrize("order", ["llama", "vllm"])
def test_device_per_row_parameters_decide_each_row(backend, shape, rng, kmax, order):
    # One batch, each row another mode (greedy, unfiltered, tile top-k, min-p only, top_p,
    # large top_k + top_p + min-p), as device arrays: every kernel is launched and each row
    # takes its own path. Same tokens as the reference, and as the same values given as host
    # arrays (the host routes them).
    ka, kb = shape["k"]
    temp = np.array([0.0, 0.9, 0.8, 1.1, 0.7, 1.2], np.float32)
    topk = np.array([0, 0, 3, 0, 0, kb], np.int64)
    topp = np.array([1.0, 1.0, 0.9, 1.0, 0.6, 0.9], np.float32)
    minp = np.array([0.0, 0.0, 0.0, 0.05, 0.0, 0.01], np.float32)
    rows = temp.size
    lg = (rng.normal(size=(rows, shape["vocab"])) * 2).astype(np.float32)
    seed = rng.integers(0, 2**63, rows)
    params = dict(temperature=temp, top_k=topk, top_p=topp, min_p=minp)
    dev = device_params(backend, **params)
    tok, lp = _run(shape, lg, seed=seed, position=7, order=order, **dev)
    got = compare(backend, lg, tok, lp, seed=seed, position=7, order=order, **params)
    tok_h, _ = _run(shape, lg, seed=seed, position=7, order=order, **params)
    np.testing.assert_array_equal(host(backend, tok_h), got)


def test_repeated_calls_restore_the_state(backend, shape, rng, kmax):
    # A plan's histograms, candidate counts and split counters are set up by phase 1 and used
    # up by the later passes: calls in a row (other logits, other modes) stay exact.
    rows, vocab = shape["rows"], shape["vocab"]
    plan = rs.Sampler(rows, vocab, "float32", _block=shape["block"], _splits=shape["splits"])
    seed = rng.integers(0, 2**63, rows)
    for call, params in enumerate(_cases(shape)[::2]):
        lg = (rng.normal(size=(rows, vocab)) * 2).astype(np.float32)
        tok, _ = plan(lg, seed=seed, position=call, check=False, **params)
        compare(backend, lg, tok, seed=seed, position=call, **params)
    assert not host(backend, plan._row_done).any()


def test_histogram_bins_are_monotone():
    # A bin is a contiguous stretch of the order only if the float32 bin of a key never
    # decreases as the key grows (host check of the same arithmetic as hbin).
    kf = np.float32(7.25)
    fv = np.sort(np.concatenate([np.random.default_rng(3).normal(size=20000) * 8,
                                 [-np.inf, kf, kf - 31.984375, kf - 32]]).astype(np.float32))
    fv = fv[fv <= kf]
    with np.errstate(over="ignore", invalid="ignore"):
        d = (kf - fv).astype(np.float32)
        b = np.where(fv == kf, 0, np.where(d < KH._FARD, np.floor(d * KH.HR), KH.HB - 1))
    assert (np.diff(b[::-1]) >= 0).all() and b.max() == KH.HB - 1 and b.min() == 0
