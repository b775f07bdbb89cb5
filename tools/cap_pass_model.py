"""How many tokens, and warp-steps, take phase 1's fast-pass branch, by the cap's form and by the
bound's.

A host model of one block's rounds (no GPU, no Philox: uniform noises from NumPy's generator):
256 threads, rounds of 8 tokens a thread (two quads), the block's bound published after each
round (all threads at once) as the largest best exact score (the temperature form) or second best
(TOP2 / TOP4 forms) less 2**-13, the bench's N(0, 3**2) logits at the given temperature. A token
takes the branch when its score and the noise's cap reach the bound; a warp-step (32 threads at
one token slot) does when some lane does (the whole warp then runs the branch).

Printed:
* the cap from d's exponent (before the thirty-ninth session) against d's bits
  (rocsample.kernels.philox's CAP_BASE / CAP_SLOPE), under the TOP2 bound;
* for both bounds, the kernel's today (the first round has none: every token takes the branch)
  against a **seeded first round**: before it, each thread takes a lower bound of its 8 tokens'
  exact scores (``seed_low``: no logarithm, from d's bits as the cap is) and the block the
  largest of the threads' best (temperature form) or second best (TOP2) of them, one barrier.
  Built in the fortieth session and taken out again: its cost (the first round's Philox words
  taken twice, the barrier) left 1.5-3% in the temperature form and a loss in the TOP2 forms
  (docs/PERF_NOTES.md, "Fortieth session").

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


def seed_low(u):
    """A lower bound of the noise -log(-log u), from d = 1 - u's bits, for d <= 1/2 (-inf above:
    those noises are below 0.37 and never bound a row).

    -log u <= d / (1 - d) (the series of -log(1 - d), each term d**k / k <= d**k), so the noise
    is at least -log d + log u, and log u >= -d / u >= -2d for u >= 1/2. log2 of d's mantissa m
    lies below its tangent at 1, (m - 1) / log 2, so -log d >= (127 - bits(d) * 2**-23) log 2 -
    (m - 1)(1 - log 2): the cap less (m - 1)(1 - log 2) < 0.307 and its 2**-10 of room. Another
    2**-9 is kept for float32 roundings of small scores (a kernel would scale it with |s|, as
    publish_bound does).
    """
    d = (np.float32(1.0) - u).astype(np.float32)
    cap = caps(u)["bits"]
    low = cap - 2.0**-10 - (1.0 - math.log(2.0)) - 2.0 * d.astype(np.float64) - 2.0**-9
    return np.where(d <= np.float32(0.5), low, -np.inf)


def check_seed_low():
    """seed_low against the exact noise of every one of the 2**23 uniforms: the least room."""
    k = np.arange(2**23, dtype=np.float64)
    u = (k * 2.0**-23 + 2.0**-24).astype(np.float32)
    g = -np.log(-np.log(u.astype(np.float64)))
    low = seed_low(u)
    room = (g - low)[np.isfinite(low)]
    assert room.min() > 0, "seed_low above a noise"
    return float(room.min())


def main(vocab=151936, splits=8, temperature=0.8, blocks=8, bs=256):
    print(f"seed_low lies at least {check_seed_low():.3f} below every uniform's noise (d <= 1/2)")
    rng = np.random.default_rng(1)
    chunk = vocab // splits
    rounds = chunk // (bs * 8)
    # token order: round, thread, slot (two quads of four a thread a round, quads bs apart)
    idx = np.arange(rounds * bs * 8).reshape(rounds, 2, bs, 4).transpose(0, 2, 1, 3)
    idx = idx.reshape(rounds, bs, 8)
    cases = [("TOP2", "exponent", False), ("TOP2", "bits", False), ("TOP2", "bits", True),
             ("best", "bits", False), ("best", "bits", True)]
    tally = {c: np.zeros(3) for c in cases}
    for _ in range(blocks):
        s = rng.standard_normal(chunk).astype(np.float32) * 3 / temperature
        k = rng.integers(0, 2**23, chunk)
        u = (k * 2.0**-23 + 2.0**-24).astype(np.float32)
        g = -np.log(-np.log(u.astype(np.float64)))
        cs = caps(u)
        low = seed_low(u)
        assert (low <= g).all(), "seed_low above a noise"
        for case in cases:
            form, cform, seeded = case
            cap = cs[cform]
            t = tally[case]
            lb = -np.inf
            if seeded:   # the first round's tokens by their lower bounds, before it
                first = np.sort(s[idx[0]] + low[idx[0]], axis=1)
                lb = float(first[:, -2 if form == "TOP2" else -1].max())
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
                lb = max(lb, float(((second if form == "TOP2" else best) - 2.0**-13).max()))
    print(f"vocab {vocab}, {splits} splits ({rounds} rounds a thread), temperature {temperature}")
    for (form, cform, seeded), (p, n, w) in tally.items():
        what = "seeded first round" if seeded else "no bound in the first round"
        print(f"{form} bound, cap from d's {cform}, {what}: tokens passing {p / n:.3%}, "
              f"warp-steps with a passing lane {w / n:.1%}")


if __name__ == "__main__":
    a = sys.argv[1:]
    main(*(f(x) for f, x in zip((int, int, float, int), a)))
