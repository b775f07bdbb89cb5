"""Regression: ``make test`` took 47 minutes on CI's two cores (its limit is 30).

What broke (CI on c6badf9: 2812 s): two thirds of it were the sim runs (the suite 908 s and the
wave64 kernel tests 958 s on this machine). numba-cuda's simulator starts a block's threads and
then polls them in a busy loop (``BlockManager.run``) until all wait in ``syncthreads`` or are
done, rebuilding its set of live threads with ``is_alive`` on every pass; the poller held the GIL
for most of each switch interval while the block's threads waited for it at every barrier. A
test fixture that shortened the switch interval only halved that. The sim backend now runs each
block's barrier on a condition variable (``rocsample.backends.sim.event_driven_blocks``) and the
launch only joins the threads: the sim suite took 332 s and the wave64 tests 235 s.

This counts the ``is_alive`` calls of a launch with three barriers a thread: the poller made
thousands, the joined launch makes none. (No timing: tests/backends/test_sim_blocks.py holds the
barrier's semantics.)
"""

from __future__ import annotations

import numpy as np
import pytest

from rocsample.backends import sim as S


def test_a_simulated_launch_never_polls_its_threads(backend, monkeypatch):
    if backend.name != "sim":
        pytest.skip("cpu-only: the simulator's blocks (--backend sim)")
    from numba.cuda.simulator import kernel as kernel_mod

    cuda = backend.cuda
    calls = [0]
    is_alive = kernel_mod.BlockThread.is_alive

    def counted(self):
        calls[0] += 1
        return is_alive(self)

    monkeypatch.setattr(kernel_mod.BlockThread, "is_alive", counted)

    @cuda.jit
    def k(out):
        sh = cuda.shared.array(64, np.int64)
        t = cuda.threadIdx.x
        sh[t] = t
        cuda.syncthreads()
        v = sh[63 - t]
        cuda.syncthreads()
        sh[t] = v * 2
        cuda.syncthreads()
        out[cuda.blockIdx.x, t] = sh[t]

    out = np.zeros((4, 64), np.int64)
    with S._LAUNCH_LOCK:
        k[4, 64](out)
    np.testing.assert_array_equal(out, np.broadcast_to(2 * (63 - np.arange(64)), out.shape))
    assert calls[0] == 0, f"the launch polled its threads ({calls[0]} is_alive calls)"
