"""float16 NaN payloads written by set_rows differed from ggml's (issue #12, defect 11).

What broke: an f16 src NaN 0x7C01 (signalling) written to an f16 dst became 0x7E01, because every
value went f16 -> f32 -> f16 and the narrowing quiets NaNs; ggml's CPU set_rows ``memcpy``s f16
rows into an f16 dst (0x7C01 stays 0x7C01). Written to an f32 dst it became 0x7F802000 (NumPy's
and our widening kept the NaN signalling) where ggml's ``ggml_compute_fp16_to_fp32`` gives
0x7FC02000: its multiply by 2**-112 (and F16C's vcvtph2ps) quiets the NaN. Now an f16 -> f16 row
is copied bit for bit and f16 -> f32 widening sets the quiet bit, on every backend (reference,
scalar and paired device kernels); bf16 follows from the quiet f32 (ggml: fp16 -> fp32 row, then
its bf16 rounding). The expected bits below are ggml 0.25.3's, not our output.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

sr = importlib.import_module("rocsample.set_rows")  # the module; rocsample.set_rows may be the function

# f16 bits -> ggml's f32 bits (ggml_compute_fp16_to_fp32)
GGML_F16_TO_F32 = {
    0x7C01: 0x7FC02000,  # signalling NaN: quieted, payload kept
    0xFC01: 0xFFC02000,
    0x7DFF: 0x7FFFE000,
    0x7E01: 0x7FC02000,  # already quiet: unchanged but for the widening
    0xFE00: 0xFFC00000,
    0x7C00: 0x7F800000,  # +inf
    0xFC00: 0xFF800000,
    0x3C00: 0x3F800000,  # 1.0
    0x0001: 0x33800000,  # smallest subnormal
}
# ggml's bf16 of those f32 values (ggml_compute_fp32_to_bf16: NaN -> (bits >> 16) | 64)
GGML_F32_TO_BF16 = {0x7FC02000: 0x7FC0, 0xFFC02000: 0xFFC0, 0x7FFFE000: 0x7FFF, 0xFFC00000: 0xFFC0,
                    0x7F800000: 0x7F80, 0xFF800000: 0xFF80, 0x3F800000: 0x3F80, 0x33800000: 0x3380}


def _src(ne0):
    bits = np.array(list(GGML_F16_TO_F32), np.uint16)
    row = np.resize(bits, ne0)
    return np.stack([row, np.roll(row, 3)]).view(np.float16)


def _expect(src, t):
    h = src.view(np.uint16)
    if t == "f16":
        return h.copy()
    f = np.vectorize(GGML_F16_TO_F32.get, otypes=[np.uint32])(h)
    if t == "f32":
        return f
    return np.vectorize(GGML_F32_TO_BF16.get, otypes=[np.uint16])(f)


@pytest.mark.parametrize("where", ["host", "device"])
@pytest.mark.parametrize("ne0", [64, 9], ids=["paired", "scalar"])  # odd ne0: one value per thread
@pytest.mark.parametrize("t", ["f16", "f32", "bf16"])
def test_f16_nan_payload_as_ggml(backend, where, ne0, t):
    src = _src(ne0)
    storage = {"f16": np.float16, "f32": np.float32, "bf16": np.uint16}[t]
    dst = np.zeros((3, ne0), storage)
    idx = np.array([2, 0], np.int64)
    if backend.is_device:
        d = backend.as_array(dst, "dst")
        s = backend.as_array(src, "src") if where == "device" else src
        sr.set_rows(d, s, backend.as_array(idx, "idx"), dst_type=t)
        got = backend.to_host(d)
    else:
        if where == "device":
            pytest.skip("cpu-only: no device arrays (the host case covers the reference)")
        sr.set_rows(dst, src, idx, dst_type=t)
        got = dst
    bits = np.ascontiguousarray(got).view(np.uint32 if t == "f32" else np.uint16)
    want = _expect(src, t)
    for r, row in ((2, 0), (0, 1)):
        bad = np.flatnonzero(bits[r] != want[row])
        assert bad.size == 0, (f"{t} dst row {r}: value {bad[0]}: f16 {src.view(np.uint16)[row, bad[0]]:#06x} "
                               f"-> {bits[r, bad[0]]:#x}, ggml gives {want[row, bad[0]]:#x}")
    assert not bits[1].any()
