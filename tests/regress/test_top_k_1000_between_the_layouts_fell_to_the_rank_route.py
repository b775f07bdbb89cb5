"""Regression: top_k 1000 alone at 129-255 rows of 151936 or 262144 logits took neither of the
large tile form's layouts and fell to the nucleus pass's rank route (found in the forty-seventh
session's A/B, reading the routing rule beside it).

The large form's strided layout serves a plan whose phase-1 tile maxima are expected to hold the
top k's candidates (``sampling_router.tile_large_fits``); its FINE layout served only from 256
rows. At 132 SMs a plan of 129-255 rows of 151936 logits has 5 splits of 256 strided tiles (1280
a row), too few for k = 1000, and was below 256 rows: the rank route, about 1.4x the FINE form's
time at 256 rows on an H100 (202.5 against 144.1 us). The rule (``fine_rule``) now gives the FINE
layout from 128 rows and wherever the strided tiles would not hold the form's largest k. No GPU
needed: the plans and routes are host arithmetic."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from rocsample import sampling_router as R
from rocsample.kernels import sampling_fast as KF
from rocsample.sampling_plan import SamplingPlan


def _plan(rows: int, vocab: int, cus: int) -> SamplingPlan:
    be = SimpleNamespace(warp_size=lambda d: 32, compute_units=lambda d: cus, name="cuda")
    return SamplingPlan(be, 0, rows, vocab, "float32", large=R.large_room(rows))


@pytest.mark.parametrize("cus", [20, 40, 114, 132])
@pytest.mark.parametrize("vocab", [32769, 151936, 262144, 1 << 20])
def test_every_wide_batch_takes_a_large_layout(monkeypatch, cus, vocab):
    monkeypatch.setattr(R, "TILE_LARGE", None)
    monkeypatch.setattr(R, "TILE_FINE", None)
    for rows in [*range(64, 300, 8), 129, 160, 192, 255, 384, 1024]:
        plan = _plan(rows, vocab, cus)
        host = R.Host(np.full(rows, 1.0, np.float32), np.full(rows, 1000),
                      np.ones(rows, np.float32), np.zeros(rows, np.float32))
        r = R.route(plan, host)
        assert r.large and r.tile and not r.rank, (cus, vocab, rows)
        # the FINE layout from 128 rows; at fewer only where the strided tiles fall short
        strided = min(plan.splits, plan.splits_draw) * plan.tpt
        assert r.fine == (rows >= 128 or not R.tile_large_fits(strided, KF.KCAP_L)), (
            cus, vocab, rows)
        # and the plan holds the tile maxima of the layout its routes take
        tm = next(shape for name, _dt, shape, *_ in plan.layout if name == "tm")
        need = plan.splits * plan.tpt
        if plan.fine:
            need = max(need, plan.splits * plan.fine_tiles(plan.chunk),
                       plan.splits_draw * plan.fine_tiles(plan.chunk_draw))
        assert tm == (rows, need), (cus, vocab, rows, tm, need)


def test_a_plan_without_the_fine_layout_holds_no_room_for_it(monkeypatch):
    # 64 x 151936 on 132 SMs keeps the strided layout (faster there: 53.7 against 63.8 us on
    # an H100), and since this change its tm holds 2560 tile maxima a row, not 9500
    monkeypatch.setattr(R, "TILE_LARGE", None)
    monkeypatch.setattr(R, "TILE_FINE", None)
    plan = _plan(64, 151936, 132)
    assert plan.large and not plan.fine
    tm = next(shape for name, _dt, shape, *_ in plan.layout if name == "tm")
    assert tm == (64, plan.splits * plan.tpt) == (64, 2560)
    # ROCSAMPLE_TILE_FINE=1 (read when the plan is made) gives it the room and the layout
    monkeypatch.setattr(R, "TILE_FINE", True)
    forced = _plan(64, 151936, 132)
    assert forced.fine
    host = R.Host(np.full(64, 1.0, np.float32), np.full(64, 1000), np.ones(64, np.float32),
                  np.zeros(64, np.float32))
    assert R.route(forced, host).fine and not R.route(plan, host).fine
    assert forced.scratch_bytes > plan.scratch_bytes
