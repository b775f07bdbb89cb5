"""Device gate: ``python -m rocsample.check --backend hip`` (or ``cuda``).

Prints the device (name, wavefront size, compute units, copy bandwidth measured on it), runs the
device test suite including tests/regress, prints the suite's counts and writes the JSON report
with the verdict INCOMPLETE, runs a short benchmark of greedy, full-chain sampling and set_rows
against that device's measured floor, writes the report again, and ends with one PASS/FAIL line
(a run cut in the benchmark leaves the INCOMPLETE report: not a pass). The report names the tree
(its commit, where it is a git checkout) and every ``ROCSAMPLE_*`` setting in force. It exits
non-zero on any failure, on any skipped device test (only multi-GPU tests on a one-GPU machine
and tests that are CPU walkthroughs by design may skip), or when the backend is unavailable: a
CPU-only skip never counts as passing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent


def _device_info(be, copy_bw: float) -> dict:
    return {
        "backend": be.name,
        "name": be.device_name(),
        "wavefront": be.warp_size(),
        "compute_units": be.compute_units(),
        "devices": be.runtime.device_count(),
        "copy_bandwidth_GBps": round(copy_bw / 1e9, 1),
    }


def _settings() -> dict:
    """The ``ROCSAMPLE_*`` variables in force (but the backend, which the report names): a gate
    run with a knob set (a layout or form not yet the default) says so in its report."""
    return {k: v for k, v in sorted(os.environ.items())
            if k.startswith("ROCSAMPLE_") and k != "ROCSAMPLE_BACKEND"}


def _source() -> dict | None:
    """The tree the gate ran: its commit and whether files differ from it (None outside a git
    checkout, e.g. a copy of the tree without .git)."""
    def git(*a):
        return subprocess.run(["git", *a], cwd=_ROOT, capture_output=True, text=True, timeout=30)
    try:
        head = git("rev-parse", "HEAD")
        if head.returncode != 0:
            return None
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": head.stdout.strip(),
            "modified": bool(dirty.stdout.strip()) if dirty.returncode == 0 else None}


def _jobs(asked: str) -> int:
    """pytest-xdist workers for the suite: ``auto`` is half the cores, at most 8, when xdist is
    installed (numba compiles each kernel signature once per process; the workers share the
    on-disk kernel cache), else 1."""
    if asked != "auto":
        return max(1, int(asked))
    import importlib.util

    if importlib.util.find_spec("xdist") is None:
        return 1
    return max(1, min(8, (os.cpu_count() or 2) // 2))


def _keep_order() -> list[str]:
    """pytest-xdist's flag that hands files out in collection order (tests/conftest.py collects
    the longest first on a GPU backend), where the installed xdist has it: from 3.6 on it
    reorders them by test count unless told not to, and a file of two long tests went last."""
    try:
        import inspect

        import xdist.plugin

        src = inspect.getsource(xdist.plugin)
    except (ImportError, OSError, TypeError):   # no xdist, or no source to read
        return []
    return ["--no-loadscope-reorder"] if "--no-loadscope-reorder" in src else []


def _run_tests(backend: str, junit: Path, extra: list[str], jobs: int = 1) -> dict:
    par = ["-n", str(jobs), "--dist", "loadfile", *_keep_order()] if jobs > 1 else []
    cmd = [sys.executable, "-m", "pytest", "tests", "--backend", backend, "-q", "-p", "no:cacheprovider",
           f"--junitxml={junit}", "-rfEs", "--durations=25", *par, *extra]
    print("$", " ".join(cmd), flush=True)
    t0 = time.time()
    proc = subprocess.run(cmd, cwd=_ROOT, text=True)
    res = {"command": " ".join(cmd), "exit_code": proc.returncode, "seconds": round(time.time() - t0, 1),
           "jobs": jobs}
    try:
        import xml.etree.ElementTree as ET

        root = ET.parse(junit).getroot()
        suite = root if root.tag == "testsuite" else root.find("testsuite")
        for k in ("tests", "failures", "errors", "skipped"):
            res[k] = int(suite.get(k, 0))
        res["skipped_tests"] = [
            f"{tc.get('classname')}::{tc.get('name')}: {sk.get('message', '')}"
            for tc in suite.iter("testcase") for sk in tc.findall("skipped")
        ]
    except Exception as e:  # a crash before the report was written
        res["report_error"] = repr(e)
    return res


def _suite_reasons(tests: dict, bad_skips: list) -> list[str]:
    """Why the suite's result fails the gate (empty: it passes): pytest's exit, skips of device
    tests, no test run."""
    why = []
    code = tests["exit_code"]
    if code < 0:  # killed by a signal: say so, and whether the tests themselves had passed
        ran_ok = tests.get("tests") and not (tests.get("failures") or tests.get("errors"))
        why.append(f"pytest died with signal {-code}" + (" after every test passed" if ran_ok else ""))
    elif code != 0:
        why.append(f"pytest exited {code}")
    if bad_skips:
        why.append(f"{len(bad_skips)} device test(s) skipped")
    if not tests.get("tests"):
        why.append("no test ran")
    return why


def _suite_line(tests: dict, bad_skips: list) -> str:
    """One line of the suite's counts, printed before the closing benchmark."""
    n = {k: tests.get(k, "?") for k in ("tests", "failures", "errors", "skipped")}
    return (f"suite: {n['tests']} tests, {n['failures']} failures, {n['errors']} errors, "
            f"{n['skipped']} skipped ({len(bad_skips)} not allowed), pytest exit "
            f"{tests['exit_code']}, {tests.get('seconds', '?')} s")


def _write(path, report: dict, verdict: str, why: list) -> None:
    report["verdict"] = verdict
    report["reasons"] = list(why)
    Path(path).write_text(json.dumps(report, indent=2))


def _allowed_skip(msg: str) -> bool:
    # Skips that say nothing about this device's health: multi-GPU tests on a one-GPU machine
    # (reported, they cannot run) and tests that are CPU walkthroughs by design ("cpu-only:").
    # Slow tests are not skipped: the gate passes --run-slow.
    return "needs two devices" in msg or "cpu-only:" in msg


def _bench(be, bw: float) -> dict:
    import numpy as np

    import rocsample
    from bench.common import device_time
    rng = np.random.default_rng(0)
    out = {}
    rows, vocab = 64, 151936
    x = be.as_array(rng.standard_normal((rows, vocab)).astype(np.float32), "logits")
    for label, kw in {
        "greedy": dict(temperature=0.0),
        "full_chain": dict(top_k=50, top_p=0.9, min_p=0.05, temperature=0.8),
    }.items():
        sp = rocsample.Sampler(rows, vocab, "float32")
        t = device_time(be, lambda sp=sp, kw=kw: sp(x, seed=1, position=0, check=False, **kw))
        floor = x.nbytes / bw
        out[label] = {"shape": [rows, vocab], "us": round(t * 1e6, 2), "floor_us": round(floor * 1e6, 2),
                      "ratio_to_floor": round(t / floor, 2)}
    dst = be.as_array(np.zeros((1, 1, 65536, 4096), np.float16), "dst")
    src = be.as_array(rng.standard_normal((1, 1, 65536, 4096)).astype(np.float32), "src")
    idx = be.as_array(rng.permutation(65536).astype(np.int64).reshape(1, 1, -1), "idx")
    t = device_time(be, lambda: rocsample.set_rows(dst, src, idx, check_bounds=False), iters=20)
    nbytes = 65536 * 4096 * (4 + 2) + 65536 * 8
    out["set_rows_f16_64k_x_4096"] = {"us": round(t * 1e6, 2), "floor_us": round(nbytes / bw * 1e6, 2),
                                     "ratio_to_floor": round(t / (nbytes / bw), 2)}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rocsample.check", description=__doc__.split("\n")[0])
    ap.add_argument("--backend", required=True, choices=["hip", "cuda"])
    ap.add_argument("--report", default="rocsample-check.json", help="where to write the JSON report")
    ap.add_argument("--quick", action="store_true", help="skip --run-slow tests")
    ap.add_argument("--jobs", default="auto",
                    help="pytest-xdist workers for the device suite (auto: half the cores, <= 8)")
    args = ap.parse_args(argv)
    report: dict = {"backend": args.backend, "python": platform.python_version(),
                    "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "source": _source(), "settings": _settings()}
    if report["settings"]:
        print("settings:", ", ".join(f"{k}={v}" for k, v in report["settings"].items()), flush=True)
    verdict, why = "FAIL", []
    try:
        os.environ["ROCSAMPLE_BACKEND"] = args.backend
        import rocsample

        be = rocsample.use_backend(args.backend)
    except Exception as e:  # BackendUnavailable, with what to install
        report["error"] = f"{type(e).__name__}: {e}"
        print(report["error"])
        why.append("backend unavailable")
    else:
        from bench.common import measure_copy_bandwidth  # only with the source tree

        bw = measure_copy_bandwidth(be)  # once: the device line and the benchmark share it
        info = _device_info(be, bw)
        report["device"] = info
        print("device:", ", ".join(f"{k}={v}" for k, v in info.items()), flush=True)
        junit = Path(args.report).with_suffix(".junit.xml")
        tests = _run_tests(args.backend, junit, [] if args.quick else ["--run-slow"], _jobs(args.jobs))
        report["tests"] = tests
        bad_skips = [s for s in tests.get("skipped_tests", []) if not _allowed_skip(s)]
        report["disallowed_skips"] = bad_skips
        why += _suite_reasons(tests, bad_skips)
        # the suite's verdict before the closing benchmark: a run cut there (a caller's time
        # limit) leaves this report, INCOMPLETE, and the line below in its log
        print(_suite_line(tests, bad_skips), flush=True)
        _write(args.report, report, "INCOMPLETE", why + ["the closing benchmark did not finish"])
        try:
            report["benchmark"] = _bench(be, bw)
            for k, v in report["benchmark"].items():
                print(f"bench {k}: {v}")
        except Exception as e:
            report["benchmark_error"] = f"{type(e).__name__}: {e}"
            why.append("benchmark failed")
        if not why:
            verdict = "PASS"
    _write(args.report, report, verdict, why)
    print(f"{verdict}: rocsample on {args.backend}" + (f" ({'; '.join(why)})" if why else "")
          + f" — report {args.report}")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
