"""tools/gate_order.py: the replay of the gate's file scheduling from a junit report (no GPU)."""

from __future__ import annotations

import gzip
from pathlib import Path

from tests.tool_module import load_tool

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    return load_tool("tools/gate_order.py")


def _junit(path, cases):
    body = "".join(f'<testcase classname="{c}" name="t{i}" time="{t}"/>'
                   for i, (c, t) in enumerate(cases))
    data = f'<testsuites><testsuite name="pytest">{body}</testsuite></testsuites>'.encode()
    if str(path).endswith(".gz"):
        data = gzip.compress(data)
    path.write_bytes(data)
    return str(path)


def test_files_come_from_class_names_and_gzip(tmp_path):
    tool = _tool()
    j = _junit(tmp_path / "r.xml.gz", [("tests.a.test_x", 1.5), ("tests.a.test_x.TestK", 2),
                                        ("tests.test_y", 3)])
    assert tool.file_times(j) == {"tests/a/test_x.py": [1.5, 2.0], "tests/test_y.py": [3.0]}


def test_a_long_file_of_few_tests_ends_the_count_order_not_the_gates(tmp_path):
    # one file of two 100 s tests, eight files of twenty 5 s tests, two workers
    tool = _tool()
    cases = [("tests.fuzz.test_long", 100)] * 2
    for f in range(8):
        cases += [(f"tests.k.test_f{f}", 5)] * 20
    files = tool.file_times(_junit(tmp_path / "r.xml", cases))
    o = tool.orders(files, ("tests/fuzz/test_long.py",))
    by_count = tool.makespan(files, o["by test count (xdist's own)"], 2)
    gate = tool.makespan(files, o["GATE_LONG_FILES first"], 2)
    assert by_count == 600.0 and gate == 500.0   # 1000 s of tests: 500 at best


def test_the_recorded_gate_favours_the_long_files_first():
    tool = _tool()
    from tests.conftest import GATE_LONG_FILES

    files = tool.file_times(str(ROOT / "bench/results/nvidia-h100-s42-84d40e3-gate-junit.xml.gz"))
    o = tool.orders(files, GATE_LONG_FILES)
    assert tool.makespan(files, o["GATE_LONG_FILES first"]) < \
        0.8 * tool.makespan(files, o["by test count (xdist's own)"])
