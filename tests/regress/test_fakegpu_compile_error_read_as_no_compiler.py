"""A tests/fakegpu/driver.c that did not compile skipped every fake-GPU test as "no C compiler".

``driver_library`` answered None both without a compiler and when the compiler refused the
file, so a C error in the no-op driver turned the bound-call tests into skips that read as an
environment limit. It now raises with the compiler's message; only a missing compiler skips.
"""

from __future__ import annotations

import shutil

import pytest

from tests import fakegpu


def test_a_driver_that_does_not_compile_raises_instead_of_skipping(tmp_path, monkeypatch):
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("cpu-only: no C compiler on this machine")
    (tmp_path / "driver.c").write_text("int broken( {\n")
    monkeypatch.setattr(fakegpu, "_HERE", tmp_path)
    monkeypatch.setattr(fakegpu, "_lib", None)
    with pytest.raises(RuntimeError, match="driver.c does not compile"):
        fakegpu.driver_library()
