#!/usr/bin/env bash
# Builds ggml's CUDA set_rows as a peer library for bench/test_set_rows.py, from the llama.cpp
# that the llama-cpp-python sdist vendors (pinned below): sources and objects in the git-ignored
# build area .peers-build/ggml/, the two libraries (2.3 MiB, what the GPU machine needs) in the
# git-ignored, carried .peers/ggml/ (beside the FlashInfer trees, as BENCHMARKS.md lays it out):
#   .peers/ggml/libggml-base.so      ggml's C API (ggml_init, ggml_set_rows, type traits), CPU only
#   .peers/ggml/libggml_set_rows.so  ggml-cuda/set-rows.cu + tools/peers/ggml_set_rows_shim.cu
# nvcc for sm_90a with ggml's own CUDA flags (-use_fast_math, -O3), CPU-only compile (no GPU
# needed). Nothing of ggml is committed; run from the repository root:
#   bash tools/peers/build_ggml.sh
set -euo pipefail
PIN=${LLAMA_CPP_PYTHON_PIN:-0.3.36}        # vendors llama.cpp with ggml 0.25.3
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PEERS=$ROOT/.peers-build/ggml
LIB=$ROOT/.peers/ggml
SRC=$PEERS/llama_cpp_python-$PIN/vendor/llama.cpp/ggml
PY=${PY:-python3}
JOBS=${JOBS:-2}
mkdir -p "$PEERS" "$LIB"
if [ ! -d "$SRC" ]; then
  [ -f "$PEERS/llama_cpp_python-$PIN.tar.gz" ] ||
    "$PY" -m pip download --no-binary :all: --no-deps "llama-cpp-python==$PIN" -d "$PEERS"
  tar -xzf "$PEERS/llama_cpp_python-$PIN.tar.gz" -C "$PEERS"
fi
# ggml-base by hand (the sdist's ggml tree lacks ggml.pc.in, so its CMake configure fails):
# the sources of ggml/src/CMakeLists.txt's ggml-base target with its Linux definitions, for
# baseline x86-64 (no FMA: the portable quantize_row_*_ref rounding).
OBJ=$PEERS/build-base
mkdir -p "$OBJ"
sed -e 's/@GGML_VERSION@/0.25.3/' -e "s/@GGML_BUILD_COMMIT@/llama-cpp-python-$PIN/" \
  -e "s/@GGML_COMMIT@/llama-cpp-python-$PIN/" "$SRC/src/ggml-version.h.in" > "$OBJ/ggml-version.h"
DEFS=(-D_XOPEN_SOURCE=600 -D_GNU_SOURCE -DGGML_BUILD -DGGML_SHARED -DNDEBUG)
INC=(-I"$OBJ" -I"$SRC/include" -I"$SRC/src")
objs=()
pids=()
for f in ggml.c ggml.cpp ggml-alloc.c ggml-backend.cpp ggml-backend-meta.cpp ggml-opt.cpp \
         ggml-threading.cpp ggml-quants.c gguf.cpp; do
  o=$OBJ/${f//./_}.o
  objs+=("$o")
  case $f in
    *.c) cc -O3 -std=gnu11 -fPIC "${DEFS[@]}" "${INC[@]}" -c "$SRC/src/$f" -o "$o" & ;;
    *) c++ -O3 -std=gnu++17 -fPIC "${DEFS[@]}" "${INC[@]}" -c "$SRC/src/$f" -o "$o" & ;;
  esac
  pids+=($!)
  if [ ${#pids[@]} -ge "$JOBS" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p"; done
c++ -shared -o "$LIB/libggml-base.so" "${objs[@]}" -lm -lpthread
nvcc -O3 -std=c++17 -arch=sm_90a -use_fast_math -extended-lambda -shared -Xcompiler -fPIC \
  -DNDEBUG -DGGML_USE_CUDA -DGGML_SHARED -DGGML_BACKEND_SHARED \
  -I"$ROOT/tools/peers/stub" -I"$SRC/include" -I"$SRC/src" -I"$SRC/src/ggml-cuda" \
  "$SRC/src/ggml-cuda/set-rows.cu" "$ROOT/tools/peers/ggml_set_rows_shim.cu" \
  -L"$LIB" -lggml-base -Xlinker -rpath -Xlinker '$ORIGIN' -Xlinker --no-undefined \
  -o "$LIB/libggml_set_rows.so"
echo "llama-cpp-python $PIN (ggml 0.25.3) peer: $(du -sh "$LIB" | cut -f1) in $LIB"
