"""Import-time timing knobs of the kernels (tools/gpu A/B runs): read, and refused out of range."""

import os
import subprocess
import sys

import pytest

_PROBE = "import rocsample.kernels.sampling_hist as h; print(h._NUC_UNROLL)"


def _import_with(value):
    env = dict(os.environ, ROCSAMPLE_NUC_UNROLL=value)
    return subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("value,want", [("", "8"), ("2", "2"), ("16", "16"), ("32", "32")])
def test_the_nucleus_passes_loads_a_round_come_from_the_setting(value, want):
    r = _import_with(value)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == want


@pytest.mark.parametrize("value", ["1", "33", "0"])
def test_a_setting_out_of_range_is_named_at_import(value):
    r = _import_with(value)
    assert r.returncode != 0
    assert f"ROCSAMPLE_NUC_UNROLL: expected 2 to 32, got {value}" in r.stderr
