"""bench/targets.py over synthetic results: each target counts its met shapes, names the missed
ones with their figures and rocsample's microseconds past the target (each 1.0 here), counts a shape without a figure as unmeasured (never met), and compares
with the newest FlashInfer in the files."""

from __future__ import annotations

import json

from bench import targets


def _b(impl, mode, rows, vocab, gpu, floor=1.0):
    e = dict(impl=impl, mode=mode, rows=rows, vocab=vocab, gpu_us=gpu, eager_us=gpu,
             gpu_method="graph", floor_us=floor)
    return {"fullname": "bench/test_sampling.py::t", "name": "t", "extra_info": e}


def _lines(tmp_path, rows):
    (tmp_path / "r.json").write_text(json.dumps({"benchmarks": rows}))
    return {ln.split(":")[0]: ln for ln in targets._Targets(
        targets._load([tmp_path / "r.json"])).lines()}


def test_each_target_counts_met_missed_and_unmeasured(tmp_path):
    a, b = (64, 151936), (1, 32000)
    rows = [
        _b("rocsample", "greedy", *a, 12.0, floor=10.0), _b("torch", "greedy", *a, 20.0),
        _b("rocsample", "greedy", *b, 5.0, floor=0.1), _b("torch", "greedy", *b, 4.0),
        _b("rocsample", "top_p095", *a, 30.0), _b("rocsample", "top_p095", *b, 16.0),
        _b("flashinfer-0.2.14.post1", "top_p095", *a, 10.0),
        _b("flashinfer-0.7.4", "top_p095", *a, 40.0), _b("flashinfer-0.7.4", "top_p095", *b, 15.0),
        _b("rocsample", "chain", *a, 20.0), _b("torch", "chain", *a, 400.0),
        _b("rocsample", "chain", *b, 10.0), _b("torch", "chain", *b, 90.0),
        _b("flashinfer-0.7.4", "chain", *a, 50.0), _b("flashinfer-0.7.4", "chain_joint", *a, 19.0),
        _b("rocsample", "top_k1000", *a, 31.0),
        _b("rocsample", "chain_dev", *a, 24.0),
    ]
    t = _lines(tmp_path, rows)
    assert t["shapes"].endswith("newest FlashInfer: flashinfer-0.7.4")
    assert t["top_p alone <= 3x greedy"] == \
        "top_p alone <= 3x greedy: met at 1 of 2; not at 1 x 32000 3.20x (1.0 us over)"
    # the newest version's figure, not 0.2.14's
    assert t["top_p alone faster than flashinfer-0.7.4"].endswith(
        "met at 1 of 2; not at 1 x 32000 1.07x its time (1.0 us over)")
    assert t["top_k1000 within 1.5x of the chain"].endswith(
        "met at 0 of 2; not at 64 x 151936 1.55x (1.0 us over); unmeasured 1 x 32000")
    assert "met at 0 of 2" in t["min_p005 within 1.5x of the chain"]
    assert t["chain_dev within 1.2x of the host-scalar chain"].endswith(
        "met at 1 of 1")   # 24 / 20 = 1.2; only 64 x 151936 was benchmarked
    assert t["greedy <= 1.25x the floor (>= 64 x 151936)"].endswith("met at 1 of 1")
    assert t["greedy faster than torch.argmax"].endswith("met at 1 of 2; not at 1 x 32000 1.25x its time (1.0 us over)")
    assert t["chain >= 10x PyTorch"].endswith("met at 1 of 2; not at 1 x 32000 9.00x (1.0 us over)")
    # FlashInfer's faster filter order (chain_joint 19.0) against ours (20.0)
    assert t["chain faster than flashinfer-0.7.4 (its faster filter order)"].endswith(
        "met at 0 of 2; not at 64 x 151936 0.95x (1.0 us over); unmeasured 1 x 32000")


def test_no_files_is_a_usage_error(capsys):
    assert targets.main([]) == 2
    assert "bench.targets" in capsys.readouterr().err
