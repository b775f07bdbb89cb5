"""The histogram kernel spilled registers to scratch on gfx1151 (the AMD compile gate).

What broke: dbf5536's parent gave the MINP stream the nucleus pass's form, eight unpredicated
loads a round (the MINP kernel on the H200: 60.6 -> 51.0 us at 64 x 262144). The same stream is
inlined in ``_sample_hist_kernel``, which serves MINP rows when a batch also has top-p or large
top-k rows (device parameter arrays always); compiled for gfx1151 by numba-hip
(``tools/amd/compile_check.py`` with the offline toolchain of ``tools/amd/setup.sh``) beside the
HIST rows' code it spilled 4 VGPRs, 20 B of private segment on every launch, for float32,
float16 and bfloat16 logits, which the gate refuses. Now the histogram kernel's MINP rows take
rounds of four (``_UNROLL``, as its other streams) and the MINP kernel's rounds of eight, from
one source (``minp_stream(U)`` in rocsample.kernels.sampling_hist).

Compiles the signatures of both kernels that sampling launches (recorded on the simulator: a
batch of a min_p row and a top_p row, then min_p alone, for each logits type) for gfx1151 and
requires every one to pass compile_check (no private segment among its checks). Runs where the
offline AMD toolchain is installed (``make check-amd-offline`` builds it); slow (about half a
minute of compiling on two cores, less with the gate's code-object cache).
"""

from __future__ import annotations

import pytest

from tests.amd_offline import TOOLCHAIN_SKIP, compile_recorded

KERNELS = ("hist._sample_hist_kernel", "hist._sample_minp_kernel")

# the calls on the simulator whose kernel signatures are recorded (tests/amd_offline.py)
_RECORD = r"""
import rocsample.sampling as rs
rng = np.random.default_rng(0)
f = rng.standard_normal((2, 64)).astype(np.float32)
t = np.full(2, 0.9, np.float32)
for x, kw in ((f, {}), (f.astype(np.float16), {}),
              ((f.view(np.uint32) >> 16).astype(np.uint16), {"dtype": "bfloat16"})):
    # a min_p row beside a top_p row: the histogram kernel; min_p alone: the MINP kernel
    rs.sample(x, temperature=t, min_p=np.array([0.2, 0.0], np.float32),
              top_p=np.array([1.0, 0.9], np.float32), seed=1, position=0, check=False, **kw)
    rs.sample(x, temperature=0.9, min_p=0.2, seed=1, position=0, check=False, **kw)
"""


@pytest.mark.slow
@TOOLCHAIN_SKIP
def test_hist_and_minp_kernels_compile_for_gfx1151_without_scratch(tmp_path):
    kernels = compile_recorded(tmp_path, _RECORD, lambda k: k.endswith(KERNELS))
    assert len(kernels) == 6, f"recorded {kernels}"   # two kernels x three logits types
