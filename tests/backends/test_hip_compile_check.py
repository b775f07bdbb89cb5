"""tools/amd/compile_check.py's checks can fail: each one, on input made to break it.

The pure parts (FMA classification, atomics, VGPR budgets) run anywhere; the code-object checks
run in the offline AMD toolchain (``make check-amd-offline``) on a real code object compiled there
and then read against the wrong target, a launch it cannot take, a missing atomic, a fused FMA.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import sys

import pytest

TOOLS = pathlib.Path(__file__).parents[2] / "tools" / "amd"
sys.path.insert(0, str(TOOLS))  # kept: compile_check's worker processes import it by name
import compile_check as cc  # noqa: E402
from comgr_standin import TARGETS  # noqa: E402

# the five FMAs of one correctly rounded float32 division, as LLVM emits it for gfx11
_DIVISION = """\tv_div_scale_f32 v2, null, v1, v1, v0
\tv_rcp_f32_e32 v3, v2
\tv_fma_f32 v4, -v2, v3, 1.0
\tv_fmac_f32_e32 v3, v4, v3
\tv_div_scale_f32 v4, vcc_lo, v0, v1, v0
\tv_mul_f32_e32 v5, v4, v3
\tv_fma_f32 v6, -v2, v5, v4
\tv_fmac_f32_e32 v5, v6, v3
\tv_fma_f32 v2, -v2, v5, v4
\tv_div_fmas_f32 v2, v2, v3, v5
\tv_div_fixup_f32 v0, v2, v1, v0
"""
# a 64-bit integer to float conversion's split: the high half times 2**32 plus the low half
_SPLIT = "\tv_mov_b32_e32 v7, 0x4f800000\n\tv_fmac_f32_e32 v8, v9, v7\n"


def test_fma_report_tells_divisions_and_splits_from_the_kernels_own():
    f = cc.fma_report(_DIVISION + _SPLIT, "")
    assert (f["division"], f["divisions"], f["int64_split"], f["other"]) == (5, 1, 1, 0)
    own = cc.fma_report(_DIVISION + _SPLIT + "\tv_fma_f32 v1, v2, v3, v4\n", "")
    assert own["other"] == 1 and own["other_examples"] == ["v_fma_f32 v1, v2, v3, v4"]
    # the constant's register overwritten: the next FMA with it is the kernel's own
    clobbered = cc.fma_report("\tv_mov_b32_e32 v7, 0x4f800000\n\tv_add_f32_e32 v7, v1, v2\n"
                              "\tv_fmac_f32_e32 v8, v9, v7\n", "")
    assert clobbered["other"] == 1 and clobbered["int64_split"] == 0
    # gfx11's dual-issue and packed forms count too
    assert cc.fma_report("\tv_dual_fmac_f32 v1, v2, v3 :: v_dual_mov_b32 v4, v5\n", "")["other"] == 1
    assert cc.fma_report("\tv_pk_fma_f32 v[0:1], v[2:3], v[4:5], v[6:7]\n", "")["other"] == 1


def test_fma_report_reads_contractible_ir():
    assert cc.fma_report("", "%a = fmul float %x, %y\n%b = fadd float %a, 8.5\n")["ir_fusable"] == 0
    assert cc.fma_report("", "%a = fmul contract float %x, %y\n")["ir_fusable"] == 1
    assert cc.fma_report("", "%a = fadd fast float %x, %y\n")["ir_fusable"] == 1
    assert cc.fma_report("", "call float @llvm.fmuladd.f32(float %x)\n")["ir_fusable"] == 1
    assert cc.fma_report("", None)["ir_fusable"] is None


def test_atomic_ops_counts_memory_read_modify_writes_only():
    asm = ("\tglobal_atomic_add_u32 v4, v[2:3], v4, off glc\n\tds_add_u64 v1, v[2:3]\n"
           "\tds_read_b32 v1, v2\n\tds_write_b64 v1, v[2:3]\n\tglobal_load_b32 v1, v[2:3], off\n"
           "\tds_min_rtn_i64 v[0:1], v2, v[4:5]\n\tglobal_atomic_cmpswap_b64 v[2:3], v[4:5], v[6:9], off glc\n"
           "\tglobal_atomic_add_u32 v5, v[2:3], v4, off glc\n")
    assert cc.atomic_ops(asm) == {"ds_add_u64": 1, "ds_min_rtn_i64": 1, "global_atomic_add_u32": 2,
                                  "global_atomic_cmpswap_b64": 1}


def test_vgpr_budget_follows_the_register_file_and_the_workgroup():
    g11, g9 = TARGETS["gfx1151"], TARGETS["gfx942"]
    # gfx1151, CU mode: 1024 threads = 32 waves on 2 SIMDs, 16 per SIMD, 1536 / 16 = 96
    assert cc.vgpr_budget(g11, 1024, 2) == 96
    assert cc.vgpr_budget(g11, 256, 2) == 256  # 4 waves per SIMD: the 256 addressable
    assert cc.vgpr_budget(g11, 1024, 4) == 192  # WGP mode: 8 waves per SIMD
    # gfx942: 1024 threads = 16 waves on 4 SIMDs, 4 per SIMD, 512 / 4 = 128
    assert cc.vgpr_budget(g9, 1024, 4) == 128
    assert cc.vgpr_budget(g9, 64, 4) == 512
    assert cc.vgpr_budget(g9, 1000, 4) == 128  # rounded up to whole waves
    assert cc.vgpr_budget(g11, 2048, 2) is None  # 32 waves per SIMD: more than 16 fit


def _in_toolchain() -> bool:
    return bool(os.environ.get("ROCSAMPLE_AMD_DEVLIB")) and importlib.util.find_spec("numba.hip") is not None


@pytest.fixture(scope="module")
def compiled():
    """One real gfx1151 code object (an atomic add kernel) and its assembly."""
    if not _in_toolchain():
        pytest.skip("cpu-only: needs the offline AMD toolchain (tools/amd/setup.sh); make check-amd-offline runs it")
    rec = dict(build="tests.backends.hip_atomic_kernels:build", kernel="add_i32",
               args=[{"array": ["int32", 1, "C"]}, {"array": ["int32", 1, "C"]}, {"scalar": "int32"}],
               blocks=[64])
    (res,) = cc.compile_records([rec], "gfx1151", jobs=1)
    assert res["error"] is None and res["problems"] == [], res
    return rec, res


def _analyse(rec, arch, res, asm=None, **extra):
    out = dict(label="x", arch=arch, error=None, problems=[], info={}, **extra)
    cc.analyse(rec, arch, res["codeobj"], res["asm"] if asm is None else asm, "", out)
    return out


def test_the_real_code_object_passes_and_reads_right(compiled):
    rec, res = compiled
    out = _analyse(rec, "gfx1151", res, atomic_calls=["add"])
    assert out["problems"] == []
    i = out["info"]
    assert i["wave"] == 32 and i["scratch"] == 0 and i["max_flat_workgroup_size"] == 1024
    assert i["atomics"] == {"global_atomic_add_u32": 1} and 0 < i["vgprs"] <= i["vgpr_budget_compiled"]


def test_read_against_another_target_fails(compiled):
    rec, res = compiled
    probs = _analyse(rec, "gfx942", res)["problems"]
    assert any("code object targets 'amdgcn-amd-amdhsa--gfx1151" in p for p in probs), probs
    assert any(p.startswith("wavefront size 32") and "gfx942 runs 64" in p for p in probs), probs


def test_a_launch_the_kernel_cannot_take_fails(compiled):
    rec, res = compiled
    probs = _analyse(dict(rec, blocks=[64, 2048]), "gfx1151", res)["problems"]
    assert "launched with [2048] threads per block, kernel allows 1024" in probs
    assert "2048 threads per block need more waves than 2 SIMDs hold" in probs


def test_an_atomic_missing_from_the_isa_fails(compiled):
    rec, res = compiled
    asm = "\n".join(ln for ln in res["asm"].splitlines() if "atomic" not in ln)
    probs = _analyse(rec, "gfx1151", res, asm=asm, atomic_calls=["add"])["problems"]
    assert probs == ["calls atomic add but its ISA has no atomic instruction"]


def test_a_quantizer_with_its_own_fma_fails(compiled):
    rec, res = compiled
    quant = dict(rec, kernel="fake_quant_kernel")
    out = dict(label="x", arch="gfx1151", error=None, problems=[], info={})
    cc.analyse(quant, "gfx1151", res["codeobj"], res["asm"] + "\tv_fma_f32 v1, v2, v3, v4\n",
               "%a = fmul contract float %x, %y\n", out)
    assert any(p.startswith("1 contractible float operations") for p in out["problems"])
    assert any("1 of the kernel's own arithmetic" in p for p in out["problems"])
