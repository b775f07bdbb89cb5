"""The lane loop that both ``GpuBackend.forked`` (two lanes joined by events) and
``GpuBackend.conditional`` (the same, with a conditional node in place of a lane's launches)
run, laid out by ``GpuBackend._lanes``: what it asks of the driver, in order, without a GPU."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rocsample.backends.gpu import GpuBackend, _run_lanes

MAIN, SIDE = "main", 7
EVS = ("ev0", "ev1", "ev2", "ev3", "ev4", "join")


def _run(after, at=(), fail=None, n=None):
    log = []

    def call(name, *args):
        log.append((name, *args[:2]))

    def fn_of(k):
        def fn(*args):
            # the stream argument (the ninth) says which lane the launch went to
            log.append(("launch", k) if args[8] is None else ("launch", k, args[8].value))
            return 700 if k == fail else 0
        return fn

    n = len(after) if n is None else n
    # DriverBound's native form: (the launch function, its arguments, the stream the ninth)
    bounds = [SimpleNamespace(native=(fn_of(k), (k,) * 8 + (None,))) for k in range(n)]
    be = SimpleNamespace(fork_streams=lambda stream: (SIDE, EVS))
    lanes = GpuBackend._lanes(be, bounds, after, None)
    _run_lanes(call, "cuLaunchKernel", MAIN, lanes, at, lambda on: log.append(("node", on)))
    return log


# phase 1, then the tile finalize on lane 0 beside the histogram and select passes on lane 1,
# then a launch that follows both (the position advance)
FORK = ((0, ()), (0, (0,)), (1, (0,)), (1, (2,)), (0, (1, 3)))


def test_forked_lanes_wait_for_the_other_lane_and_join_back():
    assert _run(FORK) == [
        ("launch", 0), ("cuEventRecord", "ev0", MAIN),
        ("launch", 1),
        ("cuStreamWaitEvent", SIDE, "ev0"), ("launch", 2, SIDE),
        ("launch", 3, SIDE), ("cuEventRecord", "ev3", SIDE),
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
    # after=None: a chain, which _lanes lays out on the calling stream alone
    assert _run(None, n=4) == [("launch", k) for k in range(4)]
    assert _run(None, at=(1, 2), n=4) == [("launch", 0), ("node", MAIN), ("launch", 3)]


def test_a_chain_given_as_none_is_every_launch_after_the_one_before():
    bounds = [SimpleNamespace(native=(None, (k,) * 9)) for k in range(3)]
    after, _calls, lanes, cross, side, evs = GpuBackend._lanes(
        SimpleNamespace(fork_streams=None), bounds, None, None)
    assert after == ((0, ()), (0, (0,)), (0, (1,))) and lanes == [0, 0, 0]
    assert cross == set() and side is None and evs == ()


def test_no_side_stream_to_be_had_lays_out_nothing():
    bounds = [SimpleNamespace(native=(None, (k,) * 9)) for k in range(2)]
    be = SimpleNamespace(fork_streams=lambda stream: None)
    assert GpuBackend._lanes(be, bounds, FORK[:2], None) is None


def test_a_failed_launch_names_the_launch_call_and_the_error():
    with pytest.raises(RuntimeError, match="cuLaunchKernel failed: error 700"):
        _run(FORK, fail=1)
