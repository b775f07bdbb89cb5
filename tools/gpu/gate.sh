#!/usr/bin/env bash
# On the lent H200: the device gate (whole suite incl. slow tests + short benchmark + JSON report),
# then the demo. Usage: bash tools/gpu/gate.sh
source tools/gpu/env.sh
python3 -m rocsample.check --backend cuda --report "$OUT/check-cuda.json" 2>&1 | grep -v NumbaPerformanceWarning | grep -v "warn(errors" | tee "$OUT/gate.log" | tail -45
rc=${PIPESTATUS[0]}
python3 -m rocsample.demo 2>&1 | grep -v -i warn | tee "$OUT/demo.log"
exit $rc
