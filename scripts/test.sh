#!/usr/bin/env bash
# Build and run every test. Tests labelled gpu skip themselves when no NVIDIA GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
"$(dirname "$0")/build.sh"
BUILD="${KREPLAY_BUILD_DIR:-build}"
ctest --test-dir "$BUILD" --output-on-failure -j "$(nproc)" --timeout 600 "$@"
