"""The device Philox draw (``rocsample.kernels.philox``) against the reference, word for word.

SPEC §2: token i's word is ``x[i mod 4]`` of Philox4x32-10 at counter ``(i div 4, 0, position
low, position high)``, key ``(seed low, seed high)``. ``token_word`` must give the reference's
32-bit words exactly; ``quad_gumbel(c)`` the noises of tokens 4c..4c+3 from one call, equal to
``token_gumbel`` of each token (the fast loops use the first, the filters the second).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from rocsample.kernels import philox as KP
from rocsample.reference import philox


def build(cuda):
    ph = KP.build(cuda)
    token_word = ph.token_word
    token_gumbel = ph.token_gumbel
    quad_gumbel = ph.quad_gumbel

    @cuda.jit
    def _philox_probe_kernel(seed, pos, base, words, g1, g4):
        t = cuda.grid(1)
        if t < words.shape[0]:
            i = np.int64(base) + np.int64(t)
            words[t] = np.uint32(token_word(seed[0], pos[0], i))
            g1[t] = token_gumbel(seed[0], pos[0], i)
        if t * 4 < g4.shape[0]:
            c = (np.uint64(base) >> np.uint64(2)) + np.uint64(t)
            a, b, d, e = quad_gumbel(seed[0], pos[0], c)
            g4[4 * t] = a
            g4[4 * t + 1] = b
            g4[4 * t + 2] = d
            g4[4 * t + 3] = e

    gumbel = ph.gumbel
    gumbel_fast = ph.gumbel_fast
    uniform = ph.uniform
    cap_key = ph.gumbel_cap_key
    uniform_comp = ph.uniform_comp

    @cuda.jit
    def _gumbel_fast_probe_kernel(ms, err, room):
        # err[t] = |gumbel_fast(x) - gumbel(uniform(x))| for the word x = ms[t] << 9 (the 23
        # bits a uniform keeps); room[t] = the noise's cap less the larger of the two noises
        # (NaN where uniform_comp(x) is not 1 - uniform(x) exactly)
        t = cuda.grid(1)
        if t < ms.shape[0]:
            x = np.uint64(ms[t]) << np.uint64(9)
            u = uniform(x)
            g = gumbel(u)
            f = gumbel_fast(x)
            err[t] = abs(f - g)
            d = uniform_comp(x)
            cap = KP.CAP_BASE - cap_key(d) * KP.CAP_SLOPE
            room[t] = cap - max(f, g)
            if d != np.float32(1.0) - u or np.float32(1.0) - d != u:
                room[t] = np.float32(np.nan)

    from types import SimpleNamespace

    return SimpleNamespace(_philox_probe_kernel=_philox_probe_kernel,
                           _gumbel_fast_probe_kernel=_gumbel_fast_probe_kernel)


@pytest.mark.parametrize("seed,pos,base", [
    (0, 0, 0),                                           # the first KAT: words 0..3
    (0x0123456789ABCDEF, 0xFEDCBA9876543210, 0),
    (2**64 - 1, 2**64 - 1, 2**32 - 64),                  # the last counters of a row index
    (12345, 7, 151936 - 40),
])
def test_device_words_and_noise_equal_the_reference(backend, seed, pos, base):
    if not backend.is_device:
        pytest.skip("device kernels (the reference is the cpu backend)")
    n = 64
    kern = backend.kernels(build)._philox_probe_kernel
    st = backend.stream(None)
    sd = backend.as_array(np.array([seed], np.uint64), "seed", st)
    ps = backend.as_array(np.array([pos], np.uint64), "position", st)
    words = backend.empty((n,), np.uint32, st)
    g1 = backend.empty((n,), np.float32, st)
    g4 = backend.empty((n,), np.float32, st)
    backend.launch(kern, 1, 64, st, sd, ps, base, words, g1, g4)
    idx = base + np.arange(n, dtype=np.int64)
    want_w = philox.token_word(np.uint64(seed), np.uint64(pos), idx)
    np.testing.assert_array_equal(np.asarray(backend.to_host(words, st)), want_w)
    want_g = philox.token_gumbel(np.uint64(seed), np.uint64(pos), idx)
    got1 = np.asarray(backend.to_host(g1, st))
    got4 = np.asarray(backend.to_host(g4, st))
    np.testing.assert_array_equal(got4, got1)          # one call per four tokens: same noise
    # the simulator's log is the correctly rounded one (the reference's); device logf is within
    # an ulp, which moves G by a few ulps
    if backend.name == "sim":
        np.testing.assert_array_equal(got1, want_g)
    else:
        np.testing.assert_allclose(got1, want_g, rtol=2.0**-20, atol=2.0**-20)
    if seed == 0 and pos == 0 and base == 0:
        assert [int(w) for w in want_w[:4]] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]


def test_fast_gumbel_is_within_its_bound_for_every_uniform(backend):
    # The drawing loops pick their candidates by gumbel_fast (the hardware's approximate log2 on
    # numba-cuda) and trust it to GUMBEL_FAST_ERR. On a GPU: every one of the 2**23 uniforms
    # (each 32-bit word keeps 23 bits), with half the bound to spare; on sim (exact logs) the
    # ends, the series' edge and a spread between them.
    if not backend.is_device:
        pytest.skip("device kernels (the reference is the cpu backend)")
    if backend.name == "sim":
        edge = 2**23 - 2**19   # d = 1 - u crosses 1/16 here
        ms = np.unique(np.concatenate([np.arange(64), 2**23 - 1 - np.arange(64),
                                       edge - 32 + np.arange(64),
                                       np.linspace(0, 2**23 - 1, 512).astype(np.int64)]))
    else:
        ms = np.arange(2**23)
    ms = ms.astype(np.uint32)
    kern = backend.kernels(build)._gumbel_fast_probe_kernel
    st = backend.stream(None)
    dm = backend.as_array(ms, "ms", st)
    err = backend.empty((ms.size,), np.float32, st)
    room = backend.empty((ms.size,), np.float32, st)
    backend.launch(kern, -(-ms.size // 256), 256, st, dm, err, room)
    e = np.asarray(backend.to_host(err, st))
    worst = int(np.argmax(e))
    assert float(e[worst]) <= KP.GUMBEL_FAST_ERR / 2, (
        f"|gumbel_fast - gumbel| = {float(e[worst]):.3g} at uniform bits {int(ms[worst])}")
    # the fast pass skips a token whose cap leaves it below a bound: the cap must lie above
    # both noises the device computes, here too with half its room to spare
    r = np.asarray(backend.to_host(room, st))
    assert not np.isnan(r).any(), "uniform_comp(x) is not 1 - uniform(x)"
    least = int(np.argmin(r))
    assert float(r[least]) >= 2.0 ** -11, (
        f"cap - noise = {float(r[least]):.3g} at uniform bits {int(ms[least])}")


@functools.cache   # (the two host tests below share it: about 2 s of float64 logs)
def _cap_and_noise():
    # every uniform's exact noise (float64) and its cap as reals from the float32 operands, with
    # the product key * CAP_SLOPE exact (an FFMA) and rounded to float32 (the simulator's, and
    # any compiler's that does not contract it)
    k = np.arange(2**23, dtype=np.float64)
    u = (k * 2.0**-23 + 2.0**-24).astype(np.float32)
    d = np.float32(1.0) - u
    noise = -np.log(-np.log(u.astype(np.float64)))
    key = d.view(np.uint32).astype(np.float32)
    base = np.float64(KP.CAP_BASE)
    fused = base - key.astype(np.float64) * np.float64(KP.CAP_SLOPE)
    rounded = base - (key * KP.CAP_SLOPE).astype(np.float64)
    return noise, fused, rounded


def test_the_noise_cap_lies_above_every_uniforms_noise():
    # (host arithmetic: the cap's bound for all 2**23 uniforms; room over the exact noise for the
    # device logs' few ulps and gumbel_fast's GUMBEL_FAST_ERR)
    noise, fused, rounded = _cap_and_noise()
    for cap in (fused, rounded):
        least = int(np.argmin(cap - noise))
        assert cap[least] - noise[least] >= 2.0 ** -11 + KP.GUMBEL_FAST_ERR, least


def test_the_noise_cap_is_tight_where_noises_lift_tokens():
    # the fast pass sends a token to its branch when its score and cap reach the bound: the
    # looser the cap over the large noises, the more tokens (and warps) take it. From d's bits
    # the cap is 0.07 above the noise on average where the noise exceeds 2; from d's exponent
    # alone (before the thirty-ninth session) it was 0.42.
    noise, fused, _ = _cap_and_noise()
    big = noise > 2.0
    assert float(np.mean(fused[big] - noise[big])) < 0.1


def test_uniform_comp_is_one_less_the_uniform_for_every_word():
    # (host arithmetic of both of uniform_comp's forms, every step exact: the FFMA of numba-cuda
    # and the float32 steps elsewhere, against 1 - uniform for all 2**23 uniforms)
    k = np.arange(2**23, dtype=np.float32)
    u = k * np.float32(2.0**-23) + np.float32(2.0**-24)
    want = np.float32(1.0) - u
    fma = k.astype(np.float64) * -(2.0**-23) + (1.0 - 2.0**-24)
    np.testing.assert_array_equal(fma, want.astype(np.float64))
    steps = (k * np.float32(-2.0) + np.float32(2.0**24 - 1.0)) * np.float32(2.0**-24)
    np.testing.assert_array_equal(steps, want)
    np.testing.assert_array_equal(np.float32(1.0) - want, u)
