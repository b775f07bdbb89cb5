"""rocsample's NumPy reference against ggml's own CPU reference converters, byte for byte.

ggml 0.25.3's ``from_float_ref`` of every set_rows destination type (``quantize_row_*_ref`` and
the f16 / bf16 row converters) from the peer library that ``tools/peers/build_ggml.sh`` builds, on
finite rows of every magnitude (tiny blocks included), plus ggml's fp16 -> fp32 widening over all
65536 halves. (ggml-base's f32 -> f16 is its portable code, which drops NaN payloads; ggml-cpu's
set_rows uses F16C there, which keeps them, as the reference does: NaNs are not compared here.)
No GPU needed:

    python tools/peers/check_reference.py        # exit 0: no difference but the documented ones

The one documented difference: an iq4_nl block with max |x| < 1e-15 keeps ggml's stale scratch
nibbles (SPEC §3: rocsample writes zeros); its scale (0) is compared, its nibbles are not.
"""

from __future__ import annotations

import ctypes
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rocsample.reference import quant as q  # noqa: E402

CODES = {"f16": 1, "bf16": 30, "q4_0": 2, "q4_1": 3, "q5_0": 6, "q5_1": 7, "q8_0": 8, "iq4_nl": 20}


def main() -> int:
    lib = ctypes.CDLL(str(ROOT / ".peers" / "ggml" / "libggml_set_rows.so"))
    lib.rsg_from_float_ref.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    base = ctypes.CDLL(str(ROOT / ".peers" / "ggml" / "libggml-base.so"))
    rng = np.random.default_rng(0)
    n, ne0 = 512, 4096
    scale = rng.choice([1e-38, 1e-20, 1e-12, 1e-8, 1.0, 1e4, 1e30, 1e36], (n, 1))
    x = (rng.standard_normal((n, ne0)) * scale).astype(np.float32)
    x[3, :32] = 0.0
    x[4, :32] = -0.0
    x[5, 5] = 1e-45
    x[6, :64] = 1e-44
    x[7, :32] = rng.integers(-8, 8, 32)  # ties at every quantizer's rounding point
    bad = 0
    for t, code in CODES.items():
        ours = np.ascontiguousarray(q.convert_rows(x, t)).view(np.uint8).reshape(n, -1)
        theirs = np.zeros_like(ours)
        for r in range(n):
            row = np.ascontiguousarray(x[r])
            if lib.rsg_from_float_ref(code, row.ctypes.data, theirs[r].ctypes.data, ne0) != 0:
                print(f"{t}: no from_float_ref in ggml-base")
                return 2
        if t == "iq4_nl":
            live = np.abs(x.reshape(n, -1, 32)).max(-1) >= 1e-15
            o, g = ours.reshape(n, -1, 18), theirs.reshape(n, -1, 18)
            diff = int((o != g).any(-1)[live].sum()) + int((o[..., :2] != g[..., :2]).any(-1)[~live].sum())
            what = f"blocks differing (of {live.size}; {int((~live).sum())} tiny blocks: scale only)"
        else:
            diff = int((ours != theirs).any(1).sum())
            what = f"rows differing (of {n})"
        print(f"{t:7s} {diff} {what}")
        bad += diff
    h = np.arange(65536, dtype=np.uint16)
    f = np.zeros(65536, np.float32)
    base.ggml_fp16_to_fp32_row(ctypes.c_void_p(h.ctypes.data), ctypes.c_void_p(f.ctypes.data), ctypes.c_int64(65536))
    d = int((f.view(np.uint32) != q.fp16_bits_to_fp32(h).view(np.uint32)).sum())
    print(f"fp16 -> fp32: {d} of 65536 halves differ from ggml_fp16_to_fp32_row")
    return 1 if bad or d else 0


if __name__ == "__main__":
    sys.exit(main())
