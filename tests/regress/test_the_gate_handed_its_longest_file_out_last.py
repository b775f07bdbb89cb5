"""Regression: the device gate handed its longest file out last (the forty-second session's
gates on an H100: 321 s and 405 s of tests where their durations allow about 230).

``python -m rocsample.check`` gives its pytest-xdist workers whole files (``--dist loadfile``).
From xdist 3.6 on, files go out in order of their test count, so tests/fuzz/test_fuzz_sampler.py
(two tests, 168 s) started last and ended the gate. Now the gate keeps collection order
(``--no-loadscope-reorder``, where the installed xdist has it) and a GPU run collects
GATE_LONG_FILES first. No GPU needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocsample import check
from tests.conftest import GATE_LONG_FILES, gate_order

ROOT = Path(__file__).resolve().parents[2]


def _gate_command(monkeypatch, tmp_path):
    seen = []

    class Done:
        returncode = 0

    def run(cmd, **kw):
        seen.append(cmd)
        return Done()
    monkeypatch.setattr(check.subprocess, "run", run)
    check._run_tests("cuda", tmp_path / "j.xml", ["--run-slow"], jobs=8)
    return seen[0]


def test_the_gate_keeps_collection_order_where_xdist_would_reorder(monkeypatch, tmp_path):
    pytest.importorskip("xdist")
    cmd = _gate_command(monkeypatch, tmp_path)
    assert cmd[cmd.index("--dist") + 1] == "loadfile"
    import inspect

    import xdist.plugin

    knows = "--no-loadscope-reorder" in inspect.getsource(xdist.plugin)
    assert ("--no-loadscope-reorder" in cmd) == knows


def test_an_xdist_without_the_flag_is_not_given_it(monkeypatch, tmp_path):
    monkeypatch.setattr(check, "_keep_order", lambda: [])
    assert "--no-loadscope-reorder" not in _gate_command(monkeypatch, tmp_path)


def test_the_longest_files_exist_and_come_first_in_their_order():
    for f in GATE_LONG_FILES:
        assert (ROOT / f).is_file(), f
    ids = ["tests/a/test_x.py::t1", f"{GATE_LONG_FILES[1]}::u1", "tests/b/test_y.py::t2",
           f"{GATE_LONG_FILES[0]}::v1", f"{GATE_LONG_FILES[1]}::u2", "tests/a/test_x.py::t3"]
    got = [ids[i] for i in gate_order(ids)]
    assert got == [ids[3], ids[1], ids[4], ids[0], ids[2], ids[5]]


def test_an_xdist_without_readable_source_is_not_given_the_flag(monkeypatch):
    pytest.importorskip("xdist")
    import inspect

    def no_source(obj):
        raise OSError("could not get source code")
    monkeypatch.setattr(inspect, "getsource", no_source)
    assert check._keep_order() == []
