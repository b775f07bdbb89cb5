"""Regression: a test that runs on the simulator only skipped on cuda with a reason the device
gate does not allow, so the gate failed (the twenty-fourth session's recorder test,
tests/regress/test_argmax_kernel_missing_from_the_kernel_record.py, added after that session's
gate and first run on the H200 in the twenty-fifth session's gate).

``python -m rocsample.check`` fails on any skip but the ones ``check._allowed_skip`` names
(multi-GPU tests on one GPU, and CPU walkthroughs by design, whose reasons start ``cpu-only:``).
A skip that fires on cuda because the backend is not the simulator is such a walkthrough, so its
reason must say so. This reads every test file and checks each ``pytest.skip`` under a test
for ``backend.name != "sim"`` (no GPU needed)."""

from __future__ import annotations

import ast
from pathlib import Path

from rocsample import check

TESTS = Path(__file__).resolve().parents[1]


def _sim_only_skips(tree: ast.AST, src: str):
    """(line, reason) of each pytest.skip("...") in the body of an ``if`` whose test has
    ``.name != "sim"``."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        cond = ast.get_source_segment(src, node.test) or ""
        if ".name != \"sim\"" not in cond and ".name != 'sim'" not in cond:
            continue
        for stmt in node.body:
            for call in ast.walk(stmt):
                if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                        and call.func.attr == "skip" and call.args
                        and isinstance(call.args[0], ast.Constant)
                        and isinstance(call.args[0].value, str)):
                    yield call.lineno, call.args[0].value


def test_every_skip_that_fires_on_cuda_for_not_being_the_simulator_is_allowed_by_the_gate():
    seen, bad = 0, []
    for path in sorted(TESTS.rglob("test_*.py")):
        src = path.read_text()
        for line, reason in _sim_only_skips(ast.parse(src), src):
            seen += 1
            if not check._allowed_skip(reason):
                bad.append(f"{path.relative_to(TESTS)}:{line}: {reason!r}")
    assert seen >= 3   # (the suite has such skips: the scan reaches them)
    assert not bad, bad


def test_the_scan_finds_the_twenty_fourth_session_s_skip():
    # the defect's own form, as it was
    src = ('def test_x(backend):\n    if backend.name != "sim":\n'
           '        pytest.skip("the recorder runs on the sim suite")\n')
    got = list(_sim_only_skips(ast.parse(src), src))
    assert got == [(3, "the recorder runs on the sim suite")]
    assert not check._allowed_skip(got[0][1])
