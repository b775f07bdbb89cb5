"""The split rule of a sampling plan (rocsample.sampling_plan.choose_splits): pure arithmetic over
the shape and the device, checked here on every backend option.

At most one wave of (split x row) blocks; no more splits than give every compute unit 2.5 blocks
or each split 16K logits, whichever asks for more; never a split of fewer than 1024 logits. The
H200 figures (132 SMs) are the ones the splits sweep behind the rule measured (docs/PERF_NOTES.md,
"Later session"). Results never depend on the split count (SPEC), which the kernel tests check.
"""

from __future__ import annotations

import pytest

from rocsample.sampling_plan import choose_splits

H200 = 132


@pytest.mark.parametrize("rows, vocab, want", [
    (1, 32000, 31), (1, 151936, 148), (64, 32000, 5), (64, 151936, 10),
    (256, 32000, 2), (256, 151936, 4), (64, 262144, 16), (8, 151936, 41),
])
def test_the_h200_benchmark_shapes(rows, vocab, want):
    assert choose_splits(rows, vocab, H200, 256) == want


@pytest.mark.parametrize("cus", [1, 20, 40, 132])
@pytest.mark.parametrize("rows", [1, 3, 8, 64, 256, 4096])
@pytest.mark.parametrize("vocab", [1, 1000, 32000, 151936, 262144, 1 << 20])
def test_bounds(cus, rows, vocab):
    s = choose_splits(rows, vocab, cus, 256)
    assert 1 <= s <= max(1, 8 * cus // rows)  # one wave at most
    assert s == 1 or vocab // s >= 1024  # no split streams fewer than 1024 logits
    # fewer splits would leave a compute unit under 2.5 blocks and every split under 16K
    if s > 1:
        assert s <= max(5 * cus // (2 * rows), -(-vocab // 16384))


def test_more_rows_never_get_more_splits():
    for vocab in (32000, 151936, 262144):
        got = [choose_splits(r, vocab, H200, 256) for r in (1, 2, 8, 32, 64, 128, 256, 1024)]
        assert got == sorted(got, reverse=True), (vocab, got)
