#!/usr/bin/env bash
# Sets up a CUDA 13.0 *compiler* toolchain from PyPI wheels on a machine without CUDA (no GPU
# needed), so `cargo build --features cuda` / `--features supraseal` of provetop-prover works
# here and the binary can be carried to a GPU machine (driver ≥ 580 / CUDA 13.0).
#
#   bash kernels/setup-cuda-toolchain.sh [DIR]     # default DIR: ~/.cache/provetop-cuda
#   source DIR/env.sh
#   cargo build --release -p provetop-prover --features cuda      # or supraseal
#
# What it does: a Python venv with NVIDIA's nvcc / nvvm / crt / runtime / cccl wheels (the
# CUDA 13 wheels carry a complete nvcc; the -cu12 ones do not), symlinks that make the wheel
# tree look like a toolkit (lib64/, targets/x86_64-linux/), and a *link-only* libcuda.so stub
# generated from the driver-API declarations of the cuda-driver-sys crate (the binary links
# libcuda.so.1; at run time the GPU machine's driver provides the real one — never put the
# stub on LD_LIBRARY_PATH there). Needs `cargo fetch` done first (for cuda-driver-sys).
set -euo pipefail
dir=${1:-$HOME/.cache/provetop-cuda}
ver=13.0.88
mkdir -p "$dir"
if ! ls "$dir"/venv/lib/python3*/site-packages/nvidia/cu13/bin/nvcc >/dev/null 2>&1; then
  python3 -m venv "$dir/venv"
  "$dir/venv/bin/pip" install -q --upgrade pip
  "$dir/venv/bin/pip" install -q "nvidia-cuda-nvcc==$ver" "nvidia-nvvm==$ver" \
    "nvidia-cuda-crt==$ver" "nvidia-cuda-runtime==$ver" "nvidia-cuda-cccl==13.0.85"
fi
cuda=$(ls -d "$dir"/venv/lib/python3*/site-packages/nvidia/cu13 | head -1)
[ -e "$cuda/lib64" ] || ln -s lib "$cuda/lib64"
mkdir -p "$cuda/targets/x86_64-linux"
for d in lib include; do
  [ -e "$cuda/targets/x86_64-linux/$d" ] || ln -s "../../$d" "$cuda/targets/x86_64-linux/$d"
done

stubs="$cuda/lib64/stubs"
if [ ! -e "$stubs/libcuda.so" ]; then
  src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/cuda-driver-sys-0.3.* 2>/dev/null | head -1 || true)
  if [ -z "$src" ]; then
    echo "setup-cuda-toolchain: cuda-driver-sys is not in the cargo registry; run" >&2
    echo "  cargo fetch   (in the project) first, then this script again" >&2
    exit 1
  fi
  mkdir -p "$stubs"
  # Every cu* function the driver-API bindings declare, returning CUDA_ERROR_UNKNOWN (999).
  grep -oh 'pub fn cu[A-Za-z0-9_]*' "$src"/src/*.rs | sed 's/pub fn //' | sort -u |
    awk 'BEGIN{print "/* link-only stub of libcuda: not a driver */"} {print "int " $1 "(void){return 999;}"}' \
    > "$stubs/libcuda_stub.c"
  gcc -shared -fPIC -O0 -Wl,-soname,libcuda.so.1 -o "$stubs/libcuda.so" "$stubs/libcuda_stub.c"
fi

cat > "$dir/env.sh" <<ENV
# provetop GPU build environment (CUDA $ver compiler from PyPI; sm_90 targets in .cargo/config.toml)
export CUDA_HOME=$cuda
export CUDA_PATH=$cuda
export CUDA_LIBRARY_PATH=$cuda
export PATH=$cuda/bin:\$PATH
ENV
"$cuda/bin/nvcc" --version | tail -1
echo "ready: source $dir/env.sh"
