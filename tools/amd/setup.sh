#!/usr/bin/env bash
# The offline AMD toolchain: compile rocsample's kernels with numba-hip for gfx1151 / gfx942 on a
# CPU-only Debian 12 machine, with no ROCm install and no GPU. Only PyPI and Debian packages.
#
# usage: tools/amd/setup.sh DIR     (then: source DIR/env.sh; DIR/venv/bin/python ...)
#
# What goes into DIR (each piece is explained in docs/DESIGN.md, "The hip backend without AMD
# hardware"):
#   venv/      numba-hip 0.2.1 and the rocm-bindings 10.0 packages, pinned (requirements.txt)
#   sysdeps/   librocm_sysdeps_{z,zstd}.so.1: the bundled libLLVM.so's renamed zlib/zstd, forwarded
#              to Debian's (sysdeps.c)
#   hiprtc/    hiprtc_runtime.h from the rocm-llvm-python wheel (numba-hip parses it; ROCm's
#              hiprtc-builtins library would supply it on a ROCm machine)
#   devlib/    Debian's ROCm 5.2.3 device-library bitcode plus oclc_isa_version_{1151,942}.bc,
#              which 5.2.3 predates (one constant each)
#   rocm/      a ROCM_PATH whose llvm/lib/clang is Debian clang 19's resource folder
#   hipstub/   another ROCM_PATH, whose lib/libamdhip64.so is a recording stand-in (hipstub.c)
#              for tests/backends/test_hip_offline.py; nothing else loads it
#   env.sh     the environment numba-hip and tools/amd/comgr_standin.py read
# The Debian packages (pinned) are installed with apt only when one is missing (CI runs as root).
# A stamp (DIR/.stamp, a hash of this script and the files it builds from) skips the rest when
# DIR is already set up; a lock keeps two runs from building the same DIR at once.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DIR=${1:?usage: tools/amd/setup.sh DIR}
PY=${PY:-python3}
LLVM=/usr/lib/llvm-19
# Debian 12 (bookworm) package versions this toolchain was built and checked with
APT_PINNED="clang-19=1:19.1.7-3~deb12u1 lld-19=1:19.1.7-3~deb12u1 libclang1-19=1:19.1.7-3~deb12u1 rocm-device-libs=5.2.3-2"
APT_ANY="gcc libc6-dev zlib1g libzstd1"   # base packages: whatever version the machine has
HIPRTC_WHEEL="rocm-llvm-python==7.2.2.562.46"
# oclc_isa_version_<gfx>.bc: the __oclc_ISA_version constant (major*1000 + minor*100 + stepping)
ISA_VERSIONS="1151:11051 942:9402"

missing=()
for p in $APT_PINNED; do
  name=${p%%=*}; want=${p#*=}
  have=$(dpkg-query -W -f='${Status} ${Version}' "$name" 2>/dev/null || true)
  [ "$have" = "install ok installed $want" ] || missing+=("$p")
done
for name in $APT_ANY; do
  dpkg-query -W -f='${Status}' "$name" 2>/dev/null | grep -q "install ok installed" || missing+=("$name")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "tools/amd/setup.sh: missing Debian packages: ${missing[*]}" >&2
    echo "  as root: apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
  echo "amd toolchain: apt-get install ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

KEY=$(cat "$0" "$HERE/requirements.txt" "$HERE/sysdeps.c" "$HERE/hipstub.c" | sha256sum | cut -c1-16)
mkdir -p "$DIR"
exec 9>"$DIR/.lock"
flock 9
if [ "$(cat "$DIR/.stamp" 2>/dev/null)" = "$KEY" ]; then
  exit 0
fi
echo "amd toolchain: building $DIR"
rm -rf "$DIR/venv" "$DIR/sysdeps" "$DIR/hiprtc" "$DIR/devlib" "$DIR/rocm" "$DIR/hipstub" "$DIR/env.sh" \
  "$DIR/.stamp"

"$PY" -m venv "$DIR/venv"
"$DIR/venv/bin/python" -m pip install -q --no-deps --disable-pip-version-check -r "$HERE/requirements.txt"

mkdir -p "$DIR/sysdeps"
echo 'AMDROCM_SYSDEPS_1.0 { global: *; };' > "$DIR/sysdeps/version.map"
for lib in z zstd; do
  def=$(echo "SYSDEPS_$lib" | tr a-z A-Z)
  gcc -O2 -fPIC -shared -D"$def" -o "$DIR/sysdeps/librocm_sysdeps_$lib.so.1" "$HERE/sysdeps.c" \
    -Wl,-soname,"librocm_sysdeps_$lib.so.1" -Wl,--version-script="$DIR/sysdeps/version.map" -ldl
done

mkdir -p "$DIR/hiprtc/wheel"
"$DIR/venv/bin/python" -m pip download -q --no-deps --disable-pip-version-check -d "$DIR/hiprtc/wheel" "$HIPRTC_WHEEL"
"$DIR/venv/bin/python" - "$DIR/hiprtc" <<'EOF'
import glob, sys, zipfile
out = sys.argv[1]
(whl,) = glob.glob(f"{out}/wheel/*.whl")
with zipfile.ZipFile(whl) as z, open(f"{out}/hiprtc_runtime.h", "wb") as f:
    f.write(z.read("rocm/amd_comgr/hiprtc_runtime.h"))
EOF
rm -rf "$DIR/hiprtc/wheel"

mkdir -p "$DIR/devlib"
ln -s /usr/lib/x86_64-linux-gnu/amdgcn/bitcode/*.bc "$DIR/devlib/"
for v in $ISA_VERSIONS; do
  gfx=${v%%:*}; val=${v##*:}
  printf '%s\n' 'target triple = "amdgcn-amd-amdhsa"' \
    "@__oclc_ISA_version = linkonce_odr protected local_unnamed_addr addrspace(4) constant i32 $val, align 4" \
    > "$DIR/devlib/oclc_isa_version_$gfx.ll"
  "$LLVM/bin/clang" -c -emit-llvm -nogpulib --target=amdgcn-amd-amdhsa -o "$DIR/devlib/oclc_isa_version_$gfx.bc" \
    "$DIR/devlib/oclc_isa_version_$gfx.ll"
done

mkdir -p "$DIR/rocm/llvm/lib"
ln -s "$LLVM/lib/clang" "$DIR/rocm/llvm/lib/clang"

mkdir -p "$DIR/hipstub/lib"
gcc -O2 -Wall -Werror -fPIC -shared -o "$DIR/hipstub/lib/libamdhip64.so" "$HERE/hipstub.c"
ln -s ../rocm/llvm "$DIR/hipstub/llvm"

cat > "$DIR/env.sh" <<EOF
# written by tools/amd/setup.sh: the offline AMD toolchain's environment
export LD_LIBRARY_PATH=$DIR/sysdeps\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export HIP_PYTHON_HIPRTC_RUNTIME_HEADER=$DIR/hiprtc/hiprtc_runtime.h
export NUMBA_HIP_LIBCLANG_FILE=$LLVM/lib/libclang-19.so.1
export ROCM_PATH=$DIR/rocm
export ROCSAMPLE_AMD_DEVLIB=$DIR/devlib
export ROCSAMPLE_AMD_CLANG=$LLVM/bin/clang
export ROCSAMPLE_AMD_LLD=$LLVM/bin/ld.lld
export ROCSAMPLE_AMD_PY=$DIR/venv/bin/python
export ROCSAMPLE_AMD_HOME=$DIR
export ROCSAMPLE_AMD_HIPSTUB=$DIR/hipstub
EOF
echo "$KEY" > "$DIR/.stamp"
echo "amd toolchain: ready ($DIR)"
