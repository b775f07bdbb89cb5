"""make test runs the sim suite on pytest-xdist workers (CI went over its 30 minutes in one
process). Each worker is a process with its own kernel-signature recorder
(tools/kernel_sigs.py), and each wrote the record file at exit with ``open(path, "w")``: the last
worker to exit replaced the others' records, so the PTX and AMD compile gates checked only the
kernels one worker happened to launch. The recorder now merges into the file under a lock.
"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

WORKER = textwrap.dedent("""
    import importlib.util, sys, types
    spec = importlib.util.spec_from_file_location("kernel_sigs", sys.argv[1])
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    def kernel_a(x): pass
    def kernel_b(x): pass
    ns = types.SimpleNamespace(a=types.SimpleNamespace(py_func=kernel_a),
                               b=types.SimpleNamespace(py_func=kernel_b))
    backend = types.SimpleNamespace(_kernel_cache={("rocsample.fake", "build"): ns},
                                    launch=lambda kernel, grid, block, stream, *args: None)
    mod.install(backend, sys.argv[2])
    kernel = getattr(ns, sys.argv[3])
    backend.launch(kernel, (1,), (int(sys.argv[4]),), 0, 3)
""")


def test_two_recording_processes_keep_both_records(tmp_path):
    path = tmp_path / "sigs.json"
    runs = [("a", 32), ("b", 64), ("a", 64)]
    for name, block in runs:
        subprocess.run([sys.executable, "-c", WORKER, str(ROOT / "tools" / "kernel_sigs.py"),
                        str(path), name, str(block)], check=True)
    recs = json.loads(path.read_text())
    got = {r["kernel"]: r["blocks"] for r in recs}
    assert got == {"a": [32, 64], "b": [64]}
    assert all(r["build"] == "rocsample.fake:build" for r in recs)
