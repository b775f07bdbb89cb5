"""Regression: folding the nucleus pass's two token loops through one device function grew its
plain form's registers on AMD.

What broke (a689f96, found by the twenty-seventh session's ``make test``, whose regenerated
docs/amd-kernels.md disagreed with the commit's claim of unchanged AMD code): the nucleus pass's
whole rounds and its predicated round called one ``fold_round`` holding both forms' branch
(the plain pass's two sums, the finishing form's four). numba-cuda inlined it to the same sm_90
code as before, but numba-hip's code of the plain float32 pass went from 40 to 48 VGPRs on
gfx1151 and from 42 to 50 on gfx942 (more code, no scratch, so no gate step failed). a689f96 is
reverted: each loop folds its round in place again.

This compiles the plain pass's recorded signatures (every logits type) for gfx1151 and gfx942
and holds each to the registers it had before; it runs in the offline AMD toolchain's
environment (``make check-amd-offline``, a step of ``make test``) and says so where numba-hip
is not installed.
"""

from __future__ import annotations

import pytest

from tests.regress.test_float16_logits_unsupported_by_numba_hip import amd_compiled

#: the plain nucleus pass's VGPRs before a689f96 (ddb3e8f), by logits type; gfx1151's since
#: 6079034's int32 indices (40 / 40 / 42 before)
MOST = {"gfx1151": {"float": 36, "bf16": 35, "f16": 39},
        "gfx942": {"float": 42, "bf16": 40, "f16": 44}}


def _plain_pass(rec):
    return rec["kernel"].endswith("hist._sample_nucleus_kernel")


@pytest.mark.parametrize("arch", ["gfx1151", "gfx942"])
def test_the_plain_nucleus_pass_keeps_its_registers(arch):
    got = {}
    for label, rec, res in amd_compiled(arch, _plain_pass, ("float", "f16", "bf16")):
        assert not res["error"], (label, res["error"])
        got[rec["kernel"].split(".")[0]] = res["info"]["vgprs"]
    assert all(got[t] <= MOST[arch][t] for t in MOST[arch]), (got, MOST[arch])
