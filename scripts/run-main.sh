#!/usr/bin/env bash
# The main job: build, then run the sample application on the host device (no GPU needed) under
# the basic sample tool, which replays every kernel launch 3 times and prints what each pass saw.
set -euo pipefail
cd "$(dirname "$0")/.."
"$(dirname "$0")/build.sh"
BUILD="${KREPLAY_BUILD_DIR:-build}"
KREPLAY_TOOL_LIBRARIES="$BUILD/lib/libkreplay_sample_basic.so" "$BUILD/bin/kreplay-sample-app"
