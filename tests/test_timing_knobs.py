"""The nucleus and rank passes' loads a round: each backend's default per form, and the
import-time timing setting (tools/gpu A/B runs: ROCSAMPLE_NUC_UNROLL) read, reaching the
kernels, and refused out of range."""

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from rocsample.kernels import sampling_hist

_PROBE = ("import rocsample.kernels.sampling_hist as h; "
          "e, f = h._unroll_setting(h._NUC_UNROLL_ENV); print(e, sorted(f.items()))")


def _import_with(value, name="ROCSAMPLE_NUC_UNROLL", probe=_PROBE):
    env = dict(os.environ, **{name: value})
    return subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("value,want", [
    ("", "8 []"), ("2", "2 []"), ("16", "16 []"), ("32", "32 []"),
    ("8,nucleus=4,nucleus_finish=16", "8 [('nucleus', 4), ('nucleus_finish', 16)]"),
    ("4, rank4 = 16", "4 [('rank4', 16)]")])
def test_the_nucleus_passes_loads_a_round_come_from_the_setting(value, want):
    r = _import_with(value)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == want


@pytest.mark.parametrize("value,bad", [("1", "1"), ("33", "33"), ("0", "0"), ("x", "x"),
                                       ("8,rank=64", "64"), ("8,nucleus=", "")])
def test_a_setting_out_of_range_is_named_at_import(value, bad):
    r = _import_with(value)
    assert r.returncode != 0
    assert f"ROCSAMPLE_NUC_UNROLL: expected 2 to 32, got {bad}" in r.stderr


@pytest.mark.parametrize("value", ["8,select=4", "8,4", "8,rank"])
def test_a_form_the_setting_does_not_know_is_named_at_import(value):
    r = _import_with(value)
    assert r.returncode != 0
    assert "ROCSAMPLE_NUC_UNROLL: expected FORM=N with FORM one of nucleus, nucleus_finish" \
        in r.stderr


_FORMS_PROBE = """
import rocsample
from rocsample.kernels import sampling
h = rocsample.get_backend().kernels(sampling.build).float.hist
for n in ("nucleus", "nucleus_finish", "rank", "rank_finish", "rank4"):
    f = getattr(h, "_sample_%s_kernel" % n).fn
    cells = dict(zip(f.__code__.co_freevars, (c.cell_contents for c in f.__closure__)))
    print(n, cells["NU"])
"""


def _forms(**settings):
    env = dict(os.environ, ROCSAMPLE_BACKEND="sim", **settings)
    r = subprocess.run([sys.executable, "-c", _FORMS_PROBE], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return {f[0]: tuple(f[1:]) for f in (line.split() for line in r.stdout.split("\n")) if f}


def test_each_form_takes_its_own_loads_a_round():
    # the simulator's kernels (their Python functions' closures); off numba-cuda the four-sum
    # forms (the finishing forms and rank4) take half the setting
    got = _forms(ROCSAMPLE_NUC_UNROLL="8,nucleus=4,rank_finish=16")
    assert got == {"nucleus": ("4",), "nucleus_finish": ("4",), "rank": ("8",),
                   "rank_finish": ("8",), "rank4": ("4",)}


def test_the_simulators_kernels_take_the_default_of_every_backend_but_numba_cuda():
    got = _forms(ROCSAMPLE_NUC_UNROLL="")
    assert got == {"nucleus": ("8",), "nucleus_finish": ("4",), "rank": ("8",),
                   "rank_finish": ("4",), "rank4": ("4",)}


def _compiler(module):
    def jit():
        pass
    jit.__module__ = module
    return SimpleNamespace(jit=jit)


@pytest.mark.parametrize("form,cuda_nu,hip_nu", [
    ("nucleus", 4, 8), ("nucleus_finish", 8, 4), ("rank", 8, 8), ("rank_finish", 8, 4),
    ("rank4", 8, 4)])
def test_each_backend_has_its_own_default_per_form(monkeypatch, form, cuda_nu, hip_nu):
    # numba-cuda's default is the H100's A/B winner (docs/PERF_NOTES.md, thirty-sixth
    # session); numba-hip keeps 8, its four-sum forms half (the AMD offline gate's private
    # segment limit)
    monkeypatch.setattr(sampling_hist, "_NUC_UNROLL_ENV", None)
    assert sampling_hist._nuc_unroll(form, _compiler("numba.cuda.decorators")) == cuda_nu
    assert sampling_hist._nuc_unroll(form, _compiler("numba_hip.hip.decorators")) == hip_nu


def test_the_setting_overrides_the_default_on_numba_cuda(monkeypatch):
    monkeypatch.setattr(sampling_hist, "_NUC_UNROLL_ENV", "8")
    cuda = _compiler("numba.cuda.decorators")
    assert [sampling_hist._nuc_unroll(f, cuda) for f in sampling_hist._NUC_FORMS] == [8] * 5
