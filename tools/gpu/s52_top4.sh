#!/usr/bin/env bash
# Where top_k 1000's phase 1 spends its 20.6 us at 8 x 151936 (written in the fifty-first
# session, not yet run; carry .whl; <= STOP, default 540 s, on a fresh machine). The fifty-first
# session's ncu (bench/results/nvidia-h100-s51-why.txt): the rank route's TOP4 drawing variant,
# 328 blocks of 256, 48 registers, issues every 2 cycles, SM active cycles 24.2k of 40.7k
# elapsed (the chain's phase 1 on the same grid: 10.1k of 15.1k), barrier stalls 2.9 of 9.3
# cycles an instruction; read offline (docs/PERF_NOTES.md "Fifty-first session"): an exact draw
# of 104 SASS a token (3706 logits a split: no fast pass) and a serial tail (the block's 8-level
# four-best merge, two SC fences, the row's last block's two passes over its partials). Three
# parts, each a file in $OUT and a section of top4.txt:
#  1. the A/B of ROCSAMPLE_DRAW_SHORT_BLOCK=128 (sampling_router.DRAW_SHORT_BLOCK, off by
#     default: phase 1 alone at 128 threads where its drawing splits are too short for the fast
#     pass at 256 and long enough at 128, the 41 splits of 8 x 151936; graph-timed, the bench's
#     inputs, one pass each; ab.txt): top_k 1000, top_p alone, temperature and the chain at SH
#     (default 8x151936,32x32000,8x262144,1x151936: the first two move (32 x 32000: 8 splits of
#     4000); the others are controls);
#  2. ncu's sections of phase 1 at 8 x 151936: the chain, temperature, top_p alone and top_k 1000 (the
#     draw alone, TOP2, TOP4), top_k 1000 in its TOP2 form (ROCSAMPLE_NUC_RANK_PLAIN_TOP2_ROWS=8)
#     and with the knob (top4-NAME.csv);
#  3. ncu's SourceCounters (PC-sampled stalls) over one launch of top_k 1000's phase 1, built
#     with ROCSAMPLE_LINEINFO=1, exported as SASS and as Python lines (top4-src.ncu-rep,
#     top4-src-{sass,cuda}.csv; tools/gpu/ncu_source.py sums them by opcode and lists the top).
# None of the parts starts with under 40 s before STOP.
set -u
source tools/gpu/env.sh
source tools/gpu/steps.sh
T0=$SECONDS
banner
ncu --version | tail -1 | tee "$OUT/top4.txt"
SH=${SH:-8x151936,32x32000,8x262144,1x151936}
ARGS=(--graph --bench-inputs --topk1000 --topp_alone --temp --chain --shapes "$SH")
VS=("X=0" "ROCSAMPLE_DRAW_SHORT_BLOCK=128")
# (the source-level profile's own build, beside the A/B's: numba's cache does not key on it)
( ROCSAMPLE_LINEINFO=1 NUMBA_CACHE_DIR=/tmp/nc-li timeout "${KLIM:-200}" python3 \
    tools/gpu/kprofile.py --topk1000 --bench-inputs --shapes 8x151936 > /tmp/warm-li.log 2>&1
  echo "warm li rc=$?" >> /tmp/warm-li.log ) &
KLIM=${KLIM:-200} ab_compile
wait
tail -n1 /tmp/warm-li.log
PASSES=${PASSES:-1} ab_passes "${STOP_AB:-330}"

left() { echo $(( ${STOP:-540} - (SECONDS - T0) )); }
# (router-only settings share a warm cache: they change no compiled code)
prof() {  # NAME CACHE [VAR=VALUE ...] -- kprofile.py's arguments: ncu's sections of phase 1
  local name=$1 cache=$2 vars=() l
  shift 2
  while [ "$1" != -- ]; do vars+=("$1"); shift; done
  shift
  l=$(left)
  if [ "$l" -lt 40 ]; then echo "== $name skipped: $l s left" | tee -a "$OUT/top4.txt"; return; fi
  ( [ ${#vars[@]} -eq 0 ] || export "${vars[@]}"
    export NUMBA_CACHE_DIR="/tmp/nc-$cache"
    ncu_sections "$name" "$OUT/top4-$name.csv" "$OUT/top4.txt" $(( l < 120 ? l : 120 )) \
      regex:partials -- "$@" )
}
B8=(--bench-inputs --shapes 8x151936)
prof modes v0 -- --chain --temp --topp_alone --topk1000 "${B8[@]}"
prof top2 v0 ROCSAMPLE_NUC_RANK_PLAIN_TOP2_ROWS=8 -- --topk1000 "${B8[@]}"
prof b128 v1 ROCSAMPLE_DRAW_SHORT_BLOCK=128 -- --temp --topp_alone --topk1000 "${B8[@]}"

l=$(left)
if [ "$l" -lt 40 ]; then
  echo "== source counters skipped: $l s left" | tee -a "$OUT/top4.txt"
else
  # the third launch: kprofile calls twice, prints its MARK, then calls once more
  timeout $(( l < 150 ? l : 150 )) env ROCSAMPLE_LINEINFO=1 NUMBA_CACHE_DIR=/tmp/nc-li \
    ncu --clock-control none -k regex:partials --launch-skip 2 --launch-count 1 \
    --section SourceCounters --section WarpStateStats --import-source yes -f -o "$OUT/top4-src" \
    python3 tools/gpu/kprofile.py --topk1000 "${B8[@]}" > /tmp/src.log 2>&1
  echo "== source counters rc=$? at $((SECONDS - T0)) s" | tee -a "$OUT/top4.txt"
  tail -n3 /tmp/src.log
  for p in sass cuda; do
    ncu -i "$OUT/top4-src.ncu-rep" --page source --csv --print-source "$p" \
      > "$OUT/top4-src-$p.csv" 2>&1
    echo "== export $p rc=$?" | tee -a "$OUT/top4.txt"
    python3 tools/gpu/ncu_source.py "$OUT/top4-src-$p.csv" 40 | tee -a "$OUT/top4.txt"
  done
fi
echo "== done at $((SECONDS - T0)) s" | tee -a "$OUT/top4.txt"
