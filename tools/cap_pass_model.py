"""How many tokens, and warp-steps, take phase 1's fast-pass branch under each form of the cap.

A host model of one block's rounds (no GPU, no Philox: uniform noises from NumPy's generator):
256 threads, rounds of 8 tokens a thread (two quads), the block's bound published after each
round as the largest second-best exact score less 2**-13 (the TOP2 bound, all threads at
once), the bench's N(0, 3**2) logits at the given temperature. Prints, for the cap from d's
exponent (before the thirty-ninth session) and from d's bits (rocsample.kernels.philox's
CAP_BASE / CAP_SLOPE), the share of tokens whose score and cap reach the bound and the share
of warp-steps (32 threads at one token slot) in which some lane does (the whole warp then runs
the branch). docs/PERF_NOTES.md, "Thirty-ninth session".

Usage: python tools/cap_pass_model.py [VOCAB [SPLITS [TEMPERATURE [BLOCKS]]]]
"""

from __future__ import annotations

import math
import sys

import numpy as np

from rocsample.kernels import philox as KP


def caps(u):
    d = (np.float32(1.0) - u).astype(np.float32)
    bits = d.view(np.uint32)
    old = 127 * math.log(2.0) + 2.0**-10 - (bits >> 23).astype(np.float64) * math.log(2.0)
    new = np.float64(KP.CAP_BASE) - bits.astype(np.float32).astype(np.float64) * np.float64(
        KP.CAP_SLOPE)
    return {"exponent": old, "bits": new}


def main(vocab=151936, splits=8, temperature=0.8, blocks=8, bs=256):
    rng = np.random.default_rng(1)
    chunk = vocab // splits
    rounds = chunk // (bs * 8)
    # token order: round, thread, slot (two quads of four a thread a round, quads bs apart)
    idx = np.arange(rounds * bs * 8).reshape(rounds, 2, bs, 4).transpose(0, 2, 1, 3)
    idx = idx.reshape(rounds, bs, 8)
    tally = {}
    for _ in range(blocks):
        s = rng.standard_normal(chunk).astype(np.float32) * 3 / temperature
        k = rng.integers(0, 2**23, chunk)
        u = (k * 2.0**-23 + 2.0**-24).astype(np.float32)
        g = -np.log(-np.log(u.astype(np.float64)))
        for name, cap in caps(u).items():
            t = tally.setdefault(name, np.zeros(3))
            lb = -np.inf
            best = np.full(bs, -np.inf)
            second = np.full(bs, -np.inf)
            for r in range(rounds):
                ii = idx[r]
                passing = s[ii] + cap[ii] >= lb
                t += (passing.sum(), passing.size,
                      passing.reshape(bs // 32, 32, 8).any(axis=1).sum() * 32)
                a = np.where(passing, s[ii] + g[ii], -np.inf)
                for w in range(8):
                    nb = np.maximum(best, a[:, w])
                    second = np.maximum(second, np.minimum(best, a[:, w]))
                    best = nb
                lb = max(lb, float((second - 2.0**-13).max()))
    print(f"vocab {vocab}, {splits} splits ({rounds} rounds a thread), temperature {temperature}")
    for name, (p, n, w) in tally.items():
        print(f"cap from d's {name}: tokens passing {p / n:.3%}, warp-steps with a passing lane "
              f"{w / n:.1%}")


if __name__ == "__main__":
    a = sys.argv[1:]
    main(*(f(x) for f, x in zip((int, int, float, int), a)))
