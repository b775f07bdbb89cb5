"""A stand-in for AMD's comgr (libamd_comgr.so), so that numba-hip compiles without ROCm.

numba-hip reaches comgr through ``rocm.comgr`` for three things, which ``install()`` replaces:

- ``compile_hip_to_bc``: HIP C++ (numba-hip's device library, its dummy kernels) to LLVM
  bitcode. Here: Debian's clang 19 (``-x hip --offload-device-only -nogpulib``) with Debian's ROCm
  5.2.3 device libraries (ocml, ockl, oclc_*) linked as builtin bitcode, as comgr's
  ``COMPILE_SOURCE_WITH_DEVICE_LIBS_TO_BC`` does with ROCm's own clang and libraries.
- ``compile_bc``: LLVM IR or bitcode to a code object (``CODEGEN_BC_TO_RELOCATABLE`` at -O3,
  then ``LINK_RELOCATABLE_TO_EXECUTABLE``). Here: the libLLVM.so (LLVM 23) that
  rocm-bindings-compiler bundles, in this process through its C API (the O3 pipeline with the
  AMDGPU target machine, then object emission), then Debian's ``ld.lld-19 -shared``. The
  assembly of the same optimized module is kept in ``ASSEMBLY`` (keyed by the code object's
  sha256) for tools/amd/compile_check.py, which has no disassembler.
- ``get_isa_metadata_all``: the targets numba-hip may name (``TARGETS`` below).

``compile_bc_to_hsa`` (assembly text) goes through the same path; ``compile_hsa`` (assembling
text) is not provided, and numba-hip is told so (``comgrutils.has_compile_hsa``).

Not ROCm: clang 19 and the 5.2.3 device libraries are older than ROCm 7.2's, and comgr's own
option handling is reproduced only as far as numba-hip uses it. What compiles here proves that
numba-hip lowers rocsample's kernels to valid AMDGPU code and shows its resources and ISA;
`python -m rocsample.check --backend hip` on a real GPU remains the final word.

Environment (written by tools/amd/setup.sh into env.sh): ``ROCSAMPLE_AMD_DEVLIB``,
``ROCSAMPLE_AMD_CLANG``, ``ROCSAMPLE_AMD_LLD``.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile

#: Per target: what the checker and the ISA metadata need. Register-file figures are LLVM's
#: (AMDGPUBaseInfo: getTotalNumVGPRs, getVGPRAllocGranule, getAddressableNumVGPRs,
#: getMaxWavesPerEU; gfx1151 has the 1.5x VGPR file of gfx1100/1101). ``simds`` is the number of
#: SIMDs one workgroup's waves share: 2 in CU mode on RDNA (4 in WGP mode), 4 on CDNA.
TARGETS = {
    "gfx1151": dict(wave=32, vgprs_total=1536, vgpr_granule=24, vgprs_addressable=256,
                    max_waves_per_simd=16, simds_cu_mode=2, simds_wgp_mode=4, lds=65536,
                    sgprs_addressable=106),
    "gfx942": dict(wave=64, vgprs_total=512, vgpr_granule=8, vgprs_addressable=512,
                   max_waves_per_simd=8, simds_cu_mode=4, simds_wgp_mode=4, lds=65536,
                   sgprs_addressable=102),
}

ASSEMBLY: dict[str, str] = {}
#: When True, ``compile_bc`` also keeps the optimized LLVM IR it generated code from (as text,
#: keyed like ``ASSEMBLY``): the quantizer FMA check reads the floating-point flags there.
KEEP_OPTIMIZED_IR = False
OPTIMIZED_IR: dict[str, str] = {}


def _env(name: str) -> str:
    try:
        return os.environ[name]
    except KeyError:
        raise RuntimeError(f"comgr stand-in: {name} is not set (source the env.sh that "
                           "tools/amd/setup.sh wrote)") from None


def _isa_entry(arch: str) -> dict:
    t = TARGETS[arch]
    return {
        "Name": f"amdgcn-amd-amdhsa--{arch}", "Architecture": "amdgcn", "Vendor": "amd",
        "OS": "amdhsa", "Environment": "", "Processor": arch, "Version": "", "Features": "",
        "MaxFlatWorkGroupSize": "1024", "EUsPerCU": str(t["simds_cu_mode"]),
        "MaxWavesPerCU": str(t["max_waves_per_simd"] * t["simds_cu_mode"]),
        "AddressableNumSGPRs": str(t["sgprs_addressable"]),
        "AddressableNumVGPRs": str(t["vgprs_addressable"]),
        "TotalNumVGPRs": str(t["vgprs_total"]), "VGPRAllocGranule": str(t["vgpr_granule"]),
        "TotalNumSGPRs": "800", "SGPRAllocGranule": "8",
        "LocalMemorySize": str(t["lds"]), "LDSBankCount": "32", "TrapHandlerEnabled": "1",
    }


def get_isa_metadata_all() -> dict:
    return {f"amdgcn-amd-amdhsa--{a}": _isa_entry(a) for a in TARGETS}


def _split_isa(isa_name) -> tuple[str, str, str]:
    """(processor, processor with target-id features, LLVM feature string)."""
    s = isa_name.decode() if isinstance(isa_name, (bytes, bytearray)) else str(isa_name)
    full = s.replace("amdgcn-amd-amdhsa--", "")
    proc, *feats = full.split(":")
    if proc not in TARGETS:
        raise ValueError(f"comgr stand-in: no target {proc!r} (have {', '.join(TARGETS)})")
    llvm_feats = ",".join(("+" if f.endswith("+") else "-") + f[:-1] for f in feats)
    return proc, full, llvm_feats


def _run(cmd: list[str]) -> str:
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"comgr stand-in: {os.path.basename(cmd[0])} exited {p.returncode}:\n"
                           f"{p.stderr[-4000:]}")
    return p.stderr


def _device_libs(proc: str) -> list[str]:
    """The bitcode comgr links for HIP: ocml, ockl and the oclc control constants (IEEE
    behaviour: no DAZ, no finite-only or unsafe math, correctly rounded sqrt; code object v5)."""
    wave64 = "on" if TARGETS[proc]["wave"] == 64 else "off"
    names = ["ocml", "ockl", "oclc_correctly_rounded_sqrt_on", "oclc_daz_opt_off",
             "oclc_finite_only_off", "oclc_unsafe_math_off", f"oclc_wavefrontsize64_{wave64}",
             f"oclc_isa_version_{proc[3:]}", "oclc_abi_version_500"]
    out = []
    for n in names:
        path = os.path.join(_env("ROCSAMPLE_AMD_DEVLIB"), n + ".bc")
        if not os.path.exists(path):
            raise RuntimeError(f"comgr stand-in: device library {path} is missing")
        out += ["-Xclang", "-mlink-builtin-bitcode", "-Xclang", path]
    return out


def _text(o) -> str:
    return o.decode() if isinstance(o, (bytes, bytearray)) else str(o)


def compile_hip_to_bc(source, isa_name, hip_version_tuple, extra_opts=(),
                      default_opts=("-fgpu-rdc", "-O3", "-mcumode", "-std=c++14", "-nogpuinc",
                                    "-Wno-gnu-line-marker", "-Wno-missing-prototypes"),
                      prepend_hiprtc_runtime_header=False, logging=False,
                      action_kind="COMPILE_SOURCE_WITH_DEVICE_LIBS_TO_BC"):
    proc, full, _ = _split_isa(isa_name)
    src = source.encode() if isinstance(source, str) else bytes(source)
    opts = [_text(o) for o in default_opts] + [_text(o) for o in extra_opts]
    if prepend_hiprtc_runtime_header:
        from rocm.comgr import hiprtc_header

        src = hiprtc_header.get_hiprtc_runtime_header().encode() + b"\n" + src
        opts.append("-D__HIPCC_RTC__")
    major, minor, patch = (tuple(hip_version_tuple or ()) + (0, 0, 0))[:3]
    with tempfile.TemporaryDirectory() as d:
        path_in, path_out = os.path.join(d, "source.hip"), os.path.join(d, "out.bc")
        with open(path_in, "wb") as f:
            f.write(src)
        cmd = [_env("ROCSAMPLE_AMD_CLANG"), "-x", "hip", "--offload-device-only", "-nogpulib",
               f"--offload-arch={full}", "-emit-llvm", "-c", "-Wno-unused-command-line-argument",
               f"-DHIP_VERSION_MAJOR={major}", f"-DHIP_VERSION_MINOR={minor}",
               f"-DHIP_VERSION_PATCH={patch}", *opts]
        if action_kind == "COMPILE_SOURCE_WITH_DEVICE_LIBS_TO_BC":
            cmd += _device_libs(proc)
        elif action_kind != "COMPILE_SOURCE_TO_BC":
            raise ValueError(f"comgr stand-in: action {action_kind!r}")
        log = _run(cmd + [path_in, "-o", path_out])
        with open(path_out, "rb") as f:
            return f.read(), (log if logging else None), None


# ---- LLVM IR/bitcode -> AMDGPU code with the bundled LLVM 23 --------------------------------
_MACHINES: dict = {}


def _target_machine(proc: str, feats: str, optimize: bool):
    from rocm.bindings.llvm.c import target as tgt
    from rocm.bindings.llvm.c import targetmachine as tm

    key = (proc, feats, optimize)
    if key not in _MACHINES:
        tgt.LLVMInitializeAllTargetInfos()
        tgt.LLVMInitializeAllTargets()
        tgt.LLVMInitializeAllTargetMCs()
        tgt.LLVMInitializeAllAsmPrinters()
        status, target, err = tm.LLVMGetTargetFromTriple(b"amdgcn-amd-amdhsa")
        if status:
            raise RuntimeError(f"comgr stand-in: no AMDGPU target in libLLVM: {err}")
        level = (tm.LLVMCodeGenOptLevel.LLVMCodeGenLevelAggressive if optimize
                 else tm.LLVMCodeGenOptLevel.LLVMCodeGenLevelNone)
        # LLVMCreateTargetMachine's TargetOptions are LLVM's defaults: floating-point fusion
        # "Standard" (only what the IR marks as contractible, e.g. llvm.fmuladd, is fused)
        _MACHINES[key] = tm.LLVMCreateTargetMachine(
            target, b"amdgcn-amd-amdhsa", proc.encode(), feats.encode(), level,
            tm.LLVMRelocMode.LLVMRelocPIC, tm.LLVMCodeModel.LLVMCodeModelDefault)
    return _MACHINES[key]


def _codegen(ir_or_bc, isa_name, opts, want_object: bool) -> tuple[bytes, str, str | None]:
    """(relocatable object or b"", assembly, optimized IR if KEEP_OPTIMIZED_IR) of one
    optimized module."""
    import ctypes

    from numba.hip.util import llvmutils
    from rocm.bindings.llvm.c import core
    from rocm.bindings.llvm.c import targetmachine as tm
    from rocm.bindings.llvm.c.transforms import passbuilder as pb

    proc, _, feats = _split_isa(isa_name)
    optimize = "-O0" not in opts and any(o.startswith("-O") for o in opts)
    machine = _target_machine(proc, feats, optimize)
    data = ir_or_bc.encode() if isinstance(ir_or_bc, str) else bytes(ir_or_bc)
    ctx = core.LLVMContextCreate()
    try:
        (mod,) = llvmutils._get_module_in_context(ctx, data, len(data))
        if optimize:  # clang -O3 on IR input: the O3 pipeline, then codegen at -O3
            popts = pb.LLVMCreatePassBuilderOptions()
            try:
                if pb.LLVMRunPasses(mod, b"default<O3>", machine, popts):
                    raise RuntimeError("comgr stand-in: the O3 pipeline failed")
            finally:
                pb.LLVMDisposePassBuilderOptions(popts)
        ir_text = llvmutils._to_ir(mod).decode(errors="replace") if KEEP_OPTIMIZED_IR else None
        twin = core.LLVMCloneModule(mod) if want_object else None
        out = {}
        with tempfile.TemporaryDirectory() as d:
            jobs = [("asm", mod, tm.LLVMCodeGenFileType.LLVMAssemblyFile)]
            if want_object:
                jobs.append(("obj", twin, tm.LLVMCodeGenFileType.LLVMObjectFile))
            for kind, m, filetype in jobs:
                path = os.path.join(d, kind)
                err = ctypes.c_char_p()
                if tm.LLVMTargetMachineEmitToFile(machine, m, path.encode(), filetype,
                                                  ctypes.addressof(err)):
                    raise RuntimeError(f"comgr stand-in: AMDGPU codegen for {proc} failed: "
                                       f"{err.value!r}")
                with open(path, "rb") as f:
                    out[kind] = f.read()
        return out.get("obj", b""), out["asm"].decode(errors="replace"), ir_text
    finally:
        core.LLVMContextDispose(ctx)


def compile_bc_to_hsa(source, isa_name, bc_kind="BC", extra_opts=(), logging=False):
    _, asm, _ = _codegen(source, isa_name, [_text(o) for o in extra_opts], want_object=False)
    return asm.encode(), None, None


def compile_bc(ir_or_bc, isa_name, bc_kind="BC", extra_opts=(), default_opts=("-O3",),
               logging=False):
    opts = [_text(o) for o in default_opts] + [_text(o) for o in extra_opts]
    obj, asm, ir_text = _codegen(ir_or_bc, isa_name, opts, want_object=True)
    with tempfile.TemporaryDirectory() as d:
        path_in, path_out = os.path.join(d, "linked.o"), os.path.join(d, "out.hsaco")
        with open(path_in, "wb") as f:
            f.write(obj)
        _run([_env("ROCSAMPLE_AMD_LLD"), "-shared", "--no-undefined", path_in, "-o", path_out])
        with open(path_out, "rb") as f:
            codeobj = f.read()
    key = hashlib.sha256(codeobj).hexdigest()
    ASSEMBLY[key] = asm
    if ir_text is not None:
        OPTIMIZED_IR[key] = ir_text
    return codeobj, None, None


def install() -> None:
    """Put the stand-in in place of ``rocm.comgr``'s compile functions; before ``numba.hip``."""
    if "numba.hip" in sys.modules:
        raise RuntimeError("comgr stand-in: install() must run before numba.hip is imported")
    from rocm import comgr

    for name in ("get_isa_metadata_all", "compile_hip_to_bc", "compile_bc_to_hsa", "compile_bc"):
        setattr(comgr, name, globals()[name])
    # numba-hip parses the hipRTC header with libclang: Debian's libclang 19 lacks a few
    # functions the LLVM 23 Python bindings register, so their version check is skipped
    from rocm.bindings.clang import cindex

    cindex.Config.compatibility_check = False
    from numba.hip.util import comgrutils

    comgrutils.compile_bc = compile_bc
    comgrutils.compile_bc_to_hsa = compile_bc_to_hsa
    comgrutils.has_compile_hsa = False
