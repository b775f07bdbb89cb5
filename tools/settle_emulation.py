"""A NumPy emulation of phase 1's fast draw at 256 x 32000 (one split of 256 threads a row, 125
tokens a thread, rounds of two quads), to ask whether the TOP2 form's settle test (the third
approximate score clear of the second, not the first) sends more threads to the exact redraw
than the temperature variant's, which would make a block wait for one straggling thread.

Per token: logits N(0, 3^2), the noise g = -log(-log u), its approximation within
GUMBEL_FAST_ERR, its cap (-log2 d rounded up, times ln 2) and the skip test ``s + cap < lb``
against the block's bound, raised after every round from each thread's first (temperature) or
second (TOP2) best less twice the error. Prints the share of tokens past the skip, of threads
left unsettled and of blocks holding one. The twenty-seventh session's runs (T from 0.5 to 2):
6.4% of tokens past the skip in both forms (6.7% TOP2), nearly all of them the first round's,
before any bound; unsettled threads in no block (temperature) and in 0.4-2.7% of blocks (TOP2).
That session read those as too few to matter; but a launch of 256 such blocks then holds one
in nearly every call (the last figure printed: 1 - (1 - share)^256), and it ends with that
block, whose thread drew its whole share again alone: 31 quads at about 410 SASS instructions
each. Since the twenty-ninth session the block draws such a thread's quads together
(``sampling_fast`` ``redraw``; docs/PERF_NOTES.md, "Twenty-ninth session").

    python tools/settle_emulation.py
"""
import numpy as np

rng = np.random.default_rng(1)
B, TH, NT, QU = 256, 256, 125, 2          # blocks (rows), threads, tokens a thread, quads a round
EPS = 2.0**-14
def eps(a): return EPS + np.abs(a) * 2.0**-20
for T in (0.8, 1.0):
    for mode in ("temp", "top2"):
        v = rng.standard_normal((B, TH, NT)).astype(np.float32) * 3
        u = rng.random((B, TH, NT))
        d = 1 - u
        g = -np.log(-np.log(u))
        cap = (np.floor(-np.log2(d)) + 1) * np.log(2) + 1e-6
        s = v / T
        a_all = s + g + rng.uniform(-EPS, EPS, g.shape)
        a = np.full((B, TH, 3), -np.inf)
        lb = np.full(B, -np.inf)
        passed = 0
        per = 4 * QU
        for r0 in range(0, NT, per):
            sl = slice(r0, min(NT, r0 + per))
            ok = ~(s[:, :, sl] + cap[:, :, sl] < lb[:, None, None])
            passed += ok.sum()
            cand = np.where(ok, a_all[:, :, sl], -np.inf)
            allv = np.concatenate([a, cand], axis=2)
            a = -np.sort(-allv, axis=2)[:, :, :3]
            key = a[:, :, 1] if mode == "top2" else a[:, :, 0]
            pub = key - 2 * eps(key)
            lb = np.maximum(lb, pub.max(axis=1))
        a1, a2, a3 = a[..., 0], a[..., 1], a[..., 2]
        top = a2 if mode == "top2" else a1
        settled = (a3 == -np.inf) | (a3 + eps(a3) < top - eps(top))
        uns = ~settled
        share = uns.any(axis=1).mean()
        print(f"T={T} {mode}: tokens past the skip {passed / (B*TH*NT):.3%}, unsettled threads "
              f"{uns.mean():.4%}, blocks with one {share:.1%}, launches of {B} blocks with one "
              f"{1 - (1 - share) ** B:.0%}")
