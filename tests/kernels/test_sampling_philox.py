"""The device Philox draw (``rocsample.kernels.philox``) against the reference, word for word.

SPEC §2: token i's word is ``x[i mod 4]`` of Philox4x32-10 at counter ``(i div 4, 0, position
low, position high)``, key ``(seed low, seed high)``. ``token_word`` must give the reference's
32-bit words exactly; ``quad_gumbel(c)`` the noises of tokens 4c..4c+3 from one call, equal to
``token_gumbel`` of each token (the fast loops use the first, the filters the second).
"""

from __future__ import annotations

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

    @cuda.jit
    def _gumbel_fast_probe_kernel(ms, err):
        # err[t] = |gumbel_fast(x) - gumbel(uniform(x))| for the word x = ms[t] << 9 (the 23
        # bits a uniform keeps)
        t = cuda.grid(1)
        if t < ms.shape[0]:
            x = np.uint64(ms[t]) << np.uint64(9)
            err[t] = abs(gumbel_fast(x) - gumbel(uniform(x)))

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
    backend.launch(kern, -(-ms.size // 256), 256, st, dm, err)
    e = np.asarray(backend.to_host(err, st))
    worst = int(np.argmax(e))
    assert float(e[worst]) <= KP.GUMBEL_FAST_ERR / 2, (
        f"|gumbel_fast - gumbel| = {float(e[worst]):.3g} at uniform bits {int(ms[worst])}")
