"""The quantizing set_rows kernels spilled registers to scratch on gfx1151 (the AMD compile gate).

What broke: compiled for gfx1151 by numba-hip (``tools/amd/compile_check.py`` with the offline
toolchain of ``tools/amd/setup.sh``), ``_set_rows_quant_kernel`` and
``_set_rows_fused_quant_kernel`` needed more than the 96 VGPRs per lane that gfx1151 leaves a
kernel compiled for numba-hip's 1024-thread workgroups: 21 and 20 VGPRs spilled, 88 and 84 B of
private segment (scratch memory on every launch), which the gate refuses. Why: each thread copied
its 32-value block from the shared stage into a local array held in registers across the
quantizer's passes; every quantized byte's offset was a signed int64, whose negative-index
wraparound select (34 of them, one per q8_0 byte) the compiler hoisted out of the chunk loop as
live registers; iq4_nl kept its 32 level indices for a packing pass and read its two tables from
constant memory (64-bit addresses on AMD). Now the quantizers read their block from the stage
with unsigned offsets, iq4_nl writes its bytes during its sum pass with its tables in shared
memory, and the ``_bytes`` kernels quantize into the shared output buffer as the word kernels do.

Compiles the signatures that set_rows launches for quantized rows (one and three launches; word
and element paths; float32 and float16 sources; recorded on the simulator) for gfx1151 and
requires every one to pass compile_check (no private segment among its checks). Runs where the
offline AMD toolchain is installed (``make check-amd-offline`` builds it); slow (a minute of
compiling on two cores, less with the gate's code-object cache).
"""

from __future__ import annotations

import pytest

from tests.amd_offline import TOOLCHAIN_SKIP, compile_recorded

QUANT_KERNELS = {"_set_rows_quant_kernel", "_set_rows_fused_quant_kernel",
                 "_set_rows_quant_bytes_kernel", "_set_rows_fused_quant_bytes_kernel"}

# the calls on the simulator whose kernel signatures are recorded (tests/amd_offline.py)
_RECORD = r"""
sr = importlib.import_module("rocsample.set_rows")
rng = np.random.default_rng(0)
idx = np.array([1, 3], dtype=np.int64)
one_launch = sr._FUSE_MAX_IDX
for dtype in (np.float32, np.float16):
    src = rng.standard_normal((2, 64)).astype(dtype)
    for fuse in (one_launch, 0):  # one launch, then reset + check + write
        sr._FUSE_MAX_IDX = fuse
        for view in (False, True):  # word path; element path (reversed columns: no whole words)
            s = be.as_array(src, "s")[:, ::-1] if view else src
            dst = np.zeros((4, 36), dtype=np.uint8)  # iq4_nl: 2 blocks of 18 bytes per row
            sr.set_rows(dst, s, idx, dst_type="iq4_nl", check_bounds=False)
"""


@pytest.mark.slow
@TOOLCHAIN_SKIP
def test_quant_kernels_compile_for_gfx1151_without_scratch(tmp_path):
    kernels = compile_recorded(tmp_path, _RECORD, lambda k: k in QUANT_KERNELS)
    assert set(kernels) == QUANT_KERNELS, f"recorded {kernels}"
