#!/usr/bin/env bash
# Gather what scripts/gpu-check.sh needs from a build tree into a small folder that can travel to
# a GPU machine: bin/ (the command, GPU tests, apps, benchmarks), lib/, share/.
#   scripts/make-gpu-dist.sh <build-dir> <dist-dir>
set -euo pipefail
B=$1
D=$2
rm -rf "$D"
mkdir -p "$D/bin" "$D/lib"
for f in kreplay memory_gpu_test range_profiler_gpu_test launch_overhead snapshot_bench replay_app pass_cost profiler_api_cost graph_probe pc_sampling_probe heap_probe free_probe \
         kreplay-sample-app; do
  [[ -e "$B/bin/$f" ]] && cp -a "$B/bin/$f" "$D/bin/"
done
cp -a "$B"/bin/kreplay_gpu_* "$D/bin/" 2>/dev/null || true
cp -a "$B"/bin/real_* "$D/bin/" 2>/dev/null || true  # bench/real (its .py files run from the source tree)
cp -a "$B"/lib/*.so* "$D/lib/"
cp -a "$B/share" "$D/"
du -sh "$D"
