"""Regression: the sampling oracle flagged most rows as "on a rounding boundary".

What broke (measured on an H200, every device token matching the reference): the reference
excused top-p rows whose cumulative mass was within ``TOP_P_MARGIN = 1e-5`` of the kept mass
from the threshold. At vocab 151936 a single token's probability (~7e-6 on flat rows) is below
that, so 60-100% of top_p rows were flagged (test_large_shapes[64-151936]: 100%,
test_block_sizes: 50%) and the comparison said nothing. min_p == 1.0 rows were flagged too
(25% of the min_p test): the threshold ``l_max + log(1)`` is ``l_max`` exactly, so the maximum
sat "within margin" although that arithmetic is exact everywhere. The margins were that wide
because the device's top-p masses were ``float32(exp(x - x_max)) * 2**40`` truncated (each off
by up to ~2**16 units from the float64 reference) and the target a float64 product.

The fix made the arithmetic the same integers on both sides - ``q_i = floor(exp(float64(x_i) -
float64(x_max)) * 2**40 + 0.5)``, exact int64 sums, ``target = ceil(float64(p) * float64(Z))``,
min-p ``thr = float64(x_max) + log(float64(min_p))`` - and tightened the flags to the true
rounding uncertainty (a mass within a few float64 ulps of a half-integer; a key within a few
ulps of a min-p threshold with ``log(min_p) != 0``).
"""

from __future__ import annotations

import math

import numpy as np

import rocsample.sampling as rs
from rocsample.reference import sampling as R

# A two-token row whose top-p crossing lands within 2**15 units of the target: with the fixed
# point above, cum[0] = 2**40 >= target (only token 0 is kept); with the old float32 exp the
# second mass came out 28568 units larger, which pushed the target past 2**40 (both tokens
# kept), and the old 1e-5 margin excused the row instead of catching that.
_A = np.float32(-0.30000022)
_P = np.float32(0.57444257)


def test_crafted_crossing_is_exact_not_flagged():
    q, risk = R.mass_units(np.array([0.0, _A], np.float32), 0.0)
    z = int(q.sum())
    assert q[0] == 2**40 and not risk.any()
    assert R.topp_target(_P, z) <= 2**40                     # the fixed point keeps token 0 only
    q_old = int(np.float32(math.exp(np.float32(_A))) * np.float32(2.0**40))
    assert float(_P) * float(2**40 + q_old) > 2**40          # the old float32 masses kept two
    lg = np.tile(np.array([0.0, _A], np.float32), (32, 1))
    tok, _, _, near = R.sample_with_margin(lg, top_p=_P, seed=np.arange(32), position=3)
    assert not near.any() and (tok == 0).all()


def test_device_uses_the_integer_masses(backend):
    # On a device backend the kernels must land on the same side as the reference: token 0
    # for every seed. The old kernels drew token 1 for ~43% of seeds, so even the simulator's
    # 12 rows (llama order only: ~20 s per order there) catch them with probability 0.999.
    # On cpu this runs the reference itself.
    sim = backend.name == "sim"
    rows = 12 if sim else 64
    lg = np.tile(np.array([0.0, _A], np.float32), (rows, 1))
    seed = np.arange(rows) * 7919 + 1
    block = backend.warp_size() if sim else None
    for order in ("llama",) if sim else ("llama", "vllm"):
        tok = rs.sample(lg, top_p=_P, seed=seed, position=5, order=order, _block=block)
        tok = tok if isinstance(tok, np.ndarray) else np.asarray(backend.to_host(tok))
        assert (tok == 0).all(), (order, tok)


def test_flat_rows_at_large_vocab_not_flagged():
    rng = np.random.default_rng(7)
    lg = (rng.normal(size=(16, 151936)) * 3).astype(np.float32)
    for params in (dict(top_p=0.9), dict(top_p=0.99), dict(min_p=1.0), dict(min_p=0.05)):
        _, _, _, near = R.sample_with_margin(lg, seed=rng.integers(0, 2**62, 16), position=1,
                                             **params)
        assert not near.any(), (params, int(near.sum()))


def test_min_p_one_keeps_the_maxima_unflagged():
    lg = np.array([[1.0, 3.0, 3.0, -2.0]] * 20, np.float32)
    tok, _, _, near = R.sample_with_margin(lg, min_p=1.0, seed=np.arange(20), position=0)
    assert not near.any() and set(tok.tolist()) <= {1, 2}
