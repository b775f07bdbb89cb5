"""Regression: the device gate ran past its time limit on one test file (the twenty-sixth and
twenty-seventh sessions' gates: 2022 of 2024 and 2024 of 2026 tests done at 300 and 330 s, no
failure, the report never written).

``python -m rocsample.check`` runs the suite with pytest-xdist's ``--dist loadfile``: one file a
worker, so the gate lasts at least as long as its slowest file. tests/fuzz/test_fuzz_sampling.py
held sample's fuzz (its valid case alone about 97 s on the H200) and the Sampler's repeated-call
and capture fuzz (about 27 and 58 s): that one file ended every gate, minutes after the others.
The Sampler's two now live in tests/fuzz/test_fuzz_sampler.py. This reads the fuzz files and
checks that sample's fuzz shares its file with neither (no GPU needed)."""

from __future__ import annotations

import ast
from pathlib import Path

FUZZ = Path(__file__).resolve().parents[1] / "fuzz"
#: the suite's longest tests on the H200 (seconds, a gate's --durations): none may share a file
#: with another's group
GROUPS = ({"test_fuzz_sample_and_argmax"},
          {"test_fuzz_sampler_repeated_calls", "test_fuzz_sampler_capture_replays"})


def _tests_by_file():
    out = {}
    for f in sorted(FUZZ.glob("test_*.py")):
        tree = ast.parse(f.read_text())
        out[f.name] = {n.name for n in tree.body
                       if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}
    return out


def test_each_long_fuzz_group_has_a_file_of_its_own():
    files = _tests_by_file()
    for group in GROUPS:
        homes = {name for name, tests in files.items() if tests & group}
        assert len(homes) == 1, (group, homes)   # each group in one file, found
        (home,) = homes
        others = set().union(*(g for g in GROUPS if g is not group))
        assert not files[home] & others, (home, sorted(files[home] & others))
