"""The forty-fourth session's review: the large tile finalize's candidate lists (the scratch
``gc``, 16 KB a (row, split); 10.5 MB at 64 x 151936, 67 MB at 4096 x 32000) and ``gt`` were in
every plan with filters, though the router takes that form only at 64 rows or more (or where
``ROCSAMPLE_TILE_LARGE`` says). Here: a Sampler below that row count has neither, uses less
scratch, and its top_k past the small form's limit stays exact (it takes another route); at
64 rows, or with TILE_LARGE on, the plan holds them."""
from __future__ import annotations

import numpy as np
import pytest

import rocsample.sampling as rs
from rocsample import sampling_router as router
from tests.kernels.test_sampling import compare


def _names(s):
    return {name for name, *_ in s.plan.layout}


def test_every_plan_held_the_large_forms_scratch(backend, rng, monkeypatch):
    if not backend.is_device:
        pytest.skip("scratch plans are for device backends (cpu runs the reference)")
    vocab = 4096
    monkeypatch.setattr(router, "TILE_LARGE", None)
    few = rs.Sampler(8, vocab, "float32", _block=64, _splits=4)
    many = rs.Sampler(router._LARGE_MIN_ROWS, vocab, "float32", _block=64, _splits=4)
    assert not few.plan.large and not {"gc", "gt"} & _names(few)
    assert many.plan.large and {"gc", "gt"} <= _names(many)
    # the same 8 rows with the room: the lists are what the smaller plan saves
    monkeypatch.setattr(router, "TILE_LARGE", True)
    roomy = rs.Sampler(8, vocab, "float32", _block=64, _splits=4)
    assert roomy.plan.large and few.scratch_bytes < roomy.scratch_bytes
    # a plan made without the room never takes the large form, even with TILE_LARGE on now:
    # top_k 300 (past the small form's limit) at 8 rows, exact against the reference
    lg = (rng.normal(size=(8, vocab)) * 2).astype(np.float32)
    params = dict(temperature=np.float32(0.8), top_k=300)
    seed = rng.integers(0, 2**63, 8)
    host = router.Host(np.full(8, 0.8, np.float32), np.full(8, 300), np.ones(8, np.float32),
                       np.zeros(8, np.float32))
    assert not router.route(few.plan, host).large and router.route(roomy.plan, host).large
    for s in (few, roomy):
        tok = s(lg, seed=seed, position=3, check=False, **params)[0]
        compare(backend, lg, tok, None, seed=seed, position=3, **params)
