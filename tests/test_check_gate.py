"""The device gate's verdict rules (issue #7): unavailable backend and skips fail it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from rocsample.check import _allowed_skip


def test_hip_without_rocm_fails_with_the_actionable_message(tmp_path, backend):
    if backend.name == "hip":
        return
    report = tmp_path / "r.json"
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_ENABLE_CUDASIM", "ROCSAMPLE_BACKEND")}
    r = subprocess.run([sys.executable, "-m", "rocsample.check", "--backend", "hip", "--report", str(report)],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode != 0
    assert "BackendUnavailable: hip:" in r.stdout and "install ROCm >= 7.2" in r.stdout, r.stdout + r.stderr
    assert r.stdout.strip().splitlines()[-1].startswith("FAIL: rocsample on hip")
    data = json.loads(report.read_text())
    assert data["verdict"] == "FAIL" and data["reasons"] == ["backend unavailable"]


def test_only_skips_that_say_nothing_about_the_device_are_allowed():
    assert _allowed_skip("tests/x::t: needs two devices (two H200s on cuda; emulated on cpu/sim)")
    assert _allowed_skip("tests/examples::t: cpu-only: examples/tour.ipynb is a CPU tour")
    assert not _allowed_skip("tests/k::t: slow: pass --run-slow")
    assert not _allowed_skip("tests/r::t: could not import 'gguf'")


def test_the_report_names_the_tree_and_the_settings_in_force(tmp_path, backend):
    # (through the hip refusal, which writes its report at once on a machine without ROCm)
    if backend.name == "hip":
        return
    report = tmp_path / "r.json"
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_ENABLE_CUDASIM", "ROCSAMPLE_BACKEND") and not k.startswith("ROCSAMPLE_")}
    env["ROCSAMPLE_DRAW_FILL_CHUNK"] = "500"
    r = subprocess.run([sys.executable, "-m", "rocsample.check", "--backend", "hip", "--report", str(report)],
                       capture_output=True, text=True, timeout=300, env=env)
    assert "settings: ROCSAMPLE_DRAW_FILL_CHUNK=500" in r.stdout, r.stdout + r.stderr
    data = json.loads(report.read_text())
    assert data["settings"] == {"ROCSAMPLE_DRAW_FILL_CHUNK": "500"}
    src = data["source"]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    except OSError:  # no git on the machine
        head = None
    if head is not None and head.returncode == 0:
        assert src["commit"] == head.stdout.strip() and src["modified"] in (True, False)
    else:  # a copy of the tree without .git, or no git
        assert src is None
