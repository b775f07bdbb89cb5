"""Static figures of the kernels' machine code for sm_90, without a GPU (docs/PERF_NOTES.md).

For each recorded (kernel, signature) of a sim run (``tools/kernel_sigs.py``; ``make test`` leaves
``build/kernel-sigs.json``): numba-cuda compiles it to PTX (as ``tools/ptx_check.py`` does), CUDA's
``ptxas -arch=sm_90 -v`` assembles it (registers, spill bytes, shared memory) and ``cuobjdump
-sass`` disassembles it. Printed per kernel: registers, spills, static shared bytes, SASS
instructions, and each loop (a backward branch) with its body length and the global loads in it;
the streaming loops' "instructions per token" is body / loads.

The three tools come from NVIDIA's wheels (``make sass`` installs them into the dev venv):
``pip install 'nvidia-cuda-nvcc==13.*' 'nvidia-cuda-cuobjdump==13.*' 'nvidia-cuda-nvdisasm==13.*'``
(or a CUDA toolkit on PATH).

Usage: python tools/sass_stats.py SIGS.json [--kernel SUBSTRING ...] [--sass-dir DIR]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptx_check  # noqa: E402  (same directory)

_INS = re.compile(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")


@functools.cache  # one lookup per tool, not one per kernel
def _tool(name: str) -> str:
    p = os.path.join(sysconfig.get_paths()["purelib"], "nvidia", "cu13", "bin", name)  # the wheels
    if os.path.exists(p):
        return p
    p = shutil.which(name)
    if p is None:
        raise SystemExit(f"sass_stats: {name} not found; pip install 'nvidia-cuda-nvcc==13.*' "
                         "'nvidia-cuda-cuobjdump==13.*' 'nvidia-cuda-nvdisasm==13.*'")
    return p


def analyse(ptx: str, workdir: str, max_registers: int | None = None) -> dict:
    """Registers, spills, shared bytes, SASS length and loops of one kernel's PTX, assembled
    under the kernel's register cap (``max_registers``: its ``cuda.jit`` option, which
    ``compile_ptx`` does not take)."""
    src = os.path.join(workdir, "k.ptx")
    cubin = os.path.join(workdir, "k.cubin")
    with open(src, "w") as f:
        f.write(ptx)
    extra = os.environ.get("PTXAS_ARGS", "").split()  # e.g. PTXAS_ARGS=-maxrregcount=64
    if max_registers and not any(x.startswith("-maxrregcount") for x in extra):
        extra.append(f"-maxrregcount={max_registers}")
    r = subprocess.run([_tool("ptxas"), "-arch=sm_90", "-v", *extra, "-o", cubin, src],
                       capture_output=True, text=True, check=True)
    info = r.stderr
    env = dict(os.environ, PATH=os.path.dirname(_tool("nvdisasm")) + os.pathsep
               + os.environ.get("PATH", ""))
    sass = subprocess.run([_tool("cuobjdump"), "-sass", cubin], capture_output=True, text=True,
                          check=True, env=env).stdout
    ins = [(int(m.group(1), 16), m.group(2)) for m in map(_INS.match, sass.splitlines()) if m]
    at = {a: i for i, (a, _) in enumerate(ins)}
    loops = []
    for i, (a, text) in enumerate(ins):
        m = re.search(r"\bBRA\b.*?0x([0-9a-f]+)", text)
        if m and int(m.group(1), 16) < a and int(m.group(1), 16) in at:
            body = ins[at[int(m.group(1), 16)]: i + 1]
            loads = sum(1 for _, t in body if re.search(r"\bLDG\.E|\bLD\.E", t))
            loops.append((len(body), loads))

    def num(pattern):
        m = re.search(pattern, info)
        return int(m.group(1)) if m else 0

    return dict(registers=num(r"Used (\d+) registers"), spill=num(r"(\d+) bytes spill stores"),
                smem=num(r"(\d+) bytes smem"), sass=len(ins), loops=loops, text=sass)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sigs")
    ap.add_argument("--kernel", action="append", default=[],
                    help="only kernels whose path contains this (repeatable)")
    ap.add_argument("--sass-dir", help="also write each kernel's SASS there")
    a = ap.parse_args(argv)
    ptx_check._init()
    from numba import cuda

    recs = [r for r in json.load(open(a.sigs))
            if not a.kernel or any(k in r["kernel"] for k in a.kernel)]
    if not recs:
        print("sass_stats: no recorded kernel matches")
        return 1
    print(f"{'kernel (first argument)':58} {'regs':>4} {'spill':>5} {'smem':>6} {'sass':>5}  "
          "loops (body / global loads)")
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, rec in enumerate(recs):
            first = rec["args"][0].get("array") or rec["args"][0].get("scalar")
            label = f"{rec['kernel']} ({'/'.join(map(str, first)) if isinstance(first, list) else first})"
            try:
                k = ptx_check._kernel(rec["build"], rec["kernel"])
                ptx, _ = cuda.compile_ptx(k.py_func, ptx_check._signature(rec["args"]),
                                          cc=ptx_check.CC)
            except Exception as e:  # noqa: BLE001 - e.g. a record of another commit's signature
                failed += 1
                print(f"{label[:58]:58} compile failed: {type(e).__name__}: "
                      f"{str(e).splitlines()[0] if str(e) else ''}", flush=True)
                continue
            s = analyse(ptx, tmp, k.targetoptions.get("max_registers"))
            loops = ", ".join(f"{b}/{n}" for b, n in s["loops"] if b > 20) or "-"
            print(f"{label[:58]:58} {s['registers']:>4} {s['spill']:>5} {s['smem']:>6} "
                  f"{s['sass']:>5}  {loops}", flush=True)
            if a.sass_dir:
                os.makedirs(a.sass_dir, exist_ok=True)
                name = re.sub(r"[^A-Za-z0-9_.]+", "_", rec["kernel"])
                with open(os.path.join(a.sass_dir, f"{i:03d}_{name}.sass"), "w") as f:
                    f.write(s["text"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
