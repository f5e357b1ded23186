#!/usr/bin/env bash
# NVTX phases of a real CUDA program on the GPU machine (issue 34's acceptance): a PyTorch
# program with torch.cuda.nvtx ranges around matrix products and pinned copies
# (nvtx-torch.py) under `provetop run --headless --gpu-hz 10`, the session exported, and
# nvtx-vs-gpu.py's table: each range's phase with the GPU utilisation and memory the samples
# under it saw, its boundaries against the program's own clock, and the GPU health fields
# the usage records hold.
#
#   bash kernels/lab/nvtx-torch.sh BIN_DIR OUT_DIR
#
# BIN_DIR holds provetop and libprovetop_nvtx.so (next to it, as the build puts them).
set -uo pipefail
bin=$(cd "${1:?BIN_DIR}" && pwd)
out=${2:?OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
ls -la "$bin/libprovetop_nvtx.so" || echo "no libprovetop_nvtx.so next to provetop: no NVTX phases"
"$bin/provetop" run --headless --gpu-hz 10 --usage-hz 2 --record "$out/torch.ptop" -- \
  python3 "$here/nvtx-torch.py" 2>&1 | tail -5
"$bin/provetop" export "$out/torch.ptop" --format jsonl -o "$out/torch.jsonl"
python3 "$here/nvtx-vs-gpu.py" "$out/torch.jsonl" | tee "$out/nvtx-vs-gpu.txt"
