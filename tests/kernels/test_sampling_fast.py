"""Phase 1 and the tile finalize (rocsample.kernels.sampling_fast) against the reference: the
one-launch greedy / unfiltered rows, the tile bound, the candidate gather, its overflow fallback,
ties at the k-th key, both orders, the routing rules, and the finalize's large form (top_k up
to KCAP_L) on the same cases and past the small form's limit."""

from __future__ import annotations

import os

import numpy as np
import pytest

import rocsample.sampling as rs
from rocsample import sampling_plan as plan_mod
from rocsample import sampling_router as router
from rocsample.kernels import sampling_fast as KF
from rocsample.reference import sampling as R
from tests.kernels.conftest import skip_order_on_wave64
from tests.kernels.test_sampling import (
    compare,
    device_params,
    host,
    path_shape,
    scratch_view,
)
from tests.kernels.test_sampling import run_shape as _run

shape = path_shape("the fast path", sim=dict(splits=2), gpu={})


@pytest.fixture(params=["small", "large"])
def form(request, monkeypatch):
    """The tile finalize's form the case runs through: its small one (top_k <= KCAP) as the
    router picks, or the large one (``finalize(True)``, its candidates from ``gather()``) for
    every top-k row."""
    if request.param == "large":
        monkeypatch.setattr(router, "TILE_LARGE", True)
        monkeypatch.setattr(rs, "_PLANS", {})  # no cached plan bound the small form's launches
    return request.param


CHAINS = [
    dict(temperature=0.8, top_k=1),
    dict(temperature=0.8, top_k=7),
    dict(temperature=1.1, top_k=9, top_p=0.6),
    dict(temperature=0.8, top_k=50, top_p=0.9, min_p=0.05),
    dict(temperature=0.7, top_k=12, top_p=0.95, min_p=0.2),
]


@pytest.mark.parametrize("order", ["llama", "vllm"])
@pytest.mark.parametrize("params", CHAINS, ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items()))
def test_topk_chains_match_reference(backend, shape, rng, params, order, form):
    lg = (rng.normal(size=(shape["rows"], shape["vocab"])) * 3).astype(np.float32)
    seed = rng.integers(0, 2**63, shape["rows"])
    tok, lp = _run(shape, lg, seed=seed, position=5, order=order, **params)
    compare(backend, lg, tok, lp, seed=seed, position=5, order=order, **params)


@pytest.mark.parametrize("order", ["llama", "vllm"])
def test_ties_at_the_kth_key(backend, shape, rng, order, form):
    # Coarse values: the k-th key is shared by many tokens, the lower indices must win.
    lg = np.round(rng.normal(size=(shape["rows"], shape["vocab"])) * 2).astype(np.float32) / 2
    lg[0, :] = 1.0                       # every token tied
    lg[1, ::3] = lg[1].max()             # many tied maxima
    seed = rng.integers(0, 2**63, shape["rows"])
    for k in (1, 4, 33):
        params = dict(temperature=0.9, top_k=k, top_p=0.8, min_p=0.01)
        tok, lp = _run(shape, lg, seed=seed, position=1, order=order, **params)
        compare(backend, lg, tok, lp, seed=seed, position=1, order=order, **params)


@pytest.mark.parametrize("order", ["llama", "vllm"])
def test_overflow_fallback_is_exact(backend, shape, rng, order, form):
    # A tiny candidate capacity forces the in-block radix select and the ordered gather; sorted
    # rows put the whole top k in one tile (the adversarial case for the tile bound).
    lg = (rng.normal(size=(shape["rows"], shape["vocab"])) * 3).astype(np.float32)
    lg[0] = np.sort(lg[0])[::-1]
    lg[1] = np.round(lg[1])
    lg[2, : shape["vocab"] // 2] = np.nan
    seed = rng.integers(0, 2**63, shape["rows"])
    for cap, k in ((4, 6), (KF.CAND_MAX, 20)):
        params = dict(temperature=0.8, top_k=k, top_p=0.9, min_p=0.02)
        tok, lp = _run(shape, lg, seed=seed, position=3, order=order, _cap=cap, **params)
        compare(backend, lg, tok, lp, seed=seed, position=3, order=order, **params)


@pytest.fixture(scope="module")
def large_shape(backend):
    """Rows whose tiles make the large form's candidates fit for top_k past KCAP: 2 x 4096 in
    16 splits of 64 threads (1024 tile maxima) on the simulator, 8 x 151936 as the plan makes it
    on a GPU."""
    if not backend.is_device:
        pytest.skip("the tile finalize is a device launch plan (cpu runs the reference)")
    # (the simulator's shape on a GPU too under compute-sanitizer: ROCSAMPLE_FUZZ=sanitize, the
    # profile tools/gpu/sanitize.sh sets)
    if backend.name == "sim" or os.environ.get("ROCSAMPLE_FUZZ") == "sanitize":
        return dict(rows=2, vocab=4096, block=64, splits=16, k=300)
    return dict(rows=8, vocab=151936, block=None, splits=None, k=1000)


@pytest.fixture(params=[False, True], ids=["strided", "fine"])
def fine(request, monkeypatch):
    """The large form's tiles: phase 1's strided ones, or its FINE layout's (forced here at
    the rows of the case: the router takes it from 256 rows)."""
    monkeypatch.setattr(router, "TILE_FINE", request.param)
    return request.param


@pytest.mark.parametrize("order", ["llama", "vllm"])
def test_large_form_past_the_small_limit(backend, large_shape, rng, order, fine, monkeypatch):
    # top_k past KCAP through the large form (the router takes it for batches of 64 rows or
    # more; forced here at fewer): its bitonic sort in place, the block scan of the masses for
    # top-p over more survivors than threads, the per-thread fold of the draw; then the same
    # rows with a candidate list too short (the radix fallback, then the sort of the top k it
    # gathers)
    skip_order_on_wave64(backend, order)
    sh = large_shape
    rows, vocab, k = sh["rows"], sh["vocab"], sh["k"]
    monkeypatch.setattr(router, "TILE_LARGE", True)
    monkeypatch.setattr(rs, "_PLANS", {})
    plan = rs.Sampler(rows, vocab, "float32", _block=sh["block"], _splits=sh["splits"]).plan
    hk = router.Host(np.full(rows, 0.9, np.float32), np.full(rows, k), np.ones(rows, np.float32),
                     np.zeros(rows, np.float32))
    r = router.route(plan, hk)
    assert r.large and r.kcap == KF.KCAP_L and not r.hist and r.fine == fine
    # the tiles alone would have fitted: the candidates stay in the list, the fallback is the
    # case that asks for it
    assert router.tile_large_fits(
        plan.splits * (plan.fine_tiles(plan.chunk) if fine else plan.tpt), k)
    lg = (rng.normal(size=(rows, vocab)) * rng.uniform(1, 3, (rows, 1))).astype(np.float32)
    lg[-1, 5::7] = np.nan
    seed = rng.integers(0, 2**63, rows)
    cases = [(None, dict(temperature=0.9, top_k=k)),
             (None, dict(temperature=0.8, top_k=k, top_p=0.9, min_p=0.01))]
    if order == "llama" or backend.name != "sim":  # (the fallback: one order on the simulator)
        cases.append((64, dict(temperature=1.2, top_k=k, top_p=0.95)))
    for cap, params in cases:
        kw = {} if cap is None else dict(_cap=cap)
        tok, lp = _run(sh, lg, seed=seed, position=11, order=order, **kw, **params)
        compare(backend, lg, tok, lp, seed=seed, position=11, order=order, **params)
    # the top-p cut exactly after the first of two tied maxima (the others' mass is nothing):
    # token 3 at every position; a cut one place off draws 9 about half the time (six draws)
    lg2 = (rng.normal(size=(rows, vocab)) * 0.5 + 2).astype(np.float32)
    lg2[:, [3, 9]] = 40.0
    params = dict(temperature=1.0, top_k=k, top_p=0.4)
    for pos in range(3):
        tok, lp = _run(sh, lg2, seed=seed, position=pos, order=order, **params)
        assert (host(backend, tok) == 3).all()
        compare(backend, lg2, tok, lp, seed=seed, position=pos, order=order, **params)


def test_device_parameters_through_the_large_form(backend, large_shape, rng, fine, monkeypatch):
    # Per-row device parameters with the large form forced (ROCSAMPLE_TILE_LARGE=1): each row
    # decides its mode on the device, the gather kernel and the finalize serve only the tile
    # rows (top_k up to KCAP_L) and leave the others' (greedy, unfiltered, min-p only, top-p
    # only, top_k past KCAP_L with top-p) to phase 1 and the histogram lane. Same tokens as
    # the reference.
    sh = large_shape
    k = sh["k"]
    monkeypatch.setattr(router, "TILE_LARGE", True)
    monkeypatch.setattr(rs, "_PLANS", {})
    temp = np.array([0.0, 0.9, 0.8, 1.1, 0.7, 1.2, 0.9], np.float32)
    topk = np.array([0, 0, k, 0, 0, KF.KCAP_L + 1, 7], np.int64)
    topp = np.array([1.0, 1.0, 1.0, 1.0, 0.6, 0.9, 0.8], np.float32)
    minp = np.array([0.0, 0.0, 0.0, 0.05, 0.0, 0.01, 0.02], np.float32)
    rows = temp.size
    lg = (rng.normal(size=(rows, sh["vocab"])) * 2).astype(np.float32)
    seed = rng.integers(0, 2**63, rows)
    params = dict(temperature=temp, top_k=topk, top_p=topp, min_p=minp)
    dev = device_params(backend, **params)
    s = rs.Sampler(rows, sh["vocab"], "float32", _block=sh["block"], _splits=sh["splits"])
    r = router.route(s.plan, router.Host(None, None, None, None))
    assert r.large and r.fine == fine
    tok, lp = _run(dict(block=sh["block"], splits=sh["splits"]), lg, seed=seed, position=7,
                   **dev)
    compare(backend, lg, tok, lp, seed=seed, position=7, **params)


@pytest.mark.parametrize("order", ["llama", "vllm"])
@pytest.mark.parametrize("large", [False, True], ids=["small", "large"])
def test_top_k_only_rows_by_selection(backend, large_shape, rng, order, large, monkeypatch):
    # A top-k-only row with more than RANK_MAX candidates is drawn from its K-th largest
    # candidate up, found by a histogram of the candidates' key distances and a count within
    # the bin that holds it, with no sort (the small form: top_k KCAP; the large: the large
    # shape's k). Rows: plain; values in steps of 1/4 (ties at the cut: their lower indices
    # first); KC + 100 tokens tied at the maximum (all in the first bin, past its room: the
    # sort serves that row); NaNs every fifth token. A top-p row beside them keeps the sort.
    # Tokens and logprobs as the reference's at three positions.
    skip_order_on_wave64(backend, order)
    sh = large_shape
    vocab = sh["vocab"]
    k = sh["k"] if large else KF.KCAP
    monkeypatch.setattr(router, "TILE_LARGE", True if large else None)
    monkeypatch.setattr(rs, "_PLANS", {})
    rows = 5
    lg = (rng.normal(size=(rows, vocab)) * rng.uniform(1, 3, (rows, 1))).astype(np.float32)
    lg[1] = np.round(lg[1] * 4) / 4
    cl = rng.choice(vocab, (KF.KCAP_L if large else KF.KCAP) + 100, replace=False)
    lg[2] = rng.normal(size=vocab).astype(np.float32)
    lg[2, cl] = np.float32(6.0)
    lg[3, ::5] = np.nan
    topp = np.array([1.0, 1.0, 1.0, 1.0, 0.9], np.float32)
    params = dict(temperature=np.float32(0.8), top_k=k, top_p=topp)
    s = rs.Sampler(rows, vocab, "float32", order=order, _block=sh["block"], _splits=sh["splits"])
    hk = router.Host(np.full(rows, 0.8, np.float32), np.full(rows, k), topp,
                     np.zeros(rows, np.float32))
    r = router.route(s.plan, hk)
    assert r.tile and r.large == large and not r.hist
    seed = rng.integers(0, 2**63, rows)
    for pos in range(3):
        tok, lp = _run(sh, lg, seed=seed, position=pos, order=order, **params)
        compare(backend, lg, tok, lp, seed=seed, position=pos, order=order, **params)
    # The cut itself (the large form: 400 in the bin, within its room; the small one sorts
    # them, past KCAP): 400 tokens tied at the maximum, top_k 8, a temperature that makes the
    # survivors near equally likely, 16 rows of different seeds at two positions (64 on a
    # GPU): the 8 lowest indices of the tie are drawn, the 8th among them, and no other (a cut
    # one place off draws the 9th, or never the 8th).
    if not large:
        return
    rows = 16 if backend.name == "sim" else 64
    tie = np.sort(rng.choice(vocab, 400, replace=False))
    lg = np.tile(rng.normal(size=vocab).astype(np.float32), (rows, 1))
    lg[:, tie] = np.float32(5.0)
    params = dict(temperature=np.float32(50.0), top_k=8)
    seed = rng.integers(0, 2**63, rows)
    drawn = []
    for pos in range(2):
        tok, lp = _run(sh, lg, seed=seed, position=pos, order=order, **params)
        compare(backend, lg, tok, lp, seed=seed, position=pos, order=order, **params)
        drawn.append(host(backend, tok))
    drawn = np.concatenate(drawn)
    assert set(drawn.tolist()) <= set(tie[:8].tolist()) and tie[7] in drawn, np.unique(drawn)


def _keys(v):
    """The kernels' order key of float32 values (``order_key``: -0.0 as +0.0), int64."""
    b = np.where(v == 0, np.float32(0), v).astype(np.float32).view(np.uint32).astype(np.int64)
    return np.where(b >= 1 << 31, 0xFFFFFFFF - b, b + (1 << 31))


def _assert_from_least_candidate(got, key, fin):
    """A row's gathered composites ``got`` (every split's list): each is its token's (key,
    -index) composite of a finite logit (``key``: the row's order keys, ``fin``: its finite
    logits), and together they are every finite token whose key is at least the least of
    theirs."""
    idx = 0x7FFFFFFF - (got & 0x7FFFFFFF)
    assert np.array_equal(got >> 31, key[idx]) and fin[idx].all()
    want = np.flatnonzero(fin & (key >= (got >> 31).min()))
    np.testing.assert_array_equal(np.sort(idx), want)


@pytest.mark.parametrize("order", ["llama", "vllm"])
def test_the_gather_kernel_lists_every_token_from_its_least_candidate_up(
        backend, large_shape, rng, order, monkeypatch):
    # The large finalize's candidates as gather() leaves them in the scratch, a list a (split,
    # row): together at least top_k and at most the list's room (so the finalize did not take
    # the radix fallback, which would hide a wrong list: it is exact too), each a composite of
    # its token's key and index, and every finite token whose key is at least the least
    # candidate's among them (the tokens with key >= tau), whatever split holds it. Rows: a
    # +inf logit and two near float32's largest (their scaled values overflow to +inf in the
    # vllm order: keys past every finite one); a row of 40 finite logits among NaNs (fewer
    # finite tiles than top_k: tau 0, every finite token, compared against -inf); NaNs every
    # seventh token.
    # (On the simulator in 4 splits of 64 threads, k = 100: each thread streams 16 tokens,
    # two of the gather's rounds. The forty-fourth session's first gate: the first row's total
    # is past the finalize's list on a GPU, which this test had asserted it was not.)
    skip_order_on_wave64(backend, order)
    sh = large_shape
    rows, vocab, k = max(3, sh["rows"]), sh["vocab"], sh["k"]
    if sh["splits"] is not None:
        sh = dict(sh, splits=4)
        k = 100
    monkeypatch.setattr(router, "TILE_LARGE", True)
    monkeypatch.setattr(rs, "_PLANS", {})
    s = rs.Sampler(rows, vocab, "float32", order=order, _block=sh["block"], _splits=sh["splits"])
    lg = (rng.normal(size=(rows, vocab)) * rng.uniform(1, 3, (rows, 1))).astype(np.float32)
    lg[-1, 5::7] = np.nan
    lg[0, 3] = np.inf   # a +inf logit: never a candidate (not finite)
    lg[0, [10, 20]] = (3.0e38, 3.3e38)
    few = rng.choice(vocab, 40, replace=False)
    lg[1] = np.nan
    lg[1, few] = rng.normal(size=40).astype(np.float32)
    t = np.float32(0.8)
    params = dict(temperature=t, top_k=k)
    seed = rng.integers(0, 2**63, rows)
    tok = s(lg, seed=seed, position=2, check=False, **params)[0]
    compare(backend, lg, tok, None, seed=seed, position=2, order=order, **params)
    gc = host(backend, scratch_view(backend, s, "gc"))
    S = s.plan.splits
    room = gc.shape[2] - 1
    for r in range(rows):
        counts = gc[r, :S, 0]
        if r == 0 and (counts > room).any():
            continue   # (its splits' lists cut short: the finalize's fallback, compared above)
        assert (counts <= room).all(), (r, counts)
        got = np.concatenate([gc[r, q, 1:1 + counts[q]] for q in range(S)])
        assert got.size >= min(k, 40 if r == 1 else k), (r, got.size)
        # the ordinary rows fit the finalize's list; row 0's two finite values near float32's
        # largest put its kmax far above its other tiles, so the histogram's bins are coarse
        # there and tau falls low: at 8 x 151936 some 26000 tokens pass, more than the list
        # holds, and the finalize takes the radix fallback (exact). Its lists are checked below
        # all the same: each split holds its own tokens.
        assert r == 0 or got.size <= s.plan.cap_large, (r, got.size)
        v = lg[r]
        if order == "vllm":
            with np.errstate(over="ignore"):
                v = (v * (np.float32(1) / t)).astype(np.float32)
        _assert_from_least_candidate(got, _keys(v), np.abs(lg[r]) < np.inf)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("tile_len", [4, 8, 16])
def test_fine_tiles_at_every_alignment(backend, rng, tile_len, dtype, monkeypatch):
    # The large form's layout (phase 1's FINE variants, tau() and gather()): tiles of tile_len
    # consecutive tokens from each split's start. Rows of 1027 logits (1027 % 4 = 3: every row
    # but the first starts off a vector boundary, so single loads; the first row's first split
    # takes vector loads) in 3 splits of 343 (the later splits start off a boundary too), 64
    # threads a block. Row 0: a +inf logit and a tile of NaNs; row 1: -inf in runs and a split
    # whose logits are all -inf; row 2: plain. tm holds each tile's largest finite logit (-inf
    # for none, and in the slots past a split's end), the gather's lists hold every finite token
    # from their least candidate up, and tokens and logprobs are the reference's.
    if not backend.is_device:
        pytest.skip("the tile finalize is a device launch plan (cpu runs the reference)")
    rows, vocab, splits, block, k = 3, 1027, 3, 64, 40
    monkeypatch.setattr(router, "TILE_LARGE", True)
    monkeypatch.setattr(router, "TILE_FINE", True)
    monkeypatch.setattr(rs, "_PLANS", {})
    monkeypatch.setattr(plan_mod, "_FINE_MIN_TILES", -(-vocab // tile_len))
    f = (rng.normal(size=(rows, vocab)) * rng.uniform(1, 3, (rows, 1))).astype(np.float32)
    f[0, 100] = np.inf
    f[0, 16 * 5:16 * 6 + 3] = np.nan
    f[1, ::9] = -np.inf
    f[1, 343:686] = -np.inf
    if dtype == "float32":
        x, kw = f, {}
    elif dtype == "float16":
        x, kw = f.astype(np.float16), {}
    else:
        x, kw = (f.view(np.uint32) >> 16).astype(np.uint16), {"dtype": "bfloat16"}
    w = R.widen(x, kw.get("dtype")).astype(np.float32)
    s = rs.Sampler(rows, vocab, kw.get("dtype", x.dtype.name), _block=block, _splits=splits)
    assert s.plan.tile_len == tile_len and s.plan.large and s.plan.fine
    params = dict(temperature=np.float32(0.9), top_k=k)
    seed = rng.integers(0, 2**63, rows)
    tok, lp = s(x, seed=seed, position=3, check=False, return_logprobs=True, **params,
                **kw)[:2]
    compare(backend, x, tok, lp, seed=seed, position=3, **params, **kw)
    chunk = s.plan.chunk
    tps = s.plan.fine_tiles(chunk)
    tm = host(backend, scratch_view(backend, s, "tm"))
    fin = np.abs(w) < np.inf
    for r in range(rows):
        for q in range(splits):
            lo, hi = q * chunk, min((q + 1) * chunk, vocab)
            for m in range(tps):
                a, b = min(lo + m * tile_len, hi), min(lo + (m + 1) * tile_len, hi)
                v = w[r, a:b][fin[r, a:b]]
                want = v.max() if v.size else -np.inf
                assert tm[r, q * tps + m] == want, (r, q, m, tm[r, q * tps + m], want)
    gc = host(backend, scratch_view(backend, s, "gc"))
    for r in range(rows):
        got = np.concatenate([gc[r, q, 1:1 + gc[r, q, 0]] for q in range(splits)])
        assert k <= got.size <= s.plan.cap_large, (r, got.size)
        _assert_from_least_candidate(got, _keys(w[r]), fin[r])


def _tau_row(tm_row, kmax, k):
    """tau()'s (kmax, B, tau) for one row of tile maxima, a llama row (filter key = order key):
    the histogram of their key distances to kmax, the first bin B where the count from the
    maximum reaches k (NBIN - 1 where it never does), tau = kmax - the bin's distance limit, at
    least 0."""
    v = tm_row[np.isfinite(tm_row)]
    hist = np.bincount([KF._dist_bin(np.int64(d)) for d in kmax - _keys(v)], minlength=KF.NBIN)
    c = np.cumsum(hist)
    b = int(np.argmax(c >= k)) if c[-1] >= k else KF.NBIN - 1
    return kmax, b, max(kmax - int(KF._bin_dlim(np.int64(b))), 0)


@pytest.mark.parametrize("k", [40, 400])
def test_tau_counts_every_tile_maximum_round_by_round(backend, rng, k, monkeypatch):
    # tau() loads the tile maxima TPRE a thread a round: a block of one wavefront (32 or 64
    # threads), rows of 2100 logits a 32 threads in 3 splits, tiles of 4 tokens (525 slots a
    # row a 32 threads: ceil(700 / 16) units of 4 tiles a split, past TPRE * 2 * 32 = 512, so
    # two full rounds and a partial third). Row 0 plain; row 1 -inf but for its last quarter
    # (about 130 finite tiles) with a NaN tile there; row 2 tied in steps of 1/4. Its (kmax, B,
    # tau) in gt equal the histogram's on the host from the same tile maxima, for a k the
    # finite tiles reach (40) and one past row 1's (400: B = NBIN - 1 there), and the tokens
    # are the reference's.
    if not backend.is_device:
        pytest.skip("the tile finalize is a device launch plan (cpu runs the reference)")
    block = backend.warp_size()
    rows, vocab, splits, tile_len = 3, 2100 * (block // 32), 3, 4
    monkeypatch.setattr(router, "TILE_LARGE", True)
    monkeypatch.setattr(router, "TILE_FINE", True)
    monkeypatch.setattr(rs, "_PLANS", {})
    monkeypatch.setattr(plan_mod, "_FINE_MIN_TILES", -(-vocab // tile_len))
    f = (rng.normal(size=(rows, vocab)) * 2).astype(np.float32)
    f[1, :3 * vocab // 4] = -np.inf
    f[1, vocab - 40:vocab - 36] = np.nan
    f[2] = np.round(f[2] * 4) / 4
    s = rs.Sampler(rows, vocab, "float32", _block=block, _splits=splits)
    assert s.plan.tile_len == tile_len and s.plan.fine
    G = splits * s.plan.fine_tiles(s.plan.chunk)
    assert G > KF.TPRE * block * 2, G
    params = dict(temperature=np.float32(0.9), top_k=k)
    seed = rng.integers(0, 2**63, rows)
    tok, lp = s(f, seed=seed, position=5, check=False, return_logprobs=True, **params)[:2]
    compare(backend, f, tok, lp, seed=seed, position=5, **params)
    tm = host(backend, scratch_view(backend, s, "tm"))
    gt = host(backend, scratch_view(backend, s, "gt"))
    fin = np.isfinite(f)
    for r in range(rows):
        kmax = int(_keys(f[r][fin[r]].max(keepdims=True))[0])
        assert tuple(int(x) for x in gt[r]) == _tau_row(tm[r, :G], kmax, k), r
    assert (gt[1, 1] == KF.NBIN - 1) == (k == 400)


def test_large_form_beside_the_rank_pass(backend, large_shape, rng, monkeypatch):
    # A large-form row (top_k past KCAP) and a top-k-only row past KCAP_L (the rank pass's: phase
    # 1 draws it, in the same FINE launch, and writes no tiles for it) in one call: the pass's
    # rows go without the tile bound in the histogram code (tiles 0). Same tokens as the
    # reference.
    sh = large_shape
    vocab = sh["vocab"]
    monkeypatch.setattr(router, "TILE_LARGE", True)
    monkeypatch.setattr(router, "TILE_FINE", True)
    monkeypatch.setattr(rs, "_PLANS", {})
    lg = (rng.normal(size=(4, vocab)) * 2).astype(np.float32)
    params = dict(temperature=np.float32(0.9),
                  top_k=np.array([sh["k"], KF.KCAP_L + 1, sh["k"], KF.KCAP_L + 1]))
    s = rs.Sampler(4, vocab, "float32", _block=sh["block"], _splits=sh["splits"])
    hk = router.Host(np.full(4, 0.9, np.float32), params["top_k"], np.ones(4, np.float32),
                     np.zeros(4, np.float32))
    r = router.route(s.plan, hk)
    assert r.large and r.fine and r.nuc and r.rank
    seed = rng.integers(0, 2**63, 4)
    for pos in range(2):
        tok, lp = _run(sh, lg, seed=seed, position=pos, **params)
        compare(backend, lg, tok, lp, seed=seed, position=pos, **params)


def test_greedy_unfiltered_and_tile_rows_in_one_launch(backend, shape, rng):
    # Greedy, unfiltered and tile rows mixed in one batch: phase 1 finishes the first two kinds
    # and the tile finalize the third, each row once.
    rows = shape["rows"]
    lg = (rng.normal(size=(rows, shape["vocab"])) * rng.uniform(0.5, 3, (rows, 1))).astype(
        np.float32)
    params = dict(temperature=np.resize([0.0, 0.9, 1.3], rows).astype(np.float32),
                  top_k=np.resize([3, 0, min(KF.KCAP, shape["vocab"] - 1)], rows), top_p=0.9,
                  min_p=0.0)
    # rows with top_k = 0 stay unfiltered: p = 1 there
    params["top_p"] = np.where(params["top_k"] == 0, 1.0, 0.9).astype(np.float32)
    seed = rng.integers(0, 2**63, rows)
    tok, lp = _run(shape, lg, seed=seed, position=9, **params)
    compare(backend, lg, tok, lp, seed=seed, position=9, **params)


def test_split_and_tile_counts_never_change_tokens(backend, shape, rng):
    rows, vocab = (1, 150) if backend.name == "sim" else (shape["rows"], shape["vocab"])
    lg = np.round(rng.normal(size=(rows, vocab)) * 4).astype(np.float32) / 4
    params = dict(temperature=0.9, top_k=10, top_p=0.9, min_p=0.01)
    seed = rng.integers(0, 2**63, rows)
    got = []
    for splits in (1, 2, 3, 7):
        tok, lp = _run(shape, lg, seed=seed, position=4, _splits=splits, **params)
        got.append(compare(backend, lg, tok, lp, seed=seed, position=4, **params))
    for g in got[1:]:
        np.testing.assert_array_equal(g, got[0])


def test_routing(backend, shape):
    # Each row's mode, decided on the host for host parameters (the kernels decide the same per
    # row for device arrays): greedy, unfiltered, tile (0 < top_k <= 256), min-p only, and the
    # histogram path for the rest; top_k >= n_vocab is off.
    plan = rs.Sampler(7, 40, "float32", _block=shape["block"]).plan
    t = np.array([0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0], np.float32)
    k = np.array([5, 0, 5, 0, 0, 0, 40], np.int64)
    p = np.array([1.0, 1.0, 0.5, 1.0, 0.5, 0.5, 1.0], np.float32)
    mp = np.array([0.0, 0.0, 0.0, 0.1, 0.1, 0.0, 0.0], np.float32)
    M = KF
    assert list(router.modes(plan, router.Host(t, k, p, mp))) == [
        M.MODE_GREEDY, M.MODE_RACE, M.MODE_TILE, M.MODE_MINP, M.MODE_HIST, M.MODE_GREEDY,
        M.MODE_RACE]
    r = router.route(plan, router.Host(t, k, p, mp))
    assert r.draw and r.tile and r.hist and r.select
    # a device array: every kernel, the rows decide
    assert router.modes(plan, router.Host(None, k, p, mp)) is None
    r = router.route(plan, router.Host(None, k, p, mp))
    assert r.draw and r.tile and r.hist and r.select
    r = router.route(plan, router.Host(t[:1], k[:1] * 0, p[:1], mp[:1]))
    assert not (r.draw or r.tile or r.hist or r.select)   # greedy: phase 1 alone
    wide = rs.Sampler(1, KF.KCAP + 8, "float32", _block=shape["block"]).plan
    assert list(router.modes(wide, router.Host(t[1:2], np.array([KF.KCAP + 1]), p[1:2],
                                               mp[1:2]))) == [M.MODE_HIST]


def test_block_must_be_a_power_of_two(backend, shape):
    # One path serves every row and its split-grid trees halve the block: a block of 3 warps
    # (once the general path's) is refused by name before any launch, as is one that is not a
    # wavefront multiple.
    w = backend.warp_size()
    for b in (3 * w, w // 2):
        with pytest.raises(ValueError, match="_block"):
            rs.Sampler(1, 64, "float32", _block=b)


def test_distance_bins_are_monotone_and_dlim_is_the_last_distance_of_its_bin():
    # tau = kmax - _bin_dlim(B) is only a valid bound if the bins are monotone in the distance
    # and _bin_dlim(B) is the largest distance binned <= B (pure host code: every backend).
    rng = np.random.default_rng(5)
    ds = np.unique(np.concatenate([np.arange(1 << 14), rng.integers(0, 1 << 32, 20000),
                                   (1 << np.arange(33)) - 1, 1 << np.arange(32)]))
    bins = np.array([KF._dist_bin(np.int64(d)) for d in ds])
    assert (np.diff(bins) >= 0).all()
    assert bins.min() == 0 and bins.max() < KF.NBIN - 1
    for b in range(int(bins.max()) + 1):
        dl = int(KF._bin_dlim(np.int64(b)))
        assert KF._dist_bin(np.int64(dl)) <= b < KF._dist_bin(np.int64(dl + 1)), b
    assert KF._bin_dlim(np.int64(KF.NBIN - 1)) >= 1 << 32
    assert KF._dist_bin(np.int64(-5)) == 0 and KF._dist_bin(np.int64(1 << 40)) == KF.NBIN - 1


@pytest.mark.parametrize("params", [dict(temperature=0.0), dict(temperature=0.9),
                                    dict(temperature=0.9, top_k=5)],
                         ids=["greedy", "temperature", "top_k5"])
def test_split_longer_than_one_round_of_loads(backend, shape, rng, params):
    # Phase 1 streams whole rounds (block x UNROLL tokens per round, no bounds test) and then one
    # predicated round: a split of several rounds plus a partial one, with the row's maximum,
    # a NaN and an inf placed in the whole rounds and in the tail.
    vocab = 8 * 32 * 3 + 37 if backend.name == "sim" else shape["vocab"]
    lg = (rng.normal(size=(2, vocab)) * 3).astype(np.float32)
    lg[0, 5] = 40.0                      # maximum in the first whole round
    lg[1, vocab - 2] = 40.0              # maximum in the predicated tail
    lg[0, 7] = np.nan
    lg[1, 300] = np.inf                  # never the maximum, never drawn
    seed = rng.integers(0, 2**63, 2)
    for splits in (1, 2):
        tok, lp = _run(dict(shape, splits=splits), lg, seed=seed, position=3, **params)
        compare(backend, lg, tok, lp, seed=seed, position=3, **params)
        if params.get("temperature") == 0.0:
            assert list(host(backend, tok)) == [5, vocab - 2]


@pytest.mark.parametrize("lp", [False, True], ids=["tokens", "logprobs"])
def test_quads_at_every_split_alignment(backend, shape, rng, lp):
    # Temperature rows stream the row by quads (four consecutive tokens per Philox call): split
    # starts and ends that are not multiples of 4, splits shorter than a quad (chunk 1..3) and a
    # row length that is not a multiple of 4 must draw exactly the reference's tokens, the same
    # for every split count; greedy rows of the same launch are the plain argmax.
    rows, vocab = (2, 27) if backend.name == "sim" else (4, 151937)
    lg = (rng.normal(size=(rows, vocab)) * 2).astype(np.float32)
    lg[0, 1] = np.nan
    lg[-1, vocab - 1] = 9.0
    params = dict(temperature=np.resize([0.8, 0.0], rows).astype(np.float32))
    seed = rng.integers(0, 2**63, rows)
    splits_set = (1, 2, 3, 5, 7, 9, 13, 27) if backend.name == "sim" else (1, 5, 333, 1024)
    got = []
    for splits in splits_set:
        res = rs.sample(lg, seed=seed, position=6, check=False, return_logprobs=lp,
                        _block=shape["block"], _splits=splits, **params)
        got.append(compare(backend, lg, res[0], res[1] if lp else None, seed=seed, position=6,
                           **params))
    for g in got[1:]:
        np.testing.assert_array_equal(g, got[0])


@pytest.mark.parametrize("params", [dict(temperature=0.0), dict(temperature=1.3)],
                         ids=["greedy", "temperature"])
def test_fused_launch_counts_reset_between_calls(backend, shape, rng, params):
    # Without top-k rows phase 1 is the whole call: the last block of each row to finish folds
    # the row's partials, found by a per-row count (its residue mod the split count) that it
    # brings back down. A plan called again (new logits, other positions) must find every count
    # back at 0 and finalize each row once, by the block that really was last; a count at a
    # multiple of the split count works the same and stays there.
    rows, vocab = (shape["rows"], shape["vocab"])
    plan = rs.Sampler(rows, vocab, "float32", _block=shape["block"], _splits=shape["splits"])
    seed = rng.integers(0, 2**63, rows)
    for call in range(3):
        lg = (rng.normal(size=(rows, vocab)) * 3).astype(np.float32)
        tok, _ = plan(lg, seed=seed, position=call, check=False, **params)
        compare(backend, lg, tok, seed=seed, position=call, **params)
        assert not host(backend, plan._row_done).any()
    shifted = host(backend, plan._row_done).copy()   # the plan's counters (sets of them)
    shifted[:3] = 2 * plan.splits   # the first set: the three split-grid kernels' counts
    plan._row_done.copy_to_device(shifted)
    lg = (rng.normal(size=(rows, vocab)) * 3).astype(np.float32)
    tok, _ = plan(lg, seed=seed, position=9, check=False, **params)
    compare(backend, lg, tok, seed=seed, position=9, **params)
    np.testing.assert_array_equal(host(backend, plan._row_done), shifted)


def _fast_pass_vocab(backend):
    # a row whose threads take the fast pass with one split (KF.FAST_MIN_QUADS quads or more
    # each, plus a partial last quad)
    return 4 * backend.warp_size() * (KF.FAST_MIN_QUADS + 2) + 9 if backend.name == "sim" \
        else 65536 + 9


@pytest.mark.parametrize("temperature", [0.5, 1.0, 2.5])
def test_fast_pass_draws_the_reference_tokens(backend, shape, rng, temperature):
    # Temperature rows long enough for the fast pass (approximate scores, the noise's cap against
    # the block's bound, the exact finish of the two best) draw exactly the reference's tokens,
    # for one split and several, with a NaN, an inf and a far-below logit among them.
    vocab = _fast_pass_vocab(backend)
    rows = 4 if backend.name == "sim" else 64
    lg = (rng.normal(size=(rows, vocab)) * rng.uniform(0.5, 4, (rows, 1))).astype(np.float32)
    lg[0, 3] = np.nan
    lg[1, 100] = np.inf
    lg[2, 7] = -1e30
    seed = rng.integers(0, 2**63, rows)
    for splits in (1, 3):
        tok, lp = _run(dict(shape, splits=splits), lg, seed=seed, position=9,
                       temperature=temperature)
        compare(backend, lg, tok, lp, seed=seed, position=9, temperature=temperature)


@pytest.mark.parametrize("params", [dict(temperature=0.9), dict(temperature=0.9, top_p=0.9),
                                    dict(temperature=0.9, top_k=600)],
                         ids=["temperature", "top_p", "top_k"])
@pytest.mark.parametrize("lp", [False, True], ids=["tokens", "logprobs"])
def test_fast_pass_rows_with_one_finite_logit_or_none(backend, shape, lp, params, fast3):
    # The fast pass keeps a row's maximum without its index (a race row's tail reads it only to
    # tell whether any logit is finite, a nucleus or rank row's histogram state only its value).
    # Rows of NaN, -inf and +inf with a single finite logit, in a split's middle, its first
    # quad or the row's last token, draw that token for every split count, temperature alone
    # and through the nucleus and rank passes; a row with none is -1 with STATUS_NO_FINITE.
    vocab = _fast_pass_vocab(backend)
    lg = np.full((5, vocab), -np.inf, np.float32)
    lg[:, 1::3] = np.nan
    lg[:, 2::7] = np.inf
    only = [vocab // 2 + 1, 0, vocab - 1, 4 * 37 + 2]
    for r, j in enumerate(only):
        lg[r, j] = -3.0 + r
    seed = np.arange(5, dtype=np.uint64) + 7
    for splits in (1, 3):
        res = rs.sample(lg, seed=seed, position=2, check=False, return_logprobs=lp,
                        _block=shape["block"], _splits=splits, **params)
        got = compare(backend, lg, res[0], res[1] if lp else None, seed=seed, position=2,
                      **params)
        assert [int(t) for t in got] == only + [-1]
        status = res[2] if lp else res[1]  # check=False: (tokens[, logprobs], status)
        assert [int(s) for s in host(backend, status)] == [0, 0, 0, 0, KF.STATUS_NO_FINITE]
    fast3(not lp)   # (logprob calls keep two quads a round)


@pytest.mark.parametrize("lp", [False, True], ids=["tokens", "logprobs"])
def test_drawing_near_ties_fall_back_to_the_exact_draw(backend, shape, lp, fast3):
    # Temperature rows pick each thread's winner by approximate scores (gumbel_fast, trusted to
    # GUMBEL_FAST_ERR) and recompute the two best exactly; a thread whose third best is within
    # the bound of its best has its quads drawn again exactly, by the whole block (redraw).
    # Logits chosen so that the scaled scores l_i + G_i fall by 1e-5 a token away from a peak
    # (gaps far above the reference's margin, far below the bound): every thread falls back
    # (the block's list at its longest), and the tokens must still be the reference's, the peak. Row 0 peaks at token 0, row 1 inside the row; row 2 (T 1e-30: every
    # score infinite) is drawn the exact way too.
    from rocsample.reference import philox

    vocab = _fast_pass_vocab(backend)
    seed = np.array([11, 12, 13], np.uint64)
    idx = np.arange(vocab, dtype=np.int64)
    peaks = [0, vocab // 3 + 1, 0]
    lg = np.empty((3, vocab), np.float32)
    for r in range(3):
        g = philox.token_gumbel(seed[r], np.uint64(4), idx).astype(np.float64)
        lg[r] = (5.0 - np.abs(idx - peaks[r]) * 1e-5 - g).astype(np.float32)
    params = dict(temperature=np.array([1.0, 1.0, 1e-30], np.float32))
    for splits in (1, 3):
        res = rs.sample(lg, seed=seed, position=4, check=False, return_logprobs=lp,
                        _block=shape["block"], _splits=splits, **params)
        got = compare(backend, lg, res[0], res[1] if lp else None, seed=seed, position=4,
                      **params)
        assert [int(t) for t in got[:2]] == peaks[:2]
    fast3(not lp)   # (logprob calls keep two quads a round)


def _emulate_warp_shuffles(monkeypatch):
    # numba-cuda's simulator has no warp shuffles: shfl_xor_sync for a 32-lane warp whose lanes
    # all call it, each a Python thread (its value into the warp's buffer, a barrier, the
    # partner's value out, a barrier). The simulator's block barrier never sees these waits.
    import threading

    from numba.cuda.simulator import kernelapi

    lock = threading.Lock()
    warps = {}
    calls = []

    def shfl_xor_sync(self, mask, value, lane_mask):
        t = threading.current_thread()
        calls.append(1)
        lane = t.thread_id % 32
        key = (t.blockIdx.x, t.blockIdx.y, t.blockIdx.z, t.thread_id // 32)
        with lock:
            w = warps.get(key)
            if w is None:
                w = warps[key] = (threading.Barrier(32, timeout=300), [None] * 32)
        bar, buf = w
        buf[lane] = value
        bar.wait()
        got = buf[lane ^ int(lane_mask)]
        bar.wait()
        return got

    monkeypatch.setattr(kernelapi.FakeCUDAModule, "shfl_xor_sync", shfl_xor_sync,
                        raising=False)
    return calls


_SHUFFLE_MODES = ("mixed", "temperature", "temperature-short", "logprobs", "top_p", "top_k",
                  "top_k-fast", "min_p", "chain")


def pytest_generate_tests(metafunc):
    # the shuffle test's (mode, warp parts): on sim every mode with both parts, and each part
    # alone (the other's shared-memory form beside it) for the draw, the two best and the
    # chain's tile maxima; a GPU backend builds its kernels once a process, so there every
    # mode runs once, on the process's form
    if "warp_parts" in metafunc.fixturenames:
        if metafunc.config.getoption("--backend") == "sim":
            cases = [(m, "max,tree,tail") for m in _SHUFFLE_MODES]
            cases += [(m, w) for m in ("temperature", "top_p", "chain")
                      for w in ("max,tree", "max,tail")]
        else:
            cases = [(m, "process") for m in _SHUFFLE_MODES]
        metafunc.parametrize(("mode", "warp_parts"), cases)


def test_phase1_partials_by_warp_shuffles_match_the_tree(backend, monkeypatch, mode,
                                                         warp_parts):
    # "tree" in rocsample.kernels.warp_parts: phase 1's block partial (maximum, draw, second
    # best; the tile maxima from the threads' maxima) by warp butterflies and one barrier;
    # "tail": its fused tail (the row's last block: the row's maximum and best score) by block
    # maxima. On numba-cuda by default (rocsample.kernels.WARP_DEFAULT; the kernels are built
    # once a process, so on cuda this test takes whichever form the process has). Here in
    # blocks of two 32-lane warps, every mode's variant: a greedy row beside a drawing one,
    # temperature with and without the fast pass, logprobs and top_k 1000 (the plain rank
    # route's four best, with and without the fast pass), whose forms keep the trees, top_p
    # (the nucleus pass's two best), min_p (the histogram path's state) and the chain (tile
    # maxima, tpt < block). The reference's tokens on every device backend; on sim also the
    # whole scratch (partials, row state, tile maxima) the same as the shared-memory forms',
    # with the shuffles emulated and the kernels built again with the parts (and "max", whose
    # block_max the tail calls, as numba-cuda has it). (Tokens alone would miss a partial that
    # is merely looser: the later passes stay exact over it.)
    if not backend.is_device:
        pytest.skip("phase 1 is a device launch (cpu runs the reference)")
    monkeypatch.setattr(router, "NUC_FINISH_VOCAB", 0)
    monkeypatch.setattr(router, "NUC_RANK_PLAIN_TOP2_ROWS", 0)
    block = 64
    # 26 tokens a lane: the fast pass (from 24); the short form 6 (the exact loops); the
    # chain's 17 splits: tiles of 32 threads' maxima (tpt 32: the plan halves it for them);
    # the short form's 40: the tail's block maxima over both warps of the row's last block
    # (the exact loops at many splits: 8 x 151936's form); top_k's exact form at 6 too
    per = 6 if mode in ("temperature-short", "top_k") else 26
    splits = {"chain": 17, "temperature-short": 40}.get(mode, 3)
    vocab = splits * per * block
    params = {"mixed": dict(temperature=np.array([0.0, 0.8], np.float32)),
              "temperature": dict(temperature=0.8), "temperature-short": dict(temperature=0.8),
              "logprobs": dict(temperature=0.8), "top_p": dict(top_p=0.9),
              "top_k": dict(top_k=1000), "top_k-fast": dict(top_k=1000),
              "min_p": dict(min_p=0.05),
              "chain": dict(temperature=0.8, top_k=20, top_p=0.9)}[mode]
    rng = np.random.default_rng(17)
    lg = (rng.normal(size=(2, vocab)) * 2).astype(np.float32)
    lg[1, 5] = 40.0   # one row with a clear maximum at an index the first warp holds
    # and one whose best scores all lie in the last split (the row's last block's second warp
    # holds them in the tail where there are more than 32 splits)
    lg[0, -6:] = np.linspace(12.0, 9.5, 6, dtype=np.float32)
    lp = mode == "logprobs"
    names = ("pf", "pi", "si", "sf", "tm")

    def run():
        s = rs.Sampler(2, vocab, "float32", _splits=splits, _block=block)
        if mode == "chain":
            assert s.plan.tpt < block
        if backend.name == "sim":
            for name in names:   # (no slot left from another run)
                v = scratch_view(backend, s, name)
                v.copy_to_device(np.full(v.shape, 7, v.dtype))
        res = s(lg, seed=9, position=2, return_logprobs=lp, **params)
        tok, got_lp = (res[0], res[1]) if lp else (res, None)
        compare(backend, lg, tok, got_lp, seed=9, position=2, **params)
        return {name: host(backend, scratch_view(backend, s, name)) for name in names}

    if backend.name != "sim":
        run()
        return
    want = run()
    calls = _emulate_warp_shuffles(monkeypatch)
    monkeypatch.setattr(KF, "warp_parts", lambda cuda: frozenset(warp_parts.split(",")))
    monkeypatch.setattr(backend, "_kernel_cache", {})
    got = run()
    # (the logprob variant keeps the tree: its log-sum-exp pairs would round otherwise; TOP4
    # forms keep it too: their four-best butterflies were slower on an H100)
    assert (len(calls) > 0) == (mode not in ("logprobs", "top_k", "top_k-fast"))
    if mode == "top_k-fast":
        # (the fast pass's four-best lists past the second, and their bound, depend on when
        # each thread saw the block's published bound: the simulator's thread timing)
        got["pi"][:, :, 4:7] = want["pi"][:, :, 4:7]
        late = [KF.HS_W3, KF.HS_W4, KF.HS_NS3, KF.HS_NS4]
        got["si"][:, late] = want["si"][:, late]
    for name in names:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
