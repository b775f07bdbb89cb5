"""tools/ptx_check.py's rules on the kernels' PTX, each on a line that breaks it (no GPU, no
compile: the rules are text tests; make test runs them over every recorded kernel)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tools"))
import ptx_check  # noqa: E402  (tools/)

_OK_DRAW = ("mul.wide.u32 %rd1, %r1, %r2;\nlg2.approx.ftz.f32 %f1, %f2;\n"
            "{ .reg .b32 t; shr.u32 t, %r3, 9; cvt.rn.f32.u32 %f3, t; }\nmax.f32 %f4, %f5, %f6;\n")


def test_each_rule_fails_its_own_breakage():
    r = ptx_check.ptx_rules
    assert r("float.fast.partials(True,False,True)", _OK_DRAW) is None
    assert "mul.wide" in r("float.fast.partials(True,False,True)", "mul.lo.s64 %rd1;\n")
    # a uniform's 23 bits: shr.u32 of the word's low half, never a 64-bit conversion
    no_shr = _OK_DRAW.replace("shr.u32 t,", "shr.u64 t,")
    assert "shr.u32" in r("float.fast.partials(True,False,True)", no_shr)
    wide = _OK_DRAW + "cvt.rn.f32.u64 %f5, %rd2;\n"
    assert "64-bit" in r("float.fast.partials(True,False,True)", wide)
    # the fast pass's maximum by max.f32 (the exact variants keep its index: compares)
    no_max = _OK_DRAW.replace("max.f32", "selp.f32")
    assert "max.f32" in r("float.fast.partials(True,False,True)", no_max)
    assert "max.f32" in r("float.fast.partials(True,True,True)", no_max)
    assert "max.f32" in r("float.fast.partials(True,False,True,True)", no_max)
    assert "max.f32" in r("float.fast.partials(True,True,True,True,True)", no_max)
    assert r("float.fast.partials(True,False,False,True)", no_max) is None
    assert r("float.fast.partials(True,False)", no_max) is None
    assert "lg2" in r("float.fast.partials(False,False)", "lg2.approx.f32 %f1, %f2;\n")
    assert "fused" in r("quant.q4_0", "fma.rn.f32 %f1, %f2, %f3, %f4;\n")
    # the nucleus passes' masses: ex2.approx of one FFMA, never expf's range reduction
    ok = "fma.rn.f32 %f3, %f1, 0f3FB8AA3B, %f2;\nex2.approx.ftz.f32 %f4, %f3;\n"
    assert r("float.hist._sample_nucleus_kernel", ok) is None
    assert r("float.hist._sample_nucleus_finish_kernel", ok) is None
    bad = "fma.rm.f32 %f3, %f1, %f2, 0f4B400001;\n" + ok
    assert "expf" in r("float.hist._sample_nucleus_kernel", bad)
    assert "expf" in r("float.hist._sample_nucleus_finish_kernel", bad)
    assert r("float.hist._sample_hist_kernel", bad) is None   # (not a nucleus pass)
