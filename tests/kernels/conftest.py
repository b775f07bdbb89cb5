"""Fixtures shared by the kernel tests."""

from __future__ import annotations

import importlib

import pytest

sr = importlib.import_module("rocsample.set_rows")  # the module; rocsample.set_rows may be the function


@pytest.fixture(params=["fused", "three"])
def path(request, monkeypatch):
    """set_rows' two launch plans: "fused" (one kernel for <= _FUSE_MAX_IDX indices) and "three"
    (_FUSE_MAX_IDX = 0 forces reset + check + write; the cpu backend ignores it)."""
    if request.param == "three":
        monkeypatch.setattr(sr, "_FUSE_MAX_IDX", 0)
    return request.param


def skip_order_on_wave64(backend, order):
    """make test's wave64 rerun (the simulator with 64-thread wavefronts) takes the llama order
    only: the filter order does not touch the block's warp logic, and the vllm halves of the
    three slowest wave64 tests took 132 s of that stage's 519 on CI's 2 cores (fortieth
    session), when make test was past its 30 minutes."""
    if backend.name == "sim" and backend.warp_size() == 64 and order == "vllm":
        pytest.skip("wave64 sim: the llama order covers the 64-thread block logic (CI time)")


@pytest.fixture(params=[False, True], ids=["quads2", "quads3"])
def fast3(request, backend, monkeypatch):
    """Phase 1's fast pass in rounds of two quads, or (quads3) in its three-quad form (KF.FAST3,
    here from FAST_MIN_QUADS quads a thread on: the simulator's rows are short). Returns a check
    to call after the case's calls: with quads3, some launch took a three-quad variant (calls
    without logprobs: ``check(False)`` for a case whose calls ask for them)."""
    import rocsample.sampling as rs
    from rocsample.kernels import sampling as K
    from rocsample.kernels import sampling_fast as KF

    asked = []
    monkeypatch.setattr(KF, "FAST3", bool(request.param))   # (whatever ROCSAMPLE_FAST3 says)
    monkeypatch.setattr(rs, "_PLANS", {})   # no cached plan bound the other form's launches
    if request.param:
        monkeypatch.setattr(KF, "FAST3_MIN_QUADS", KF.FAST_MIN_QUADS)
        ns = backend.kernels(K.build)
        for dt in ("float", "f16", "bf16"):
            fast = getattr(ns, dt).fast
            made = fast.partials

            def spy(*args, _made=made):
                asked.append(args)
                return _made(*args)

            monkeypatch.setattr(fast, "partials", spy)

    def check(used=True):
        if request.param:
            q3 = any(len(a) >= 6 and a[5] for a in asked)
            assert q3 == used, f"three-quad launch {q3}, expected {used}: {asked}"

    return check
