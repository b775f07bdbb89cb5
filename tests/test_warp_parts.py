"""rocsample.kernels.warp_parts: which block-wide steps take their warp form (no GPU needed)."""

from types import SimpleNamespace

import pytest

from rocsample.kernels import WARP_DEFAULT, WARP_PARTS, warp_parts


def _module(jit_module):
    def jit(*a, **k):
        return None

    jit.__module__ = jit_module
    return SimpleNamespace(jit=jit)


CUDA = _module("numba.cuda.decorators")


def test_numba_cuda_takes_every_warp_form_by_default(monkeypatch):
    monkeypatch.delenv("ROCSAMPLE_WARP", raising=False)
    assert warp_parts(CUDA) == WARP_DEFAULT == {"max", "bin", "sum", "tree", "tail"}
    assert WARP_PARTS == WARP_DEFAULT


@pytest.mark.parametrize("name", ["numba.cuda.simulator.api", "numba.hip.decorators", "x"])
def test_other_compilers_keep_the_shared_memory_forms(monkeypatch, name):
    monkeypatch.setenv("ROCSAMPLE_WARP", "max")
    assert warp_parts(_module(name)) == frozenset()


@pytest.mark.parametrize("value,want", [("0", set()), (" max ", {"max"}), ("max,", {"max"}),
                                        ("bin", {"bin"}), ("bin, max", {"max", "bin"}),
                                        ("sum", {"sum"}), ("tree", {"tree"}),
                                        ("max,bin,sum", {"max", "bin", "sum"}),
                                        ("max,bin,sum,tree", {"max", "bin", "sum", "tree"}),
                                        ("tail", {"tail"}),
                                        ("", {"max", "bin", "sum", "tree", "tail"})])
def test_the_setting_selects_parts(monkeypatch, value, want):
    monkeypatch.setenv("ROCSAMPLE_WARP", value)
    assert warp_parts(CUDA) == want


def test_an_unknown_part_is_named(monkeypatch):
    monkeypatch.setenv("ROCSAMPLE_WARP", "max,append")
    with pytest.raises(ValueError, match=r"ROCSAMPLE_WARP.*'append'"):
        warp_parts(CUDA)
