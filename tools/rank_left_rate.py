"""How often a top-k-only row's best Gumbel scores all fall outside its top k (no GPU needed).

The rank pass (``sampling_hist._sample_rank_kernel`` and its finishing form) takes the first of
phase 1's best scores W1 .. W4 within the top k; a row where none is goes on through the
histogram path (the finishing form: one block over the row). This estimates, on the benchmark's
logits (N(0, 3**2), temperature 1; bench/test_sampling.py), the share of rows whose first one,
first two and first four best scores are all outside the top k: the rows the TOP2 and TOP4
forms leave (phase 1 certifies a third and fourth best in most rows; this counts them all).

Usage: python tools/rank_left_rate.py [--rows R] [--vocab N ...] [--k K ...] [--seed S]
       python tools/rank_left_rate.py --bench RxN [RxN ...] [--k K]
--bench counts the rows left on bench/test_sampling.py's own inputs at those shapes (its logits,
seeds 0 .. R-1, position 0, temperature 1, the reference's Philox noise): the rows a graph-timed
top_k1000 benchmark leaves to the histogram passes with two best and with four.
"""

from __future__ import annotations

import argparse

import numpy as np


def left_rates(vocab: int, ks, rows: int, seed: int) -> dict:
    """{k: (share with W1 outside, W1 and W2, W1 .. W4)} over ``rows`` random rows."""
    rng = np.random.default_rng(seed)
    out = {k: np.zeros(3) for k in ks}
    done = 0
    while done < rows:
        r = min(64, rows - done)
        x = rng.standard_normal((r, vocab), dtype=np.float32) * 3
        u = rng.random((r, vocab))
        g = x - np.log(-np.log(np.maximum(u, 1e-300)))
        best = np.argsort(-g, axis=1)[:, :4]
        rank = np.empty((r, vocab), np.int64)
        np.put_along_axis(rank, np.argsort(-x, axis=1, kind="stable"),
                          np.arange(vocab)[None, :], 1)
        rb = np.take_along_axis(rank, best, 1)
        for k in ks:
            o = rb >= k
            out[k] += [o[:, 0].sum(), o[:, :2].all(1).sum(), o.all(1).sum()]
        done += r
    return {k: tuple(v / rows) for k, v in out.items()}


def bench_left(rows: int, vocab: int, k: int) -> tuple:
    """(rows whose W1 and W2, and whose W1 .. W4, all lie outside the top k) on the benchmark's
    inputs at this shape (llama order: the filter order is the logits', index ascending)."""
    from bench.test_sampling import _host_logits
    from rocsample.reference import philox

    x = _host_logits(rows, vocab)
    idx = np.arange(vocab, dtype=np.int64)
    left2 = left4 = 0
    for r in range(rows):
        g = (x[r] + philox.token_gumbel(np.uint64(r), np.uint64(0), idx)).astype(np.float32)
        best = np.lexsort((idx, -g))[:4]
        rank = np.empty(vocab, np.int64)
        rank[np.lexsort((idx, -x[r]))] = idx
        o = rank[best] >= k
        left2 += bool(o[:2].all())
        left4 += bool(o.all())
    return left2, left4


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--vocab", type=int, nargs="+", default=[32000, 151936, 262144])
    ap.add_argument("--k", type=int, nargs="+", help="default 300 1000 5000; --bench: 1000")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bench", nargs="+", metavar="RxN")
    a = ap.parse_args()
    if a.bench:
        k = a.k[0] if a.k else 1000
        print(f"| shape (bench inputs, top_k {k}) | rows left, two best | rows left, four best |")
        print("|---|---:|---:|")
        for sh in a.bench:
            r, n = (int(v) for v in sh.split("x"))
            l2, l4 = bench_left(r, n, k)
            print(f"| {r} x {n} | {l2} | {l4} |", flush=True)
        return
    print("| vocab | top_k | W1 outside | W1, W2 outside | W1 .. W4 outside |")
    print("|---:|---:|---:|---:|---:|")
    for n in a.vocab:
        for k, (r1, r2, r4) in left_rates(n, a.k or [300, 1000, 5000], a.rows, a.seed).items():
            print(f"| {n} | {k} | {r1:.2%} | {r2:.2%} | {r4:.3%} |", flush=True)


if __name__ == "__main__":
    main()
