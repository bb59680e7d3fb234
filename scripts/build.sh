#!/usr/bin/env bash
# Configure and build kreplay (Release) into ${KREPLAY_BUILD_DIR:-build}. The CUDA backend is
# built when /usr/local/cuda (nvcc + CUPTI) is present; everything else builds without it.
set -euo pipefail
cd "$(dirname "$0")/.."
"$(dirname "$0")/deps.sh"
BUILD="${KREPLAY_BUILD_DIR:-build}"
cuda_args=()
if [[ -x /usr/local/cuda/bin/nvcc ]]; then
  cuda_args=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCUDAToolkit_ROOT=/usr/local/cuda)
fi
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release "${cuda_args[@]}" >/dev/null
cmake --build "$BUILD" -j "$(nproc)"
