"""pytest-benchmark suites: ``make bench`` (or ``pytest bench --backend cuda --benchmark-only``).

Each benchmark times the operation *to a finished result* (launch + synchronize), with peers
(PyTorch where installed, the NumPy reference) on the same inputs in the same run, and records in
``extra_info``: bytes moved, effective GB/s, the memory floor (bytes / measured device copy
bandwidth) and the ratio to it, plus two GPU figures for rocsample and each peer alike
(``bench/common.py``): ``gpu_us`` from device events around replays of 20 calls captured into one
graph (``gpu_method`` says when a peer could not be captured) and ``eager_us`` from events around
back-to-back eager calls, host launch path included.
"""

from __future__ import annotations

import os

import pytest


def pytest_benchmark_generate_machine_info(config):
    """pytest-benchmark's machine info without py-cpuinfo, which runs a Python subprocess that
    took past a 60 s limit on the lent H200 once (its run's results were lost with it): the
    same fields, the CPU as the platform and /proc/cpuinfo name it."""
    import platform

    cpu = {"arch": platform.machine(), "count": os.cpu_count(), "brand_raw": platform.processor()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu["brand_raw"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"node": platform.node(), "processor": platform.processor(),
            "machine": platform.machine(), "python_compiler": platform.python_compiler(),
            "python_implementation": platform.python_implementation(),
            "python_implementation_version": platform.python_version(),
            "python_version": platform.python_version(), "python_build": platform.python_build(),
            "release": platform.release(), "system": platform.system(), "cpu": cpu}


def pytest_addoption(parser):
    parser.addoption("--backend", default=os.environ.get("ROCSAMPLE_BACKEND", ""),
                     help="backend to benchmark (default: auto)")
    parser.addoption("--bench-quick", action="store_true", help="fewer shapes (CI smoke)")
    parser.addoption("--bench-shapes", choices=["all", "quick", "rest"], default=None,
                     help="sampling shapes: all (default), quick (as --bench-quick) or rest (all but "
                          "the quick ones: the second half of a time-limited run)")
    parser.addoption("--bench-drop-data", action="store_true",
                     help="leave the per-round timings out of the JSON (smaller files; the "
                          "statistics stay)")


def pytest_configure(config):
    name = config.getoption("--backend")
    if name:
        os.environ["ROCSAMPLE_BACKEND"] = name
        if name == "sim":
            os.environ["NUMBA_ENABLE_CUDASIM"] = "1"


@pytest.fixture(scope="session")
def backend():
    import rocsample

    return rocsample.get_backend()


@pytest.fixture(scope="session")
def copy_bandwidth(backend):
    """Measured device copy bandwidth in bytes/s (read + write), the floor's denominator."""
    from .common import measure_copy_bandwidth

    return measure_copy_bandwidth(backend)


def pytest_benchmark_update_json(config, benchmarks, output_json):
    """``--bench-drop-data``: no per-round list in the JSON (a long run's file stays small)."""
    if config.getoption("--bench-drop-data"):
        for b in output_json.get("benchmarks", []):
            (b.get("stats") or {}).pop("data", None)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    """A run stopped by SIGINT (``timeout -s INT``, tools/gpu/bench.sh) leaves the benchmark it was
    in with no rounds, on which pytest-benchmark's JSON writer fails and writes nothing: drop such
    entries first, so the finished benchmarks are saved."""
    bs = getattr(session.config, "_benchmarksession", None)
    if bs is not None and getattr(bs, "benchmarks", None) is not None:
        bs.benchmarks[:] = [b for b in bs.benchmarks
                            if getattr(getattr(b, "stats", None), "data", None)]
    yield
