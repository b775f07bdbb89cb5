"""The sim backend's simulated blocks (``rocsample.backends.sim.event_driven_blocks``): its
barrier on a condition variable keeps the simulator's ``syncthreads`` semantics, with no poller.

Each test launches a kernel of its own through the simulator, so only ``--backend sim`` runs
them."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from rocsample.backends import sim as S


@pytest.fixture
def cuda(backend):
    if backend.name != "sim":
        pytest.skip("cpu-only: the simulator's blocks (--backend sim)")
    return backend.cuda


def _launch(kernel, grid, block, *args):
    with S._LAUNCH_LOCK:   # (the simulator runs one kernel at a time)
        kernel[grid, block](*args)


def test_the_simulator_runs_the_event_driven_blocks(cuda):
    from numba.cuda.simulator import kernel as kernel_mod

    assert getattr(kernel_mod.BlockManager.run, "_rocsample_events", False)
    assert getattr(kernel_mod.BlockThread.syncthreads, "_rocsample_events", False)


def test_a_barrier_waits_for_the_slowest_thread(cuda):
    # thread 0 works long before it writes; every other thread reads after the barrier (an early
    # release would read the -1 left in shared memory before the write)
    @cuda.jit
    def k(out):
        sh = cuda.shared.array(1, np.int64)
        t = cuda.threadIdx.x
        if t == 0:
            sh[0] = -1
        cuda.syncthreads()
        if t == 0:
            acc = 0
            for i in range(20000):
                acc += i
            sh[0] = acc + cuda.blockIdx.x
        cuda.syncthreads()
        out[cuda.blockIdx.x, t] = sh[0]

    out = np.zeros((3, 64), np.int64)
    _launch(k, 3, 64, out)
    want = sum(range(20000)) + np.arange(3)[:, None]
    np.testing.assert_array_equal(out, np.broadcast_to(want, out.shape))


def test_threads_that_return_leave_the_barrier(cuda):
    # the upper threads return at once; the others meet at three barriers (a tree sum of theirs)
    @cuda.jit
    def k(out):
        sh = cuda.shared.array(64, np.int64)
        t = cuda.threadIdx.x
        if t >= 40:
            return
        sh[t] = t + 1
        cuda.syncthreads()
        s = 32
        while s >= 1:
            if t < s and t + s < 40:
                sh[t] += sh[t + s]
            cuda.syncthreads()
            s //= 2
        if t == 0:
            out[cuda.blockIdx.x] = sh[0]

    out = np.zeros(2, np.int64)
    _launch(k, 2, 64, out)
    assert list(out) == [sum(range(1, 41))] * 2


def test_syncthreads_count_and_or_see_every_thread(cuda):
    @cuda.jit
    def k(out):
        t = cuda.threadIdx.x
        out[0] = cuda.syncthreads_count(t % 3 == 0)
        out[1] = cuda.syncthreads_or(t == 47)
        out[2] = cuda.syncthreads_and(t < 47)

    out = np.full(3, -1, np.int64)
    _launch(k, 1, 64, out)
    assert list(out) == [22, 1, 0]


def test_an_exception_fails_the_launch_and_stops_its_block(cuda):
    # thread 5 of block 1 indexes out of bounds while the others wait at a barrier: the launch
    # raises that thread's error (naming it) and leaves no simulated thread behind; the next
    # launch runs normally
    @cuda.jit
    def k(a, out):
        t = cuda.threadIdx.x
        if cuda.blockIdx.x == 1 and t == 5:
            out[t] = a[a.shape[0] + t]
        cuda.syncthreads()
        out[t] = t

    before = threading.active_count()
    a = np.zeros(4, np.int64)
    out = np.zeros(32, np.int64)
    with pytest.raises(IndexError, match=r"tid=\[5, 0, 0\] ctaid=\[1, 0, 0\]"):
        _launch(k, 3, 32, a, out)
    assert threading.active_count() == before
    out = np.zeros(32, np.int64)
    _launch(k, 1, 32, a, out)
    assert list(out) == list(range(32))
