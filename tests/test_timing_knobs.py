"""Import-time timing knobs of the kernels (tools/gpu A/B runs: ROCSAMPLE_NUC_UNROLL,
ROCSAMPLE_NUC_PREFETCH): read, reaching the kernels, and refused out of range."""

import os
import subprocess
import sys

import pytest

_PROBE = ("import rocsample.kernels.sampling_hist as h; "
          "print(h._NUC_UNROLL, sorted(h._NUC_UNROLL_FORMS.items()))")


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
    print(n, cells["NU"], cells["PREFETCH"])
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
    assert got == {"nucleus": ("4", "False"), "nucleus_finish": ("4", "False"),
                   "rank": ("8", "False"), "rank_finish": ("8", "False"), "rank4": ("4", "False")}


def test_every_form_takes_the_first_round_before_the_row_state_when_set():
    got = _forms(ROCSAMPLE_NUC_PREFETCH="1", ROCSAMPLE_NUC_UNROLL="")
    assert set(got) == {"nucleus", "nucleus_finish", "rank", "rank_finish", "rank4"}
    assert all(pf == "True" for _nu, pf in got.values())


_PF_PROBE = "import rocsample.kernels.sampling_hist as h; print(h._NUC_PREFETCH)"


@pytest.mark.parametrize("value,want", [("", "False"), ("0", "False"), ("1", "True"),
                                        (" 1 ", "True")])
def test_the_first_round_before_the_row_state_comes_from_the_setting(value, want):
    r = _import_with(value, "ROCSAMPLE_NUC_PREFETCH", _PF_PROBE)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == want


@pytest.mark.parametrize("value", ["2", "yes", "true"])
def test_a_prefetch_setting_other_than_0_or_1_is_named_at_import(value):
    r = _import_with(value, "ROCSAMPLE_NUC_PREFETCH", _PF_PROBE)
    assert r.returncode != 0
    assert f"ROCSAMPLE_NUC_PREFETCH: expected 0 or 1, got {value}" in r.stderr
