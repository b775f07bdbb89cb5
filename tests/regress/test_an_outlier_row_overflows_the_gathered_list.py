"""The forty-fourth session's first gate: the gather's list test asserted that every row's
candidates fit the large finalize's list, and on a GPU (8 x 151936, top_k 1000) the row with two
finite logits near float32's largest listed some 26000 (its kmax far above the other tiles, the
histogram's bins coarse there, tau low). Such a row overflows by design and the finalize takes
the exact radix fallback. Here: the row's lists really overflow on every device backend, the
tokens stay exact, and an ordinary row beside it stays within the list."""
from __future__ import annotations

import numpy as np
import pytest

import rocsample.sampling as rs
from rocsample import sampling_router as router
from tests.kernels.conftest import skip_order_on_wave64
from tests.kernels.test_sampling import compare, host, scratch_view


@pytest.mark.parametrize("order", ["llama", "vllm"])
def test_an_outlier_row_overflows_the_gathered_list(backend, rng, order, monkeypatch):
    if not backend.is_device:
        pytest.skip("the gather is a device launch (cpu runs the reference)")
    skip_order_on_wave64(backend, order)
    monkeypatch.setattr(router, "TILE_LARGE", True)
    monkeypatch.setattr(rs, "_PLANS", {})
    rows, vocab, k, cap = 2, 4096, 300, 512
    s = rs.Sampler(rows, vocab, "float32", order=order, _block=64, _splits=16, _cap=cap)
    lg = (rng.normal(size=(rows, vocab)) * 2).astype(np.float32)
    lg[0, [10, 2000]] = (3.0e38, 3.3e38)
    params = dict(temperature=np.float32(0.8), top_k=k)
    seed = rng.integers(0, 2**63, rows)
    tok = s(lg, seed=seed, position=5, check=False, **params)[0]
    compare(backend, lg, tok, None, seed=seed, position=5, order=order, **params)
    gc = host(backend, scratch_view(backend, s, "gc"))
    total = gc[:, :s.plan.splits, 0].sum(axis=1)
    assert s.plan.cap_large == cap
    assert total[0] > cap, total      # the outlier row: past the list, the fallback's
    assert k <= total[1] <= cap, total  # the ordinary row: within it
