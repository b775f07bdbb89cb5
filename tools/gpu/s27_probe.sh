#!/usr/bin/env bash
# The twenty-seventh session's probe (carry .whl; <= 300 s): the nucleus pass's own split count
# against top_p-alone time (tools/gpu/nuc_split_probe.py), at the plan's phase-1 splits and a
# few more at the narrow shapes. Output: $OUT/nuc-splits.txt
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
timeout "${PLIM:-280}" python3 tools/gpu/nuc_split_probe.py \
  --draw "${DRAW:-256x32000:2,4;64x32000:8;8x32000:31}" 2>&1 | tee "$OUT/nuc-splits.txt" | grep -v Warning
echo "== done at $((SECONDS - T0)) s"
