"""Regression: float16 logits could not be sampled on AMD at all.

What broke: the sampling kernels read float16 logits from a float16 array
(``np.float32(x[row, i])``). numba-hip 0.2.1 has no float16 data model, so every sampling kernel
whose logits were float16 failed to compile on the hip backend (``NotImplementedError: float16``
from numba-hip's ``FloatModel``). cuda and the simulator have float16 and never showed it; the
offline AMD compile of the recorded kernel signatures did (issue #14: 9 of 81 failed, all of
them float16 logits). Now float16 logits reach the kernels as their uint16 bit patterns (the
``f16`` kernels) and are widened to float32 exactly in the kernel, as bfloat16 already was.

The last test compiles the float16 signatures that the sim run recorded for gfx1151 through
numba-hip; it runs in the offline AMD toolchain's environment (``make check-amd-offline``, a
step of ``make test``) and says so where numba-hip is not installed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import sys

import numpy as np
import pytest

import rocsample
import rocsample.kernels.sampling as K

ROOT = pathlib.Path(__file__).parents[2]


def _block(backend):
    return backend.warp_size() if backend.name == "sim" else None


# the tile path (top-k rows), the histogram path (top-p alone) and the draw-only phase 1
PARAMS = [dict(top_k=10, top_p=0.9, temperature=0.8), dict(top_p=0.9, temperature=0.8),
          dict(temperature=0.8), dict(temperature=0.0)]


@pytest.mark.parametrize("params", PARAMS, ids=["chain", "top_p", "temperature", "greedy"])
def test_float16_logits_reach_the_kernels_as_uint16(backend, rng, params, monkeypatch):
    if not backend.is_device:
        pytest.skip("the cpu backend runs the reference and launches no kernels")
    launched = []
    orig = backend.launch

    def launch(kernel, grid, block, stream, *args):
        launched.append([str(getattr(a, "dtype", "")) for a in args])
        return orig(kernel, grid, block, stream, *args)

    monkeypatch.setattr(backend, "launch", launch)
    x = (rng.standard_normal((2, 96)) * 4).astype(np.float16)
    rocsample.sample(x, seed=3, position=1, _block=_block(backend), **params)
    assert launched
    assert not any("float16" in dtypes for dtypes in launched), launched
    assert any("uint16" in dtypes for dtypes in launched)


def _special_halves():
    """Every float16 class the widening treats apart: zeros, subnormals (smallest, largest),
    the smallest and largest normals, infinities and NaN, each with both signs."""
    bits = [0x0000, 0x0001, 0x0002, 0x0155, 0x03FF, 0x0400, 0x0401, 0x3BFF, 0x3C00, 0x3C01,
            0x7BFF, 0x7C00, 0x7E00]
    return np.array(bits + [b | 0x8000 for b in bits], np.uint16).view(np.float16)


def test_float16_special_values_sample_as_on_the_cpu(backend):
    # zero/subnormal/normal/infinite logits of both signs, and NaN, in one row and alone
    # among subnormals: tokens and logprobs equal the reference (which widens with NumPy)
    from rocsample.reference import sampling as R

    vals = _special_halves()
    tiny = vals[np.abs(vals.astype(np.float32)) < 2 ** -14]  # zeros and subnormals
    rows = np.stack([np.resize(vals, 32), np.resize(tiny, 32), np.resize(-tiny, 32)])
    for kw in (dict(temperature=0.0), dict(temperature=1.0, top_k=5), dict(top_p=0.5),
               dict(temperature=2.0)):
        tok, lp = rocsample.sample(rows, seed=11, position=2, return_logprobs=True,
                                   _block=_block(backend), **kw)
        tok = np.asarray(backend.to_host(tok)) if backend.is_device else tok
        lp = np.asarray(backend.to_host(lp)) if backend.is_device else lp
        want_tok, want_lp, _, near = R.sample_with_margin(rows, seed=11, position=2, **kw)
        assert list(tok[~near]) == list(want_tok[~near]), kw
        np.testing.assert_allclose(lp[~near], want_lp[~near], rtol=1e-5, atol=2e-5,
                                   err_msg=str(kw))


def test_float16_widening_is_exact_for_every_bit_pattern(backend):
    # the kernels' widening of all 65536 float16 bit patterns, against NumPy's float16 -> float32
    if not backend.is_device:
        pytest.skip("the cpu backend widens with NumPy itself (no kernel)")
    cuda = backend.cuda
    widen = backend.kernels(K.build).f16_bits_f32

    @cuda.jit
    def widen_all(h, out):
        start = cuda.grid(1)
        step = cuda.gridsize(1)
        for j in range(start, h.shape[0], step):
            out[j] = widen(h[j])

    h = np.arange(65536, dtype=np.uint16)
    st = backend.stream(None)
    d_h = backend.as_array(h, "h", st)
    d_out = backend.empty((65536,), np.float32, st)
    block = backend.warp_size()
    grid = 1 if backend.name == "sim" else 256  # the simulator runs each thread in Python
    backend.launch(widen_all, grid, block, st, d_h, d_out)
    got = np.asarray(backend.to_host(d_out, st)).view(np.uint32)
    want = h.view(np.float16).astype(np.float32).view(np.uint32)
    nan = np.isnan(h.view(np.float16))
    np.testing.assert_array_equal(got[~nan], want[~nan])
    assert np.isnan(got[nan].view(np.float32)).all()
    if backend.name != "cuda":
        # the exact integer widening (hip, sim) keeps a NaN's sign; cuda's cvt.f32.f16 returns
        # the canonical NaN (seen on the H200: this assertion failed there). NaN is never
        # sampled, so only NaN-ness matters to the kernels.
        assert ((got[nan] >> 31) == (want[nan] >> 31)).all()


def _amd_toolchain():
    """tools/amd/compile_check.py, when this process runs in the offline AMD toolchain."""
    if not os.environ.get("ROCSAMPLE_AMD_DEVLIB") or importlib.util.find_spec("numba.hip") is None:
        return None
    tools = str(ROOT / "tools" / "amd")
    if tools not in sys.path:
        sys.path.insert(0, tools)  # by name: its worker processes import it again
    return importlib.import_module("compile_check")


def amd_compiled(arch, keep, types=()):
    """[(label, record, result)] of compile_check on ``arch`` for the recorded kernel signatures
    that ``keep(record)`` selects (at least one, and one for each logits type of ``types``:
    "float", "f16", "bf16"); skips outside the offline AMD toolchain (``make
    check-amd-offline`` runs these tests)."""
    cc = _amd_toolchain()
    if cc is None:
        pytest.skip("cpu-only: needs the offline AMD toolchain; make check-amd-offline runs it")
    sigs = pathlib.Path(os.environ.get("ROCSAMPLE_KERNEL_SIGS", ROOT / "build" / "kernel-sigs.json"))
    assert sigs.is_file(), f"{sigs}: run the sim tests with ROCSAMPLE_RECORD_KERNELS first"
    recs = [r for r in json.loads(sigs.read_text()) if keep(r)]
    missing = sorted(set(types) - {r["kernel"].split(".")[0] for r in recs})
    assert recs and not missing, (
        f"{sigs}: the sim run recorded no launch of the kernels asked for"
        + (f" with {', '.join(missing)} logits" if recs else "")
        + ": a sim test must launch them (e.g. tests/regress/"
        "test_half_nucleus_pass_never_recorded_for_the_amd_gate.py)")
    return [(cc.label(rec), rec, res)
            for rec, res in zip(recs, cc.compile_records(recs, arch, jobs=2))]


def _is_half(r):
    return r["kernel"].startswith("f16.") or any(a.get("array", [""])[0] == "float16"
                                                 for a in r["args"])


def test_float16_sampling_signatures_compile_for_gfx1151():
    got = amd_compiled("gfx1151", _is_half)
    assert any(rec["kernel"].startswith("f16.") for _l, rec, _r in got), \
        "no float16 sampling launch recorded"
    failed = {label: res["error"] or res["problems"] for label, _rec, res in got
              if res["error"] or res["problems"]}
    assert not failed, failed
