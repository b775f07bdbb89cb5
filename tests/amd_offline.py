"""The offline AMD compile the gfx1151 regression tests share (no GPU involved).

``TOOLCHAIN_SKIP`` skips a test where the toolchain of ``tools/amd/setup.sh`` is missing (``make
check-amd-offline`` builds it). ``compile_recorded(tmp_path, calls, keep)`` runs the Python source
``calls`` on the simulator after ``RECORD``'s lines (NumPy as ``np``, ``rocsample`` on the sim
backend as ``be``, every launch's kernel signature recorded by tools/kernel_sigs.py), keeps the
records whose kernel name ``keep`` accepts, and compiles them for gfx1151
with ``tools/amd/compile_check.py`` (the gate's code-object cache); it returns the kernel names
kept and asserts that every one compiled and passed the checks (no private segment among them).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).parents[1]
AMD_HOME = pathlib.Path(os.environ.get("ROCSAMPLE_AMD_HOME") or pathlib.Path(
    os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "rocsample" / "amd-toolchain")


def _toolchain() -> bool:
    return (AMD_HOME / "env.sh").is_file() and (AMD_HOME / "venv" / "bin" / "python").is_file()


TOOLCHAIN_SKIP = pytest.mark.skipif(
    not _toolchain(), reason=f"cpu-only: an offline AMD compile (no GPU involved) with the "
    f"toolchain in {AMD_HOME}, which make check-amd-offline builds")


#: The recording run's first lines (argv: the repository root, the record's path).
RECORD = r"""
import importlib, importlib.util, os, sys
os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
import numpy as np
import rocsample
rocsample.use_backend("sim")
spec = importlib.util.spec_from_file_location("kernel_sigs", sys.argv[1] + "/tools/kernel_sigs.py")
ks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ks)
be = rocsample.get_backend()
ks.install(be, sys.argv[2])
"""


def compile_recorded(tmp_path, calls: str, keep) -> list[str]:
    record = RECORD + calls
    rec = tmp_path / "sigs.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    r = subprocess.run([sys.executable, "-c", record, str(ROOT), str(rec)], env=env, cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    recs = [x for x in json.loads(rec.read_text()) if keep(x["kernel"])]
    rec.write_text(json.dumps(recs))
    env["ROCSAMPLE_AMD_CACHE"] = str(ROOT / "build" / "amd" / "cache")  # the gate's cache
    cmd = (f'. "{AMD_HOME}/env.sh" && "$ROCSAMPLE_AMD_PY" tools/amd/compile_check.py "{rec}" '
           "--arch gfx1151 --jobs 2")
    r = subprocess.run(["bash", "-c", cmd], env=env, cwd=ROOT, capture_output=True, text=True,
                       timeout=1200)
    failed = [ln for ln in r.stdout.splitlines() if "FAIL" in ln]
    assert r.returncode == 0 and not failed, "\n".join(failed) or r.stdout[-3000:] + r.stderr[-3000:]
    return sorted({x["kernel"] for x in recs})
