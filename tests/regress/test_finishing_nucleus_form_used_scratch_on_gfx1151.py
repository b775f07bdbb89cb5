"""Regression: the nucleus pass's finishing form used scratch memory on gfx1151.

What broke (5bb5ff9, found by ``make test``'s AMD offline gate): the finishing form
(``sampling_hist._sample_nucleus_finish_kernel``) began summing the masses before four tokens
instead of two (``nuc_token4``, phase 1's TOP4 form). numba-hip's gfx1151 code of its float16
form then kept the stream's round of eight loads in a 552-byte private segment (scratch), which
the gate refuses; the float32 and bfloat16 forms and gfx942 were clean, and numba-cuda's sm_90
code had no spill. Off numba-cuda the finishing form now streams four loads a round (the same
tokens in the same order, so the same sums).

This compiles the finishing form's recorded signatures (every logits type) for gfx1151 and
gfx942 and requires no scratch; it runs in the offline AMD toolchain's environment (``make
check-amd-offline``, a step of ``make test``) and says so where numba-hip is not installed.
"""

from __future__ import annotations

import pytest

from tests.regress.test_float16_logits_unsupported_by_numba_hip import amd_compiled


def _finishing_form(rec):
    return rec["kernel"].endswith("hist._sample_nucleus_finish_kernel")


@pytest.mark.parametrize("arch", ["gfx1151", "gfx942"])
def test_the_finishing_form_compiles_without_scratch(arch):
    got = amd_compiled(arch, _finishing_form, ("float", "f16", "bf16"))
    failed = {label: res["error"] or res["problems"] for label, _rec, res in got
              if res["error"] or res["problems"]}
    assert not failed, failed
