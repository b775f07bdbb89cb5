"""Regression: the simulator could give two threads of one block different shared arrays.

What broke: numba-cuda's simulator keys a block's ``cuda.shared.array`` by the calling source line
and creates it on first use, but looks the key up and stores the new array without a lock. Two
threads reaching the line together each made their own ``np.empty`` array, so the fast finalize
kernel once read its tile list back as garbage and indexed the logits at -1879213551 (CI, sim,
``test_topk_chains_match_reference[temperature1.1-top_k9-top_p0.6-llama]``). The sim backend now
serialises the lookup and the creation.

The test makes the creation slow (a dtype whose conversion sleeps, releasing the GIL), so without
the lock every thread would see no array yet and make its own.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest


class _SlowDtype:
    @property
    def dtype(self):
        time.sleep(0.02)
        return np.dtype(np.int32)


def test_threads_reaching_one_shared_array_line_together_share_one_array(backend):
    if backend.name != "sim":
        pytest.skip("cpu-only: the simulator's shared arrays (--backend sim)")
    from numba.cuda.simulator import kernelapi

    from rocsample.backends.sim import serialise_shared_arrays

    serialise_shared_arrays()
    shared = kernelapi.FakeCUDAShared(0)
    n = 8
    got = [None] * n
    start = threading.Barrier(n)

    def thread(t):
        start.wait()
        got[t] = shared.array(16, _SlowDtype())  # one source line, as in a kernel

    ts = [threading.Thread(target=thread, args=(t,)) for t in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert all(a is got[0] for a in got), f"{len({id(a) for a in got})} arrays for one line"
    assert got[0].dtype == np.int32 and got[0].shape == (16,)


def test_serialised_shared_arrays_keep_the_simulators_behaviour(backend):
    if backend.name != "sim":
        pytest.skip("cpu-only: the simulator's shared arrays (--backend sim)")
    from numba.cuda.simulator import kernelapi

    shared = kernelapi.FakeCUDAShared(64)
    a = shared.array(4, np.float64)
    b = shared.array(4, np.float64)  # another line: another array
    assert a is not b and a.dtype == np.float64
    dyn = shared.array(0, np.dtype(np.int32))  # dynamic shared memory: the whole buffer
    assert dyn.shape == (16,)
