"""Time to first token in a fresh process: cold (empty JIT cache) and warm (issue #6).

Each run is ``python -c 'import rocsample; rocsample.sample(...)'`` on a 1 x 151936 float32 row
with the full filter chain, timed from process start to the token on the host, import included.
Cold uses an empty ``NUMBA_CACHE_DIR``; warm reuses the cache the cold run filled.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import pytest

_CODE = (
    "import numpy as np, rocsample\n"
    "x = np.random.default_rng(0).standard_normal((1, 151936)).astype(np.float32)\n"
    "t = rocsample.sample(x, seed=1, position=0, top_k=50, top_p=0.9, min_p=0.05, temperature=0.8)\n"
    "print(int(np.asarray(rocsample.get_backend().to_host(t) if rocsample.get_backend().is_device else t)[0]))\n"
)


def _run(cache_dir: str, backend: str) -> tuple[float, str]:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, ROCSAMPLE_BACKEND=backend)
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", _CODE], env=env, capture_output=True, text=True, timeout=600)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])
    return dt, r.stdout.strip()


def test_time_to_first_token(benchmark, backend):
    if not backend.is_device or backend.name == "sim":
        pytest.skip("needs a GPU backend")
    with tempfile.TemporaryDirectory() as d:
        cold, tok_cold = _run(d, backend.name)
        warm_runs = []

        def warm():
            dt, tok = _run(d, backend.name)
            warm_runs.append(dt)
            if tok != tok_cold:
                raise RuntimeError(f"warm token {tok} differs from cold {tok_cold}")

        benchmark.group = "time to first token"
        benchmark.pedantic(warm, rounds=3, iterations=1)
    benchmark.extra_info.update(cold_s=cold, warm_s_median=sorted(warm_runs)[len(warm_runs) // 2],
                                impl="rocsample.sample full chain, new process, import included")
