"""A row whose phase-1 winner's mass lies within the nucleus pass's bounds of the top-p target
(bench/test_sampling.py's 256 x 32000 inputs, row 255: 0.950016 of the row's mass before W1
against 0.95) was finished by the finishing form's last block alone, the histogram and select
passes over the whole row: the H200 bench read 189.7 us for the call against 61.5 for inputs
without such a row. The finishing form now sums the reference's integer masses themselves there
(one float64 exponential a token) and takes the first of its best inside the nucleus
(NUC_EXACT); since the thirtieth session its bounds are four times tighter (NUC_REL 2**-18), so
that row is decided by them (NUC_W2). The rows on their own, in the launch geometry of 256 x
32000 (one split of 256 threads, phase 1's TOP4 form)."""

import numpy as np
import pytest

import rocsample.sampling as rs
from bench.test_sampling import _host_logits
from rocsample import sampling_router as router
from rocsample.kernels import sampling_fast as KF
from rocsample.reference import sampling as ref
from tests.kernels.test_sampling import compare, host, scratch_view


def _bench_row(backend, monkeypatch, lg, top_p):
    """The bench's row 255 (lg, one row) through the finishing form at top_p: (token, the pass's
    decision, W1, W2)."""
    monkeypatch.setattr(router, "NUCLEUS", True)
    monkeypatch.setattr(router, "NUC_FINISH_VOCAB", 32768)
    monkeypatch.setattr(router, "NUC_FINISH_TOP2_ROWS", 0)   # the TOP4 form, as at 256 rows
    monkeypatch.setattr(rs, "_PLANS", {})
    seed, pos = np.array([255], np.int64), np.zeros(1, np.int64)
    s = rs.Sampler(1, 32000, "float32", _block=256, _splits=1)
    tok, _ = s(lg, seed=seed, position=pos, check=False, top_p=top_p, temperature=1.0)
    got = compare(backend, lg, tok, seed=seed, position=pos, top_p=top_p, temperature=1.0)
    si = host(backend, scratch_view(backend, s, "si"))
    return int(got[0]), si[0, KF.HS_NUC], si[0, KF.HS_W1], si[0, KF.HS_W2]


def test_straddling_row_is_decided_by_its_exact_masses(backend, monkeypatch):
    # top_p 0.95: 1.6e-5 of the row's mass between the target and the mass before W1, outside
    # the bounds since NUC_REL 2**-18 (inside them at 2**-16): W1 outside, W2 inside
    if not backend.is_device:
        pytest.skip("cpu-only: the nucleus pass is a device launch plan (cpu runs the reference)")
    lg = np.ascontiguousarray(_host_logits(256, 32000)[255:256])
    tok, how, w1, w2 = _bench_row(backend, monkeypatch, lg, 0.95)
    assert (how, tok) == (KF.NUC_W2, w2)
    # top_p at the mass before W1 itself (the float32 nearest): the target within a few units
    # of it, inside any bound, so the exact pass decides (W1 inside where the target is above
    # the mass before it, else W2)
    x = lg[0].astype(np.float64)
    m, _ = ref.mass_units(x, x.max())
    before = int(m[(x > x[w1]) | ((x == x[w1]) & (np.arange(x.size) < w1))].sum())
    p = np.float32(before / int(m.sum()))
    tok, how, w1b, _ = _bench_row(backend, monkeypatch, lg, p)
    assert w1b == w1 and how == KF.NUC_EXACT
    assert tok == (w1 if ref.topp_target(p, int(m.sum())) > before else w2)


def test_a_mass_before_equal_to_the_target_is_outside_the_nucleus(backend, monkeypatch):
    # Constant rows of 128 logits with top_p = b / 128, b the best score's index: the target is
    # exactly b units (every mass is one unit, 2**40, and b / 128 is exact in float32), the mass
    # before W1 equals it, so W1 is outside the nucleus (positions 0 .. b - 1) and the exact
    # pass takes W2 where W2's index is below b. A '<=' in the exact test would take W1.
    if not backend.is_device:
        pytest.skip("cpu-only: the nucleus pass is a device launch plan (cpu runs the reference)")
    from rocsample.reference import philox

    monkeypatch.setattr(router, "NUCLEUS", True)
    monkeypatch.setattr(router, "NUC_FINISH_VOCAB", 32768)
    monkeypatch.setattr(rs, "_PLANS", {})
    vocab, idx = 128, np.arange(128, dtype=np.int64)
    seeds, best = [], []
    for sd in range(1, 400):
        w1, w2 = np.argsort(-philox.token_gumbel(np.uint64(sd), np.uint64(5), idx),
                            kind="stable")[:2]
        if w2 < w1 < vocab - 2 and len(seeds) < 4:
            seeds.append(sd)
            best.append(int(w1))
    seeds = np.array(seeds, np.int64)
    lg = np.ones((seeds.size, vocab), np.float32)
    p = np.array([b / vocab for b in best], np.float32)
    s = rs.Sampler(seeds.size, vocab, "float32", _splits=2)
    tok, _ = s(lg, seed=seeds, position=5, check=False, top_p=p, temperature=1.0)
    got = compare(backend, lg, tok, seed=seeds, position=5, top_p=p, temperature=1.0)
    si = host(backend, scratch_view(backend, s, "si"))
    assert list(si[:, KF.HS_NUC]) == [KF.NUC_EXACT] * seeds.size
    assert list(got) == list(si[:, KF.HS_W2])
