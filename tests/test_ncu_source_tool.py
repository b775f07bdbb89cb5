"""tools/gpu/ncu_source.py: the summary of ncu's source page finds its columns by words in
their names (ncu's names move between versions), sums the samples by SASS opcode without the
predicate, and prints the start of a file it cannot read rather than nothing."""

from __future__ import annotations

from tests.tool_module import load_tool

_CSV = [
    '"Kernel Name","_sample_partials_fast_kernel"\n',   # a row before the header
    '"# Address","Source","Warp Stall Sampling (All Samples)",'
    '"Warp Stall Sampling (Not-issued Samples)","Instructions Executed"\n',
    '"0x10","@!P0 BAR.SYNC.DEFER_BLOCKING 0x0","30","28","1,024"\n',
    '"0x20","BAR.SYNC.DEFER_BLOCKING 0x0","20","20","1,024"\n',
    '"0x30","MUFU.LG2 R3, R4","40","10","8,192"\n',
    '"0x40","MEMBAR.SC.GPU","10","10","328"\n',
]


def test_samples_add_up_by_opcode_and_the_top_rows_are_in_order():
    out = load_tool("tools/gpu/ncu_source.py").summarize(_CSV, top=2)
    assert out[1] == "rows 4, samples 100"
    assert out[2].startswith("by first word: BAR 50 (50.0%), MUFU 40 (40.0%), MEMBAR 10 (10.0%)")
    assert "All Samples" in out[0]   # the all-samples column, not the not-issued one
    assert "MUFU.LG2" in out[4] and "40.0%" in out[4] and "exec 8,192" in out[4]
    assert "@!P0 BAR" in out[5] and len(out) == 6


def test_a_file_without_csv_rows_or_columns_says_so():
    tool = load_tool("tools/gpu/ncu_source.py")
    out = tool.summarize(["==PROF== error: no report\n", "x\n"])
    assert out[0].startswith("no CSV rows") and out[1] == "==PROF== error: no report"
    out = tool.summarize(['"ID","Kernel Name"\n', '"0","k"\n'])
    assert out[0].startswith("columns not found") and "Kernel Name" in out[1]
