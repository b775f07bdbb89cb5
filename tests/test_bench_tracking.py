"""``make bench`` / ``make bench-compare`` (bench/track.py): a saved run is the baseline, and a
comparison fails on a median regression beyond the threshold.

No timing decides the outcome: one tiny benchmark (the NumPy reference, greedy, 1 x 32000, on
the cpu backend) is saved, then its saved statistics are scaled by 0.01 (the baseline "was" 100x
faster: the comparison must fail) or by 100 (100x slower: it must pass), far outside any noise.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _child_env():
    """This process's environment for a child pytest, without pytest-xdist's worker variables
    (under `-n`, a child that inherits them acts as a worker: pytest-benchmark saves nothing)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "PYTEST_CURRENT"))}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    return env
SELECT = ["bench/test_sampling.py", "--backend", "cpu", "-q", "-k", "reference_peer and greedy",
          "--benchmark-max-time=0.05", "--benchmark-min-rounds=3"]


def _track(*args, results):
    env = _child_env()
    env.pop("ROCSAMPLE_BACKEND", None)
    return subprocess.run([sys.executable, "-m", "bench.track", *args, "--results", str(results),
                           "--", *SELECT], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)


def _scale_saved(saved: Path, original: dict, factor: float) -> None:
    d = json.loads(json.dumps(original))
    for b in d["benchmarks"]:
        for k in ("min", "max", "mean", "median", "q1", "q3", "iqr", "stddev", "total", "ld15iqr",
                  "hd15iqr"):
            if isinstance(b["stats"].get(k), (int, float)):
                b["stats"][k] *= factor
        if "data" in b["stats"]:
            b["stats"]["data"] = [v * factor for v in b["stats"]["data"]]
    saved.write_text(json.dumps(d))


def test_compare_fails_on_regression_and_passes_otherwise(backend, tmp_path):
    if backend.name != "cpu":
        pytest.skip("cpu-only: runs the cpu backend in subprocesses; once per suite run is enough")
    pytest.importorskip("pytest_benchmark")
    r = _track("save", results=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    saved = sorted(tmp_path.glob("*/*/0001_*.json"))
    assert len(saved) == 1, list(tmp_path.rglob("*"))
    assert saved[0].parent.parent.name == "cpu-x86-64" or saved[0].parent.parent.name.startswith("cpu")
    original = json.loads(saved[0].read_text())
    assert [b["name"] for b in original["benchmarks"]] == ["test_reference_peer[greedy]"]

    _scale_saved(saved[0], original, 0.01)
    r = _track("compare", "--threshold", "10", results=tmp_path)
    assert r.returncode != 0, "a 100x median regression passed the comparison:\n" + r.stdout[-2000:]
    assert "median" in (r.stdout + r.stderr).lower()

    _scale_saved(saved[0], original, 100.0)
    r = _track("compare", "--threshold", "10", "--baseline", "0001", results=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert len(sorted(tmp_path.glob("*/*/*.json"))) == 1, "compare must not save a new run"


_CONFTEST = "from bench.conftest import pytest_sessionfinish  # noqa: F401  (the hook under test)\n"
_INTERRUPTED = '''
import pytest


@pytest.mark.parametrize("i", range(3))
def test_done(benchmark, i):
    benchmark.pedantic(lambda: None, rounds=2, iterations=1)


def test_interrupted(benchmark):
    def stop():
        raise KeyboardInterrupt  # what timeout -s INT does in the middle of a benchmark
    benchmark.pedantic(stop, rounds=2, iterations=1)


def test_never_reached(benchmark):
    benchmark.pedantic(lambda: None, rounds=2, iterations=1)
'''


def test_interrupted_run_still_writes_finished_benchmarks(backend, tmp_path):
    """tools/gpu/bench.sh stops a step with SIGINT: the benchmarks finished before it must reach
    the JSON (pytest-benchmark alone writes nothing: the interrupted entry has no rounds)."""
    if backend.name != "cpu":
        pytest.skip("cpu-only: a pytest subprocess with no backend; once per suite run is enough")
    pytest.importorskip("pytest_benchmark")
    (tmp_path / "conftest.py").write_text(_CONFTEST)
    (tmp_path / "test_interrupted.py").write_text(_INTERRUPTED)
    out = tmp_path / "out.json"
    env = _child_env()
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        f"--rootdir={tmp_path}", f"--benchmark-json={out}",
                        str(tmp_path / "test_interrupted.py")],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr[-2000:]  # pytest's "interrupted"
    names = [b["name"] for b in json.loads(out.read_text())["benchmarks"]]
    assert names == [f"test_done[{i}]" for i in range(3)], names
