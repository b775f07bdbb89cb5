"""Drawing routes at more splits than the plan's ``splits`` (the narrow fill,
``rocsample.sampling_plan._DRAW_FILL_CHUNK``, on by default since the fifty-sixth session): every
route that launches phase 1's drawing variant, and the kernels after it, exact against the
reference.

The fill gives one row of 32000 logits 64 drawing splits against the plan's 31 on an H100, so
the scratch is laid out for the larger count (``pf``, ``pi``, ``tm``, ``gc``). "forced" sets the
two counts (2, and 5 for the drawing routes) at three rows whose last split is short; "fill"
takes the fill's own rule at one row (1 x 2048 on the simulator's 4 compute units, its floor of
32000 logits lowered: 2 splits, 4 drawing; 1 x 32000 on a GPU: 31 and 64).
Every mode runs with host parameters and with per-row device arrays (which take the drawing
splits for every kernel, the tile finalize among them), with logprobs.
"""

from __future__ import annotations

import numpy as np
import pytest

import rocsample as rs
from rocsample import sampling_router as router
from tests.kernels.test_sampling import compare, device_params

MODES = {
    "temperature": dict(temperature=[1.0, 0.5, 2.0]),
    "top_p": dict(top_p=[0.9, 0.5, 0.99]),
    "top_k": dict(top_k=[12, 40, 3], temperature=[1.0, 0.7, 1.3]),
    "min_p": dict(min_p=[0.05, 0.2, 0.01]),
    "chain": dict(top_k=[50, 3, 0], top_p=[0.9, 0.95, 0.8], min_p=[0.05, 0.0, 0.1],
                  temperature=[0.8, 1.0, 1.2]),
    "mixed": dict(temperature=[0.9, 0.0, 1.1], top_k=[0, 0, 7], top_p=[0.6, 1.0, 1.0]),
}


@pytest.mark.parametrize("how", ["forced", "fill"])
@pytest.mark.parametrize("dev", [False, True], ids=["host", "device"])
@pytest.mark.parametrize("mode", list(MODES))
def test_drawing_splits_past_the_plans_splits(backend, rng, mode, dev, how, monkeypatch):
    if not backend.is_device:
        pytest.skip("the plan's launch shapes: a device backend (sim emulates one)")
    from rocsample import sampling_plan

    sim = backend.name == "sim"
    if how == "forced":
        rows, vocab = (3, 151) if sim else (3, 32003)   # (a ragged last split)
        monkeypatch.setattr(sampling_plan, "choose_splits", lambda *a: 2)
        monkeypatch.setattr(sampling_plan, "draw_splits", lambda *a: 5)
    else:
        rows, vocab = (1, 2048) if sim else (1, 32000)
        monkeypatch.setattr(sampling_plan, "_DRAW_FILL_CHUNK", 500)   # (the A/B's chunk)
        if sim:   # (the simulator's row is narrower than the fill's floor)
            monkeypatch.setattr(sampling_plan, "_DRAW_FILL_MIN_VOCAB", 2048)
    # (top-k rows past this limit take the nucleus pass's rank form at these vocabularies)
    monkeypatch.setattr(router, "TILE_KMAX", 8)
    s = rs.Sampler(rows, vocab, "float32", _block=backend.warp_size() if sim else None)
    p = s.plan
    assert p.splits_draw > p.splits and (how == "fill" or (p.splits, p.splits_draw) == (2, 5))
    shapes = {name: shape for name, _dt, shape, _o, _n in p.layout}
    assert shapes["pf"][1] == p.splits_draw and shapes["tm"][1] >= p.splits_draw * p.tpt
    assert shapes.get("gc", (0, p.splits_draw))[1] == p.splits_draw   # (where the plan has it)
    lg = (rng.standard_normal((rows, vocab)) * 3).astype(np.float32)
    seed = rng.integers(0, 2**63, rows)
    params = {k: np.asarray(v[:rows], np.int64 if k == "top_k" else np.float32)
              for k, v in MODES[mode].items()}
    given = device_params(backend, **params) if dev else params
    for position in (0, 7):
        tok, lp, _st = s(lg, seed=seed, position=position, check=False, return_logprobs=True,
                         **given)
        compare(backend, lg, tok, lp, seed=seed, position=position, **params)
