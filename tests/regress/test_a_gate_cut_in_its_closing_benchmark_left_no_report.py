"""The device gate twice passed every test and was then cut by its caller's time limit in its
closing benchmark (forty-seventh and forty-eighth sessions, fresh H100s): nothing said that the
suite had passed but the junit file. The gate now prints the suite's counts and writes its report,
verdict INCOMPLETE, before the benchmark; only a finished benchmark turns it into PASS."""

from __future__ import annotations

import json
import types

import pytest

import rocsample
import rocsample.check as C


class _Cut(BaseException):
    """The caller's time limit, as the benchmark meets it (not an Exception: nothing catches it)."""


def _fake_device(monkeypatch, tmp_path, closing):
    be = types.SimpleNamespace(name="cuda", device_name=lambda: "fake", warp_size=lambda: 32,
                               compute_units=lambda: 4,
                               runtime=types.SimpleNamespace(device_count=lambda: 1))
    monkeypatch.setattr(rocsample, "use_backend", lambda name: be)
    import bench.common as common
    monkeypatch.setattr(common, "measure_copy_bandwidth", lambda be: 1e12)
    monkeypatch.setenv("ROCSAMPLE_BACKEND", "cpu")   # (main sets it; restored after the test)
    tests = {"exit_code": 0, "seconds": 1.0, "jobs": 1, "tests": 5, "failures": 0, "errors": 0,
             "skipped": 1, "skipped_tests": ["tests/x::t: needs two devices (one here)"]}
    monkeypatch.setattr(C, "_run_tests", lambda *a, **k: dict(tests))
    monkeypatch.setattr(C, "_bench", closing)
    return tmp_path / "r.json"


def test_a_cut_in_the_benchmark_leaves_the_suite_verdict(monkeypatch, tmp_path, capsys):
    seen = {}

    def bench(be, bw):
        seen.update(json.loads(report.read_text()))
        raise _Cut

    report = _fake_device(monkeypatch, tmp_path, bench)
    with pytest.raises(_Cut):
        C.main(["--backend", "cuda", "--report", str(report)])
    out = capsys.readouterr().out
    assert "suite: 5 tests, 0 failures, 0 errors, 1 skipped (0 not allowed), pytest exit 0" in out
    data = json.loads(report.read_text())
    assert data == seen
    assert data["verdict"] == "INCOMPLETE"
    assert data["reasons"] == ["the closing benchmark did not finish"]
    assert data["tests"]["tests"] == 5 and "benchmark" not in data


def test_a_finished_benchmark_turns_it_into_a_pass(monkeypatch, tmp_path, capsys):
    report = _fake_device(monkeypatch, tmp_path, lambda be, bw: {"greedy": {"us": 1.0}})
    assert C.main(["--backend", "cuda", "--report", str(report)]) == 0
    data = json.loads(report.read_text())
    assert data["verdict"] == "PASS" and data["reasons"] == []
    assert data["benchmark"] == {"greedy": {"us": 1.0}}
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("PASS: rocsample on cuda")


def test_a_failed_suite_stays_a_failure_whatever_the_benchmark(monkeypatch, tmp_path):
    report = _fake_device(monkeypatch, tmp_path, lambda be, bw: {})
    monkeypatch.setattr(C, "_run_tests", lambda *a, **k: {
        "exit_code": 1, "tests": 5, "failures": 1, "errors": 0, "skipped": 0, "skipped_tests": []})
    assert C.main(["--backend", "cuda", "--report", str(report)]) == 1
    data = json.loads(report.read_text())
    assert data["verdict"] == "FAIL" and data["reasons"] == ["pytest exited 1"]
