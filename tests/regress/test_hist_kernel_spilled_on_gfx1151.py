"""The histogram kernel spilled registers to scratch on gfx1151 (the AMD compile gate).

What broke: dbf5536's parent gave the MINP stream the nucleus pass's form, eight unpredicated
loads a round (the MINP kernel on the H200: 60.6 -> 51.0 us at 64 x 262144). The same stream is
inlined in ``_sample_hist_kernel``, which serves MINP rows when a batch also has top-p or large
top-k rows (device parameter arrays always); compiled for gfx1151 by numba-hip
(``tools/amd/compile_check.py`` with the offline toolchain of ``tools/amd/setup.sh``) beside the
HIST rows' code it spilled 4 VGPRs, 20 B of private segment on every launch, for float32,
float16 and bfloat16 logits, which the gate refuses. Now the histogram kernel's MINP rows take
rounds of four (``_UNROLL``, as its other streams) and the MINP kernel's rounds of eight, from
one source (``minp_stream(U)`` in rocsample.kernels.sampling_hist).

Compiles the signatures of both kernels that sampling launches (recorded on the simulator: a
batch of a min_p row and a top_p row, then min_p alone, for each logits type) for gfx1151 and
requires every one to pass compile_check (no private segment among its checks). Runs where the
offline AMD toolchain is installed (``make check-amd-offline`` builds it); slow (about half a
minute of compiling on two cores, less with the gate's code-object cache).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).parents[2]
AMD_HOME = pathlib.Path(os.environ.get("ROCSAMPLE_AMD_HOME") or pathlib.Path(
    os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "rocsample" / "amd-toolchain")
KERNELS = ("hist._sample_hist_kernel", "hist._sample_minp_kernel")

# sampling on the simulator, recording each kernel signature it launches (tools/kernel_sigs.py)
_RECORD = r"""
import importlib.util, os, sys
os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
import numpy as np
import rocsample
import rocsample.sampling as rs
rocsample.use_backend("sim")
spec = importlib.util.spec_from_file_location("kernel_sigs", sys.argv[1] + "/tools/kernel_sigs.py")
ks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ks)
be = rocsample.get_backend()
ks.install(be, sys.argv[2])
rng = np.random.default_rng(0)
f = rng.standard_normal((2, 64)).astype(np.float32)
t = np.full(2, 0.9, np.float32)
for x, kw in ((f, {}), (f.astype(np.float16), {}),
              ((f.view(np.uint32) >> 16).astype(np.uint16), {"dtype": "bfloat16"})):
    # a min_p row beside a top_p row: the histogram kernel; min_p alone: the MINP kernel
    rs.sample(x, temperature=t, min_p=np.array([0.2, 0.0], np.float32),
              top_p=np.array([1.0, 0.9], np.float32), seed=1, position=0, check=False, **kw)
    rs.sample(x, temperature=0.9, min_p=0.2, seed=1, position=0, check=False, **kw)
"""


def _toolchain() -> pathlib.Path | None:
    ok = (AMD_HOME / "env.sh").is_file() and (AMD_HOME / "venv" / "bin" / "python").is_file()
    return AMD_HOME if ok else None


@pytest.mark.slow
@pytest.mark.skipif(_toolchain() is None, reason=f"cpu-only: an offline AMD compile (no GPU involved) "
                    f"with the toolchain in {AMD_HOME}, which make check-amd-offline builds")
def test_hist_and_minp_kernels_compile_for_gfx1151_without_scratch(tmp_path):
    rec = tmp_path / "sigs.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    r = subprocess.run([sys.executable, "-c", _RECORD, str(ROOT), str(rec)], env=env, cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    recs = [x for x in json.loads(rec.read_text()) if x["kernel"].endswith(KERNELS)]
    got = sorted({x["kernel"] for x in recs})
    assert len(got) == 6, f"recorded {got}"   # two kernels x three logits types
    rec.write_text(json.dumps(recs))
    env["ROCSAMPLE_AMD_CACHE"] = str(ROOT / "build" / "amd" / "cache")  # the gate's cache
    cmd = (f'. "{AMD_HOME}/env.sh" && "$ROCSAMPLE_AMD_PY" tools/amd/compile_check.py "{rec}" '
           "--arch gfx1151 --jobs 2")
    r = subprocess.run(["bash", "-c", cmd], env=env, cwd=ROOT, capture_output=True, text=True,
                       timeout=1200)
    failed = [ln for ln in r.stdout.splitlines() if "FAIL" in ln]
    assert r.returncode == 0 and not failed, "\n".join(failed) or r.stdout[-3000:] + r.stderr[-3000:]
