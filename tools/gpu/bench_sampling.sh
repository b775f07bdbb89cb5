#!/usr/bin/env bash
# On the lent H200: the sampling benchmark with its peers (PyTorch, FlashInfer) in one run.
source tools/gpu/env.sh
python3 -c "import flashinfer, flashinfer.sampling as fs; print('flashinfer', flashinfer.__version__)" 2>&1 | tail -1
python3 -m pytest bench/test_sampling.py --backend cuda -q -p no:cacheprovider \
  --benchmark-json="$OUT/sampling.json" --benchmark-columns=median,min,rounds "$@" 2>&1 \
  | grep -v -i "warn" | tail -15
