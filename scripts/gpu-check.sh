#!/usr/bin/env bash
# Everything kreplay checks and measures on a GPU machine, in one go, from a tree built elsewhere.
#   scripts/gpu-check.sh <dist-dir> <out-dir>
# <dist-dir> holds bin/ lib/ share/ of a build (see scripts/make-gpu-dist.sh). Each step has its own
# time limit; logs go to <out-dir>/work and a one-line-per-step summary to <out-dir>/summary.txt.
set -u
D=$(cd "$1" && pwd)
O=$2
W=/tmp/kreplay-gpu-work
mkdir -p "$W"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$D/lib:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
K=$D/bin/kreplay
APP=$D/bin/kreplay_gpu_multi_kernel_chain
TEN="gpu__time_duration.sum,sm__cycles_elapsed.max,smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed,l1tex__t_sector_hit_rate.pct,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,smsp__sass_inst_executed_op_global_ld.sum,smsp__sass_inst_executed_op_global_st.sum,l1tex__throughput.avg.pct_of_peak_sustained_active,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed"

ms() { date +%s%3N; }
step() {  # step NAME LIMIT_S cmd...
  local name=$1 limit=$2
  shift 2
  local t0
  t0=$(ms)
  timeout "$limit" "$@" >"$W/$name.log" 2>&1
  local rc=$?
  echo "$name rc=$rc ms=$(($(ms) - t0))" | tee -a "$O/summary.txt"
  return $rc
}

nvidia-smi -L >"$W/gpu.txt" 2>&1
step version 20 "$K" --version

# 1. GPU unit tests of the backend's parts.
step memory_gpu_test 60 "$D/bin/memory_gpu_test"
step range_profiler_gpu_test 180 "$D/bin/range_profiler_gpu_test"

# 2. Correctness: every self-checking app, plain and under kreplay at 2, 3, 8 passes and early exit.
step gpu_suite 330 tests/gpu/run_gpu_suite.sh "$D" "$W/suite"
tail -3 "$W/gpu_suite.log" | tee -a "$O/summary.txt"

# 3. The kreplay command on a CUDA application: counters, all output formats.
step plain_app 30 "$APP"
step cli_pmc 120 "$K" --pmc smsp__inst_executed.sum dram__bytes_read.sum --kernel-trace --summary \
  --output-format sqlite,csv,json,perfetto -d "$W/cli_pmc" -o run -- "$APP"
step cli_ten 300 env KREPLAY_PRINT_COSTS=1 "$K" --metrics "$TEN" --output-format sqlite,csv \
  -d "$W/cli_ten" -o run -- "$APP"
step ncu_ten 300 ncu --replay-mode kernel --cache-control none --clock-control none \
  --metrics "$TEN" --csv --page raw --print-units base -o "$W/ncu_ten" -f "$APP"
ncu --import "$W/ncu_ten.ncu-rep" --csv --page raw --print-units base >"$W/ncu_ten.csv" 2>&1
step cli_filter 120 "$K" --pmc smsp__inst_executed.sum --kernel-include-regex link_b \
  --kernel-iteration-range "[2-3]" -d "$W/cli_filter" -o run -- "$APP"
step cli_app_replay 180 "$K" --pmc smsp__inst_executed.sum --pmc dram__bytes_read.sum \
  --replay-mode application -d "$W/cli_app" -o run -- "$APP"

# 4. PyTorch under kreplay (digest compared with a plain run).
step torch_plain 120 python3 tests/gpu/apps/torch_inplace.py
step torch_kreplay 240 "$K" --pmc smsp__inst_executed.sum -d "$W/cli_torch" -o run -- \
  python3 tests/gpu/apps/torch_inplace.py
grep -h KREPLAY_RESULT "$W/torch_plain.log" "$W/torch_kreplay.log" | tee -a "$O/summary.txt"

# 5. Overhead on launches no tool replays (10,000 launches), alternating plain and injected.
for i in 1 2 3; do
  step "overhead_plain_$i" 60 "$D/bin/launch_overhead" 10000
  step "overhead_kreplay_$i" 60 env CUDA_INJECTION64_PATH="$D/lib/libkreplay_cuda.so" \
    KREPLAY_TOOL_LIBRARIES="$D/lib/libkreplay_test_pass_tool.so" KREPLAY_TEST_KERNEL_REGEX=__none__ \
    "$D/bin/launch_overhead" 10000
done
grep -h launch_overhead "$W"/overhead_*.log | tee -a "$O/summary.txt"

tar czf "$O/work.tgz" -C /tmp kreplay-gpu-work 2>/dev/null
echo "done" | tee -a "$O/summary.txt"
