"""The kernel-signature recorder (tools/kernel_sigs.py) names a launched kernel by looking its
``id()`` up in a map it fills from the backend's kernel namespaces. It kept only the ids: when a
test built the kernels again in a namespace of its own (the warp-shuffle tree's sim test
rebuilds them with the part) and let it go afterwards, later kernel objects took the freed ids
and were recorded under the old names. CI's PTX gate then compiled a phase-1 signature as
``float.fast.gather(False)`` and another as ``helpers.topp_target`` and failed on both. The map
now holds the objects it names and takes an entry for another object as stale. Here the reuse
is made certain: the worker's ``id`` gives the second build's kernel the first one's number.
"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

WORKER = textwrap.dedent("""
    import builtins, importlib.util, sys, types
    spec = importlib.util.spec_from_file_location("kernel_sigs", sys.argv[1])
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    def kernel_a(x): pass
    def kernel_b(x): pass
    first = types.SimpleNamespace(py_func=kernel_a)
    again = types.SimpleNamespace(py_func=kernel_b)
    # (CPython's id is an address: a freed kernel's can come back for a new one)
    mod.id = lambda o: 7 if (o is first or o is again) else builtins.id(o)
    key = ("rocsample.fake", "build")
    backend = types.SimpleNamespace(_kernel_cache={},
                                    launch=lambda kernel, grid, block, stream, *args: None)
    mod.install(backend, sys.argv[2])
    # a test's own build of the library's kernels, launched, then let go
    backend._kernel_cache[key] = types.SimpleNamespace(a=first)
    backend.launch(first, (1,), (32,), 0, 3)
    backend._kernel_cache.clear()
    # the kernels built again, the new kernel at the old one's id
    backend._kernel_cache[key] = types.SimpleNamespace(b=again)
    backend.launch(again, (1,), (32,), 0, 2.5)
""")


def test_a_rebuilt_kernel_is_recorded_under_its_own_name(tmp_path):
    path = tmp_path / "sigs.json"
    subprocess.run([sys.executable, "-c", WORKER, str(ROOT / "tools" / "kernel_sigs.py"),
                    str(path)], check=True)
    recs = json.loads(path.read_text())
    got = sorted((r["kernel"], r["args"][0]["scalar"]) for r in recs)
    assert got == [("a", "int64"), ("b", "float64")]
