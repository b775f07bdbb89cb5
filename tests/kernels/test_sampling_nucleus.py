"""The nucleus pass (top-p-only rows of host-parameter calls) against the reference: phase 1's
TOP2 variant draws the row's two best Gumbel scores (four on the finishing route: its TOP4
form), the nucleus pass sums approximate masses before each and decides whether one survives
top-p (``sampling_hist._sample_nucleus_kernel``);
rows it cannot decide (none survives, or the bounds straddle the target) finish through the
histogram path: its row-strided passes (calls with a ``geometry``), or the pass's finishing form,
whose last block runs that path over the row itself (``Route.finish``, every other call here,
at any width). Each decision is reached on purpose here and read back from the row state
(``HS_NUC``), and every token must be the reference's. Top-k-only rows past the tile path take
the same routes through the pass's rank form (``_sample_rank_kernel``: exact counts of the
tokens before each best instead of masses), tested the same way at the end."""

from __future__ import annotations

import os

import numpy as np
import pytest

import rocsample.sampling as rs
from rocsample import sampling_router as router
from rocsample.kernels import sampling_fast as KF
from rocsample.kernels import sampling_hist as KH
from rocsample.reference import philox
from rocsample.reference import sampling as R
from tests.kernels.conftest import skip_order_on_wave64
from tests.kernels.test_sampling import (
    compare,
    host,
    scratch_view,
)

#: compute-sanitizer runs (ROCSAMPLE_FUZZ=sanitize, tools/gpu/sanitize.sh) take the simulator's
#: shapes on a GPU too
_SAN = os.environ.get("ROCSAMPLE_FUZZ") == "sanitize"


@pytest.fixture(scope="module")
def shape(backend):
    """3 x 150 logits in one-wavefront blocks and 2 splits on the simulator (and under
    compute-sanitizer), 16 x 151936 with the plan's own block and splits on a GPU; skipped on
    cpu, which runs the reference instead of any launch plan."""
    if not backend.is_device:
        pytest.skip("the nucleus pass is a device launch plan (cpu runs the reference)")
    if backend.name == "sim" or _SAN:
        return dict(rows=3, vocab=150, block=backend.warp_size(), splits=2)
    return dict(rows=16, vocab=151936, block=None, splits=None)

@pytest.fixture(autouse=True)
def _nucleus_on(monkeypatch):
    monkeypatch.setattr(router, "NUCLEUS", True)
    # (_call sets the finishing route's vocabulary bound per call; restored here)
    monkeypatch.setattr(router, "NUC_FINISH_VOCAB", router.NUC_FINISH_VOCAB)
    monkeypatch.setattr(rs, "_PLANS", {})


def _geometry(plan, fin=None, rows_fin=None):
    """Set a plan's row-strided histogram and select passes' split count (at most the plan's
    splits: the select pass's split winners) and rows, as the plan's own rule may at other
    shapes."""
    if fin is not None:
        assert fin <= plan.splits
        plan.splits_fin, plan.chunk_fin = fin, -(-plan.n_vocab // fin)
    if rows_fin is not None:
        plan.rows_fin = rows_fin


def _call(backend, shape, lg, lp=False, splits=None, order="llama", geometry=None, nuc=None,
          dtype="float32", **kw):
    """A Sampler call; returns (tokens, logprobs or None, the rows' HS_NUC decisions).
    ``geometry``: :func:`_geometry`'s arguments, for the route with the row-strided passes;
    without it the route whose nucleus pass finishes every row (``Route.finish``). ``nuc``:
    the nucleus pass's own split count (``plan.splits_nuc``; else the plan's); ``dtype``: the
    Sampler's logits type (bfloat16: uint16 bits, which the call names too)."""
    rows, vocab = lg.shape
    router.NUC_FINISH_VOCAB = 0 if geometry else 1 << 30
    s = rs.Sampler(rows, vocab, dtype, order=order, _block=shape["block"],
                   _splits=shape["splits"] if splits is None else splits)
    if geometry:
        _geometry(s.plan, **geometry)
    if nuc is not None:
        s.plan.splits_nuc = nuc
    if dtype == "bfloat16":
        kw["dtype"] = dtype
    res = s(lg, check=False, return_logprobs=lp, **kw)
    si = host(backend, scratch_view(backend, s, "si"))
    return res[0], (res[1] if lp else None), si[:, KF.HS_NUC].copy()


def _crafted(vocab, chunk, seed, position, rank):
    """A row (llama order) whose nucleus is token j alone for any top_p (logit 40, every other
    0: mass 0) and its temperature, set so that j's score ranks ``rank`` (0: best) among the
    row's scores (the others' are their noise alone): rank r -> the pass takes the r-th best
    (NUC_W1 .. NUC_W4: ranks 2 and 3 on the finishing route only, see :func:`_certified`),
    else none of them survives (the histogram path). j lies in the split (``chunk`` tokens
    each) of the token with the best noise: phase 1's block merges meet both. Also returns the
    tokens ranked above j."""
    g = philox.token_gumbel(np.uint64(seed), np.uint64(position),
                            np.arange(vocab, dtype=np.int64)).astype(np.float64)
    order = np.argsort(-g, kind="stable")
    lo = order[0] // chunk * chunk
    j = lo + int(np.argmin(g[lo:lo + chunk]))   # the split's lowest noise
    top = g[order[:rank + 1]]
    # (just above the rank-th noise: a bound of the block's best rather than its second best,
    # which the fast pass must not use, would skip j)
    want = top[0] + 1.0 if rank == 0 else top[rank] + 0.1 * (top[rank - 1] - top[rank])
    row = np.zeros(vocab, np.float32)
    row[j] = 40.0
    return row, j, np.float32(40.0 / (want - g[j])), [int(i) for i in order[:rank]]


def _certified(above, vocab, chunk, block):
    """Whether phase 1's TOP4 form certifies the token ranked after the tokens ``above`` (a third
    or fourth best): no thread of its drawing launch holds two of them. A thread keeps its two best
    only, so a thread holding two leaves its others' ranks unknown. Quads 4c .. 4c + 3 of a
    split go to thread c - qa mod block (qa the split's first whole quad), a partial first quad
    to thread 0, a partial last quad to the last thread."""
    held = set()
    for i in above:
        s = i // chunk
        lo, hi = s * chunk, min(s * chunk + chunk, vocab)
        qa, qb = (lo + 3) // 4, hi // 4
        t = 0 if i < 4 * qa else block - 1 if i >= 4 * qb else (i // 4 - qa) % block
        held.add((s, t))
    return len(held) == len(above)


#: the row-strided histogram and select passes: one grid row of blocks for every fourth row
#: (the three rows left by the pass in test_each_decision_gives_the_reference_token share one)
_STRIDED = dict(fin=2, rows_fin=4)


@pytest.mark.parametrize("lp,long,geometry", [(False, False, None), (True, False, None),
                                              (False, True, None), (True, True, None),
                                              (False, False, _STRIDED), (True, True, _STRIDED),
                                              (False, True, "top2")],
                         ids=["tokens", "logprobs", "fast-pass", "fast-pass-logprobs",
                              "strided", "fast-pass-logprobs-strided", "finish-top2"])
def test_each_decision_gives_the_reference_token(backend, shape, lp, long, geometry,
                                                 monkeypatch):
    # long: rows for phase 1's fast pass on the simulator (its TOP2 and TOP4 forms' bounds and
    # merges, its partial first quads folded after the pass); geometry: the rows the pass
    # leaves finished by the row-strided passes, or "top2": by the finishing route after phase
    # 1's TOP2 form (at most NUC_FINISH_TOP2_ROWS rows; the 12 here take its TOP4 form
    # otherwise). Its call follows the TOP4 calls on the same stream's scratch: phase 1 must
    # clear the third and fourth the finishing form reads.
    top2 = geometry == "top2"
    if top2:
        monkeypatch.setattr(router, "NUC_FINISH_TOP2_ROWS", 1 << 30)
        geometry = None
    vocab = _random_vocab(backend, shape) if long else shape["vocab"]
    ranks = [0, 1, 2, 3, 4, 1] * 2   # (two of each: the merges meet them both ways)
    rows = len(ranks)
    plan = rs.Sampler(rows, vocab, "float32", _block=shape["block"],
                      _splits=shape["splits"]).plan
    chunk = plan.chunk_draw
    seed = np.arange(101, 101 + rows, dtype=np.uint64)
    lg = np.empty((rows, vocab), np.float32)
    temp = np.empty(rows, np.float32)
    nucleus = []
    want = []
    for r in range(rows):
        lg[r], j, temp[r], above = _crafted(vocab, chunk, seed[r], 7, ranks[r])
        nucleus.append(j)
        # (four best on the finishing route, phase 1's TOP4 launch; two on the row-strided one)
        decided = ranks[r] < 2 or (not (geometry or top2) and ranks[r] < 4
                                   and _certified(above, vocab, chunk, plan.block))
        want.append((KF.NUC_W1, KF.NUC_W2, KF.NUC_W3, KF.NUC_W4)[ranks[r]] if decided
                    else KF.NUC_NONE)
    params = dict(temperature=temp, top_p=0.9)
    tok, lps, how = _call(backend, shape, lg, lp=lp, seed=seed, position=7, geometry=geometry,
                          **params)
    got = compare(backend, lg, tok, lps, seed=seed, position=7, **params)
    assert [int(t) for t in got] == nucleus            # the nucleus' one token, every row
    assert list(how) == want
    if not (geometry or top2):
        assert KF.NUC_W3 in want and KF.NUC_W4 in want   # (the seeds reach both)


@pytest.mark.parametrize("geometry", [dict(rows_fin=1), None], ids=["strided", "finish"])
def test_bounds_that_straddle_the_target_leave_the_row_to_the_histogram_path(backend, shape,
                                                                               geometry):
    # A constant row: every mass is 2**40 and the best token (position r of the order: ties go
    # by index) has r * 2**40 before it. With top_p r / n the target lies within the
    # approximation's bound of that mass, so the bounds must not decide; with (r + off) / n,
    # off tokens past the bound (2**-_AM_SHIFT of the row's mass, plus two units a token), the
    # pass takes the token. The tokens are the reference's either way: the rows left go through the
    # row-strided passes (one block row: every row), or the finishing form sums the integer
    # masses themselves and takes the first of its best inside the nucleus (NUC_EXACT), leaving
    # to its one-block histogram finish only rows where none is.
    vocab = shape["vocab"]
    idx = np.arange(vocab, dtype=np.int64)
    far = 1.0 + 4.0 * vocab * 2.0**-KH._AM_SHIFT
    seeds, best = [], []
    for s in range(5, 80):   # four seeds whose best token is neither 0 (top_p 0 is refused)
        b = int(np.argmax(philox.token_gumbel(np.uint64(s), np.uint64(2), idx)))
        if 0 < b < vocab - far - 1 and len(seeds) < 4:   # nor so late that top_p reaches 1
            seeds.append(s)
            best.append(b)
    seeds = np.array(seeds, np.uint64)
    lg = np.ones((seeds.size, vocab), np.float32)
    # (the two best scores of each row: the finishing form's exact pass takes the first of
    # them inside the nucleus, by the integer masses themselves; NUC_NONE where neither is)
    two = [np.argsort(-philox.token_gumbel(s, np.uint64(2), idx), kind="stable")[:2]
           for s in seeds]
    for off in (0.0, far):
        p = np.array([(b + off) / vocab for b in best], np.float32)
        tok, _, how = _call(backend, shape, lg, seed=seeds, position=2, temperature=1.0,
                            top_p=p, geometry=geometry)
        got = compare(backend, lg, tok, seed=seeds, position=2, temperature=1.0, top_p=p)
        if off:
            want = [KF.NUC_W1] * seeds.size
        elif geometry:
            want = [KF.NUC_NONE] * seeds.size
        else:
            want = [KF.NUC_EXACT if int(t) in w else KF.NUC_NONE for t, w in zip(got, two)]
            assert KF.NUC_EXACT in want   # (the seeds reach the exact pass)
        assert list(how) == want


def test_row_strided_blocks_serve_more_rows_than_they_have_threads(backend, shape):
    # Constant rows, all in one block row of the row-strided passes (rows_fin 1): its blocks
    # list the rows a thread each, so with more rows than threads they go through them in two
    # lists. Three rows, one in the first list and two in the second, are left by the pass
    # (top_p at the straddle: NUC_NONE), the others it finishes (NUC_W1). One wavefront a block
    # and 150 logits on every device backend (the module's shape fixture: its skip on cpu).
    bs, vocab = backend.warp_size(), 150
    rows = bs + 3
    idx = np.arange(vocab, dtype=np.int64)
    far = 1.0 + 4.0 * vocab * 2.0**-KH._AM_SHIFT
    seeds, best = [], []
    s = 5
    while len(seeds) < rows:
        b = int(np.argmax(philox.token_gumbel(np.uint64(s), np.uint64(2), idx)))
        if 0 < b < vocab - far - 1:
            seeds.append(s)
            best.append(b)
        s += 1
    seeds = np.array(seeds, np.uint64)
    lg = np.ones((rows, vocab), np.float32)
    left = {1, bs + 1, bs + 2}
    p = np.array([(b + (0.0 if r in left else far)) / vocab for r, b in enumerate(best)],
                 np.float32)
    tok, _, how = _call(backend, dict(block=bs, splits=2), lg, seed=seeds, position=2,
                        temperature=1.0, top_p=p, geometry=dict(fin=2, rows_fin=1))
    compare(backend, lg, tok, seed=seeds, position=2, temperature=1.0, top_p=p)
    assert list(how) == [KF.NUC_NONE if r in left else KF.NUC_W1 for r in range(rows)]


def _random_vocab(backend, shape):
    # long enough for phase 1's fast pass (FAST_MIN_QUADS quads a thread) with 2 and 3 splits on
    # the simulator (its TOP2 form: the merges of the fast pass's two best)
    if backend.name == "sim" or _SAN:
        return 3 * 4 * backend.warp_size() * (KF.FAST_MIN_QUADS + 1) + 9
    return shape["vocab"]


@pytest.mark.parametrize("order", ["llama", "vllm"])
def test_random_rows_match_the_reference_for_any_split_count(backend, shape, rng, order):
    # Random rows (NaN, inf and far-below logits among them), top_p per row from 0.05 to 0.99:
    # the tokens are the reference's and the same for every split count (two and more: the
    # pass's routes), through the exact draw (short rows) and the fast pass (long ones, whose
    # partial first quads are folded after it); with 3 splits the rows the pass leaves are
    # finished row-strided (2 splits, every third row a block row), with 2 by the pass itself;
    # and with phase 1 at 2 splits and the pass at 5 of its own (plan.splits_nuc: the plan's
    # rule takes up to twice phase 1's at narrow rows).
    skip_order_on_wave64(backend, order)
    rows = 8 if backend.name == "sim" or _SAN else 64
    for vocab in sorted({shape["vocab"], _random_vocab(backend, shape)}):
        lg = (rng.normal(size=(rows, vocab)) * rng.uniform(0.5, 4, (rows, 1))).astype(np.float32)
        lg[0, 3] = np.nan
        lg[1, 10] = np.inf
        lg[2, 7] = -1e30
        seed = rng.integers(0, 2**63, rows)
        params = dict(temperature=0.8, top_p=np.linspace(0.05, 0.99, rows).astype(np.float32),
                      order=order)
        got, hows = [], []
        for splits, nuc in ((2, None), (3, None), (2, 5)):
            if vocab == _random_vocab(backend, shape) and shape["block"]:   # the fast pass's
                assert -(-vocab // splits) >= 4 * KF.FAST_MIN_QUADS * shape["block"]
            geometry = dict(fin=2, rows_fin=3) if splits == 3 else None
            tok, lps, how = _call(backend, shape, lg, lp=True, splits=splits, seed=seed,
                                  position=4, geometry=geometry, nuc=nuc, **params)
            got.append(compare(backend, lg, tok, lps, seed=seed, position=4, **params))
            assert (how == KF.NUC_W1).any()   # the pass finished rows itself
            hows.append(list(how))
        np.testing.assert_array_equal(got[1], got[0])
        np.testing.assert_array_equal(got[2], got[0])
        assert hows[2] == hows[0]   # (the same decisions, row by row, at the pass's own count)


@pytest.mark.parametrize("long", [False, True], ids=["exact", "fast-pass"])
def test_a_split_s_partial_first_quad_can_hold_the_winner(backend, shape, long):
    # The second split of a row starts inside a quad: thread 0 folds that quad's tokens by
    # themselves, before its other quads (the exact draw) or after the fast pass (long rows: the
    # late first quad). A spike there is the row's best score and its whole nucleus.
    if long:
        vocab = _random_vocab(backend, shape) if backend.name == "sim" or _SAN else 151939
    else:
        vocab = 8 * 16 + 1
    lo = -(-vocab // 2)
    assert lo % 4 in (1, 2)   # tokens lo and lo + 1 share the partial quad
    lg = np.zeros((2, vocab), np.float32)
    lg[0, lo] = 30.0
    lg[1, lo + 1] = 30.0
    seed = np.array([3, 4], np.uint64)
    tok, _, how = _call(backend, shape, lg, splits=2, seed=seed, position=1, temperature=1.0,
                        top_p=0.9)
    got = compare(backend, lg, tok, seed=seed, position=1, temperature=1.0, top_p=0.9)
    assert [int(t) for t in got] == [lo, lo + 1]
    assert list(how) == [KF.NUC_W1] * 2


def test_routing_takes_the_pass_for_host_top_p_rows_only(backend, shape, monkeypatch):
    plan = rs.Sampler(4, 40, "float32", _block=shape["block"], _splits=2).plan
    t = np.array([1.0, 0.7, 1.0, 0.0], np.float32)
    k = np.array([0, 0, 5, 0], np.int64)
    p = np.array([0.9, 0.5, 0.9, 0.5], np.float32)
    mp = np.array([0.0, 0.0, 0.0, 0.0], np.float32)
    # rows up to NUC_FINISH_VOCAB: the pass finishes every row, no histogram or select pass;
    # wider: they finish the rows it leaves, row-strided
    monkeypatch.setattr(router, "NUC_FINISH_VOCAB", 40)
    r = router.route(plan, router.Host(t, k, p, mp))
    assert r.nuc and r.draw and r.finish and not (r.hist or r.select or r.strided)
    monkeypatch.setattr(router, "NUC_FINISH_VOCAB", 39)
    r = router.route(plan, router.Host(t, k, p, mp))
    assert r.nuc and r.draw and r.hist and r.select and r.strided and not r.finish
    assert list(router.nuc_rows(plan, router.Host(t, k, p, mp))) == [True, True, False, False]
    # min_p or top_k on every top-p row, or a device array: no pass
    assert not router.route(plan, router.Host(t, k + 3, p, mp)).nuc
    assert not router.route(plan, router.Host(t, k, p, mp + 0.1)).nuc
    assert not router.route(plan, router.Host(None, k, p, mp)).nuc
    # a histogram-path row that is not top-p-only (top_p with min_p, top_k past the tile path)
    # or a min_p-only row: the pass, and the histogram and select passes at phase 1's splits
    t2 = t.copy()
    t2[3] = 1.0
    mp3 = mp.copy()
    mp3[3] = 0.1
    monkeypatch.setattr(router, "NUC_FINISH_VOCAB", 1 << 30)
    r = router.route(plan, router.Host(t2, k, p, mp3))
    assert r.nuc and r.hist and not (r.strided or r.finish)
    monkeypatch.setattr(router, "TILE_KMAX", 4)
    r = router.route(plan, router.Host(t, k, p, mp))
    assert r.nuc and r.hist and not (r.strided or r.finish)
    monkeypatch.setattr(router, "TILE_KMAX", KF.KCAP)
    mp2 = mp.copy()
    mp2[3], p2 = 0.1, p.copy()
    p2[3] = 1.0
    r = router.route(plan, router.Host(t2, k, p2, mp2))
    assert r.nuc and not (r.strided or r.finish)
    # one drawing split a row: the pass too (the rows it leaves go row-strided), unless the
    # timing switch asks for more
    one = rs.Sampler(4, 40, "float32", _block=shape["block"], _splits=1).plan
    assert router.route(one, router.Host(t, k, p, mp)).nuc
    monkeypatch.setattr(router, "_NUC_MIN_SPLITS", 2)
    assert not router.route(one, router.Host(t, k, p, mp)).nuc
    monkeypatch.setattr(router, "NUCLEUS", False)
    r = router.route(plan, router.Host(t, k, p, mp))
    assert not r.nuc and r.hist and r.select


def test_mass_bound_covers_the_float32_masses():
    # amass's premise, on the host in float32 as the kernel computes it: e * 2**40 within
    # NUC_REL relative plus half a unit of the reference's integer mass, over every distance
    # (past -29 the mass is 0 and e * 2**40 below half a unit).
    d = -np.concatenate([np.linspace(0, 40, 400001), np.geomspace(1e-8, 40, 20001)])
    kf = np.float32(3.25)
    fv = (np.float64(kf) + d).astype(np.float32)
    exact = np.floor(np.exp(fv.astype(np.float64) - np.float64(kf)) * 2.0**40 + 0.5)
    d32 = (fv - kf).astype(np.float32)
    e = np.exp(d32).astype(np.float32)
    e[fv == kf] = 1.0
    err = np.abs(e.astype(np.float64) * 2.0**40 - exact)
    assert (err <= KH.NUC_REL * exact + 0.5).all(), float(((err - 0.5) / exact).max())
    # numba-cuda's form: y = fma(d, L2E_HI, float32(d * L2E_LO)) in float32 (the fused product
    # exact in float64), then ex2.approx.ftz: 2 ulp (2**-22) of 2**y, either way; within
    # _AMASS_CUDA_REL, and within NUC_REL with that error doubled (flushed to 0 below 2**-126)
    t = (d32 * KH._L2E_LO).astype(np.float32)
    y = (d32.astype(np.float64) * np.float64(KH._L2E_HI) + t).astype(np.float32)
    assert abs(np.float64(KH._L2E_HI) + np.float64(KH._L2E_LO) - 1.0 / np.log(2.0)) < 2.0**-45
    for ulps, bound in ((2, KH._AMASS_CUDA_REL), (4, KH.NUC_REL)):
        for sign in (-1.0, 1.0):
            e = np.exp2(y.astype(np.float64)) * (1.0 + sign * ulps * 2.0**-23)
            e[y < -126] = 0.0
            e[fv == kf] = 1.0
            err = np.abs(e * 2.0**40 - exact)
            assert (err <= bound * exact + 0.5).all(), (ulps, sign,
                                                        float(((err - 0.5) / exact).max()))


def _listed_rows(plan, rows, vocab, form, position):
    """Rows for test_unsettled_threads_are_redrawn_by_the_block: in split 0 of each, two threads
    of phase 1's fast pass (thread t's whole quads: qa + t + m * block) hold three scores each
    whose approximations their thread cannot order (two within 2e-5, under the pass's bound of
    about 1.3e-4): scores 3 (p1), 2, 2 - d in thread t and 2.5 (q1), 1, 1 - d in thread u (the
    temperature form, whose thread orders its best against its third: 3, 3 - d, 3 - 2d and 2.5,
    2.5 - d, 2.5 - 2d); every other logit is -20 (scores below -4). p1 lies in thread t's first
    quad, q1 in thread u's last; p1's noise is above q1's and its thread's other two by more than
    1, so its logit is below theirs; top_p ends the nucleus just above p1's logit, so the token
    is q1, phase 1's second best. Returns (logits, seeds, top_p, the expected tokens)."""
    d = 2e-5
    bs, chunk = plan.block, plan.chunk_draw
    qb = min(chunk, vocab) // 4
    seed = np.arange(61, 61 + rows, dtype=np.uint64)
    lg = np.full((rows, vocab), -20.0, np.float32)
    top_p = np.empty(rows, np.float32)
    want = []
    for r in range(rows):
        g = philox.token_gumbel(seed[r], np.uint64(position),
                                np.arange(vocab, dtype=np.int64)).astype(np.float64)
        toks = [np.array([4 * c + w for c in range(t, qb, bs) for w in range(4)])
                for t in range(bs)]
        # p1 the best noise of thread t's first quad, q1 of thread u's last (a redraw skipping
        # either end of a thread's quads loses one), the two noises more than 1 apart (q1's
        # logit above p1's)
        p1 = [int(tk[np.argmax(g[tk[:4]])]) for tk in toks]
        q1 = [int(tk[-4:][np.argmax(g[tk[-4:]])]) for tk in toks]
        t, u = next((a, b) for a in range(1, bs) for b in range(1, bs)
                    if a != b and g[p1[a]] > g[q1[b]] + 1.0)

        pt, qt = ([f] + [int(i) for i in tk if g[i] < g[f] - 1.5][:2]
                  for tk, f in ((toks[t], p1[t]), (toks[u], q1[u])))
        ps, qs = ([3.0, 3.0 - d, 3.0 - 2 * d], [2.5, 2.5 - d, 2.5 - 2 * d]) \
            if form == "temperature" else ([3.0, 2.0, 2.0 - d], [2.5, 1.0, 1.0 - d])
        for i, s in zip(pt + qt, ps + qs):
            lg[r, i] = np.float32(s - g[i])
        if form == "temperature":
            want.append(pt[0])
            continue
        # the nucleus: every token whose logit is above p1's (q1 among them), by the mass
        # unit's arithmetic of the reference (halfway into the last one's mass)
        x = lg[r].astype(np.float64)
        m = np.floor(np.exp(x - x.max()) * 2.0**40 + 0.5)
        above = np.sort(m[x > x[pt[0]]])[::-1]
        assert lg[r, qt[0]] > lg[r, pt[0]]
        top_p[r] = np.float32((above.sum() - above[-1] / 2) / m.sum())
        want.append(qt[0])
    return lg, seed, top_p, want


@pytest.mark.parametrize("form", ["top2", "top4", "temperature"])
def test_unsettled_threads_are_redrawn_by_the_block(backend, shape, monkeypatch, form, fast3):
    # Phase 1's fast pass trusts a thread's order of its best scores only when its next score
    # is clear of them by the approximation's bound; a thread left unsettled has its quads drawn
    # again exactly, by the whole block, each quad by one thread (redraw). Two such threads a
    # row hold the row's best scores: the tokens are the reference's, and for top_p the nucleus
    # pass takes phase 1's second best itself (NUC_W2): a redraw that lost or misplaced those
    # quads would leave the row to the pass's exact finish, or draw another token. The TOP2
    # form (up to NUC_FINISH_TOP2_ROWS rows), the TOP4 form and the temperature-only variant.
    monkeypatch.setattr(router, "NUC_FINISH_TOP2_ROWS", 1 << 30 if form == "top2" else 0)
    rows = 3
    vocab = _random_vocab(backend, shape)
    # (on a GPU the plan's own split count at 3 x 151936 leaves splits too short for the fast
    # pass: 8 splits of 18992)
    splits = shape["splits"] or 8
    plan = rs.Sampler(rows, vocab, "float32", _block=shape["block"], _splits=splits).plan
    assert plan.chunk_draw >= 4 * KF.FAST_MIN_QUADS * plan.block   # the fast pass
    lg, seed, top_p, want = _listed_rows(plan, rows, vocab, form, position=3)
    params = dict(temperature=1.0) if form == "temperature" else dict(temperature=1.0,
                                                                        top_p=top_p)
    tok, _, how = _call(backend, shape, lg, splits=splits, seed=seed, position=3, **params)
    got = compare(backend, lg, tok, seed=seed, position=3, **params)
    assert [int(t) for t in got] == want
    assert not R.sample_with_margin(lg, seed=seed, position=3, **params)[3].any()
    if form != "temperature":
        assert list(how) == [KF.NUC_W2] * rows
    fast3()


def _best_and_ranks(lg, temp, seed, position, order="llama"):
    """Per row of all-finite logits: its four best tokens by Gumbel score (the reference's
    scores, ties to the lower index) and each one's rank in the filter order (the tokens before
    it by key desc, index asc: raw logit for llama, scaled for vllm)."""
    rows, vocab = lg.shape
    idx = np.arange(vocab, dtype=np.int64)
    best, ranks = [], []
    for r in range(rows):
        inv_t = np.float32(1) / np.float32(temp[r])
        s = (lg[r] * inv_t).astype(np.float32)
        g = (s + philox.token_gumbel(np.uint64(seed[r]), np.uint64(position), idx)).astype(
            np.float32)
        b = np.lexsort((idx, -g))[:4]
        rank = np.empty(vocab, np.int64)
        rank[R._order(lg[r] if order == "llama" else s)] = idx
        best.append([int(i) for i in b])
        ranks.append([int(rank[i]) for i in b])
    return best, ranks


def _top_k_for(target, rk):
    """A top_k that makes best score ``target`` (0 .. 3, 4: none of the four) the first of the
    four within the top k (ranks ``rk``), or None where no top_k does (or only k = 1, which the
    tile path keeps with TILE_KMAX = 1)."""
    if target == 0:
        k = rk[0] + 1
    else:
        k = min(rk[:target])
        if target < 4 and rk[target] >= k:
            return None
    return k if k >= 2 else None


@pytest.mark.parametrize("long,geometry,lp", [(False, None, False), (False, None, True),
                                              (True, None, False), (False, _STRIDED, False),
                                              (True, _STRIDED, True), (False, "top2", False),
                                              (True, "strided-top4", False)],
                         ids=["tokens", "logprobs", "fast-pass", "strided",
                              "fast-pass-strided-logprobs", "finish-top2", "strided-top4"])
def test_top_k_rows_take_the_first_best_within_top_k(backend, shape, long, geometry, lp,
                                                      monkeypatch):
    # Top-k-only rows past the tile path's limit (TILE_KMAX 1 here) take the nucleus pass's
    # routes: phase 1 draws them and the pass counts the tokens before each of its best scores
    # (exact integers), so the first with fewer than top_k before it is the token. top_k is set
    # per row so that the first in the top k is the best, the second, third or fourth (the
    # finishing route's TOP4 form, where phase 1 certifies them: _certified), or none of them
    # (the row goes on through the histogram path: row-strided, or the pass's own finish).
    monkeypatch.setattr(router, "TILE_KMAX", 1)
    top2 = geometry == "top2"
    if top2:   # (the rank form's finishing routes take the TOP4 form at every row count)
        monkeypatch.setattr(router, "NUC_RANK_TOP2_ROWS", 1 << 30)
        geometry = None
    four = geometry is None or geometry == "strided-top4"   # (phase 1's TOP4 form)
    # (the plain rank pass: over four best with "strided-top4", over two with "strided", its
    # default for a call of this many rows being four)
    monkeypatch.setattr(router, "NUC_RANK_PLAIN_TOP2_ROWS", 0 if four else 1 << 30)
    if geometry == "strided-top4":
        geometry = _STRIDED
    vocab = _random_vocab(backend, shape) if long else shape["vocab"]
    targets = [0, 1, 2, 3, 4, 1] * 2
    rows = len(targets)
    plan = rs.Sampler(rows, vocab, "float32", _block=shape["block"],
                      _splits=shape["splits"]).plan
    lg = np.empty((rows, vocab), np.float32)
    temp = np.ones(rows, np.float32)
    seed = np.empty(rows, np.uint64)
    top_k = np.empty(rows, np.int64)
    want = []
    s = 1000
    for r, target in enumerate(targets):
        while True:   # the next row (seed) for which a top_k reaches the target
            s += 1
            lg[r] = (np.random.default_rng(s).standard_normal(vocab) * 2).astype(np.float32)
            seed[r] = s
            best, ranks = _best_and_ranks(lg[r:r + 1], temp[r:r + 1], seed[r:r + 1], 5)
            k = _top_k_for(target, ranks[0])
            if k is not None and k < vocab:
                break
        top_k[r] = k
        # the best the route lists: two, or (TOP4) the third and fourth where certified
        listed = 2 if not four or top2 else 2 + sum(
            _certified(best[0][:i], vocab, plan.chunk_draw, plan.block) for i in (2, 3))
        first = next((i for i in range(listed) if ranks[0][i] < k), None)
        want.append(KF.NUC_NONE if first is None else
                    (KF.NUC_W1, KF.NUC_W2, KF.NUC_W3, KF.NUC_W4)[first])
    params = dict(temperature=temp, top_k=top_k)
    tok, lps, how = _call(backend, shape, lg, lp=lp, seed=seed, position=5, geometry=geometry,
                          **params)
    compare(backend, lg, tok, lps, seed=seed, position=5, **params)
    assert list(how) == want
    assert KF.NUC_W2 in want and KF.NUC_NONE in want
    if four and not top2:
        assert KF.NUC_W3 in want   # (the seeds reach it)


@pytest.mark.parametrize("geometry", [None, _STRIDED], ids=["finish", "strided"])
def test_left_top_k_rows_finish_from_phase_1s_tile_bound(backend, shape, geometry, monkeypatch):
    # Top-k-only rows none of whose best scores lies within the top k (the rank pass leaves
    # them) go on through the histogram code: the rank pass's finishing form in one block, or
    # the row-strided passes at splits_fin. Both get phase 1's tile count (its splits x tpt),
    # so a row with top_k within it gets its tile bound there: the histogram pass gathers the
    # candidates and the row's last block finishes the row from them, with no boundary bins and
    # no select pass. HS_NTOT, which only the boundary path writes, keeps the mark set before
    # the call (before, these launches had no tile bound: every such row took the boundary
    # path and the select pass, a third read of the row).
    from rocsample import graphs
    monkeypatch.setattr(router, "TILE_KMAX", 1)
    monkeypatch.setattr(router, "NUC_FINISH_VOCAB", 0 if geometry else 1 << 30)
    vocab = shape["vocab"]
    s = rs.Sampler(4, vocab, "float32", _block=shape["block"], _splits=shape["splits"])
    if geometry:
        _geometry(s.plan, **geometry)
    # (top_k within the tile count, and well within the candidates' room: the gather takes
    # every token at or above the bound, at least top_k of them)
    kmax = min(s.plan.splits_draw * s.plan.tpt, s.plan.cap // 8)
    lg = np.empty((4, vocab), np.float32)
    seed = np.empty(4, np.uint64)
    top_k = np.empty(4, np.int64)
    r, sd = 0, 2000
    while r < 4:   # rows whose four best lie outside such a top_k
        sd += 1
        lg[r] = (np.random.default_rng(sd).standard_normal(vocab) * 2).astype(np.float32)
        _best, ranks = _best_and_ranks(lg[r:r + 1], np.ones(1, np.float32),
                                       np.array([sd], np.uint64), 5)
        k = min(ranks[0][:4])
        if 2 <= k <= kmax:
            seed[r], top_k[r] = sd, k
            r += 1
    si_dev = scratch_view(backend, s, "si")
    si = host(backend, si_dev)
    si[:, KF.HS_NTOT] = -7
    graphs.copy_to_device(si_dev, si, s.stream)
    params = dict(temperature=1.0, top_k=top_k)
    tok = s(lg, check=False, seed=seed, position=5, **params)[0]
    compare(backend, lg, tok, None, seed=seed, position=5, **params)
    si = host(backend, si_dev)
    assert list(si[:, KF.HS_NUC]) == [KF.NUC_NONE] * 4
    assert list(si[:, KF.HS_NTOT]) == [-7] * 4


@pytest.mark.parametrize("order", ["llama", "vllm"])
def test_random_top_k_rows_match_the_reference_for_any_split_count(backend, shape, rng, order,
                                                                   monkeypatch):
    # Random rows (NaN, inf and far-below logits among them) with top_k from 2 to the row's
    # width: the tokens are the reference's and the same for every split count, the rank pass
    # finishing rows; beside them a chain row (top_k with top_p: the histogram and select
    # passes at phase 1's splits), or top-p-only rows (then the nucleus pass is theirs, and the
    # top-k rows go through the histogram path). (The fast pass's rows: the test above.)
    skip_order_on_wave64(backend, order)
    monkeypatch.setattr(router, "TILE_KMAX", 1)
    rows, vocab = (8, 150) if backend.name == "sim" or _SAN else (16, shape["vocab"])
    lg = (rng.normal(size=(rows, vocab)) * rng.uniform(0.5, 4, (rows, 1))).astype(np.float32)
    lg[0, 3] = np.nan
    lg[1, 10] = np.inf
    lg[2, 7] = -1e30
    seed = rng.integers(0, 2**63, rows)
    for beside in ("none", "chain", "top_p"):
        top_k = rng.integers(2, vocab, rows)
        top_p = np.ones(rows, np.float32)
        if beside == "chain":
            top_p[1] = 0.8             # row 1: top_k and top_p
        if beside == "top_p":
            top_p[3::4] = 0.9          # top-p-only rows
            top_k[3::4] = 0
        k_rows = [r for r in range(rows) if top_k[r] > 0 and top_p[r] == 1]
        params = dict(temperature=0.9, top_k=top_k, top_p=top_p, order=order)
        got, hows = [], []
        # (every split geometry for the top-k rows alone, one beside the others: the finishing
        # route, the row-strided one (the plain pass over two best), the finishing one at the
        # pass's own split count, and the plain pass over phase 1's four best
        # (NUC_RANK_PLAIN_TOP2_ROWS below the rows))
        geos = ((2, None, None, rows), (3, None, dict(fin=2, rows_fin=3), rows), (2, 5, None, rows),
                (3, None, dict(fin=2), 0))
        # (beside a chain row: phase 1's TOP4 form with a row the histogram path serves)
        for splits, nuc, geometry, few in geos if beside == "none" else geos[::3]:
            monkeypatch.setattr(router, "NUC_RANK_PLAIN_TOP2_ROWS", few)
            tok, lps, how = _call(backend, shape, lg, lp=True, splits=splits, seed=seed,
                                  position=4, geometry=geometry, nuc=nuc, **params)
            got.append(compare(backend, lg, tok, lps, seed=seed, position=4, **params))
            if beside == "top_p":   # (the pass is the top-p rows': it leaves the others)
                assert all(how[r] == KF.NUC_NONE for r in k_rows)
                assert any(how[r] == KF.NUC_W1 for r in range(3, rows, 4))
            else:
                assert any(how[r] == KF.NUC_W1 for r in k_rows)
            hows.append(list(how))
        for g in got[1:]:
            np.testing.assert_array_equal(g, got[0])
        if len(hows) > 2:
            assert hows[2] == hows[0]   # (the same decisions, row by row, at the pass's own count)


def test_routing_takes_the_rank_pass_for_host_top_k_rows(backend, shape, monkeypatch):
    # top-k-only rows past the tile path (TILE_KMAX 4 here): the rank pass's routes; beside a
    # top-p-only row, the nucleus pass for it and the histogram path for them; with top_p too,
    # or NUC_TOPK off, the histogram path; at or below the tile limit, the tile finalize.
    plan = rs.Sampler(4, 40, "float32", _block=shape["block"], _splits=2).plan
    monkeypatch.setattr(router, "TILE_KMAX", 4)
    monkeypatch.setattr(router, "NUC_FINISH_VOCAB", 1 << 30)
    t = np.ones(4, np.float32)
    mp = np.zeros(4, np.float32)
    one = np.ones(4, np.float32)
    k = np.array([10, 20, 5, 30], np.int64)
    h = router.Host(t, k, one, mp)
    assert list(router.rank_rows(plan, h)) == [True] * 4
    r = router.route(plan, h)
    assert r.nuc and r.rank and r.draw and r.finish and not (r.hist or r.select or r.tile)
    monkeypatch.setattr(router, "NUC_FINISH_VOCAB", 39)
    r = router.route(plan, h)
    assert r.nuc and r.rank and r.strided and r.hist and r.select and not r.finish
    assert r.top4   # (four best past one row: NUC_RANK_PLAIN_TOP2_ROWS)
    monkeypatch.setattr(router, "NUC_FINISH_VOCAB", 1 << 30)
    p = np.array([1.0, 1.0, 1.0, 0.9], np.float32)
    k2 = np.array([10, 20, 5, 0], np.int64)   # row 3: top-p-only
    r = router.route(plan, router.Host(t, k2, p, mp))
    assert r.nuc and not r.rank and r.hist and r.select and not (r.strided or r.finish)
    p = one.copy()
    p[0] = 0.9   # row 0 also top_p: the histogram path, the others the rank pass
    r = router.route(plan, router.Host(t, k, p, mp))
    assert r.rank and r.hist and r.select and not (r.strided or r.finish)
    assert list(router.rank_rows(plan, router.Host(t, k, p, mp))) == [False, True, True, True]
    r = router.route(plan, router.Host(t, np.array([3, 4, 10, 2]), one, mp))
    assert r.tile and r.nuc and r.rank and r.finish and not r.hist   # (only row 2 is the pass's)
    assert not router.route(plan, router.Host(t, k, one, mp + 0.1)).nuc
    monkeypatch.setattr(router, "NUC_TOPK", False)
    r = router.route(plan, h)
    assert not r.nuc and r.hist and r.select
