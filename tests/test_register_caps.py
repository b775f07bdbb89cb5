"""Phase 1's register caps reach numba-cuda's compiler, family by family (no GPU needed).

The fast variants' block redraw of unsettled threads took ptxas to 72 registers a thread in
their TOP2 and TOP4 forms (3 blocks of 256 an SM instead of 4); they are capped at 64 as their
own family, ``partials_fast`` (docs/PERF_NOTES.md, "Twenty-ninth session"). A cap lost on the
way to ``cuda.jit`` would change no token, so only this test would see it.
"""

from itertools import product
from types import SimpleNamespace

import pytest

from rocsample.kernels import _numba_cuda, register_cap
from rocsample.kernels import sampling_fast as KF


def _module(jit_module):
    def jit(*a, **k):
        return None

    jit.__module__ = jit_module
    return SimpleNamespace(jit=jit)


def _variants():
    # every (draw, lp, fast, top2, top4) the router can ask for: top2 / top4 only on drawing
    # variants, top4 only with top2
    for draw, lp, fast, top2, top4 in product((False, True), repeat=5):
        if (fast or top2) and not draw or top4 and not top2:
            continue
        yield draw, lp, fast, top2, top4


def test_numba_cuda_phase1_kernels_carry_their_family_cap(monkeypatch):
    cuda = pytest.importorskip("numba.cuda")
    if not _numba_cuda(cuda):
        pytest.skip("numba-cuda's compiler: --backend sim puts its simulator in numba.cuda")
    monkeypatch.delenv("ROCSAMPLE_MAX_REGISTERS", raising=False)
    from rocsample.kernels import sampling as K

    ns = K.build(cuda)
    assert KF.PARTIALS_MAX_REGISTERS[2] == 64
    seen = set()
    for draw, lp, fast, top2, top4 in _variants():
        k = ns.float.fast.partials(draw, lp, fast, top2, top4)
        want = KF.PARTIALS_MAX_REGISTERS[2 if fast else int(draw)]
        assert k.targetoptions.get("max_registers") == want, (draw, lp, fast, top2, top4)
        seen.add(want)
        if fast:   # the three-quad forms (KF.FAST3): the fast family's cap too
            k3 = ns.float.fast.partials(draw, lp, fast, top2, top4, True)
            assert k3 is not k and k3.targetoptions.get("max_registers") == want
    assert 64 in seen and None in seen


@pytest.mark.parametrize("setting,want", [("", {"max_registers": 64}),
                                          ("partials_fast=72", {"max_registers": 72}),
                                          ("partials_fast=0", {}),
                                          ("partials_draw=40", {"max_registers": 64})])
def test_the_setting_overrides_one_family(monkeypatch, setting, want):
    monkeypatch.setenv("ROCSAMPLE_MAX_REGISTERS", setting)
    monkeypatch.delenv("ROCSAMPLE_LINEINFO", raising=False)
    cuda = _module("numba.cuda.decorators")
    assert register_cap(cuda, "partials_fast", KF.PARTIALS_MAX_REGISTERS[2]) == want


@pytest.mark.parametrize("name", ["numba.cuda.simulator.api", "numba.hip.decorators"])
def test_other_compilers_take_no_cap(monkeypatch, name):
    monkeypatch.setenv("ROCSAMPLE_LINEINFO", "1")
    assert register_cap(_module(name), "partials_fast", 64) == {}


@pytest.mark.parametrize("setting,want", [("1", {"max_registers": 64, "lineinfo": True}),
                                          ("0", {"max_registers": 64}),
                                          ("", {"max_registers": 64})])
def test_the_lineinfo_setting_reaches_numba_cudas_options(monkeypatch, setting, want):
    # a source-level profile of phase 1 (ncu SourceCounters: BENCHMARKS.md, the fifty-second
    # session)
    monkeypatch.delenv("ROCSAMPLE_MAX_REGISTERS", raising=False)
    monkeypatch.setenv("ROCSAMPLE_LINEINFO", setting)
    assert register_cap(_module("numba.cuda.decorators"), "partials_fast", 64) == want


def test_numba_cuda_nucleus_pass_is_capped_and_its_other_forms_are_not(monkeypatch):
    # The plain nucleus pass at 32 (8 blocks of 256 an SM; with int32 indices ptxas took it to
    # 38-40 uncapped), its rank and finishing forms uncapped, each form its own family
    cuda = pytest.importorskip("numba.cuda")
    if not _numba_cuda(cuda):
        pytest.skip("numba-cuda's compiler: --backend sim puts its simulator in numba.cuda")
    monkeypatch.delenv("ROCSAMPLE_MAX_REGISTERS", raising=False)
    from rocsample.kernels import sampling as K
    from rocsample.kernels import sampling_hist as KH

    h = K.build(cuda).float.hist
    assert KH.NUC_MAX_REGISTERS == 32
    assert h._sample_nucleus_kernel.targetoptions.get("max_registers") == 32
    for name in ("_sample_nucleus_finish_kernel", "_sample_rank_kernel",
                 "_sample_rank_finish_kernel", "_sample_rank4_kernel"):
        assert getattr(h, name).targetoptions.get("max_registers") is None, name
