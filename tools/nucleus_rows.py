"""Which of phase 1's best scores each row of bench/test_sampling.py's top_p095 inputs needs, by
the reference alone (no GPU): for every row (seeds 0 .., position 0, temperature 1), the exact
Gumbel scores' six best tokens, each one's rank in the (logit desc, index asc) order, and the
nucleus's last position P (the integer masses of docs/SEMANTICS.md); prints the rows whose first
token inside the nucleus is phase 1's third best or later (the nucleus pass takes W3 and W4 only
from its TOP4 form, and only where no thread of the launch held two of the best: a thread of
quad c is (c - qa) mod block), with the threads of a single split of 256 threads.

    python tools/nucleus_rows.py 256 32000 [top_p]
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench.test_sampling import _host_logits  # noqa: E402
from rocsample.reference import philox  # noqa: E402

rows, vocab = int(sys.argv[1]), int(sys.argv[2])
top_p = np.float32(sys.argv[3]) if len(sys.argv) > 3 else np.float32(0.95)
x = _host_logits(rows, vocab)
idx = np.arange(vocab, dtype=np.int64)
count = {}
for r in range(rows):
    g = philox.token_gumbel(np.uint64(r), np.uint64(0), idx).astype(np.float32)
    best = np.argsort(-(x[r] + g), kind="stable")[:6]
    xd = x[r].astype(np.float64)
    m = np.floor(np.exp(xd - xd.max()) * 2.0**40 + 0.5)
    order = np.lexsort((idx, -xd))
    P = int(np.searchsorted(np.cumsum(m[order]), np.ceil(np.float64(top_p) * m.sum())))
    rank = np.empty(vocab, np.int64)
    rank[order] = np.arange(vocab)
    first = next((j for j, t in enumerate(best) if rank[t] <= P), None)
    count[first] = count.get(first, 0) + 1
    if first is None or first >= 2:
        print(f"row {r}: first best in the nucleus W{'-' if first is None else first + 1}, "
              f"ranks {[int(rank[t]) for t in best]}, P {P}, tokens {best.tolist()}, "
              f"threads (one split of 256) {[int(t // 4 % 256) for t in best]}")
print("rows by the first best in the nucleus (0: W1):", dict(sorted(count.items(),
                                                                      key=lambda kv: str(kv[0]))))
