"""Regression: threads launching a kernel for the first time at once failed in numba-cuda.

What broke (tests/regress/test_sim_concurrent_launches.py on an H200, numba-cuda 0.30.4): two
threads' first launches of the same kernel both missed numba's per-library function cache and
both loaded the library into the context; the driver returned the same CUlibrary and numba's
module table (a UniqueDict) raised "AssertionError: key already in dictionary: <CUlibrary ...>"
in the second thread. The cuda backend now serialises ``CUDACodeLibrary.get_cufunc``
(rocsample.backends.cuda.serialize_module_loads).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]

# numba-cuda's real codegen module (no GPU needed to import it), with get_cufunc replaced by a
# slow stand-in that counts the threads inside it at once
_CHILD = textwrap.dedent("""
    import threading, time
    from numba.cuda import codegen
    inside, most, lock = [0], [0], threading.Lock()
    def slow(self):
        with lock:
            inside[0] += 1; most[0] = max(most[0], inside[0])
        time.sleep(0.02)
        with lock:
            inside[0] -= 1
        return "cufunc"
    codegen.CUDACodeLibrary.get_cufunc = slow
    from rocsample.backends import cuda as c
    c.serialize_module_loads()
    c.serialize_module_loads()  # once: not wrapped twice
    assert codegen.CUDACodeLibrary.get_cufunc.__wrapped__ is slow
    ts = [threading.Thread(target=codegen.CUDACodeLibrary.get_cufunc, args=(object(),))
          for _ in range(8)]
    [t.start() for t in ts]; [t.join() for t in ts]
    print(most[0])
""")


def test_get_cufunc_runs_one_thread_at_a_time():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = str(ROOT)
    r = subprocess.run([sys.executable, "-c", _CHILD], env=env, cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0 and "No module named 'numba.cuda" in r.stderr:
        pytest.skip("cpu-only: numba-cuda is not installed here")
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split()[-1] == "1"


def test_first_launches_from_eight_threads(backend):
    if backend.name != "cuda":
        pytest.skip("cpu-only: on cuda it launches a fresh kernel from eight threads at once")
    from numba import cuda

    @cuda.jit
    def fresh(a):  # a kernel no other test launched: its library is not loaded yet
        i = cuda.grid(1)
        if i < a.size:
            a[i] = i * 3

    arrs = [cuda.device_array(64, np.int64) for _ in range(8)]
    barrier, errors = threading.Barrier(8), []

    def work(a):
        try:
            barrier.wait()
            fresh[1, 64](a)
            cuda.synchronize()
        except Exception as e:  # reported below
            errors.append(f"{type(e).__name__}: {e}")

    ts = [threading.Thread(target=work, args=(a,)) for a in arrs]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []
    for a in arrs:
        np.testing.assert_array_equal(a.copy_to_host(), np.arange(64) * 3)
