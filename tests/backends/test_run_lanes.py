"""The lane loop that both ``GpuBackend.forked`` (two lanes joined by events) and
``GpuBackend.conditional`` (the same, with a conditional node in place of a lane's launches)
run: what it asks of the driver, in order, without a GPU."""

from __future__ import annotations

import pytest

from rocsample.backends.gpu import _run_lanes

MAIN, SIDE = "main", "side"
EVS = ("ev0", "ev1", "ev2", "ev3", "ev4", "join")


def _layout(after):
    lanes = [a[0] for a in after]
    calls = [(None, k) for k in range(len(after))]
    cross = {d for k, (lane, ds) in enumerate(after) for d in ds if lanes[d] != lane}
    side = SIDE if any(lanes) else None
    return after, calls, lanes, cross, side, EVS if side else ()


def _recorder(log):
    def call(name, *args):
        log.append((name, *args[:2]))

    def fn_of(k):
        def fn(*_a):
            log.append(("launch", k))
            return 0
        return fn
    return call, fn_of


def _run(after, at=(), fail=None):
    log = []
    call, fn_of = _recorder(log)
    after_, calls, lanes, cross, side, evs = _layout(after)
    calls = [(fn_of(k) if k != fail else (lambda *_a: 700), (k,)) for k in range(len(after))]
    _run_lanes(call, "cuLaunchKernel", MAIN, (after_, calls, lanes, cross, side, evs), at,
               lambda on: log.append(("node", on)))
    return log


# phase 1, then the tile finalize on lane 0 beside the histogram and select passes on lane 1,
# then a launch that follows both (the position advance)
FORK = ((0, ()), (0, (0,)), (1, (0,)), (1, (2,)), (0, (1, 3)))


def test_forked_lanes_wait_for_the_other_lane_and_join_back():
    assert _run(FORK) == [
        ("launch", 0), ("cuEventRecord", "ev0", MAIN),
        ("launch", 1),
        ("cuStreamWaitEvent", SIDE, "ev0"), ("launch", 2),
        ("launch", 3), ("cuEventRecord", "ev3", SIDE),
        ("cuStreamWaitEvent", MAIN, "ev3"), ("launch", 4),
        ("cuEventRecord", "join", SIDE), ("cuStreamWaitEvent", MAIN, "join")]


def test_a_conditional_lane_is_one_node_where_its_first_launch_was():
    log = _run(FORK, at=(2, 3))
    assert log == [
        ("launch", 0), ("cuEventRecord", "ev0", MAIN),
        ("launch", 1),
        ("cuStreamWaitEvent", SIDE, "ev0"), ("node", SIDE),
        ("cuEventRecord", "ev3", SIDE),
        ("cuStreamWaitEvent", MAIN, "ev3"), ("launch", 4),
        ("cuEventRecord", "join", SIDE), ("cuStreamWaitEvent", MAIN, "join")]


def test_a_chain_has_no_side_stream_and_no_events():
    chain = ((0, ()), (0, (0,)), (0, (1,)), (0, (2,)))
    assert _run(chain) == [("launch", k) for k in range(4)]
    assert _run(chain, at=(1, 2)) == [("launch", 0), ("node", MAIN), ("launch", 3)]


def test_a_failed_launch_names_the_launch_call_and_the_error():
    with pytest.raises(RuntimeError, match="cuLaunchKernel failed: error 700"):
        _run(FORK, fail=1)
