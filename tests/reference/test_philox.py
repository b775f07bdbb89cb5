"""Known answers for Philox4x32-10 (SPEC §2) and the uniform / Gumbel maps."""

import numpy as np
import pytest

from rocsample.reference import philox

KNOWN = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("ctr,key,want", KNOWN)
def test_known_answers(ctr, key, want):
    got = philox.philox4x32_10(*ctr, *key)
    assert tuple(int(w) for w in got) == want


def test_vectorised_matches_scalar():
    rng = np.random.default_rng(1)
    c = rng.integers(0, 2**32, size=(4, 50), dtype=np.uint64).astype(np.uint32)
    k = rng.integers(0, 2**32, size=(2, 50), dtype=np.uint64).astype(np.uint32)
    vec = philox.philox4x32_10(*c, *k)
    for j in range(50):
        one = philox.philox4x32_10(*(c[:, j]), *(k[:, j]))
        assert [int(w[j]) for w in vec] == [int(w) for w in one]


def test_uniform_open_interval_and_gumbel_finite():
    x = np.array([0, 1, 511, 512, 0xFFFFFFFF], dtype=np.uint32)
    u = philox.uniform(x)
    assert u.dtype == np.float32
    # The extremes are half a step inside (0, 1), so both logs stay finite.
    assert u[0] == np.float32(2.0 ** -24) and u[-1] == np.float32(1 - 2.0 ** -24)
    g = philox.gumbel(u)
    assert g.dtype == np.float32 and np.isfinite(g).all()


def test_token_gumbel_counter_layout():
    # SPEC §2: token i is word i mod 4 of the call at counter (i div 4, 0, pos low, pos high).
    seed = 0x0123456789ABCDEF
    pos = 0xFEDCBA9876543210
    idx = np.arange(13)
    g = philox.token_gumbel(seed, pos, idx)
    words = philox.philox4x32_10(idx // 4, 0, pos & 0xFFFFFFFF, pos >> 32,
                                 seed & 0xFFFFFFFF, seed >> 32)
    want = np.array([words[i % 4][i] for i in idx], np.uint32)
    np.testing.assert_array_equal(philox.token_word(seed, pos, idx), want)
    np.testing.assert_array_equal(g, philox.gumbel(philox.uniform(want)))


def test_one_call_serves_four_tokens():
    # Tokens 0..3 at (seed 0, position 0) are the first known answer's four words, in order.
    w = philox.token_word(0, 0, np.arange(8))
    assert [int(v) for v in w[:4]] == list(KNOWN[0][2])
    # and token 4 starts the next counter
    nxt = philox.philox4x32_10(1, 0, 0, 0, 0, 0)
    assert [int(v) for v in w[4:]] == [int(v) for v in nxt]


def test_token_word_broadcasts_per_row_seeds_and_positions():
    seeds = np.array([1, 2**63 + 5, 7], np.uint64)
    pos = np.array([0, 3, 2**40], np.uint64)
    idx = np.array([5, 6, 2**32 - 1])
    got = philox.token_word(seeds, pos, idx)
    for r in range(3):
        assert got[r] == philox.token_word(int(seeds[r]), int(pos[r]), int(idx[r]))


def test_gumbel_distribution_sane():
    g = philox.token_gumbel(7, 3, np.arange(200_000))
    # Gumbel(0, 1): mean = Euler-Mascheroni constant, variance = pi^2 / 6.
    assert abs(g.mean() - 0.5772) < 0.01
    assert abs(g.var() - np.pi ** 2 / 6) < 0.03
