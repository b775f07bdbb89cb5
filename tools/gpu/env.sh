# Source on the lent GPU machine (repo root): the image's numpy 2.5 breaks numba-cuda 0.30
# (np.row_stack), so a carried numpy 2.4 wheel goes first on PYTHONPATH. See BENCHMARKS.md.
set -u
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/numpy-*.whl .whl/gguf-*.whl .whl/ml_dtypes-*.whl >/dev/null
  export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
else
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
if [ -d .flashinfer ]; then
  export PYTHONPATH=$PYTHONPATH:$PWD/.flashinfer
  export FLASHINFER_WORKSPACE_BASE=/tmp/fiws TORCH_CUDA_ARCH_LIST=9.0a MAX_JOBS=16
  export CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc)")")}
  if [ -f .flashinfer/prebuilt/sampling/sampling.so ]; then
    mkdir -p .flashinfer/flashinfer/data/aot/sampling
    cp .flashinfer/prebuilt/sampling/sampling.so .flashinfer/flashinfer/data/aot/sampling/
  fi
fi
export PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/tmp/numba-cache
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
