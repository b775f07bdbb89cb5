"""Compile every recorded kernel signature for AMD GPUs through numba-hip, and check the code.

The sim test run records each (kernel, argument types, block sizes) it launches
(``tools/kernel_sigs.py``, ``build/kernel-sigs.json``). This compiles each one for each target
with numba-hip's own lowering (its ``_Kernel``: typing, lowering, its device library, its
linking, then comgr's code generation, here ``tools/amd/comgr_standin.py``) and reads the code
object that a HIP runtime would load (``tools/amd/codeobj.py``). A signature's front end (typing,
lowering) runs once, its code generation once for each target. Checked per kernel:

- it compiles (any failure fails the run);
- the wavefront size (metadata and the descriptor's wave32 bit) is the target's: 32 on gfx1151,
  64 on gfx942;
- no private segment (scratch) on gfx1151;
- LDS (group segment) <= 64 KiB per workgroup;
- the recorded launch block sizes fit the kernel (<= its ``.max_flat_workgroup_size``), and its
  VGPRs fit the register file for a workgroup of that largest size (so for every launch);
- quantizer kernels (``*quant*``, bit-exact with ggml's reference, which rounds every product):
  none of their own multiply-adds is fused. In the optimized LLVM IR that code generation
  receives, no fmul/fadd/fsub may carry a contract/fast/reassoc flag and no llvm.fma /
  llvm.fmuladd may appear (the AMDGPU backend then fuses nothing: FP fusion "Standard", IEEE
  denormals so no v_mad). In the ISA every FMA-class instruction must be one that LLVM's
  lowering of another operation emits, exactly: the five of each correctly rounded float32
  division (v_div_scale .. v_div_fixup) and those with the constant +-2**32 that split 64-bit
  integer <-> float conversions and 64-bit integer division into 32-bit halves.

- atomics: a kernel that calls one of ``rocsample.kernels.atomics`` (found through its Python
  closure and globals, device functions included) holds an atomic instruction in its ISA; the
  report lists them by mnemonic.

Several records (the wave32 and wave64 sim runs) merge into their distinct signatures, each with
the union of its launch block sizes. Writes a markdown report (per target and kernel: VGPRs,
SGPRs, LDS, scratch, code bytes, atomics, FMA) and, with ``--json`` / ``--out``, the results and
every code object with its assembly. With ``ROCSAMPLE_AMD_CACHE`` set, code objects are kept
there under a key of every source they depend on (``source_key``): an unchanged package
compiles nothing again, a changed one everything.

Usage (inside the toolchain: ``source $AMD_HOME/env.sh``; ``make check-amd-offline`` does this):
  $ROCSAMPLE_AMD_PY tools/amd/compile_check.py build/kernel-sigs.json build/kernel-sigs-wave64.json \
      --arch gfx1151 --arch gfx942 --jobs 2 --report docs/amd-kernels.md [--json F] [--out DIR]
It compiles the rocsample of its own checkout (that checkout goes first on ``sys.path``, before
``PYTHONPATH``): to compile another tree's kernels, run that tree's copy of this script.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import math
import multiprocessing
import os
import pathlib
import re
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
NO_FMA = ("quant",)  # kernel names that must hold no FMA of their own (bit-exact quantizers)
LDS_LIMIT = 65536

# vector FMA / multiply-add forms of gfx9 (CDNA) and gfx11 (RDNA 3), VOPD pairs included
_FMA = re.compile(r"\bv_(?:pk_)?(?:fma|fmac|fmaak|fmamk|mad|mac|madak|madmk)(?:_legacy)?_f(?:16|32|64)(?![0-9])"
                  r"|\bv_dual_fmac|_dual_fma(?:c|ak|mk)?_f32")
FMAS_PER_DIVISION = 5  # v_fma x3 + v_fmac x2 (or five v_fma) between v_div_scale and v_div_fixup
POW2_32 = ("0x4f800000", "0xcf800000")  # +-2**32 as float32
_IR_FUSED = re.compile(r"= (?:fmul|fadd|fsub|fneg)\s+(?:[a-z]+ )*(?:contract|fast|reassoc)\b"
                       r"|@llvm\.fmuladd\.|@llvm\.fma\.")


def label(rec: dict) -> str:
    sig = ", ".join(a["scalar"] if "scalar" in a else "{}[{}d{}]".format(*a["array"])
                    for a in rec["args"])
    return f"{rec['build'].split(':')[0].rsplit('.', 1)[-1]}:{rec['kernel']}({sig})"


# ---- worker side (numba-hip compiles device functions for the "current device", which is faked
# here: each signature's front end (typing, lowering) runs once, then its code generation for
# each target, with the fake device's architecture set to that target) ----------------------
_ARCHS: tuple = ()
_ARCH = None
_NS: dict = {}
_SOURCE_KEY = None


class _FakeDevice:
    amdgpu_arch = None


def _init(archs) -> None:
    """Set up a worker (or this process) to compile for ``archs`` (one target or several)."""
    global _ARCHS
    _ARCHS = (archs,) if isinstance(archs, str) else tuple(archs)
    _set_arch(_ARCHS[0])
    os.environ["ROCSAMPLE_JIT_CACHE"] = "0"
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(ROOT))
    import comgr_standin

    comgr_standin.install()
    import numba.hip.api as api
    import numba.hip.compiler as compiler
    import numba.hip.dispatcher as dispatcher
    from numba import hip
    from numba.hip.extending import intrinsic

    from rocsample.kernels import atomics

    atomics.register(hip.__name__, intrinsic)  # as rocsample.backends.hip.load does

    for mod in (api, compiler, dispatcher):
        mod.get_current_device = lambda: _FakeDevice()
    _one_target_at_a_time()


def _one_target_at_a_time() -> None:
    """numba-hip adds a target's attributes (``"target-cpu"``, ``"target-features"``) to every
    function of a code library's module in place, device functions shared by every kernel of
    the process included, before it links for that target: a second target's attributes then
    joined the first's and the code objects came out with no kernel. Each application now
    starts from the functions' attributes as lowered."""
    from numba.hip.codegen import HIPCodeLibrary

    apply = HIPCodeLibrary._apply_llvm_amdgpu_modifications
    if getattr(apply, "_rocsample_restores", False):
        return

    def restoring(self, amdgpu_arch=None):
        lowered = self.__dict__.setdefault("_rocsample_lowered_attrs", {})
        for fn in self._module.functions:
            if fn.is_declaration:
                continue
            if fn.name in lowered:
                set.clear(fn.attributes)
                set.update(fn.attributes, lowered[fn.name])
            else:
                lowered[fn.name] = set(fn.attributes)
        return apply(self, amdgpu_arch)

    restoring._rocsample_restores = True
    HIPCodeLibrary._apply_llvm_amdgpu_modifications = restoring


def _set_arch(arch: str) -> None:
    global _ARCH
    _ARCH = arch
    _FakeDevice.amdgpu_arch = arch


def _argtypes(args):
    from numba.core import types

    out = []
    for a in args:
        if "array" in a:
            dtype, ndim, layout = a["array"]
            out.append(types.Array(getattr(types, dtype), ndim, layout))
        else:
            out.append(getattr(types, a["scalar"]))
    return tuple(out)


def _kernel(build: str, path: str):
    from numba import hip

    ns = _NS.get(build)
    if ns is None:
        mod, qual = build.split(":")
        fn = importlib.import_module(mod)
        for part in qual.split("."):
            fn = getattr(fn, part)
        ns = _NS[build] = fn(hip)
    obj = ns
    for part in path.split("."):
        if part.endswith(")"):
            name, args = part[:-1].split("(")
            obj = getattr(obj, name)(*[a == "True" for a in args.split(",") if a])
        else:
            obj = getattr(obj, part)
    return obj


def source_key() -> str:
    """A hash of everything a code object depends on besides its signature: every file of the
    rocsample package, the comgr stand-in, the functions here that compile (not the checks,
    which run again on every code object, cached or not), and the toolchain's stamp."""
    import inspect

    h = hashlib.sha256()
    files = sorted((ROOT / "rocsample").rglob("*.py")) + [HERE / "comgr_standin.py"]
    for f in files:
        h.update(str(f.relative_to(ROOT)).encode() + b"\0" + f.read_bytes() + b"\0")
    for fn in (_init, _one_target_at_a_time, _set_arch, _argtypes, _kernel, _compile):
        h.update(inspect.getsource(fn).encode())
    home = os.environ.get("ROCSAMPLE_AMD_HOME", "")
    stamp = pathlib.Path(home, ".stamp")
    h.update(stamp.read_bytes() if home and stamp.is_file() else b"no stamp")
    return h.hexdigest()[:20]


def _cache_dir(rec: dict) -> pathlib.Path | None:
    """Where the code object of ``rec`` for this target is kept (``ROCSAMPLE_AMD_CACHE``), or
    None without a cache. The key covers the sources (``source_key``), so any change to the
    package or the toolchain compiles everything again."""
    root = os.environ.get("ROCSAMPLE_AMD_CACHE")
    if not root:
        return None
    global _SOURCE_KEY
    if _SOURCE_KEY is None:
        _SOURCE_KEY = source_key()
    sig = json.dumps([rec["build"], rec["kernel"], rec["args"], _ARCH], sort_keys=True)
    return pathlib.Path(root, _SOURCE_KEY, hashlib.sha256(sig.encode()).hexdigest()[:24])


def atomic_calls(py_func) -> set[str]:
    """The atomics of rocsample.kernels.atomics (``add``/``min``/``max``) that ``py_func`` or a
    device function it references (closure cells and globals, recursively) calls, as
    numba-hip's build of them (``rmw_intrinsics``) names them."""
    seen: set[int] = set()
    found: set[str] = set()

    def walk(fn):
        if id(fn) in seen or not hasattr(fn, "__code__"):
            return
        seen.add(id(fn))
        code = fn.__code__
        refs = [c.cell_contents for c in (fn.__closure__ or ()) if _filled(c)]
        refs += [fn.__globals__[n] for n in code.co_names if n in fn.__globals__]
        for obj in refs:
            defn = getattr(obj, "_defn", None)
            if defn is not None and defn.__qualname__.startswith("rmw_intrinsics."):
                cells = dict(zip(defn.__code__.co_freevars, defn.__closure__ or ()))
                found.add(cells["name"].cell_contents if "name" in cells else "atomic")
            elif hasattr(obj, "py_func"):
                walk(obj.py_func)

    walk(py_func)
    return found


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def _compile(rec: dict) -> list[dict]:
    """``rec`` compiled for every target of this worker (``_init``), a result for each in that
    order: the front end (numba-hip's typing and lowering) once, then the code generation for
    each target not in the cache. The code is that of a front end per target but for the
    symbol names, whose ABI tag carries the faked device's architecture
    (tests/backends/test_hip_offline.py compares them); that saves about a fifth of the gate's
    compile time."""
    import comgr_standin

    t0 = time.perf_counter()
    want_ir = any(s in rec["kernel"] for s in NO_FMA)
    out = [dict(label=label(rec), arch=a, error=None, problems=[], info={}, cached=False)
           for a in _ARCHS]
    try:
        disp = _kernel(rec["build"], rec["kernel"])
        calls = sorted(atomic_calls(disp.py_func))
    except Exception as e:  # noqa: BLE001 - reported like a compile failure
        msg = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
        for res in out:
            res["error"] = msg
        return out
    kern = None
    front_error = None
    for arch, res in zip(_ARCHS, out):
        _set_arch(arch)
        res["atomic_calls"] = calls
        cache = _cache_dir(rec)
        if cache is not None and (cache / "code.hsaco").is_file():
            codeobj = (cache / "code.hsaco").read_bytes()
            asm = (cache / "code.s").read_text()
            ir = (cache / "opt.ll").read_text() if (cache / "opt.ll").is_file() else None
            res["cached"] = True
        elif front_error is not None:
            res["error"] = front_error
            continue
        else:
            from numba.hip.dispatcher import _Kernel

            comgr_standin.KEEP_OPTIMIZED_IR = want_ir
            try:
                if kern is None:
                    # what HIPDispatcher.compile does before it loads the code on a device
                    kern = _Kernel(disp.py_func, _argtypes(rec["args"]), **disp.targetoptions)
                codeobj = kern._codelibrary.get_codeobj(arch)
            except Exception as e:  # noqa: BLE001 - every failure is reported, with its type
                lines = str(e).strip().splitlines()
                res["error"] = f"{type(e).__name__}: {lines[0] if lines else ''}"
                if kern is None:  # the front end: every later target fails with it
                    front_error = res["error"]
                continue
            finally:
                comgr_standin.KEEP_OPTIMIZED_IR = False
            key = hashlib.sha256(codeobj).hexdigest()
            asm = comgr_standin.ASSEMBLY.pop(key)
            ir = comgr_standin.OPTIMIZED_IR.pop(key, None)
            if cache is not None:
                tmp = cache.with_name(cache.name + f".tmp{os.getpid()}")
                tmp.mkdir(parents=True, exist_ok=True)
                (tmp / "code.s").write_text(asm)
                if ir is not None:
                    (tmp / "opt.ll").write_text(ir)
                (tmp / "code.hsaco").write_bytes(codeobj)
                try:
                    tmp.rename(cache)
                except OSError:  # another process kept the same one first
                    shutil.rmtree(tmp, ignore_errors=True)
        t1 = time.perf_counter()
        res["seconds"] = round(t1 - t0, 1)
        t0 = t1
        res["codeobj"], res["asm"] = codeobj, asm
        analyse(rec, arch, codeobj, asm, ir, res)
    _set_arch(_ARCHS[0])
    return out


# ---- the checks (pure functions of the code object and its assembly) ----------------------
def vgpr_budget(target: dict, block: int, simds: int) -> int | None:
    """VGPRs per lane a kernel may hold so that one workgroup of ``block`` threads fits on the
    SIMDs it shares (LLVM's getMaxNumVGPRs for the waves per SIMD it needs), or None when
    that many waves cannot be resident at all."""
    waves = -(-block // target["wave"])
    per_simd = -(-waves // simds)
    if per_simd > target["max_waves_per_simd"]:
        return None
    g = target["vgpr_granule"]
    return min(target["vgprs_addressable"], (target["vgprs_total"] // per_simd) // g * g)


def fma_report(asm: str, ir: str | None) -> dict:
    """Every FMA-class instruction of ``asm`` by origin, and the IR's fusable operations."""
    lines = [ln.split(";")[0].strip() for ln in asm.splitlines() if ln.startswith("\t")]
    consts: dict[str, str] = {}  # register -> the literal it was last set to
    in_div, div, split, other = False, 0, 0, []
    divisions = 0
    for ln in lines:
        op, _, rest = ln.partition(" ")
        regs = [o.strip().strip("-|").strip() for o in rest.split(",")] if rest else []
        if _FMA.search(ln):
            if in_div:
                div += 1
            elif any(consts.get(r, r) in POW2_32 for r in regs[1:]):
                split += 1
            else:
                other.append(ln)
        if op == "v_div_scale_f32":
            in_div = True
        elif op == "v_div_fixup_f32":
            in_div = False
            divisions += 1
        m = re.match(r"[sv]_mov_b32(?:_e32)?$", op)
        if m and len(regs) == 2 and regs[1].startswith("0x"):
            consts[regs[0]] = regs[1]
        elif regs and op.startswith(("s_", "v_")):
            consts.pop(regs[0], None)  # the destination was overwritten
    fused_ir = len(_IR_FUSED.findall(ir)) if ir is not None else None
    return dict(fma=div + split + len(other), division=div, divisions=divisions,
                int64_split=split, other=len(other), other_examples=other[:3],
                ir_fusable=fused_ir)


_ATOMIC = re.compile(r"^\t((?:global|flat|buffer|ds)_(?:atomic_)?[a-z0-9_]+)")
_DS_RMW = ("add", "sub", "min", "max", "and", "or", "xor", "inc", "dec", "cmpst", "cmpswap",
           "wrxchg")


def atomic_ops(asm: str) -> dict:
    """Memory atomics in ``asm`` by mnemonic: global/flat/buffer ``*_atomic_*`` and the LDS
    read-modify-writes (``ds_add_u32``, ``ds_add_rtn_u64``, ``ds_max_u32``, ...)."""
    out: dict[str, int] = {}
    for ln in asm.splitlines():
        m = _ATOMIC.match(ln)
        if not m:
            continue
        op = m.group(1)
        if "_atomic_" in op or (op.startswith("ds_") and op[3:].split("_")[0] in _DS_RMW):
            out[op] = out.get(op, 0) + 1
    return dict(sorted(out.items()))


def analyse(rec: dict, arch: str, codeobj: bytes, asm: str, ir: str | None, res: dict) -> None:
    import codeobj as co
    from comgr_standin import TARGETS

    t = TARGETS[arch]
    obj = co.read(codeobj)
    problems = res["problems"]
    if obj["target"].split(":")[0] != f"amdgcn-amd-amdhsa--{arch}":
        problems.append(f"code object targets {obj['target']!r}")
    if len(obj["kernels"]) != 1:
        problems.append(f"{len(obj['kernels'])} kernels in the code object, expected 1")
        return
    (k,) = obj["kernels"].values()
    md, kd = k["metadata"], k["descriptor"]
    wave = md.get(".wavefront_size")
    vgprs = md.get(".vgpr_count", 0)
    agprs = md.get(".agpr_count", 0)
    # gfx90a+: the unified register file holds the arch VGPRs (rounded to 4) then the AGPRs
    regs = (-(-vgprs // 4) * 4 + agprs) if agprs else vgprs
    info = dict(vgprs=vgprs, agprs=agprs, sgprs=md.get(".sgpr_count"),
                lds=md.get(".group_segment_fixed_size"),
                scratch=md.get(".private_segment_fixed_size"),
                vgpr_spills=md.get(".vgpr_spill_count", 0),
                sgpr_spills=md.get(".sgpr_spill_count", 0), code_bytes=k["code_bytes"],
                wave=wave, max_flat_workgroup_size=md.get(".max_flat_workgroup_size"),
                wgp_mode=kd["wgp_mode"])
    res["info"] = info
    if wave != t["wave"] or kd["wave32"] != (t["wave"] == 32):
        problems.append(f"wavefront size {wave} (descriptor wave32={kd['wave32']}), "
                        f"{arch} runs {t['wave']}")
    if kd["private_segment_fixed_size"] != info["scratch"] or kd["group_segment_fixed_size"] != info["lds"]:
        problems.append("descriptor and metadata disagree on the segment sizes")
    # (SGPR spills go to VGPR lanes, not to scratch: reported, not a failure)
    if arch == "gfx1151" and (info["scratch"] or info["vgpr_spills"]):
        problems.append(f"scratch: {info['scratch']} B private segment, {info['vgpr_spills']} "
                        "VGPRs spilled")
    if info["lds"] > LDS_LIMIT:
        problems.append(f"LDS {info['lds']} B > {LDS_LIMIT} B per workgroup")
    max_flat = info["max_flat_workgroup_size"] or 0
    blocks = rec.get("blocks") or []
    info["blocks"] = blocks
    too_big = [b for b in blocks if b > max_flat]
    if too_big:
        problems.append(f"launched with {too_big} threads per block, kernel allows {max_flat}")
    simds = t["simds_wgp_mode"] if kd["wgp_mode"] else t["simds_cu_mode"]
    granule = t["vgpr_granule"]
    used = math.ceil(regs / granule) * granule
    # the budget of the largest recorded launch (what the launches need) and of the largest
    # workgroup the code object admits (what LLVM compiled for); both must hold the kernel
    for key, size in (("vgpr_budget_launch", max(blocks) if blocks else None),
                      ("vgpr_budget_compiled", max_flat)):
        if not size:
            info[key] = None
            continue
        budget = vgpr_budget(t, size, simds)
        info[key] = budget
        if budget is None:
            problems.append(f"{size} threads per block need more waves than {simds} SIMDs hold")
        elif used > budget:
            problems.append(f"{regs} VGPRs per lane, {budget} fit a {size}-thread workgroup")
    info["atomics"] = atomic_ops(asm)
    # rocsample.kernels.atomics emits LLVM atomicrmw on hip: a kernel that calls one must hold
    # an atomic instruction (native, or the compare-and-swap loop LLVM expands min/max to)
    if res.get("atomic_calls") and not info["atomics"]:
        problems.append(f"calls atomic {'/'.join(res['atomic_calls'])} but its ISA has no "
                        "atomic instruction")
    if any(s in rec["kernel"] for s in NO_FMA):
        f = fma_report(asm, ir)
        info["fma"] = f
        if f["ir_fusable"] is None:
            problems.append("no optimized IR to check for fusable operations")
        elif f["ir_fusable"]:
            problems.append(f"{f['ir_fusable']} contractible float operations (contract/fast "
                            "flags, llvm.fma/fmuladd) in the optimized IR")
        if f["other"] or f["division"] != FMAS_PER_DIVISION * f["divisions"]:
            problems.append(f"{f['fma']} FMA instructions: {f['division']} in {f['divisions']} "
                            f"divisions, {f['int64_split']} 64-bit splits, {f['other']} of the "
                            f"kernel's own arithmetic (e.g. {f['other_examples']})")


# ---- driver ---------------------------------------------------------------------------------
def _prune_cache() -> None:
    """Drop the cached code objects of every other source key: they can never be used again."""
    root = os.environ.get("ROCSAMPLE_AMD_CACHE")
    if not root or not os.path.isdir(root):
        return
    keep = source_key()
    for d in pathlib.Path(root).iterdir():
        if d.is_dir() and d.name != keep:
            shutil.rmtree(d, ignore_errors=True)


def compile_records(recs: list[dict], arch: str, jobs: int = 1) -> list[dict]:
    """Compile ``recs`` for ``arch`` in ``jobs`` fresh processes; results in input order."""
    return [res for (res,) in compile_all(recs, (arch,), jobs)]


def compile_all(recs: list[dict], archs, jobs: int = 1):
    """Compile ``recs`` for every target of ``archs`` in ``jobs`` fresh processes, each
    signature's front end once: yields, in input order, a list of results (one a target)."""
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=ctx, initializer=_init,
                             initargs=(tuple(archs),)) as ex:
        yield from ex.map(_compile, recs)


def load_records(paths: list[str]) -> list[dict]:
    """The distinct signatures of one or more records, their launch block sizes merged."""
    distinct: dict = {}
    for path in paths:
        for r in json.load(open(path)):
            key = json.dumps([r["build"], r["kernel"], r["args"]], sort_keys=True)
            if key in distinct:
                merged = set(distinct[key].get("blocks", [])) | set(r.get("blocks", []))
                distinct[key]["blocks"] = sorted(merged)
            else:
                distinct[key] = dict(r)
    return [distinct[k] for k in sorted(distinct)]


def _atomics_col(a: dict) -> str:
    return " ".join(f"{op.replace('_atomic', '')} {n}" for op, n in a.items()) if a else ""


def _report_md(results: dict, recs: list[dict], command: str) -> str:
    out = ["# AMD code objects of every recorded kernel signature", "",
           "Generated by `make check-amd-offline` (a step of `make test`); do not edit. Command:",
           "", "```", command, "```", "",
           "Each signature the sim test run launched, compiled with numba-hip 0.2.1 through the",
           "offline toolchain (`tools/amd/`: the comgr stand-in, LLVM 23 from",
           "rocm-bindings-compiler, Debian clang 19 and ROCm 5.2.3 device libraries; not ROCm's",
           "own compiler) and read from the code object a HIP runtime would load. Columns:",
           "",
           "- *blocks*: the threads per block of the recorded launches (wave32 and wave64 sim runs);",
           "- *VGPRs* (arch VGPRs, `+Na` AGPRs), *SGPRs*, *LDS* (group segment), *scratch* (private",
           "  segment), *code*: from the metadata and the kernel's symbol, bytes;",
           "- *budget launch / compiled*: VGPRs per lane that let one workgroup of the largest",
           "  recorded launch, and of the largest workgroup the code object admits",
           "  (`.max_flat_workgroup_size`, which LLVM compiled for), be resident at once;",
           "- *atomics*: memory atomic instructions in the ISA by mnemonic;",
           "- *FMA* (quantizers, bit-exact with ggml's reference): FMA-class instructions = those",
           "  of correctly rounded divisions + 64-bit integer splits (constant +-2**32) + the",
           "  kernel's own (must be 0).", ""]
    for arch, res in results.items():
        ok = [r for r in res if not r["error"] and not r["problems"]]
        good = [r["info"] for r in res if not r["error"]]
        out += [f"## {arch}: {len(ok)} of {len(res)} signatures compile and pass", ""]
        if good:
            scratch = [r for r in res if not r["error"] and r["info"]["scratch"]]
            vsp = sum(1 for i in good if i["vgpr_spills"])
            ssp = sum(1 for i in good if i["sgpr_spills"])
            out += [f"Largest: {max(i['vgprs'] for i in good)} VGPRs, "
                    f"{max(i['sgprs'] or 0 for i in good)} SGPRs, "
                    f"{max(i['lds'] for i in good)} B LDS, "
                    f"{max(i['code_bytes'] for i in good)} B of code. {len(scratch)} kernels "
                    f"with a private segment, {vsp} spilling VGPRs (to scratch), {ssp} spilling "
                    "SGPRs (to VGPR lanes).", ""]
        out += ["| kernel (signature) | blocks | VGPRs | budget launch / compiled | SGPRs | "
                "LDS | scratch | code | atomics | FMA |",
                "|---|---|---:|---:|---:|---:|---:|---:|---|---|"]
        for r in res:
            i = r["info"]
            if r["error"]:
                out.append(f"| `{r['label']}` **FAILED: {r['error']}** | | | | | | | | | |")
                continue
            vg = f"{i['vgprs']}" + (f"+{i['agprs']}a" if i["agprs"] else "")
            fma = i.get("fma")
            fcol = (f"{fma['fma']} = {fma['division']} div + {fma['int64_split']} i64 + "
                    f"{fma['other']} own" if fma else "")
            flag = " **" + "; ".join(r["problems"]) + "**" if r["problems"] else ""
            blocks = ",".join(map(str, i["blocks"]))
            scratch = f"{i['scratch']}" + (f" ({i['vgpr_spills']} VGPRs spilled)"
                                           if i["vgpr_spills"] else "")
            out.append(f"| `{r['label']}`{flag} | {blocks} | {vg} | {i['vgpr_budget_launch']} / "
                       f"{i['vgpr_budget_compiled']} | {i['sgprs']} | {i['lds']} | "
                       f"{scratch} | {i['code_bytes']} | {_atomics_col(i['atomics'])} | "
                       f"{fcol} |")
        out.append("")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("records", nargs="+", help="kernel records (tools/kernel_sigs.py)")
    ap.add_argument("--arch", action="append", default=[])
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--report", default="", help="markdown report to write")
    ap.add_argument("--json", default="", help="the results as JSON (no code)")
    ap.add_argument("--out", default="", help="folder for every code object and its assembly")
    a = ap.parse_args(argv)
    archs = a.arch or ["gfx1151", "gfx942"]
    try:
        recs = load_records(a.records)
    except (OSError, ValueError, KeyError) as e:
        print(f"compile_check: no usable kernel record ({type(e).__name__}: {e}); run the sim "
              "tests with ROCSAMPLE_RECORD_KERNELS first (make test does)")
        return 1
    if not recs:
        print("compile_check: the kernel record is empty: the sim run launched nothing")
        return 1
    _prune_cache()
    t0 = time.perf_counter()
    results: dict = {arch: [] for arch in archs}
    failed = []
    cached = 0
    for i, per_arch in enumerate(compile_all(recs, archs, a.jobs), 1):
        for arch, r in zip(archs, per_arch):
            results[arch].append(r)
            cached += bool(r.get("cached"))
            bad = r["error"] or "; ".join(r["problems"])
            info = r["info"]
            took = "cached" if r.get("cached") else f"{r.get('seconds', 0):.1f} s"
            extra = (f": {bad}" if bad else
                     f" ({took}, {info['vgprs']} VGPRs, {info['lds']} B LDS)")
            print(f"[{arch} {i}/{len(recs)}] {'FAIL' if bad else 'ok'} {r['label']}{extra}",
                  flush=True)
            if bad:
                failed.append(f"{arch} {r['label']}: {bad}")
            if a.out and not r["error"]:
                out = pathlib.Path(a.out) / arch
                out.mkdir(parents=True, exist_ok=True)
                stem = re.sub(r"[^A-Za-z0-9_.]+", "_", r["label"])[:150]
                stem += "_" + hashlib.sha256(r["label"].encode()).hexdigest()[:8]
                (out / f"{stem}.hsaco").write_bytes(r["codeobj"])
                (out / f"{stem}.s").write_text(r["asm"])
    if a.report:
        cmd = " ".join(["tools/amd/compile_check.py"] + a.records + [f"--arch {x}" for x in archs]
                       + [f"--report {a.report}"])
        pathlib.Path(a.report).write_text(_report_md(results, recs, cmd))
    if a.json:
        slim = {arch: [{k: v for k, v in r.items() if k not in ("codeobj", "asm")} for r in res]
                for arch, res in results.items()}
        pathlib.Path(a.json).write_text(json.dumps(slim, indent=1))
    n = len(recs) * len(archs)
    print(f"compile_check: {n - len(failed)} of {n} (kernel signature, target) pairs compiled and "
          f"passed for {', '.join(archs)} in {time.perf_counter() - t0:.0f} s ({len(recs)} "
          f"distinct signatures, {cached} code objects from the cache)")
    for f in failed:
        print("FAILED", f)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
