"""Strided views were refused by set_rows and ring_write on the device backends (issue #12, defect 3).

What broke: ``set_rows(dst, big[::2], idx)``, a 3-D ``src[:, 0:2]``, a strided ``idx`` and
``ring_write`` with views raised numba's "Array contains non-contiguous buffer and cannot be
transferred as a single memory region" on sim (an error that names no argument), while cpu
accepted them and SPEC §3 accepts strided views of src, dst and idx. The device launcher handed
NumPy views straight to numba's host-to-device copy, which needs one contiguous region. Host
views are now copied over in C order and device views are used in place (the kernels take
strides), so every backend writes the reference's bytes for each of these calls.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from tests.kernels.test_set_rows import assert_bytes_equal

sr = importlib.import_module("rocsample.set_rows")  # the module; rocsample.set_rows may be the function
from rocsample.reference import set_rows as ref  # noqa: E402


def _view(backend, full, sl, where):
    """``full[sl]``: of a device copy of ``full`` (where == "device") or of ``full`` itself."""
    if where == "device" and backend.is_device:
        return backend.as_array(full, "x")[sl]
    return full[sl]


S = np.s_
# (name, dst shape, dst slice, src shape, src slice, idx values, idx slice, dst_type)
CASES = [
    ("src_every_other_row", (6, 64), S[:], (8, 64), S[::2], [4, 0, 5, 2], S[:], "f32"),
    ("src_reversed_rows", (6, 64), S[:], (4, 64), S[::-1], [1, 3, 0, 5], S[:], "f16"),
    ("src_3d_middle_rows", (2, 4, 64), S[:], (2, 3, 64), S[:, 0:2], [3, 1], S[:], "f32"),
    ("src_every_other_column", (6, 32), S[:], (4, 64), S[:, ::2], [0, 2, 4, 5], S[:], "bf16"),
    ("src_odd_column_offset", (6, 32), S[:], (4, 64), S[:, 1:33], [0, 2, 4, 5], S[:], "f16"),
    ("idx_every_other", (6, 64), S[:], (4, 64), S[:], [5, 9, 0, 9, 3, 9, 1, 9], S[::2], "f32"),
    ("idx_2d_strided", (2, 6, 64), S[:], (2, 2, 64), S[:], [[3, 9, 1, 9], [0, 9, 5, 9]], S[:, ::2], "f32"),
    ("dst_every_other_row", (12, 64), S[::2], (4, 64), S[:], [4, 0, 5, 2], S[:], "f32"),
    ("dst_every_other_column", (6, 128), S[:, ::2], (4, 64), S[:], [4, 0, 5, 2], S[:], "f16"),
    ("q8_0_src_every_other_row", (6, 68), S[:], (8, 64), S[::2], [4, 0, 5, 2], S[:], "q8_0"),
    ("q4_1_src_3d_middle_rows", (2, 4, 40), S[:], (2, 3, 64), S[:, 1:3], [0, 3], S[:], "q4_1"),
    ("q5_0_dst_every_other_row", (12, 44), S[::2], (4, 64), S[:, :], [1, 3, 0, 5], S[:], "q5_0"),
    ("iq4_nl_dst_second_half_of_rows", (6, 72), S[:, 36:], (4, 64), S[:, ::-1], [1, 3, 0, 5], S[:], "iq4_nl"),
]
STORAGE = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16}


def _dst_full(shape, t, rng):
    if t in STORAGE and t != "bf16":
        return rng.standard_normal(shape).astype(STORAGE[t])
    return rng.integers(0, 256 if t not in STORAGE else 0x7C00, shape).astype(STORAGE.get(t, np.uint8))


@pytest.mark.parametrize("where", ["host", "device"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_strided_views_write_the_references_bytes(backend, rng, case, where):
    name, dshape, dsl, sshape, ssl, ivals, isl, t = case
    if where == "device" and not backend.is_device:
        pytest.skip("cpu-only: no device arrays (the host case is the one that runs)")
    dst_full = _dst_full(dshape, t, rng)
    src_full = rng.standard_normal(sshape).astype(np.float16 if "f16" in name or t == "f16" else np.float32)
    idx_full = np.array(ivals, np.int64)
    want = dst_full.copy()
    ref.set_rows(want[dsl], np.ascontiguousarray(src_full[ssl]), np.ascontiguousarray(idx_full[isl]), dst_type=t)
    if backend.is_device:
        dev_dst = backend.as_array(dst_full, "dst")
        sr.set_rows(dev_dst[dsl], _view(backend, src_full, ssl, where), _view(backend, idx_full, isl, where),
                    dst_type=t)
        got = backend.to_host(dev_dst).view(dst_full.dtype)
    else:
        got = dst_full.copy()
        sr.set_rows(got[dsl], src_full[ssl], idx_full[isl], dst_type=t)
    assert_bytes_equal(got, want, name)


@pytest.mark.parametrize("where", ["host", "device"])
@pytest.mark.parametrize("t", ["f32", "q8_0"])
@pytest.mark.parametrize("position", ["int", "array"])
def test_ring_write_with_views(backend, rng, where, t, position):
    if where == "device" and not backend.is_device:
        pytest.skip("cpu-only: no device arrays (the host case is the one that runs)")
    width = 64 if t == "f32" else 68
    ring_full = _dst_full((10, width), t, rng)
    src_full = rng.standard_normal((6, 64)).astype(np.float32)
    want = ring_full.copy()
    ref.set_rows(want[::2], np.ascontiguousarray(src_full[::2]), np.array([4, 0, 1]), dst_type=t)
    if position == "int":
        pos = 4
    elif backend.is_device:
        pos = backend.as_array(np.array([4], np.int64), "position")
    else:
        pos = np.array([4], np.int64)
    if backend.is_device:
        dev = backend.as_array(ring_full, "dst")
        sr.ring_write(dev[::2], _view(backend, src_full, S[::2], where), pos, dst_type=t)
        got = backend.to_host(dev).view(ring_full.dtype)
    else:
        got = ring_full.copy()
        sr.ring_write(got[::2], src_full[::2], pos, dst_type=t)
    assert_bytes_equal(got, want, f"ring_write {t} {position} position, {where} views")
