"""The thirty-fifth session's device call was refused: the working tree (26.6 MB tracked, most
of it bench/results' raw pytest-benchmark JSON), numpy's wheel and FlashInfer 0.7.4's built
sampling library (39 MB in .whl and .peers/fi074) came to more than the 64 MiB a call carries.
bench/results now keeps its JSON gzip-compressed (bench.report reads NAME.json as its .gz), and
the tracked tree stays well under what leaves room for the carried peers."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: what a device call carries, less .whl and .peers/fi074 (about 39 MB), with room to spare
TRACKED_LIMIT = 24 * 2**20


def _tracked():
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("cpu-only: the checkout's tracked files (no git checkout here)")
    r = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, timeout=60)
    if r.returncode != 0:
        pytest.skip("cpu-only: the checkout's tracked files (git ls-files failed here)")
    return [p for p in r.stdout.decode().split("\0") if p]


def test_bench_results_keep_their_json_compressed():
    raw = [p for p in _tracked()
           if p.startswith("bench/results/") and p.count("/") == 2 and p.endswith(".json")]
    assert not raw, (f"{len(raw)} uncompressed JSON file(s) in bench/results, e.g. {raw[0]}: "
                     "gzip -9 -n them (bench.report reads NAME.json as NAME.json.gz)")


def test_the_tracked_tree_leaves_room_for_the_carried_peers():
    total = sum((ROOT / p).stat().st_size for p in _tracked() if (ROOT / p).is_file())
    assert total < TRACKED_LIMIT, f"tracked files: {total / 2**20:.1f} MiB"
