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
