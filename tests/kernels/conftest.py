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
