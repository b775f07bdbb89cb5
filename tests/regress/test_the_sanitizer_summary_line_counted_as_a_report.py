"""tools/gpu/steps.sh counted compute-sanitizer's summary line as a report.

The device scripts count a sanitizer log's report lines (memcheck's invalid accesses, racecheck's
races and hazards, synccheck's barrier errors) to print "reports=N" beside the tool's own
summary. The pattern's ``.*hazard`` also matched racecheck's summary, "RACECHECK SUMMARY: 0
hazards displayed", so every clean racecheck read reports=1 (bench/results/nvidia-h100-s52-race.txt).
``san_reports`` now leaves the summary lines out; the scripts share it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CLEAN_RACE = """\
========= COMPUTE-SANITIZER
..........
========== 25 passed, 63 deselected, 32 warnings in 100.79s (0:01:40) ==========
========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)
"""
RACES = """\
========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at kern+0x1a0
=========     and Read access at kern+0x2f0 [128 hazards]
========= Warning: Race reported between Read access at kern+0x10
========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)
"""
CLEAN_MEM = """\
========= COMPUTE-SANITIZER
94 passed, 86 warnings in 123.79s (0:02:03)
========= ERROR SUMMARY: 0 errors
"""
MEM_ERRORS = """\
========= Invalid __global__ read of size 4 bytes
=========     at kern+0x70
========= Barrier error detected. Divergent thread(s) in block
========= ERROR SUMMARY: 2 errors
"""


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("grep") is None,
                    reason="needs bash and grep")
@pytest.mark.parametrize("log, want", [(CLEAN_RACE, 0), (RACES, 2), (CLEAN_MEM, 0),
                                       (MEM_ERRORS, 2)])
def test_san_reports_counts_reports_not_summaries(tmp_path, log, want):
    f = tmp_path / "tool.log"
    f.write_text(log)
    out = subprocess.run(["bash", "-c", 'source tools/gpu/steps.sh; san_reports "$1"', "_", str(f)],
                         cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == str(want), (out.stdout, out.stderr)


def test_the_scripts_that_count_reports_share_san_reports():
    for name in ("steps.sh", "s16_san.sh", "s56_second.sh"):
        text = (ROOT / "tools/gpu" / name).read_text()
        assert "san_reports" in text, name
        assert '.*hazard)" "$OUT' not in text, name
