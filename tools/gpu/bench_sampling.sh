#!/usr/bin/env bash
# On the lent H200: the sampling benchmark with its peers (PyTorch, FlashInfer) in one run, one
# FlashInfer version (FLASHINFER=fi0214 (default) | fi074; carried .peers). tools/gpu/bench.sh runs
# both versions and every other suite.
source tools/gpu/env.sh
python3 -c "from bench.peers import flashinfer as f; v = f(); print(getattr(v, 'label', v))" 2>&1 | tail -1
python3 -m pytest bench/test_sampling.py --backend cuda -q -p no:cacheprovider --bench-drop-data \
  --benchmark-json="$OUT/sampling.json" --benchmark-columns=median,min,rounds "$@" 2>&1 \
  | grep -v -i "warn" | tail -15
