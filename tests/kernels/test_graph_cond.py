"""The histogram lane as a conditional node of a captured graph (rocsample.kernels.graph_cond).

With per-row device parameter arrays only the device knows whether any row needs the histogram
and select passes. Phase 1 counts the rows that do (``need_lane``); under a stream capture on
CUDA, in batches of ``sampling_router.COND_MIN_ROWS`` rows or more, the two passes become the
body of a conditional IF node that a one-thread gate sets when the count is not 0; everywhere
else they are launched as before, and they take the count back to 0. So a captured graph must
still finish every row, replay after replay, as the rows' parameters change between a batch
that needs the passes and one that does not; on sim (no conditional nodes) the same calls check
the count's protocol.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import rocsample
from rocsample import graphs
from rocsample import sampling_router as R
from rocsample.reference import sampling as ref

#: every row a tile row (top_k 5): no row needs the histogram lane
TILE = dict(temperature=[0.8, 1.0, 0.7, 0.9], top_k=[5, 3, 5, 7], top_p=[1.0, 0.9, 1.0, 0.8],
            min_p=[0.0, 0.0, 0.0, 0.0])
#: rows 1 and 3 need the lane (top_p alone, min_p alone)
LANE = dict(temperature=[0.8, 1.0, 0.7, 0.9], top_k=[5, 0, 5, 0], top_p=[1.0, 0.9, 1.0, 1.0],
            min_p=[0.0, 0.0, 0.0, 0.1])


def _arrays(values):
    return {k: np.array(v, np.int64 if k == "top_k" else np.float32) for k, v in values.items()}


def _host(backend, a, s):
    return backend.to_host(a, backend.stream(s))


def _check_capture(backend, sp, lane):
    """The capture of ``sp``'s bound call recorded no conditional-lane failure, and (``lane``,
    on CUDA where the vendor has conditional nodes) put its lane into one."""
    vendor = getattr(backend, "vendor", None)
    err = getattr(vendor, "conditional_error", None)
    assert err is None, err
    if backend.name == "cuda" and lane and vendor.conditional_nodes:
        hit = next(iter(sp._binder._table.values()))
        assert hit._cond is not None, "the captured call had no conditional lane"


def test_conditional_names_the_two_passes_of_device_routes_in_batches():
    big = SimpleNamespace(n_rows=R.COND_MIN_ROWS)
    small = SimpleNamespace(n_rows=R.COND_MIN_ROWS - 1)
    # device parameter arrays: phase 1, the tile finalize, the histogram and select passes
    dev = R.Route(True, True, True, True, dev=True)
    assert R.conditional(big, dev) == (2, 3)
    assert R.conditional(small, dev) is None
    # host values: the host knows whether the passes are needed (nucleus routes launch them
    # after the nucleus pass as before), or none are launched
    assert R.conditional(big, R.Route(draw=True, hist=True, select=True, nuc=True,
                                      strided=True)) is None
    assert R.conditional(big, R.Route(hist=True, select=True)) is None
    assert R.conditional(big, R.Route(draw=True, tile=True)) is None
    assert R.conditional(big, R.Route(True, True, True, False, dev=True)) is None


def test_the_body_is_the_two_passes_and_every_counter_takes_the_plans_count(backend):
    if not backend.is_device:
        pytest.skip("kernels: a device backend (sim emulates one)")
    sp = rocsample.Sampler(4, 64, "float32")
    st = sp.stream
    dev = {k: backend.as_array(v, k, st) for k, v in _arrays(LANE).items()}
    route = R.route(sp.plan, R.Host(None, None, None, None))
    sp.prewarm()
    w = sp.plan.views(backend.empty((sp.plan.scratch_bytes,), np.uint8, st))
    x = backend.as_array(np.zeros((4, 64), np.float32), "logits", st)
    u = backend.as_array(np.zeros(4, np.int64), "seed", st)
    ops = R.Operands(x, dev["temperature"], dev["top_k"], dev["top_p"], dev["min_p"], u, u,
                     *sp._outputs, w, False, False, sp._counts, sp._cflag)
    L = R.launches(sp.plan, sp._ns, route, ops)
    body = R.conditional(SimpleNamespace(n_rows=R.COND_MIN_ROWS), route)
    names = [getattr(k, "py_func", k).__name__ for k, _g, _b, _a in L]
    assert [names[j] for j in body] == ["_sample_hist_kernel", "_sample_select_kernel"]
    for j, name in enumerate(names):  # phase 1 counts, the histogram kernel takes it back
        takes = name.startswith(("_sample_partials", "_sample_hist", "_sample_minp"))
        assert (L[j][3][-1] is sp._cflag) == takes, name


def test_rows_needing_the_lane_ask_once_and_the_lane_takes_it_back(backend, monkeypatch):
    if not backend.is_device:
        pytest.skip("kernels: a device backend (sim emulates one)")
    rows, vocab = 4, 64
    small = {"_block": backend.warp_size(), "_splits": 2} if backend.name == "sim" else {}
    st = backend.stream(None)
    x_host = np.random.default_rng(3).standard_normal((rows, vocab)).astype(np.float32)
    x = backend.as_array(x_host, "logits", st)
    seed = backend.as_array(np.arange(rows, dtype=np.int64), "seed", st)
    pos = backend.as_array(np.zeros(rows, np.int64), "position", st)
    full = R.launches
    for values, asked in ((TILE, 0), (LANE, 2)):
        # (a Sampler of its own: both calls below are unbound, so they launch what R.launches
        # gives them)
        sp = rocsample.Sampler(rows, vocab, "float32", **small)
        dev = {k: backend.as_array(v, k, st) for k, v in _arrays(values).items()}
        # phase 1 and the tile finalize alone: the count stays as phase 1 left it
        monkeypatch.setattr(R, "launches", lambda plan, kn, r, o: full(plan, kn, r, o)[:2])
        sp(x, seed=seed, position=pos, check=False, **dev)
        # one request a row with a histogram-path mode (rows 1 and 3), by its last block
        assert int(_host(backend, sp._cflag, st)[0]) == asked
        if asked:  # the gate takes it back too (cond 0: it sets no node)
            sp._ns._lane_gate_kernel[1, 32, st.numba](np.uint64(0), sp._cflag)
            assert int(_host(backend, sp._cflag, st)[0]) == 0
            sp(x, seed=seed, position=pos, check=False, **dev)
            assert int(_host(backend, sp._cflag, st)[0]) == asked
        monkeypatch.setattr(R, "launches", full)
        sp._binder.clear()  # (the second call above bound the truncated launches)
        tok = sp(x, seed=seed, position=pos, check=False, **dev)[0]
        assert int(_host(backend, sp._cflag, st)[0]) == 0   # the histogram kernel's reset
        want, _, _, near = ref.sample_with_margin(x_host, seed=np.arange(rows), position=0,
                                                  **_arrays(values))
        got = _host(backend, tok, st)
        assert not ((got != want) & ~near).any(), (got, want)


@pytest.mark.graph
@pytest.mark.parametrize("min_rows,advance", [(1, False), (1, True), (None, True)])
def test_a_captured_device_route_finishes_every_row_as_the_rows_change(backend, new_stream, rng,
                                                                       monkeypatch, min_rows,
                                                                       advance):
    # (advance: the position advance follows both lanes, the conditional one through an event
    # recorded after its node)
    if not backend.is_device:
        pytest.skip("captures: a device backend (sim emulates one)")
    if min_rows is not None:  # the conditional lane at this batch's 4 rows (None: as routed)
        monkeypatch.setattr(R, "COND_MIN_ROWS", min_rows)
    rows = 4
    vocab = 64 if backend.name == "sim" else 4096
    small = {"_block": backend.warp_size(), "_splits": 2} if backend.name == "sim" else {}
    s = new_stream()
    st = backend.stream(s)
    sp = rocsample.Sampler(rows, vocab, "float32", stream=s, **small)
    params = {k: backend.as_array(v, k, st) for k, v in _arrays(LANE).items()}
    x = backend.as_array(np.zeros((rows, vocab), np.float32), "logits", st)
    seeds = np.arange(rows, dtype=np.int64) + 5
    seed = backend.as_array(seeds, "seed", st)
    pos = backend.as_array(np.zeros(rows, np.int64), "position", st)
    for _ in range(2):  # unbound, then bound: the capture records the bound call
        sp(x, seed=seed, position=pos, advance_position=advance, check=False, **params)
    with graphs.capture(s) as g:
        tok = sp(x, seed=seed, position=pos, advance_position=advance, check=False, **params)[0]
    first = 2 if advance else 0  # the position of the first replay
    _check_capture(backend, sp, lane=min_rows == 1)
    # lane needed, not needed, needed again: the node follows each replay's rows
    order = [LANE, TILE, LANE, TILE, TILE, LANE] if backend.name != "sim" else [TILE, LANE]
    for step, values in enumerate(order):
        host = _arrays(values)
        for k, v in host.items():
            graphs.copy_to_device(params[k], v, s)
        logits = (rng.standard_normal((rows, vocab)) * 2).astype(np.float32)
        graphs.copy_to_device(x, logits, s)
        g.replay(s)
        got = _host(backend, tok, s)
        want, _, _, near = ref.sample_with_margin(logits, seed=seeds,
                                                  position=first + (step if advance else 0),
                                                  **host)
        assert not ((got != want) & ~near).any(), f"replay {step}: got {got}, want {want}"
        assert int(_host(backend, sp._cflag, s)[0]) == 0
    np.testing.assert_array_equal(_host(backend, pos, s),
                                  np.full(rows, first + (len(order) if advance else 0)))
    g.release()


def test_conditional_names_the_two_passes_of_row_strided_nucleus_routes_up_to_a_row_count(
        monkeypatch):
    # host values' nucleus routes whose histogram-path rows are all the pass's (row-strided):
    # the pass asks for each row it leaves, so the two passes may be a conditional node, up to
    # NUC_COND_MAX_ROWS rows (0 by default: no gain at 1 and 8 rows on an H100)
    strided = R.Route(draw=True, hist=True, select=True, nuc=True, strided=True, rank=True)
    four = SimpleNamespace(n_rows=4)
    assert R.NUC_COND_MAX_ROWS == 0 and R.conditional(four, strided) is None
    monkeypatch.setattr(R, "NUC_COND_MAX_ROWS", 4)
    assert R.conditional(four, strided) == (2, 3)   # phase 1, the pass, then the two passes
    tile = R.Route(draw=True, tile=True, hist=True, select=True, nuc=True, strided=True)
    assert R.conditional(four, tile) == (3, 4)
    assert R.conditional(SimpleNamespace(n_rows=5), strided) is None
    # (not row-strided: the call has histogram-path rows the pass does not serve, which phase 1
    # does not ask for when it draws them for the pass; or the finishing form: no passes)
    assert R.conditional(four, R.Route(draw=True, hist=True, select=True, nuc=True)) is None
    assert R.conditional(four, R.Route(draw=True, nuc=True, finish=True)) is None


def _rank_rows(vocab, seed, position):
    """Logits of four top-k-only rows (top_k 2): rows 0 and 2 with two tokens at 40 (one of
    them is the best score: the rank pass decides the row), rows 1 and 3 all 0, so that the top
    2 are tokens 0 and 1, which seed and position put outside the row's four best scores (the
    pass leaves the row to the histogram and select passes)."""
    from rocsample.reference import philox

    g = philox.token_gumbel(np.uint64(seed), np.uint64(position),
                            np.arange(vocab, dtype=np.int64))
    assert not {0, 1} & set(np.argsort(-g, kind="stable")[:4].tolist()), "pick another seed"
    x = np.zeros((4, vocab), np.float32)
    x[0, [5, 9]] = 40.0
    x[2, [3, 7]] = 40.0
    return x


#: a seed whose four best scores at positions 0, 2, 4 and 7 (the first call and the replays
#: below that leave rows) are none of tokens 0 and 1 at both vocabularies of the test
#: (_rank_rows checks it)
_RANK_SEED = 3


@pytest.mark.graph
def test_a_captured_rank_route_runs_its_lane_only_for_the_rows_the_pass_leaves(
        backend, new_stream, rng, monkeypatch):
    # top-k-only rows on the plain rank pass's route (row-strided histogram and select passes
    # after it) with NUC_COND_MAX_ROWS on: the pass asks once for each row it leaves (a call of
    # phase 1 and the pass alone: the count), and a captured call finishes every row, replay
    # after replay, as the logits change between rows the pass decides and rows it leaves (on
    # CUDA the two passes are a conditional node; on sim the count's protocol)
    if not backend.is_device:
        pytest.skip("kernels and captures: a device backend (sim emulates one)")
    monkeypatch.setattr(R, "TILE_KMAX", 1)   # (top_k 2: past the tile path)
    monkeypatch.setattr(R, "NUC_FINISH_VOCAB", 0)   # (the plain pass and its passes)
    monkeypatch.setattr(R, "NUC_COND_MAX_ROWS", 4)
    rows = 4
    vocab = 64 if backend.name == "sim" else 4096
    small = {"_block": backend.warp_size(), "_splits": 2} if backend.name == "sim" else {}
    values = dict(temperature=np.ones(rows, np.float32), top_k=np.full(rows, 2, np.int64))
    s = new_stream()
    st = backend.stream(s)
    full = R.launches
    # phase 1 and the pass alone: one request a row the pass leaves (rows 1 and 3)
    sp = rocsample.Sampler(rows, vocab, "float32", stream=s, **small)
    route = R.route(sp.plan, R.Host(values["temperature"], values["top_k"],
                                    np.ones(rows, np.float32), np.zeros(rows, np.float32)))
    assert route.rank and route.strided and route.top4 and R.conditional(sp.plan, route) == (2, 3)
    x = backend.as_array(_rank_rows(vocab, _RANK_SEED, 0), "logits", st)
    seed = backend.as_array(np.full(rows, _RANK_SEED, np.int64), "seed", st)
    pos = backend.as_array(np.zeros(rows, np.int64), "position", st)
    monkeypatch.setattr(R, "launches", lambda plan, kn, r, o: full(plan, kn, r, o)[:2])
    sp(x, seed=seed, position=pos, check=False, **values)
    assert int(_host(backend, sp._cflag, st)[0]) == 2
    monkeypatch.setattr(R, "launches", full)
    sp._ns._lane_gate_kernel[1, 32, st.numba](np.uint64(0), sp._cflag)   # (back to 0)
    # captured: rows left, none left, left again
    sp = rocsample.Sampler(rows, vocab, "float32", stream=s, **small)
    for _ in range(2):  # unbound, then bound: the capture records the bound call
        sp(x, seed=seed, position=pos, advance_position=True, check=False, **values)
    with graphs.capture(s) as g:
        tok = sp(x, seed=seed, position=pos, advance_position=True, check=False, **values)[0]
    _check_capture(backend, sp, lane=True)
    peaked = np.zeros((rows, vocab), np.float32)
    for r in range(rows):
        peaked[r, [r, 2 * r + 10]] = 40.0
    for step, left in enumerate([True, False, True, False, False, True]):
        position = 2 + step
        logits = _rank_rows(vocab, _RANK_SEED, position) if left else peaked
        graphs.copy_to_device(x, logits, s)
        g.replay(s)
        got = _host(backend, tok, s)
        want = ref.sample(logits, seed=np.full(rows, _RANK_SEED), position=position, **values)
        np.testing.assert_array_equal(got, want, err_msg=f"replay {step}")
        if left:
            assert set(got[[1, 3]].tolist()) <= {0, 1}
        assert int(_host(backend, sp._cflag, s)[0]) == 0
    g.release()
