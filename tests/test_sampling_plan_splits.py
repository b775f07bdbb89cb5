"""The split rule of a sampling plan (rocsample.sampling_plan.choose_splits): pure arithmetic over
the shape and the device, checked here on every backend option.

At most one wave of (split x row) blocks; no more splits than give every compute unit 2.5 blocks
or each split 16K logits, whichever asks for more; never a split of fewer than 1024 logits. The
H200 figures (132 SMs) are the ones the splits sweep behind the rule measured (docs/PERF_NOTES.md,
"Later session"). Results never depend on the split count (SPEC), which the kernel tests check.
"""

from __future__ import annotations

import numpy as np
import pytest

from rocsample.sampling_plan import choose_splits

H200 = 132


@pytest.mark.parametrize("rows, vocab, want", [
    (1, 32000, 31), (1, 151936, 148), (64, 32000, 5), (64, 151936, 10),
    (256, 32000, 2), (256, 151936, 4), (64, 262144, 16), (8, 151936, 41),
])
def test_the_h200_benchmark_shapes(rows, vocab, want):
    assert choose_splits(rows, vocab, H200, 256) == want


@pytest.mark.parametrize("cus", [1, 20, 40, 132])
@pytest.mark.parametrize("rows", [1, 3, 8, 64, 256, 4096])
@pytest.mark.parametrize("vocab", [1, 1000, 32000, 151936, 262144, 1 << 20])
def test_bounds(cus, rows, vocab):
    s = choose_splits(rows, vocab, cus, 256)
    assert 1 <= s <= max(1, 8 * cus // rows)  # one wave at most
    assert s == 1 or vocab // s >= 1024  # no split streams fewer than 1024 logits
    # fewer splits would leave a compute unit under 2.5 blocks and every split under 16K
    if s > 1:
        assert s <= max(5 * cus // (2 * rows), -(-vocab // 16384))


def test_more_rows_never_get_more_splits():
    for vocab in (32000, 151936, 262144):
        got = [choose_splits(r, vocab, H200, 256) for r in (1, 2, 8, 32, 64, 128, 256, 1024)]
        assert got == sorted(got, reverse=True), (vocab, got)


@pytest.mark.parametrize("rows, vocab, want", [
    (1, 151936, 148), (64, 151936, 8), (64, 262144, 16), (256, 151936, 4),
    (256, 262144, 4), (8, 151936, 41),
])
def test_drawing_routes_drop_a_short_second_wave_only(rows, vocab, want):
    # phase 1's drawing variant holds 4 blocks an SM: 64 x 10 = 640 blocks are 1.2 waves of 528
    # (one wave's 8 splits instead); 1024 blocks (1.9 waves) keep theirs
    from rocsample.sampling_plan import draw_splits

    assert draw_splits(rows, vocab, choose_splits(rows, vocab, H200, 256), H200) == want


@pytest.mark.parametrize("rows, vocab, plan, want", [
    (1, 32000, 31, 16), (8, 32000, 31, 16), (64, 32000, 5, 4), (256, 32000, 2, 1),
    (64, 65536, None, 4), (2, 4096, None, 2), (1, 1024, None, 1),
])
def test_narrow_rows_draw_with_two_blocks_a_cu_and_long_splits(rows, vocab, plan, want,
                                                              monkeypatch):
    # the H200 sweep's best at 8 / 64 / 256 x 32000 (16, 4 and 1 splits: fewer than the plan's);
    # the narrow rule alone (the fill, ROCSAMPLE_DRAW_FILL_CHUNK, may take more: below)
    from rocsample import sampling_plan as P
    from rocsample.sampling_plan import draw_splits

    monkeypatch.setattr(P, "_DRAW_FILL_CHUNK", 0)

    s = choose_splits(rows, vocab, H200, 256)
    if plan is not None:
        assert s == plan
    assert draw_splits(rows, vocab, s, H200) == want


@pytest.mark.parametrize("cus", [1, 20, 132])
@pytest.mark.parametrize("rows", [1, 3, 64, 100, 256])
@pytest.mark.parametrize("splits", [1, 2, 7, 10, 148])
@pytest.mark.parametrize("vocab", [1000, 4096, 32000, 65536, 151936])
@pytest.mark.parametrize("fill", [0, 500])
def test_draw_splits_never_exceed_the_plans(cus, rows, splits, vocab, fill, monkeypatch):
    # without the fill, at most the plan's splits; the fill may pass them (the plan lays out the
    # larger count) only at rows of 32000 to 65536 logits, never past 64 splits or one block a
    # compute unit in all
    from rocsample import sampling_plan as P
    from rocsample.sampling_plan import draw_splits

    monkeypatch.setattr(P, "_DRAW_FILL_CHUNK", fill)
    got = draw_splits(rows, vocab, splits, cus)
    assert 1 <= got
    if got > splits:
        assert fill and 32000 <= vocab <= 65536, got
        assert got <= min(64, cus // rows, vocab // fill), got


def fake_launches(plan, route, want_lp=False, partials=None):
    """The router's launches of ``route`` with stand-ins for the kernels ("p" phase 1, "pL" its
    FINE variants, "f" the tile finalize ("F" its large form, "T" / "G" the large form's tau
    and gather, "GF" the gather's FINE form), "n" the nucleus pass, "h" / "s" the histogram
    and select passes, "a" the position advance;
    ``partials``: phase 1's factory instead) and for the operands (each scratch view by its
    name; the counters "c1" .. "c3" of the plan's splits, "d1" .. "d3" of its drawing splits,
    "f2" / "f3" of the row-strided passes, "g" of the argmax kernel, "nu" of the nucleus pass):
    [(kernel, grid, block, args)]."""
    from types import SimpleNamespace

    from rocsample import sampling_router as R

    def stand_in(d, lp, fast=False, top2=False, top4=False, q3=False, fine=False):
        return ("p4" if top4 else "p") + ("L" if fine else "")
    kn = SimpleNamespace(float=SimpleNamespace(
        fast=SimpleNamespace(partials=partials or stand_in,
                             finalize=lambda large=False: "F" if large else "f",
                             tau=lambda: "T", gather=lambda fine=False: "GF" if fine else "G"),
        hist=SimpleNamespace(_sample_hist_kernel="h", _sample_minp_kernel="m",
                             _sample_select_kernel="s",
                             _sample_nucleus_kernel="n",
                             _sample_nucleus_finish_kernel="N",
                             _sample_rank_kernel="r",
                             _sample_rank_finish_kernel="R",
                             _sample_rank4_kernel="r4")),
        _advance_position_kernel="a")
    w = {k: k for k in ("pf", "pi", "tm", "si", "sf", "hist_n", "hist_q", "cand", "gc", "gt")}
    ops = R.Operands(*("x", "t", "k", "p", "m", "sd", "ps", "tok", "lp", "st"), w, want_lp,
                     False, (("c1", "c2", "c3"), ("d1", "d2", "d3"), ("f2", "f3"), "g", "nu"))
    return R.launches(plan, kn, route, ops)


@pytest.mark.parametrize("tile_large", [None, True, False])
@pytest.mark.parametrize("rows", [1, 8, 63, 64, 256])
def test_only_plans_the_router_can_take_the_large_form_hold_its_scratch(
        monkeypatch, rows, tile_large):
    # gc (16 KB a (row, split), 10.5 MB at 64 x 151936) and gt were in every plan with filters;
    # now where large_room says the router may take the large form: 64 rows or more, unless
    # TILE_LARGE says every row count (True) or none (False). A plan without them never routes
    # to the large form (top_k 1000 takes the rank route). The small finalize, which reads no
    # gc, is given pi, an int64 array of gc's rank, so its signature is one in every plan.
    from types import SimpleNamespace

    from rocsample import sampling_router as R
    from rocsample.sampling_plan import SamplingPlan

    monkeypatch.setattr(R, "TILE_LARGE", tile_large)
    room = R.large_room(rows)
    assert room == (tile_large is True or (tile_large is None and rows >= 64))
    be = SimpleNamespace(warp_size=lambda d: 32, compute_units=lambda d: H200, name="cuda")
    plan = SamplingPlan(be, 0, rows, 151936, "float32", large=room)
    names = {name for name, *_ in plan.layout}
    assert plan.large == room and ({"gc", "gt"} <= names) == room
    assert not ({"gc", "gt"} & names) or room
    full = SamplingPlan(be, 0, rows, 151936, "float32")
    assert full.large and {"gc", "gt"} <= {name for name, *_ in full.layout}
    if not room:
        assert plan.scratch_bytes < full.scratch_bytes
    # top_k 1000 alone: the large form only where the plan holds its scratch and the router's
    # rule allows it at this row count
    host = R.Host(np.full(rows, 0.8, np.float32), np.full(rows, 1000),
                  np.ones(rows, np.float32), np.zeros(rows, np.float32))
    assert R.route(plan, host).large == (room and R.route(full, host).large)
    # top_k 50: the small finalize is given pi (the large one, where TILE_LARGE takes it, gc)
    host50 = R.Host(host.temperature, np.full(rows, 50), host.top_p, host.min_p)
    r = R.route(plan, host50)
    assert r.tile and (not r.large or room)
    got = fake_launches(plan, r)
    assert got[-1][0] == ("F" if r.large else "f")
    assert got[-1][3][-1] == ("gc" if r.large else "pi")
    # a plan made without the room never takes the large form, whatever TILE_LARGE says later
    monkeypatch.setattr(R, "TILE_LARGE", True)
    small = SamplingPlan(be, 0, rows, 151936, "float32", large=False)
    assert not R.route(small, host).large
    assert not R.route(small, R.Host(None, None, None, None)).large


@pytest.mark.parametrize("rows,vocab,lp,on,want", [
    (64, 32000, False, True, False),     # 7.8 quads a thread: two quads a round
    (64, 151936, False, True, True),     # 18.5
    (256, 151936, False, True, True),
    (256, 151936, True, True, False),    # logprobs: the three-quad forms would spill
    (256, 151936, False, False, False)])  # ROCSAMPLE_FAST3=0
def test_phase_1_takes_three_quads_a_round_from_its_floor_without_logprobs(
        monkeypatch, rows, vocab, lp, on, want):
    # the forty-first session's A/B: faster from 16 quads a thread, slower at 64 x 32000 (7.8)
    from rocsample import sampling_router as R
    from rocsample.kernels import sampling_fast as KF

    monkeypatch.setattr(KF, "FAST3", on)
    plan = _plan(rows, vocab)
    assert (plan.chunk_draw >= 4 * KF.FAST3_MIN_QUADS * plan.block) == (vocab > 32000)
    forms = []

    def partials(d, lp, fast=False, top2=False, top4=False, q3=False, fine=False):
        forms.append((fast, q3))
        return "p"
    fake_launches(plan, R.Route(draw=True), want_lp=lp, partials=partials)
    assert forms == [(True, want)]


def test_a_drawing_route_launches_every_kernel_with_its_splits():
    # phase 1's per-split work is what the finalize and the histogram passes read: one split
    # count and chunk for the whole route, but for the row-strided histogram and select passes
    # of routes whose histogram rows are all top-p-only (they read none of it)
    from rocsample import sampling_router as R

    plan = _plan(64, 151936)
    assert (plan.splits, plan.splits_draw) == (10, 8)
    assert (plan.splits_fin, plan.rows_fin) == (74, 3)
    ctrs = ("c1", "c2", "c3", "d1", "d2", "d3", "f2", "f3", "nu")
    seen = {}  # counter -> the split counts launched with it
    for route, splits in ((R.Route(True, True, True, True), 8), (R.Route(tile=True), 10),
                          (R.Route(hist=True, select=True), 10), (R.Route(draw=True), 8),
                          (R.Route(draw=True, hist=True, select=True, nuc=True), 8),
                          (R.Route(draw=True, hist=True, select=True, nuc=True, strided=True),
                           8), (R.Route(draw=True, tile=True, nuc=True, finish=True), 8),
                          (R.Route(tile=True, large=True), 10),
                          (R.Route(tile=True, large=True, fine=True), 10),
                          (R.Route(True, True, True, True, large=True, dev=True), 8)):
        for kernel, grid, _block, args in fake_launches(plan, route):
            if kernel == "a":
                continue
            kernel = kernel.rstrip("L")   # (phase 1's FINE variant)
            if kernel in "fF":
                assert grid == 64 and args[2] == splits and args[3] == -(-151936 // splits)
                continue
            if kernel in ("G", "GF"):   # (phase 1's grid and block: the tile maxima's layout)
                assert grid == (splits, 64) and _block == plan.block
                assert args[2] == -(-151936 // splits)
                continue
            if kernel == "T":   # (a block a row; the tile maxima of phase 1's splits)
                assert grid == 64 and args[1] == splits
                assert args[2] == (plan.fine_tiles(-(-151936 // splits)) if route.fine
                                   else plan.tpt)
                continue
            if route.strided and kernel in "hs":
                want = (plan.splits_fin, plan.rows_fin)
            else:
                want = (splits, 64)
            assert grid == want and args[2] == -(-151936 // want[0]), (route, kernel)
            seen.setdefault(next(a for a in args if a in ctrs), set()).add(grid[0])
    # each counter counts finished splits modulo one split count only (after racing launches it
    # comes back to 0 only then: tests/regress/test_row_counters_shared_by_two_split_counts.py)
    assert seen and all(len(v) == 1 for v in seen.values()), seen
    assert {"f2", "f3"} <= set(seen)


def test_the_large_form_gathers_by_a_launch_of_its_own_before_it():
    # top_k 1000 at 64 x 151936 (the large form): phase 1, the row's tau ("T", a block a row,
    # which writes the scratch "gt"), the gather kernel ("G", which reads "gt" and writes the
    # scratch "gc") and the large finalize that reads it ("F"), at phase 1's split count. With
    # the histogram lane beside it (a mixed batch), tau and the gather run in the finalize's
    # lane, before it, and the lane's conditional body moves two launches on.
    from types import SimpleNamespace

    from rocsample import sampling_router as R

    plan = _plan(64, 151936)
    k = np.full(64, 1000, np.int64)
    host = R.Host(np.full(64, 0.8, np.float32), k, np.ones(64, np.float32),
                  np.zeros(64, np.float32))
    route = R.route(plan, host)
    assert route.large and route.tile and not route.hist
    got = fake_launches(plan, route)
    assert [n for n, _g, _b, _a in got] == ["p", "T", "G", "F"] and not route.fine
    assert got[1][3][-1] == "gt" and got[2][3][-2:] == ("gt", "gc") and got[3][3][-1] == "gc"
    assert got[1][3][1] == got[3][3][2] == plan.splits and got[1][3][2] == plan.tpt
    assert got[2][3][2] == plan.chunk and got[2][3][3] == plan.tpt
    # 256 rows (from 128): phase 1's FINE layout (tiles of tile_len consecutive tokens, fine_tiles(chunk)
    # a split), the gather's FINE form ("G" of gather(True): "GF")
    big = _plan(256, 151936)
    bh = R.Host(np.full(256, 0.8, np.float32), np.full(256, 1000, np.int64),
                np.ones(256, np.float32), np.zeros(256, np.float32))
    rf = R.route(big, bh)
    assert rf.large and rf.fine
    gf = fake_launches(big, rf)
    assert [n for n, _g, _b, _a in gf] == ["pL", "T", "GF", "F"]
    assert big.tile_len == 16 and gf[0][3][9] == big.tile_len
    assert gf[1][3][2] == big.fine_tiles(big.chunk) == -(-big.chunk // 16)
    assert gf[2][3][2] == big.chunk and gf[2][3][3] == big.tile_len
    assert gf[3][3][4] == big.fine_tiles(big.chunk)
    assert got[1][1] == 64 and got[1][2] == plan.fast_final_block
    # a mixed batch: the histogram path's rows (top_k 2000 with top_p) beside the large form's
    odd = np.arange(64) % 2 == 1
    mixed = R.Host(host.temperature, np.where(odd, 2000, 1000),
                   np.where(odd, 0.9, 1.0).astype(np.float32), host.min_p)
    r = R.route(plan, mixed)
    assert r.large and r.hist and r.select
    names = [n for n, _g, _b, _a in fake_launches(plan, r)]
    assert names[:4] == ["p", "T", "G", "F"] and names[4:] == ["h", "s"]
    # phase 1; tau after it, the gather after tau, the finalize after the gather (lane 0); the
    # histogram and select passes after phase 1 (lane 1); the position advance after both
    assert R.after(r, True) == ((0, ()), (0, (0,)), (0, (1,)), (0, (2,)), (1, (0,)), (1, (4,)),
                                (0, (3, 5)))
    assert R.after(R.Route(tile=True, hist=True, select=True), True) == (
        (0, ()), (0, (0,)), (1, (0,)), (1, (2,)), (0, (1, 3)))
    dev = R.Route(True, True, True, True, dev=True, large=True)
    assert R.conditional(SimpleNamespace(n_rows=R.COND_MIN_ROWS), dev) == (4, 5)


def test_a_finishing_nucleus_route_launches_two_kernels_and_the_hist_operands():
    # Route.finish: phase 1 (its TOP4 form "p4", the four best scores, above
    # NUC_FINISH_TOP2_ROWS rows) and the nucleus pass's finishing form alone (it runs the
    # histogram and select passes' code itself, so it takes their operands, which the plain
    # pass takes too), at any row count
    from rocsample import sampling_router as R

    def host(rows):
        return R.Host(np.full(rows, 0.8, np.float32), np.zeros(rows, np.int64),
                      np.full(rows, 0.95, np.float32), np.zeros(rows, np.float32))
    for rows in (1, R.NUC_FINISH_TOP2_ROWS, R.NUC_FINISH_TOP2_ROWS + 1, 256):
        plan = _plan(rows, 32000)
        route = R.route(plan, host(rows))
        assert route.finish and route.nuc and not (route.hist or route.select or route.strided)
        got = fake_launches(plan, route)
        # (phase 1's TOP2 form up to NUC_FINISH_TOP2_ROWS rows, its TOP4 form above)
        p1 = "p4" if rows > R.NUC_FINISH_TOP2_ROWS else "p"
        assert [k for k, _g, _b, _a in got] == [p1, "N"] and route.top4 == (p1 == "p4")
    plain = fake_launches(plan, R.Route(draw=True, hist=True, select=True, nuc=True))
    assert [k for k, _g, _b, _a in plain][0] == "p"   # (the row-strided route: two best)
    assert got[1][1:] == next(ln for ln in plain if ln[0] == "n")[1:]
    h = next(ln for ln in plain if ln[0] == "h")[3]
    assert [a for a in got[1][3] if a in ("tm", "pi", "si", "sf", "hist_n", "hist_q", "cand")] \
        == [a for a in h if a in ("tm", "pi", "si", "sf", "hist_n", "hist_q", "cand")]
    # wider rows: the row-strided passes finish the rows the pass leaves
    other = _plan(8, R.NUC_FINISH_VOCAB + 4)
    r = R.route(other, host(other.n_rows))
    assert r.strided and not r.finish


def test_top_k_only_routes_take_the_rank_pass_and_phase_1s_tile_count():
    # top_k 1000 alone (past the tile path, and the large form's batches below 64 rows): phase 1
    # (its TOP4 form at every row count on the finishing route, NUC_RANK_TOP2_ROWS) and the
    # pass's rank form ("R" finishing, "r" plain). Every launch that runs the histogram code
    # (the rank pass's finishing form for the rows it leaves, the row-strided histogram pass
    # at splits_fin) gets phase 1's tile count, its splits x tpt: the tile maxima it wrote, at
    # whatever split count the pass itself runs (the row-strided pass took tpt, hence a count
    # of splits_fin x tpt, past the row's tile maxima, before the thirty-first session gave it
    # no bound)
    from rocsample import sampling_router as R

    def host(rows, k=1000, p=1.0):
        return R.Host(np.full(rows, 1.0, np.float32), np.full(rows, k, np.int64),
                      np.full(rows, p, np.float32), np.zeros(rows, np.float32))
    for rows, vocab, want in ((1, 32000, ["p4", "R"]), (16, 32000, ["p4", "R"]),
                              (1, 151936, ["p", "r", "h", "s"]), (8, 151936, ["p4", "r4", "h", "s"]),
                              (63, 151936, ["p4", "r4", "h", "s"])):
        plan = _plan(rows, vocab)
        route = R.route(plan, host(rows))
        assert route.rank and route.nuc
        got = fake_launches(plan, route)
        assert [k for k, _g, _b, _a in got] == want
        tiles = got[0][1][0] * plan.tpt   # phase 1's grid: (splits, rows)
        assert got[0][1][0] == plan.splits_draw and tiles > 0
        for k, grid, _b, args in got:
            if k in ("h", "r", "r4", "R"):
                assert args[11] == tiles, k
            if k in ("h", "s"):   # (the left rows row-strided, at any row count)
                assert route.strided and grid == (plan.splits_fin, plan.rows_fin)
                assert plan.splits_fin != plan.splits_draw   # (its own count would be wrong)
    # top_k with top_p: the histogram path at phase 1's splits, with its tile bound
    plan = _plan(8, 151936)
    route = R.route(plan, host(8, p=0.9))
    assert not (route.nuc or route.rank)
    got = fake_launches(plan, route)
    h = next(a for k, _g, _b, a in got if k == "h")
    assert h[11] == got[0][1][0] * plan.tpt > 0


def test_the_plain_rank_pass_over_four_best_past_its_row_count(monkeypatch):
    # NUC_RANK_PLAIN_TOP2_ROWS: calls of more rows take phase 1's TOP4 form and the plain rank
    # pass over four best ("r4"); the finishing routes keep their own rule (NUC_RANK_TOP2_ROWS)
    from rocsample import sampling_router as R

    def host(rows):
        return R.Host(np.full(rows, 1.0, np.float32), np.full(rows, 1000, np.int64),
                      np.ones(rows, np.float32), np.zeros(rows, np.float32))
    for rows, vocab, want in ((1, 151936, ["p", "r", "h", "s"]), (2, 151936, ["p4", "r4", "h", "s"]),
                              (63, 262144, ["p4", "r4", "h", "s"]), (1, 32000, ["p4", "R"])):
        plan = _plan(rows, vocab)
        route = R.route(plan, host(rows))
        assert [k for k, _g, _b, _a in fake_launches(plan, route)] == want
        assert route.top4 == (want[0] == "p4")
    # (the default: two best for a one-row call, H200 bench/results/nvidia-h200-s33-rank-ab.txt)
    assert R.NUC_RANK_PLAIN_TOP2_ROWS == 1
    monkeypatch.setattr(R, "NUC_RANK_PLAIN_TOP2_ROWS", 8)
    for rows, top4 in ((8, False), (9, True)):
        assert R.route(_plan(rows, 151936), host(rows)).top4 == top4


@pytest.mark.parametrize("rows, vocab, draw, want", [
    (1, 32000, 64, 64), (2, 32000, 64, 64), (8, 32000, 16, 32), (16, 32000, 16, 16),
    (64, 32000, 4, 4), (256, 32000, 1, 1), (1, 4096, 2, 4), (1, 1500, 1, 1), (3, 150, 1, 1),
    (1, 151936, 148, 148), (64, 151936, 8, 8), (256, 151936, 4, 4),
])
def test_the_nucleus_pass_splits_narrow_rows_twice_as_short_up_to_256_blocks(rows, vocab, draw,
                                                                            want, monkeypatch):
    # the H200 probe's best (bench/results/nvidia-h200-s27-nuc-splits.txt): twice phase 1's
    # splits at 1-8 x 32000, phase 1's at 64 and 256 x 32000 and at 151936 logits (1 and 2 x
    # 32000: the narrow fill's 64 drawing splits already; the probe had 16.1 us at 64, 16.2 at
    # 32), with the fill at its chunk of 500
    from rocsample import sampling_plan as P
    from rocsample.sampling_plan import nuc_splits

    monkeypatch.setattr(P, "_DRAW_FILL_CHUNK", 500)
    plan = _plan(rows, vocab)
    assert plan.splits_draw == draw
    assert nuc_splits(rows, vocab, draw) == plan.splits_nuc == want
    assert plan.chunk_nuc == -(-vocab // want)


@pytest.mark.parametrize("rows", [1, 3, 8, 17, 64, 256, 4096])
@pytest.mark.parametrize("vocab", [1, 999, 1000, 2048, 32000, 65536, 65537, 151936])
@pytest.mark.parametrize("draw", [1, 2, 16, 31, 148])
def test_nuc_splits_bounds(rows, vocab, draw):
    from rocsample.sampling_plan import nuc_splits

    s = nuc_splits(rows, vocab, draw)
    assert draw <= s <= 2 * draw
    if s > draw:   # more only for narrow rows, never past 256 blocks or under 1000 logits
        assert vocab <= 65536 and s * rows <= 256 and vocab // s >= 1000


def test_the_nucleus_pass_launches_at_its_own_splits_with_its_own_counter():
    # 8 x 32000: phase 1 at 16 splits, the pass at 32; a counter read modulo two split counts
    # picks the wrong last block after racing launches
    # (tests/regress/test_row_counters_shared_by_two_split_counts.py), so the pass has its own
    from rocsample import sampling_router as R

    plan = _plan(8, 32000)
    assert (plan.splits_draw, plan.splits_nuc) == (16, 32)
    for route in (R.Route(draw=True, nuc=True, finish=True),
                  R.Route(draw=True, hist=True, select=True, nuc=True),
                  R.Route(draw=True, hist=True, select=True, nuc=True, strided=True)):
        got = {k: (g, a) for k, g, _b, a in fake_launches(plan, route)}
        g, a = got["N" if route.finish else "n"]
        assert g == (32, 8) and a[2] == 1000 and "nu" in a
        assert all("nu" not in a for k, (_g, a) in got.items() if k not in "nN")
        assert got["p"][0] == (16, 8)


@pytest.mark.parametrize("top_p, min_p, dev, want", [
    (1.0, 0.05, False, "m"),    # min_p alone: the MINP kernel
    (0.9, 0.05, False, "hs"),   # a HIST row: the histogram and select kernels
    (1.0, 0.05, True, "hs"),    # device parameter arrays: every row decides on the device
    (1.0, 0.0, False, ""),      # temperature alone: neither
])
def test_min_p_alone_takes_the_minp_kernel(top_p, min_p, dev, want):
    # the MINP kernel serves a route only where its histogram-path rows are all MINP (then the
    # histogram kernel's HIST code, shared memory and registers are not needed); same operands
    from rocsample import sampling_router as R

    plan = _plan(64, 151936)
    rows = plan.n_rows
    host = R.Host(np.full(rows, 0.8, np.float32), None if dev else np.zeros(rows, np.int64),
                  np.full(rows, top_p, np.float32), np.full(rows, min_p, np.float32))
    route = R.route(plan, host)
    got = [k for k, _g, _b, _a in fake_launches(plan, route) if k in "hms"]
    assert "".join(got) == want, route
    args = {k: a for k, _g, _b, a in fake_launches(plan, R.Route(hist=True))
            + fake_launches(plan, R.Route(hist=True, select=True))}
    assert args["m"] == args["h"]


def _plan(rows, vocab, cus=H200):
    from types import SimpleNamespace

    from rocsample.sampling_plan import SamplingPlan

    be = SimpleNamespace(warp_size=lambda d: 32, compute_units=lambda d: cus, name="cuda")
    return SamplingPlan(be, 0, rows, vocab, "float32")


def _host(rows, k, dev=False):
    from rocsample import sampling_router as R

    return R.Host(np.full(rows, 0.8, np.float32), None if dev else np.full(rows, k),
                  np.ones(rows, np.float32), np.zeros(rows, np.float32))


@pytest.mark.parametrize("rows, vocab, k, large", [
    (64, 151936, 1000, True), (64, 262144, 1000, True), (128, 151936, 1000, True),
    (192, 151936, 1000, True), (256, 151936, 1000, True), (64, 32000, 1000, False), (256, 32000, 1000, False),
    (63, 151936, 1000, False), (256, 262144, 1000, True),
    (1, 151936, 1000, False), (8, 151936, 1000, False), (1, 32000, 1000, False),
    (64, 151936, 50, False), (64, 151936, 256, False), (64, 151936, 300, True),
    (64, 151936, 1025, False),
])
def test_the_tile_finalize_takes_its_large_form_where_the_candidates_fit(rows, vocab, k, large):
    # the large form (top_k up to KCAP_L) for batches of 64 rows or more where the plan's tile
    # maxima (strided; from 128 rows wider than 32768 logits its FINE layout: 9496 tiles of 16
    # at 151936) make the expected candidates fit its list; else top_k past KCAP (a top-k-only
    # row) takes the nucleus pass's rank form: its finishing form at 32000 logits, the plain
    # one and the histogram path (row-strided) wider
    from rocsample import sampling_router as R
    from rocsample.kernels import sampling_fast as KF

    r = R.route(_plan(rows, vocab), _host(rows, k))
    assert r.large == large and r.fine == (large and rows >= 128)
    assert r.tile == (large or k <= KF.KCAP) and r.rank == (not r.tile)
    assert r.hist == (not r.tile and vocab > R.NUC_FINISH_VOCAB) == r.strided
    assert r.kcap == (KF.KCAP_L if large else KF.KCAP)


def test_tile_large_fits_bounds_the_expected_candidates():
    from rocsample import sampling_router as R
    from rocsample.kernels import sampling_fast as KF

    assert R.tile_large_fits(2560, 1000) and not R.tile_large_fits(1024, 1000)
    assert not R.tile_large_fits(1000, 1000) and not R.tile_large_fits(500, 1000)
    # at most the fill share of the list, for any tile count
    for tiles in (1200, 2048, 4096, 65536):
        for k in range(1, KF.KCAP_L + 1, 7):
            if R.tile_large_fits(tiles, k):
                assert -tiles * np.log1p(-k / tiles) <= R._LARGE_FILL * KF.CAND_MAX_L


def test_the_large_form_switch(monkeypatch):
    from rocsample import sampling_router as R
    from rocsample.kernels import sampling_fast as KF

    plan = _plan(64, 151936)
    monkeypatch.setattr(R, "TILE_LARGE", False)
    r = R.route(plan, _host(64, 1000))
    assert not r.large and r.hist and r.kcap == KF.KCAP
    monkeypatch.setattr(R, "TILE_LARGE", True)  # every top-k row, even small ones
    r = R.route(plan, _host(64, 50))
    assert r.large and r.tile and r.kcap == KF.KCAP_L
    # device parameter arrays decide on the device with the small limit, unless forced
    assert R.route(plan, _host(64, 0, dev=True)).large
    monkeypatch.setattr(R, "TILE_LARGE", None)
    r = R.route(plan, _host(64, 0, dev=True))
    assert not r.large and r.kcap == KF.KCAP and r.dev


@pytest.mark.parametrize("rows, vocab, tpt", [
    (1, 32000, 32), (8, 32000, 32), (64, 32000, 256), (256, 32000, 256),
    (1, 151936, 16), (8, 151936, 64), (1, 262144, 16), (64, 262144, 256),
])
def test_short_splits_take_tiles_of_at_least_32_tokens(rows, vocab, tpt):
    # Above 4 * KCAP tiles a row a tile holds at least TILE_MIN (16) tokens, 32 in splits of at
    # most 2048 logits (1 and 8 x 32000: 31 splits of 1033, 992 tiles a row instead of 1984;
    # PERF_NOTES "Eighteenth session"); the 64-row shapes' splits of 6400 keep 16, and the
    # one-row 151936- and 262144-wide rows are held to GMAX tiles either way.
    from rocsample.kernels import sampling_fast as KF

    plan = _plan(rows, vocab)
    assert plan.tpt == tpt
    tiles = plan.splits * plan.tpt
    assert tiles <= KF.GMAX
    if tiles > 4 * KF.KCAP:
        least = 2 * KF.TILE_MIN if plan.chunk <= 2048 else KF.TILE_MIN
        assert plan.chunk >= least * plan.tpt


@pytest.mark.parametrize("rows, vocab, want", [
    (1, 32000, 64), (2, 32000, 64), (8, 32000, 16), (64, 32000, 4), (256, 32000, 1),
    (1, 4096, 2), (1, 16384, 8), (1, 65536, 64), (1, 151936, 148), (64, 151936, 8),
])
def test_the_narrow_fill_gives_one_block_a_compute_unit_in_splits_of_its_chunk(rows, vocab, want,
                                                                             monkeypatch):
    # the narrow fill (ROCSAMPLE_DRAW_FILL_CHUNK=500, the default): rows of 32000 to 65536
    # logits take at least min(cus // rows, vocab // chunk, 64) drawing splits, past the plan's
    # splits (31 at 1 x 32000) where that is more; the H100 sweep's best points at 1 / 8 / 64 /
    # 256 x 32000 (64 / 16 / 4 / 1); narrower rows (1 x 4096: 2, 1 x 16384: the narrow rule's
    # 8) and wider rows keep their rule
    from rocsample import sampling_plan as P

    monkeypatch.setattr(P, "_DRAW_FILL_CHUNK", 500)
    plan = _plan(rows, vocab)
    monkeypatch.setattr(P, "_DRAW_FILL_CHUNK", 0)
    off = _plan(rows, vocab)
    assert plan.splits_draw == want == max(off.splits_draw, want)
    assert plan.splits == off.splits and plan.tpt == off.tpt
    # every view indexed by split holds the larger count; a plan the fill leaves alone keeps
    # its layout byte for byte
    sl = max(plan.splits, plan.splits_draw)
    v = {name: shape for name, _dt, shape, _o, _n in plan.layout}
    assert v["pf"][1] == sl and v["pi"][1] >= sl and v["gc"][1] == sl
    assert v["tm"][1] >= sl * plan.tpt and sl * plan.tpt <= P.KF.GMAX
    assert v["gc"][2] == 1 + min(P.KF.CAND_MAX_L, max(plan.chunk, plan.chunk_draw))
    if plan.splits_draw == off.splits_draw:
        assert plan.layout == off.layout
    assert plan.splits_nuc == P.nuc_splits(rows, vocab, plan.splits_draw)


@pytest.mark.parametrize("cus", [4, 20, 132])
def test_without_the_fill_the_drawing_splits_never_pass_splits(cus, monkeypatch):
    # the fill off (ROCSAMPLE_DRAW_FILL_CHUNK=0), the layout is the one the gates
    # ran before it: every view indexed by split at ``splits``, gc's chunk the drawing one
    from rocsample import sampling_plan as P

    monkeypatch.setattr(P, "_DRAW_FILL_CHUNK", 0)
    for rows in (1, 2, 3, 8, 17, 64, 256, 1000):
        for vocab in (150, 2048, 4096, 32000, 65536, 65537, 151936, 262144):
            p = _plan(rows, vocab, cus)
            assert p.splits_draw <= p.splits, (rows, vocab)
            v = {name: shape for name, _dt, shape, _o, _n in p.layout}
            assert v["pf"][1] == p.splits and v["gc"][2] == 1 + min(P.KF.CAND_MAX_L, p.chunk_draw)
            assert p.fine or v["tm"][1] == p.splits * p.tpt
