"""tools/gpu/fin_stages.py: the tile finalize's stage stops go in at anchors of today's source
(a change to the finalize that drops an anchor fails here, not on the lent GPU), and a staged
copy runs: stop 0 draws what the package draws, stop 9 returns before any stage (tokens = n)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tool_module import load_tool

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    return load_tool("tools/gpu/fin_stages.py")


def test_every_stop_finds_its_anchor_once():
    tool = _tool()
    src = (ROOT / "rocsample/kernels/sampling_fast.py").read_text()
    out = tool.staged(src)
    for s in (9, 1, 2, 3, 4, 5, 6, 7):
        assert out.count(f"if FIN_STOP == {s}:") == 1, s
    compile(out, "sampling_fast.py", "exec")


def test_a_missing_anchor_is_named():
    tool = _tool()
    src = (ROOT / "rocsample/kernels/sampling_fast.py").read_text()
    with pytest.raises(ValueError, match="nq = np.int64"):
        tool.staged(src.replace("nq = np.int64(cnt[1])", "nq = np.int64(cnt[1]) "))


_RUN = """
import numpy as np, rocsample
x = np.random.default_rng(0).standard_normal((2, 4096)).astype(np.float32) * 3
s = rocsample.Sampler(2, 4096, "float32", _block=32)
r = s(x, seed=np.arange(2, dtype=np.uint64), position=np.zeros(2, np.uint64),
      temperature=0.8, top_k=50, top_p=0.9, check=False)
print(" ".join(str(int(v)) for v in np.asarray(r[0] if isinstance(r, tuple) else r)))
"""


def _tokens(tree, stop):
    env = dict(os.environ, ROCSAMPLE_BACKEND="sim", NUMBA_ENABLE_CUDASIM="1",
               ROCSAMPLE_FIN_STOP=str(stop), PYTHONPATH=str(tree))
    r = subprocess.run([sys.executable, "-c", _RUN], env=env, capture_output=True, text=True,
                       timeout=300, cwd=tree)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.split()


def test_a_staged_copy_draws_at_stop_0_and_returns_at_stop_9(tmp_path, backend):
    if backend.name != "cpu":
        pytest.skip("cpu-only: runs the simulator in subprocesses; once per suite run is enough")
    shutil.copytree(ROOT / "rocsample", tmp_path / "rocsample",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    tool = _tool()
    f = tmp_path / "rocsample/kernels/sampling_fast.py"
    f.write_text(tool.staged(f.read_text()))
    plain = _tokens(ROOT, 0)
    assert _tokens(tmp_path, 0) == plain
    assert _tokens(tmp_path, 9) == ["4096", "4096"] != plain
