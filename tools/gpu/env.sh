# Source on the lent GPU machine (repo root): the image's numpy 2.5 breaks numba-cuda 0.30
# (np.row_stack), so a carried numpy 2.4 wheel goes first on PYTHONPATH. See BENCHMARKS.md.
set -u
if [ -d .whl ]; then
  # once per machine (scripts that source this in parallel must not install over each other);
  # whichever wheels were carried (numpy alone where .peers leaves no room for gguf and ml_dtypes,
  # which only the set_rows tests need)
  # (the marker names the wheels installed: a warm machine that got fewer wheels from an
  # earlier call installs again; the twenty-third session's gate missed gguf that way)
  wheels=$(cd .whl && ls *.whl | sort | paste -sd' ' -)
  if [ "$(cat /tmp/site/.rocsample-wheels 2>/dev/null)" != "$wheels" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null \
      && echo "$wheels" > /tmp/site/.rocsample-wheels
  fi
  export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
  # (the device gate counts tests/reference/test_quant.py's skip without gguf as a failure: the
  # thirty-second session's gate carried numpy alone and FAILed on that skip)
  python3 -c "import gguf, ml_dtypes" 2>/dev/null \
    || echo "env.sh: no gguf / ml_dtypes (carry .whl with them, BENCHMARKS.md): the gate will FAIL on a skip" >&2
else
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
# FlashInfer peers, carried in .peers/ (built here, see BENCHMARKS.md "FlashInfer peers"): one version a
# process (both register the same torch op names). use_flashinfer fi0214|fi074 puts that tree on
# PYTHONPATH; FLASHINFER=... picks the one this sourcing selects (default fi0214). JIT is off: a
# missing prebuilt module raises instead of compiling.
# (without any .peers entry an outer sourcing left, so the two versions never meet on one path)
ROCSAMPLE_PYTHONPATH=$(printf %s "$PYTHONPATH" | tr ':' '\n' | grep -v '/\.peers/' | paste -sd: -)
use_flashinfer() {
  if [ -d ".peers/$1/flashinfer" ]; then
    export PYTHONPATH=$ROCSAMPLE_PYTHONPATH:$PWD/.peers/$1
  else
    echo "use_flashinfer: no .peers/$1 (carry .peers)" >&2
    export PYTHONPATH=$ROCSAMPLE_PYTHONPATH
  fi
}
export FLASHINFER_WORKSPACE_BASE=/tmp/fiws FLASHINFER_DISABLE_JIT=1
export TORCH_CUDA_ARCH_LIST=9.0a FLASHINFER_CUDA_ARCH_LIST=9.0a
export CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")}
use_flashinfer "${FLASHINFER:-fi0214}"
# rocsample._fastcall (the repeated call in C): built into the tree once per machine and Python
if ! python3 -c "import rocsample._fastcall" 2>/dev/null; then
  python3 setup.py -q build_ext --inplace > /tmp/fastcall-build.log 2>&1 \
    || echo "env.sh: rocsample._fastcall did not build (/tmp/fastcall-build.log): the Python path serves" >&2
fi
export PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/tmp/numba-cache
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
