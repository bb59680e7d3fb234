#!/usr/bin/env bash
# Configure and build kreplay (Release) into ${KREPLAY_BUILD_DIR:-build}. The CUDA backend is
# built when /usr/local/cuda (nvcc + CUPTI) is present; everything else builds without it.
# KREPLAY_SANITIZE=address,undefined builds a sanitizer tree instead (scripts/test.sh does, in
# build-asan/): -O0 -g1 with those sanitizers, no CUDA backend and no benchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."
"$(dirname "$0")/deps.sh"
BUILD="${KREPLAY_BUILD_DIR:-build}"
args=(-DCMAKE_BUILD_TYPE=Release)
if [[ -n "${KREPLAY_SANITIZE:-}" ]]; then
  args=(-DCMAKE_BUILD_TYPE=Sanitize -DCMAKE_C_FLAGS_SANITIZE="-O0 -g1"
        -DCMAKE_CXX_FLAGS_SANITIZE="-O0 -g1" -DKREPLAY_SANITIZE="$KREPLAY_SANITIZE"
        -DKREPLAY_CUDA=OFF -DKREPLAY_BUILD_BENCH=OFF)
elif [[ -x /usr/local/cuda/bin/nvcc ]]; then
  args+=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCUDAToolkit_ROOT=/usr/local/cuda)
fi
cmake -S . -B "$BUILD" -G Ninja "${args[@]}" >/dev/null
cmake --build "$BUILD" -j "$(nproc)"
