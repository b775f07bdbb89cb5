#!/usr/bin/env bash
# The twenty-fourth session's first call (carry the numpy wheel; about 120 s): the read probe's
# 16-byte-load forms (tools/gpu/read_probe.py: row_max_v4 / row_max_v8 at every split and block,
# argmax_v4 / argmax_v4k / argmax_v8 / argmax_v8k beside argmax_win16 at greedy's shape and
# READ_AM's) at the 64-row shapes and 256 x 32000, greedy (the package's argmax kernel) in the
# same process. Output: $OUT/read-probe-v4.jsonl
set -u
source tools/gpu/env.sh
T0=$SECONDS
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
READ_SHAPES=${READ_SHAPES:-64x262144,64x151936,256x32000,256x151936} \
READ_SPLITS=${READ_SPLITS:-2,4,6,8,12,16} READ_BLOCKS=${READ_BLOCKS:-256,512,1024} \
READ_ROWMAX=row_max,row_max_v4,row_max_v8 \
READ_VARIANTS=argmax_win16,argmax_v4,argmax_v4k,argmax_v8,argmax_v8k \
READ_AM=${READ_AM:-2:1024,4:256,4:512,6:256,8:256,16:256,2:512} \
  timeout -s INT -k 10 "${PLIM:-300}" python3 tools/gpu/read_probe.py > "$OUT/read-probe-v4.jsonl" 2> "$OUT/read-probe-v4.err"
echo "== probe rc=$? at $((SECONDS - T0)) s"
tail -4 "$OUT/read-probe-v4.err"
python3 - "$OUT/read-probe-v4.jsonl" <<'PY'
import json, sys
rows = [r for r in (json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")) if "us" in r]
for shape in sorted({(r["rows"], r["vocab"]) for r in rows}):
    at = [r for r in rows if (r["rows"], r["vocab"]) == shape]
    for kind in sorted({r["kind"] for r in at}):
        b = min((r for r in at if r["kind"] == kind), key=lambda r: r["us"])
        print(f"{shape[0]}x{shape[1]} {kind:14s} {b['us']:8.2f} us {b['x_floor']:.3f}x "
              f"b{b.get('block', '-')} s{b.get('splits', '-')}")
PY
grep -v '^{' "$OUT/read-probe-v4.jsonl" | tail -6
echo "== done at $((SECONDS - T0)) s"
