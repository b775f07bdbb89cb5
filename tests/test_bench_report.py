"""bench/report.py over synthetic results: two FlashInfer versions side by side (oldest first, one
column pair each, merged from two JSON files), FlashInfer's ``chain_joint`` row compared with our
``chain``, the per-row target table and the decode-loop table."""

from __future__ import annotations

import json

from bench import report


def _b(impl, mode, rows, vocab, gpu, eager=None, fullname="bench/test_sampling.py::t", **extra):
    e = dict(impl=impl, mode=mode, rows=rows, vocab=vocab, gpu_us=gpu, eager_us=eager or gpu,
             gpu_method="graph", floor_us=1.0)
    e.update(extra)
    return {"fullname": fullname, "name": fullname.split("::")[-1], "extra_info": e}


def _row(table: str, start: str) -> list[str]:
    line = next(ln for ln in table.splitlines() if ln.startswith(start))
    return [c.strip() for c in line.strip("|").split("|")]


def test_two_flashinfer_versions_from_two_files(tmp_path):
    a = [_b("rocsample", "chain", 64, 151936, 40.0, 45.0, eager_fresh_us=900.0),
         _b("torch", "chain", 64, 151936, 1400.0),
         _b("flashinfer-0.2.14.post1", "chain", 64, 151936, 800.0),
         _b("flashinfer-0.2.14.post1", "chain_joint", 64, 151936, 400.0)]
    b = [_b("flashinfer-0.7.4", "chain", 64, 151936, 80.0),
         _b("flashinfer-0.7.4", "chain_joint", 64, 151936, 120.0)]
    for name, rows in (("a.json", a), ("b.json", b)):
        (tmp_path / name).write_text(json.dumps({"benchmarks": rows}))
    benches = report._load([tmp_path / "a.json", tmp_path / "b.json"])
    assert report.flashinfer_labels(benches) == ["flashinfer-0.2.14.post1", "flashinfer-0.7.4"]
    t = report.sampling_table(benches)
    head = [c.strip() for c in t.splitlines()[0].strip("|").split("|")]
    assert head[-3:] == ["vs torch", "vs flashinfer-0.2.14.post1", "vs flashinfer-0.7.4"]
    chain = _row(t, "| chain | 64 x 151936")
    assert chain[3] == "40.0" and chain[6] == "900.0"  # our GPU figure, our fresh-view eager figure
    assert chain[-3:] == ["35.00", "20.00", "2.00"]
    joint = _row(t, "| chain_joint | 64 x 151936")
    assert joint[3] == "40.0"  # compared with our chain
    assert joint[-2:] == ["10.00", "3.00"]
    assert t.index("| chain |") < t.index("| chain_joint |")


def test_per_row_and_decode_tables():
    benches = [_b("rocsample", "chain", 64, 151936, 40.0, 50.0),
               _b("rocsample", "chain_dev", 64, 151936, 46.0, 55.0)]
    t = report.per_row_table(benches)
    assert _row(t, "| 64 x 151936")[3] == "1.15" and _row(t, "| 64 x 151936")[6] == "1.10"
    dl = "bench/test_decode_loop.py::test_decode_loop"
    benches = [
        {"fullname": dl, "extra_info": dict(impl="rocsample", batch=8, mode="graph", step_us=300.0,
                                            forward_us=250.0, sampling_us=50.0, sampling_share=1 / 6)},
        {"fullname": dl, "extra_info": dict(impl="torch", batch=8, mode="graph", step_us=600.0,
                                            forward_us=250.0, sampling_us=350.0, sampling_share=0.583)},
        {"fullname": dl, "extra_info": dict(impl="flashinfer-0.7.4", batch=8, mode="graph",
                                            capture_error="RuntimeError: boom")},
    ]
    t = report.decode_table(benches)
    lines = [ln for ln in t.splitlines() if ln.startswith("| 8 |")]
    assert lines[0].startswith("| 8 | graph | rocsample | 300.0")
    assert "not captured: RuntimeError: boom" in t
    assert _row(t, "| 8 | graph | torch")[-1] == "0.50" and _row(t, "| 8 | graph | torch")[-3] == "58.3%"
    # a later case on a slower host: its own forward-only rounds carry the drift, and the
    # comparison puts every sampler on the common (median) forward step
    benches = [
        {"fullname": dl, "extra_info": dict(impl="rocsample", batch=1, mode="eager", step_us=900.0,
                                            forward_us=850.0, sampling_us=50.0)},
        {"fullname": dl, "extra_info": dict(impl="torch", batch=1, mode="eager", step_us=500.0,
                                            forward_us=400.0, sampling_us=100.0)},
        {"fullname": dl, "extra_info": dict(impl="flashinfer-0.7.4", batch=1, mode="eager",
                                            step_us=520.0, forward_us=450.0, sampling_us=70.0)},
    ]
    t = report.decode_table(benches)
    assert _row(t, "| 1 | eager | torch")[-2] == "550.0" and _row(t, "| 1 | eager | torch")[-1] == "0.91"
    assert _row(t, "| 1 | eager | rocsample")[-2] == "500.0"
    # the interleaved form: one case a (batch, mode), every sampler's loop in it, one forward
    samplers = {"none": dict(step_us=400.0),
                "rocsample": dict(step_us=450.0, wall_step_us=451.0, sampling_us=50.0,
                                  sampling_share=50 / 450),
                "torch": dict(step_us=600.0, sampling_us=200.0, sampling_share=1 / 3),
                "flashinfer-0.7.4": dict(capture_error="RuntimeError: boom")}
    benches = [{"fullname": dl, "extra_info": dict(impl="rocsample", batch=64, mode="graph",
                                                   interleaved=True, forward_us=400.0,
                                                   samplers=samplers, step_us=450.0)}]
    t = report.decode_table(benches)
    assert _row(t, "| 64 | graph | rocsample")[:6] == ["64", "graph", "rocsample", "450.0",
                                                        "451.0", "400.0"]
    assert _row(t, "| 64 | graph | torch")[-2:] == ["600.0", "0.75"]
    assert "not captured: RuntimeError: boom" in t and "| none |" not in t
    assert _row(t, "| 64 | graph | torch")[6:8] == ["-", "-"]  # (no rounds kept)
    # each round's figure kept: the spread, and in how many rounds ours was the faster
    samplers["rocsample"]["round_step_us"] = [450.0, 700.0, 440.0]
    samplers["torch"]["round_step_us"] = [600.0, 650.0, 590.0]
    t = report.decode_table(benches)
    assert _row(t, "| 64 | graph | rocsample")[6:8] == ["440.0-700.0", "-"]
    assert _row(t, "| 64 | graph | torch")[6:8] == ["590.0-650.0", "2 of 3"]


def test_empty_or_cut_off_file_is_skipped(tmp_path, capsys):
    """A step stopped before pytest-benchmark wrote its JSON leaves an empty file: the report of
    the other files still comes out, and says which file it skipped."""
    (tmp_path / "empty.json").write_text("")
    (tmp_path / "ok.json").write_text(json.dumps({"benchmarks": [_b("rocsample", "chain", 1, 32000, 9.0)]}))
    benches = report._load([tmp_path / "empty.json", tmp_path / "ok.json"])
    assert len(benches) == 1
    assert "skipped" in capsys.readouterr().err
    assert report.main([str(tmp_path / "empty.json"), str(tmp_path / "ok.json")]) == 0


def test_compressed_results_are_read_by_their_json_name_and_by_a_pattern(tmp_path, capsys):
    # bench/results keeps its JSON gzip-compressed; BENCHMARKS.md's commands name NAME.json
    # (or a pattern the shell leaves as it is when it matches no .json)
    import gzip

    rows = {"a": [_b("rocsample", "chain", 1, 32000, 15.0)],
            "b": [_b("rocsample", "chain", 8, 32000, 16.0)],
            "c": [_b("rocsample", "chain", 64, 32000, 18.0)]}
    for name in ("a", "b"):
        (tmp_path / f"run-{name}.json.gz").write_bytes(
            gzip.compress(json.dumps({"benchmarks": rows[name]}).encode()))
    (tmp_path / "run-c.json").write_text(json.dumps({"benchmarks": rows["c"]}))

    def shapes(paths):
        return sorted((e["extra_info"]["rows"]) for e in report._load(paths))

    assert shapes([tmp_path / "run-a.json"]) == [1]             # the .gz of a name
    assert shapes([tmp_path / "run-a.json.gz"]) == [1]          # the .gz itself
    assert shapes([tmp_path / "run-c.json"]) == [64]            # a plain file as before
    assert shapes([str(tmp_path / "run-*.json")]) == [1, 8, 64]  # a pattern: both forms
    assert shapes([str(tmp_path / "run-[ab].json")]) == [1, 8]
    (tmp_path / "cut.json.gz").write_bytes(gzip.compress(b'{"benchmarks": [')[:-6])
    assert shapes([tmp_path / "cut.json"]) == []
    assert "skipped" in capsys.readouterr().err
    assert shapes([tmp_path / "missing.json"]) == []
