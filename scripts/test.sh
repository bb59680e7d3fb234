#!/usr/bin/env bash
# Build and run every test. Tests labelled gpu skip themselves when no NVIDIA GPU is present.
# Then a second tree, ${KREPLAY_SANITIZE_BUILD_DIR:-<build dir>-asan}, built with AddressSanitizer
# (LeakSanitizer included) and UndefinedBehaviorSanitizer and without the CUDA backend, runs the
# unit and integration tests again: any sanitizer report fails its test. KREPLAY_SANITIZE= (empty)
# skips that part; extra arguments go to both ctest runs.
set -euo pipefail
cd "$(dirname "$0")/.."
SANITIZE="${KREPLAY_SANITIZE-address,undefined}"
KREPLAY_SANITIZE="" "$(dirname "$0")/build.sh"
BUILD="${KREPLAY_BUILD_DIR:-build}"
ctest --test-dir "$BUILD" --output-on-failure -j "$(nproc)" --timeout 600 "$@"

[[ -n "$SANITIZE" ]] || exit 0
SAN_BUILD="${KREPLAY_SANITIZE_BUILD_DIR:-${BUILD%/}-asan}"
KREPLAY_SANITIZE="$SANITIZE" KREPLAY_BUILD_DIR="$SAN_BUILD" "$(dirname "$0")/build.sh"
# intercept_tls_get_addr=0: GCC 12's runtime misreads glibc's dynamic TLS blocks and LeakSanitizer's
# tracer then crashes at exit ("Tracer caught signal 11"; google/sanitizers#1322).
ASAN_OPTIONS="detect_leaks=1:check_initialization_order=1:intercept_tls_get_addr=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}" \
  ctest --test-dir "$SAN_BUILD" --output-on-failure -j "$(nproc)" --timeout 600 -L 'unit|integration' "$@"
