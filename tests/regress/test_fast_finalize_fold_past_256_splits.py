"""Regression: the fast path's phase 2 lost split partials held by block slots 256..511.

What broke (H200, first version of the two-level fold in ``_sample_finalize_fast_kernel``): the
split partials are folded per thread into block slots, then 32 folder threads take 16 slots
each, then thread 0 folds the 32 folder results. Thread 0 used the 16-slot helper for that last
step, so folders 16..31 (slots 256..511) were never read. With more than 256 splits (a 2**20
vocabulary takes 1024) a row maximum in those slots was missed: a wrong greedy token, and for
top-k rows tile maxima above the "row maximum", a negative histogram bin and an illegal shared
atomic (CUDA_ERROR_ILLEGAL_INSTRUCTION). Simulator blocks (32 threads) never reach those slots,
so the failing case needs a GPU; cpu and sim run the same checks at a small shape.
"""

from __future__ import annotations

import numpy as np
import pytest

import rocsample as rs
from tests.kernels.test_sampling import compare, host


def _case(backend):
    """(vocab, splits, block): 1024 splits over 512-thread finalize blocks on a GPU."""
    if backend.is_device and backend.name != "sim":
        return 1 << 16, 1024, None
    return 256, 8, (backend.warp_size() if backend.name == "sim" else None)


@pytest.mark.parametrize("split_of_max", ["first", "slot_500", "last"])
def test_row_max_in_any_split_slot(backend, split_of_max):
    vocab, splits, block = _case(backend)
    chunk = vocab // splits
    rng = np.random.default_rng(7)
    lg = (rng.normal(size=(2, vocab)) * 2).astype(np.float32)
    split = {"first": 0, "slot_500": min(500 + 512, splits - 1), "last": splits - 1}[split_of_max]
    top = split * chunk + chunk // 2
    lg[:, top] = 50.0
    g = host(backend, rs.argmax(lg, _splits=splits, _block=block))
    assert (g == top).all(), (g, top)
    params = dict(top_k=50, top_p=0.9, min_p=0.0, temperature=0.8)
    tok = rs.sample(lg, seed=[3, 4], position=1, _splits=splits, _block=block,
                    **params)
    compare(backend, lg, tok, seed=[3, 4], position=1, **params)
    one = host(backend, rs.sample(lg, seed=[3, 4], position=1, top_k=1, temperature=1.0,
                                  _splits=splits, _block=block))
    assert (one == top).all(), (one, top)
