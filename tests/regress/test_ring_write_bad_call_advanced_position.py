"""ring_write with a device position advanced it even when the call was refused.

What broke: on GPU backends ``ring_write(dst, src, pos_dev, advance=True)`` launched its index
kernel (which writes ``pos += n``) before ``set_rows`` validated dst, src and dst_type, so a call
that raised ``ValueError`` / ``TypeError`` still moved the ring position on: the next good call
wrote to the wrong rows. The cpu backend validated first and left the position alone. Now every
shape / dtype check runs before the index kernel: a refused call launches nothing.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from tests.kernels.test_set_rows import assert_bytes_equal

sr = importlib.import_module("rocsample.set_rows")  # the module; rocsample.set_rows may be the function


@pytest.mark.parametrize(
    "case,exc,msg",
    [
        ("width", ValueError, r"dst: expected 48 values per row"),
        ("src_dtype", TypeError, r"src: expected float32 or float16, got float64"),
        ("dst_type", TypeError, r"dst: expected dtype uint8 for dst_type 'q8_0'"),
        ("ne0_not_32", ValueError, r"src: expected rows of a multiple of 32 values for a q8_0 dst"),
        ("lead", ValueError, r"dst: expected leading dims"),
    ],
)
def test_refused_ring_write_leaves_position_and_dst(backend, rng, case, exc, msg):
    ring = rng.standard_normal((4, 32)).astype(np.float32)
    src = rng.standard_normal((2, 32)).astype(np.float32)
    kw = {}
    if case == "width":
        src = rng.standard_normal((2, 48)).astype(np.float32)
    elif case == "src_dtype":
        src = src.astype(np.float64)
    elif case == "dst_type":
        kw["dst_type"] = "q8_0"
    elif case == "ne0_not_32":
        ring = rng.integers(0, 256, (4, 34), dtype=np.uint8)
        src = rng.standard_normal((2, 40)).astype(np.float32)
        kw["dst_type"] = "q8_0"
    elif case == "lead":
        src = rng.standard_normal((2, 2, 32)).astype(np.float32)
    pos_host = np.array([3], np.int64)
    if backend.is_device:
        d, s = backend.as_array(ring, "dst"), backend.as_array(src, "src")
        pos = backend.as_array(pos_host, "position")
    else:
        d, s, pos = ring.copy(), src, pos_host
    with pytest.raises(exc, match=msg):
        sr.ring_write(d, s, pos, advance=True, **kw)
    got_pos = backend.to_host(pos) if backend.is_device else pos
    assert got_pos[0] == 3, f"{case}: a refused call advanced the position to {got_pos[0]}"
    assert_bytes_equal(backend.to_host(d).view(ring.dtype) if backend.is_device else d, ring, case)
