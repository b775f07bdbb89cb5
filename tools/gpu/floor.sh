#!/usr/bin/env bash
# On the lent H200 (repo root): issue #13 item 3, greedy and temperature at the memory floor.
#   1. the fast path's cuda tests (fused phase 1, quads, fold past 256 splits)    ~90 s cold JIT
#   2. graph-timed greedy / temperature at the 12 benchmark shapes, this tree and torch  ~70 s
#   3. the same for the tree unpacked in .alt (if carried: git archive main rocsample bench
#      tools | tar -x -C .alt), for a same-run comparison                               ~60 s
# Budget: ~240 s (one device call). Writes $OUT/floor-tests.log and $OUT/floor.jsonl.
# Success: "passed" and no "failed" in floor-tests.log; floor.jsonl has 48 rocsample:work lines
# (24 torch) with greedy x_floor <= 1.25 at 64 and 256 rows x 151936/262144 and greedy gpu_us
# below torch's at each shape.
source tools/gpu/env.sh
rc=0
timeout 150 python3 -m pytest tests/kernels/test_sampling_fast.py \
  tests/regress/test_fast_finalize_fold_past_256_splits.py --backend cuda -q -p no:cacheprovider \
  -rfE > "$OUT/floor-tests.log" 2>&1 || rc=$?
tail -3 "$OUT/floor-tests.log"
timeout 150 python3 tools/gpu/floor.py work --peers > "$OUT/floor.jsonl" || rc=$?
if [ -d .alt/rocsample ]; then
  base=$PYTHONPATH
  (cd .alt && PYTHONPATH=${base//$PWD/$PWD/.alt} timeout 120 python3 "$OLDPWD/tools/gpu/floor.py" alt) \
    >> "$OUT/floor.jsonl" || rc=$?
fi
cat "$OUT/floor.jsonl"
exit $rc
