#!/usr/bin/env bash
# Builds the two carried FlashInfer peers for the sampling benchmarks, as BENCHMARKS.md's "FlashInfer
# peers: how the carried trees were made" describes: a build venv and the downloads in the
# git-ignored build area .peers-build/, the trees (what the GPU machine needs, beside .peers/ggml)
# in the git-ignored, carried .peers/ (tools/gpu/env.sh's use_flashinfer puts one on PYTHONPATH):
#   .peers/fi0214/flashinfer/   0.2.14.post1's Python package + data/aot/sampling/sampling.so
#   .peers/fi074/flashinfer/    0.7.4's modules that `import flashinfer.sampling, flashinfer.topk`
#                               loads (+ jit/api_log_stats.py), no __init__.py, and
#                               data/aot/{sampling,topk}/*.so
#   .peers/fi074/tvm_ffi/       the apache-tvm-ffi 0.1.15.post2 wheel, headers and sources removed
# FlashInfer's own JIT rules (.build()) for sm_90a, with CUDA 13's nvcc on a CPU-only machine (no
# GPU needed; 0.7.4's topk is ~25-30 min of one core). Each step is skipped when its output
# exists (delete it to redo that step); the last step checks that each tree imports from a plain
# PYTHONPATH and loads its prebuilt modules with JIT off, compiling nothing. Nothing of FlashInfer
# is committed; run from the repository root:
#   bash tools/peers/build_flashinfer.sh
# PY: the Python 3.12 for the venv (default python3.12); JOBS: parallel compiles (MAX_JOBS,
# default 1); every heavy step runs under nice -n 19.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=$ROOT/.peers-build
PEERS=$ROOT/.peers
PY=${PY:-python3.12}
JOBS=${JOBS:-1}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
FI_OLD=0.2.14.post1
FI_NEW=0.7.4
TVM_FFI=0.1.15.post2
VENV=$B/venv
VPY=$VENV/bin/python
SITE=$VENV/lib/python3.12/site-packages
INC=$B/cuda-extra-include          # symlinks to the venv's CUDA headers the toolkit lacks
STUB=$B/libcuda-stub               # empty libcuda.so (soname libcuda.so.1) for 0.7.4's -lcuda
SRC_OLD=$B/flashinfer_python-$FI_OLD   # the unpacked sdist, data/ linked in the wheel's layout
SRC_NEW=$B/flashinfer_python-$FI_NEW   # the unpacked wheel, flashinfer/__init__.py removed
SO=$B/so                           # the built modules, copied out of the JIT workspaces
NICE=(nice -n 19)
mkdir -p "$B" "$PEERS" "$SO"
cd "$B"

T0=$SECONDS
step_start() { STEP=$1; STEP_T=$SECONDS; echo "== $STEP"; }
step_done() {
  local s=$((SECONDS - STEP_T))
  echo "== $STEP: $((s / 60)) min $((s % 60)) s"
  echo "$(date -u +%FT%TZ) $STEP ${s}s" >> "$B/timings.log"
}
skip() { echo "== $1: done already ($2)"; }
# pip, quiet, without the warnings about absent local index folders (its own status kept)
pip_q() { "${NICE[@]}" "$@" 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }; }

# 1. the build venv (torch 2.11.0 is cu130 on PyPI, ~4.7 GB with its CUDA wheels; setuptools >= 77
#    for the 0.2.14 sdist's metadata in step 2) and apache-tvm-ffi from its cp312 wheel
TVM_WHL_GLOB="apache_tvm_ffi-$TVM_FFI-cp312-cp312-*manylinux_2_28_x86_64.whl"
# shellcheck disable=SC2086
if ! ls $TVM_WHL_GLOB > /dev/null 2>&1; then
  pip_q "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --platform manylinux_2_28_x86_64 "apache-tvm-ffi==$TVM_FFI" -d "$B"
fi
if [ ! -f "$VENV/.complete" ]; then
  step_start "1 venv"
  "$PY" -c 'import sys; assert sys.version_info[:2] == (3, 12), sys.version'
  [ -x "$VPY" ] || "$PY" -m venv "$VENV"
  pip_q "$VPY" -m pip install -q 'torch==2.11.0' 'numpy==2.4.*' ninja filelock packaging requests \
    einops nvidia-ml-py 'cuda-bindings==13.*' 'setuptools>=77'
  # shellcheck disable=SC2086
  pip_q "$VPY" -m pip install -q $TVM_WHL_GLOB
  "$VPY" -c 'import torch, tvm_ffi; assert torch.__version__ == "2.11.0+cu130", torch.__version__'
  touch "$VENV/.complete"
  step_done
else
  skip "1 venv" "$VENV"
fi
# shellcheck disable=SC2086
TVM_WHL=$(ls $TVM_WHL_GLOB)

# 2. sources: 0.2.14.post1's sdist (no build isolation: that would install a torch) and 0.7.4's wheel
if [ ! -d "$SRC_OLD" ] || [ ! -d "$SRC_NEW" ]; then
  step_start "2 downloads"
  [ -f "flashinfer_python-$FI_OLD.tar.gz" ] ||
    pip_q "$VPY" -m pip download -q --no-deps --no-binary :all: --no-build-isolation \
      "flashinfer-python==$FI_OLD" -d "$B"
  [ -f "flashinfer_python-$FI_NEW-py3-none-any.whl" ] ||
    pip_q "$VPY" -m pip download -q --no-deps "flashinfer-python==$FI_NEW" -d "$B"
  if [ ! -d "$SRC_OLD" ]; then
    rm -rf "$SRC_OLD.tmp" && mkdir "$SRC_OLD.tmp"
    tar -xzf "flashinfer_python-$FI_OLD.tar.gz" -C "$SRC_OLD.tmp" --strip-components=1
    # the wheel's layout: flashinfer/data/{csrc,include,tvm_binding,cutlass,spdlog}
    mkdir "$SRC_OLD.tmp/flashinfer/data"
    for d in csrc include tvm_binding; do ln -s "../../$d" "$SRC_OLD.tmp/flashinfer/data/$d"; done
    for d in cutlass spdlog; do ln -s "../../3rdparty/$d" "$SRC_OLD.tmp/flashinfer/data/$d"; done
    mv "$SRC_OLD.tmp" "$SRC_OLD"
  fi
  if [ ! -d "$SRC_NEW" ]; then
    rm -rf "$SRC_NEW.tmp" && mkdir "$SRC_NEW.tmp"
    "${NICE[@]}" unzip -q "flashinfer_python-$FI_NEW-py3-none-any.whl" -d "$SRC_NEW.tmp"
    rm "$SRC_NEW.tmp/flashinfer/__init__.py"   # imports every kernel family and its dependencies
    mv "$SRC_NEW.tmp" "$SRC_NEW"
  fi
  step_done
else
  skip "2 downloads" "$SRC_OLD, $SRC_NEW"
fi

# 3. the CUDA headers the toolkit lacks (curand, cublas, cusparse, cusolver, ...) from the venv's
#    nvidia/cu13/include, searched after the toolkit's own; an empty libcuda.so for -lcuda
if [ ! -d "$INC" ] || [ ! -f "$STUB/libcuda.so" ]; then
  step_start "3 headers and libcuda stub"
  rm -rf "$INC.tmp" && mkdir "$INC.tmp"
  for h in "$SITE"/nvidia/cu13/include/*; do
    [ -e "$CUDA_HOME/include/$(basename "$h")" ] || ln -s "$h" "$INC.tmp/"
  done
  rm -rf "$INC" && mv "$INC.tmp" "$INC"
  mkdir -p "$STUB"
  cc -shared -Wl,-soname,libcuda.so.1 -o "$STUB/libcuda.so" -x c /dev/null
  step_done
else
  skip "3 headers and libcuda stub" "$INC, $STUB"
fi

export CUDA_HOME MAX_JOBS=$JOBS
export PATH=$VENV/bin:$CUDA_HOME/bin:$PATH
export CPLUS_INCLUDE_PATH=$INC${CPLUS_INCLUDE_PATH:+:$CPLUS_INCLUDE_PATH}
export C_INCLUDE_PATH=$INC${C_INCLUDE_PATH:+:$C_INCLUDE_PATH}
export LIBRARY_PATH=$STUB${LIBRARY_PATH:+:$LIBRARY_PATH}
export TORCH_CUDA_ARCH_LIST=9.0a FLASHINFER_CUDA_ARCH_LIST=9.0a
unset FLASHINFER_DISABLE_JIT

# build_module <src dir> <workspace> <out .so> <python importing gen (a JitSpec factory)>:
# FlashInfer's own JIT build, run from inside the unpacked package; the .so is copied to <out>
build_module() {
  local src=$1 ws=$2 out=$3 gen=$4
  (cd "$src" && FLASHINFER_WORKSPACE_BASE=$ws "${NICE[@]}" "$VPY" - "$out" <<EOF
import shutil, sys
$gen
spec = gen()
spec.build(verbose=True)
so = spec.jit_library_path
print("built", so, so.stat().st_size, "bytes")
shutil.copyfile(so, sys.argv[1] + ".tmp")
EOF
  )
  mv "$out.tmp" "$out"
}

# 4. 0.2.14.post1's sampling (torch cpp_extension flags, -gencode=arch=compute_90a,code=sm_90a)
if [ ! -f "$SO/fi0214-sampling.so" ]; then
  step_start "4 0.2.14.post1 sampling build"
  build_module "$SRC_OLD" "$B/ws0214" "$SO/fi0214-sampling.so" \
    "from flashinfer.sampling import gen_sampling_module as gen"
  step_done
else
  skip "4 0.2.14.post1 sampling build" "$SO/fi0214-sampling.so"
fi

# 5. 0.7.4's sampling and radix top-k (tvm-ffi modules; topk serves the top_k_first fast path)
if [ ! -f "$SO/fi074-sampling.so" ]; then
  step_start "5a 0.7.4 sampling build"
  build_module "$SRC_NEW" "$B/ws074" "$SO/fi074-sampling.so" \
    "from flashinfer.jit.sampling import gen_sampling_module as gen"
  step_done
else
  skip "5a 0.7.4 sampling build" "$SO/fi074-sampling.so"
fi
if [ ! -f "$SO/fi074-topk.so" ]; then
  step_start "5b 0.7.4 topk build"
  build_module "$SRC_NEW" "$B/ws074" "$SO/fi074-topk.so" \
    "from flashinfer.jit.topk import gen_topk_module as gen"
  step_done
else
  skip "5b 0.7.4 topk build" "$SO/fi074-topk.so"
fi

# The carried trees, each assembled beside its place and moved there whole.
assemble() {  # assemble NAME FILL: .peers/NAME, filled by FILL into NAME.tmp first
  local name=$1 fill=$2 t=$PEERS/$1.tmp
  if [ -d "$PEERS/$name" ]; then
    skip "assemble .peers/$name" "$PEERS/$name"
    return
  fi
  step_start "assemble .peers/$name"
  rm -rf "$t" && mkdir -p "$t"
  "$fill" "$t"
  mv "$t" "$PEERS/$name"
  step_done
}

# 0.2.14.post1: the Python package without data/, plus data/aot/sampling/sampling.so (0.2.x loads
# data/aot/<module>/<module>.so before any JIT)
fill_fi0214() {
  local t=$1
  (cd "$SRC_OLD" && find flashinfer \( -name __pycache__ -o -path flashinfer/data \) -prune \
     -o -type f -print0 | xargs -0 cp --parents -t "$t")
  mkdir -p "$t/flashinfer/data/aot/sampling"
  cp "$SO/fi0214-sampling.so" "$t/flashinfer/data/aot/sampling/sampling.so"
  # (host symbols and debug sections stripped: 5.3 -> 5.1 MB; the device code is untouched, and
  # the carried trees, the wheels and the tracked tree must fit a call's 64 MiB)
  strip --strip-unneeded "$t/flashinfer/data/aot/sampling/sampling.so"
}

# 0.7.4: the files of the flashinfer.* modules that `import flashinfer.sampling, flashinfer.topk`
# loads (namespace packages have none), plus jit/api_log_stats.py (imported inside the call path),
# no __init__.py (flashinfer is a namespace package; the version comes from flashinfer.version),
# data/aot/{sampling,topk}/*.so (0.7.x's jit/env.py looks there first), and the unpacked
# apache-tvm-ffi wheel without tvm_ffi/{3rdparty,CMakeLists.txt,cython,include,src}
fill_fi074() {
  local t=$1 m
  (cd "$SRC_NEW" && FLASHINFER_WORKSPACE_BASE=$B/ws074 "$VPY" - > "$B/fi074-files.txt" <<'EOF'
import os, sys
import flashinfer.sampling, flashinfer.topk  # noqa: E401,F401
here = os.getcwd()
names = sorted(n for n in sys.modules if n == "flashinfer" or n.startswith("flashinfer."))
files = set()
for n in names:
    f = getattr(sys.modules[n], "__file__", None)
    if f is None:
        print(f"{n}: namespace package, no file", file=sys.stderr)
        continue
    rel = os.path.relpath(f, here)
    assert not rel.startswith(".."), (n, f)
    files.add(rel)
files.add(os.path.join("flashinfer", "jit", "api_log_stats.py"))
assert os.path.join("flashinfer", "__init__.py") not in files
print(f"{len(names)} flashinfer modules, {len(files)} files", file=sys.stderr)
print("\n".join(sorted(files)))
EOF
  )
  (cd "$SRC_NEW" && xargs -d '\n' cp --parents -t "$t" < "$B/fi074-files.txt")
  for m in sampling topk; do
    mkdir -p "$t/flashinfer/data/aot/$m"
    cp "$SO/fi074-$m.so" "$t/flashinfer/data/aot/$m/$m.so"
    strip --strip-unneeded "$t/flashinfer/data/aot/$m/$m.so"   # topk 15.6 -> 12.1 MB
  done
  unzip -q "$TVM_WHL" -d "$t"
  rm -rf "$t"/tvm_ffi/{3rdparty,CMakeLists.txt,cython,include,src}
}

assemble fi0214 fill_fi0214
assemble fi074 fill_fi074

# 6. the check: each tree from a plain PYTHONPATH (nothing of FlashInfer installed in the venv), JIT
#    off, loads its prebuilt modules (mapped from the tree's data/aot/) and compiles nothing
step_start "6 check"
for tree in fi0214 fi074; do
  ws=$(mktemp -d)
  (cd "$ws" && env -u CPLUS_INCLUDE_PATH -u C_INCLUDE_PATH -u LIBRARY_PATH -u MAX_JOBS \
     HOME="$ws/home" FLASHINFER_DISABLE_JIT=1 FLASHINFER_WORKSPACE_BASE="$ws/fiws" \
     FLASHINFER_CUDA_ARCH_LIST=9.0a TORCH_CUDA_ARCH_LIST=9.0a CUDA_HOME="$CUDA_HOME" \
     PYTHONPATH="$PEERS/$tree" PYTHONDONTWRITEBYTECODE=1 "$VPY" - "$PEERS/$tree" <<'EOF'
import os, sys
tree = sys.argv[1]
real = os.path.realpath(tree)
import flashinfer.sampling as fs
mods = [fs]
if os.path.basename(tree) == "fi074":
    import flashinfer.topk as ft
    import tvm_ffi
    from flashinfer.version import __version__ as version
    assert tvm_ffi.__file__.startswith(tree + "/"), tvm_ffi.__file__
    mods.append(ft)
else:
    import flashinfer
    version = flashinfer.__version__
assert fs.__file__.startswith(tree + "/"), fs.__file__
loaded = []
for m in mods:
    name = m.__name__.rsplit(".", 1)[1]
    getattr(m, f"get_{name}_module")()
    so = os.path.join(real, "flashinfer", "data", "aot", name, f"{name}.so")
    with open("/proc/self/maps") as f:
        assert so in f.read(), f"{so} not mapped"
    loaded.append(f"{name}.so")
print(f"{os.path.basename(tree)}: flashinfer {version} loads {', '.join(loaded)} from {tree}")
EOF
  )
  built=$(find "$ws" \( -name '*.o' -o -name '*.so' \) | head -5)
  if [ -n "$built" ]; then echo "check: $tree compiled something: $built" >&2; exit 1; fi
  echo "  workspace after the check: $(cd "$ws" && find . -type f | sort | tr '\n' ' ')"
  rm -rf "$ws"
  # 0.2.14's jit/core.py makes flashinfer/data/csrc at import (os.makedirs): left empty, removed
  [ ! -d "$PEERS/$tree/flashinfer/data/csrc" ] || rmdir "$PEERS/$tree/flashinfer/data/csrc"
done
step_done

for d in "$PEERS/fi0214" "$PEERS/fi074" "$PEERS"; do du -sh "$d"; done   # one by one: du counts a file once
echo "total $((SECONDS - T0)) s; step times in $B/timings.log"
