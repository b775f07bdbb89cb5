"""Benchmark tracking (``make bench`` / ``make bench-compare``): pytest-benchmark runs saved per machine.

``python -m bench.track save [pytest args]``
    Runs the suites with ``--benchmark-autosave --benchmark-storage=file://bench/results/<machine>``
    (plus ``--benchmark-json=bench/results/<machine>.json`` for ``bench.report`` / ``bench.plot``).
    pytest-benchmark numbers the saved runs (``<machine>/<interpreter id>/0001_<commit>_<date>.json``).
``python -m bench.track compare [--baseline NNNN] [--threshold 10] [pytest args]``
    Runs the suites again and compares them with a saved run (the latest saved one, or NNNN)
    through ``--benchmark-compare`` and ``--benchmark-compare-fail=median:<threshold>%``: the run
    fails when any benchmark's median is more than the threshold slower than the baseline's.
    It saves nothing, so the baseline stays the one you chose.
``python -m bench.track name``
    Prints the machine name: the backend's device name as a slug (``nvidia-h200``,
    ``cpu-x86-64``...), for the backend ``--backend`` / ``ROCSAMPLE_BACKEND`` selects.

The figures compared are pytest-benchmark's own: one call to a finished result (launch +
synchronize) per round; ``--benchmark-max-time`` / ``--benchmark-min-rounds`` in the pytest args
set the rounds (``BENCH_ARGS`` in the Makefile).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

RESULTS = Path("bench/results")


def _backend_arg(args: list[str]) -> str | None:
    for i, a in enumerate(args):
        if a == "--backend" and i + 1 < len(args):
            return args[i + 1]
        if a.startswith("--backend="):
            return a.split("=", 1)[1]
    return None


def machine_name(backend: str | None = None) -> str:
    """The device name of ``backend`` (default: rocsample's choice) as a lowercase slug."""
    if backend:
        os.environ["ROCSAMPLE_BACKEND"] = backend
        if backend == "sim":
            os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    import rocsample

    be = rocsample.get_backend()
    return re.sub("[^a-z0-9]+", "-", be.device_name().lower()).strip("-") or be.name


def save_args(machine: str, results: Path = RESULTS) -> list[str]:
    return ["--benchmark-autosave", f"--benchmark-storage=file://{results / machine}",
            f"--benchmark-json={results / machine}.json"]


def compare_args(machine: str, baseline: str | None, threshold: float,
                 results: Path = RESULTS) -> list[str]:
    cmp = "--benchmark-compare" + (f"={baseline}" if baseline else "")
    return [f"--benchmark-storage=file://{results / machine}", cmp,
            f"--benchmark-compare-fail=median:{threshold:g}%"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.track", description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=["save", "compare", "name"])
    ap.add_argument("--baseline", help="saved run number to compare with (default: the latest)")
    ap.add_argument("--threshold", type=float, default=10.0, help="allowed median slowdown, percent")
    ap.add_argument("--results", type=Path, default=RESULTS, help="results folder (default bench/results)")
    ns, pytest_args = ap.parse_known_args(argv)
    if pytest_args[:1] == ["--"]:
        pytest_args = pytest_args[1:]
    machine = machine_name(_backend_arg(pytest_args))
    if ns.action == "name":
        print(machine)
        return 0
    ns.results.mkdir(parents=True, exist_ok=True)
    extra = (save_args(machine, ns.results) if ns.action == "save"
             else compare_args(machine, ns.baseline, ns.threshold, ns.results))
    if not any(Path(a.split("::")[0]).exists() for a in pytest_args if not a.startswith("-")):
        pytest_args = ["bench", *pytest_args]  # no test path given: every suite
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *extra, *pytest_args]
    print("+", " ".join(cmd), flush=True)
    return subprocess.call(cmd)


if __name__ == "__main__":
    raise SystemExit(main())
