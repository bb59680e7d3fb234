#!/usr/bin/env bash
# Everything kreplay checks and measures on a GPU machine, from a tree built elsewhere.
#   scripts/gpu-check.sh <dist-dir> <out-dir> [section ...]
# Sections (default: all, in this order): unit suite injection counters cli torch overhead ncu range rangecli rangebench.
# <dist-dir> holds bin/ lib/ share/ of a build (scripts/make-gpu-dist.sh). Each step has its own
# time limit; logs go to /tmp/kreplay-gpu-work (tarred into <out-dir>/work.tgz) and a line per
# step to <out-dir>/summary.txt.
set -u
D=$(cd "$1" && pwd)
O=$2
shift 2
SECTIONS=("$@")
((${#SECTIONS[@]})) || SECTIONS=(unit suite injection counters cli torch overhead ncu range rangecli rangebench)
W=/tmp/kreplay-gpu-work
mkdir -p "$W" "$O"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$D/lib:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
K=$D/bin/kreplay
APP=$D/bin/kreplay_gpu_multi_kernel_chain
TOOL=$D/lib/libkreplay_test_pass_tool.so
INJ=$D/lib/libkreplay_cuda.so
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
note() { echo "$*" | tee -a "$O/summary.txt"; }

nvidia-smi -L >"$W/gpu.txt" 2>&1
for section in "${SECTIONS[@]}"; do
  case $section in
  unit)  # GPU unit tests of the backend's parts
    step memory_gpu_test 60 "$D/bin/memory_gpu_test"
    step range_profiler_gpu_test 180 "$D/bin/range_profiler_gpu_test"
    ;;
  suite)  # every self-checking app, plain and under kreplay at 2, 3, 8 passes and early exit
    step gpu_suite 330 tests/gpu/run_gpu_suite.sh "$D" "$W/suite"
    tail -1 "$W/gpu_suite.log" | tee -a "$O/summary.txt"
    ;;
  injection)  # LD_PRELOAD, snapshot scope args, CUPTI already held
    base=$("$D/bin/kreplay_gpu_inplace_counter" | grep KREPLAY_RESULT)
    step preload 60 env LD_PRELOAD="$INJ" KREPLAY_TOOL_LIBRARIES="$TOOL" KREPLAY_TEST_PASSES=3 \
      "$D/bin/kreplay_gpu_inplace_counter"
    note "preload: baseline '$base' got '$(grep KREPLAY_RESULT "$W/preload.log")' $(grep -o 'replayed=[0-9]*' "$W/preload.log")"
    step args_scope 60 env CUDA_INJECTION64_PATH="$INJ" KREPLAY_TOOL_LIBRARIES="$TOOL" \
      KREPLAY_TEST_PASSES=3 KREPLAY_REPLAY_MEMORY=args "$D/bin/kreplay_gpu_inplace_counter"
    note "args scope: '$(grep KREPLAY_RESULT "$W/args_scope.log")' $(grep -o 'replayed=[0-9]*' "$W/args_scope.log")"
    step cupti_held 60 env CUDA_INJECTION64_PATH="$INJ" KREPLAY_TOOL_LIBRARIES="$TOOL" \
      "$D/bin/kreplay_gpu_cupti_held"
    note "cupti_held: $(grep -c '^==KREPLAY==' "$W/cupti_held.log") kreplay lines: $(grep '==KREPLAY==' "$W/cupti_held.log" | head -2 | tr '\n' ' ') result: $(grep KREPLAY_RESULT "$W/cupti_held.log")"
    ;;
  counters)  # dram bytes ~ N, 1-pass vs 10-pass, and ncu within 1%
    step counters_check 400 python3 tests/gpu/counters_check.py "$D" "$W/counters" --ncu
    tail -12 "$W/counters_check.log" | tee -a "$O/summary.txt"
    ;;
  cli)  # the kreplay command on a CUDA application: counters, outputs, filters, app replay
    step plain_app 30 "$APP"
    step cli_pmc 120 "$K" --pmc smsp__inst_executed.sum dram__bytes_read.sum --kernel-trace --summary \
      --output-format sqlite,csv,json,perfetto -d "$W/cli_pmc" -o run -- "$APP"
    step cli_ten 300 env KREPLAY_PRINT_COSTS=1 "$K" --metrics "$TEN" --output-format sqlite,csv \
      -d "$W/cli_ten" -o run -- "$APP"
    step ncu_ten 300 ncu --replay-mode kernel --cache-control none --clock-control none \
      --metrics "$TEN" -o "$W/ncu_ten" -f "$APP"
    ncu --import "$W/ncu_ten.ncu-rep" --csv --page raw --print-units base >"$W/ncu_ten.csv" 2>&1
    step cli_filter 120 "$K" --pmc smsp__inst_executed.sum --kernel-include-regex link_b \
      --kernel-iteration-range "[2-3]" -d "$W/cli_filter" -o run -- "$APP"
    step cli_app_replay 180 "$K" --pmc smsp__inst_executed.sum --pmc dram__bytes_read.sum \
      --replay-mode application -d "$W/cli_app" -o run -- "$APP"
    step list_avail 60 "$K" --list-avail
    head -3 "$W/list_avail.log" | tee -a "$O/summary.txt"
    ;;
  torch)  # PyTorch under kreplay (digest compared with a plain run)
    step torch_plain 120 python3 tests/gpu/apps/torch_inplace.py
    step torch_kreplay 240 "$K" --pmc smsp__inst_executed.sum -d "$W/cli_torch" -o run -- \
      python3 tests/gpu/apps/torch_inplace.py
    grep -h KREPLAY_RESULT "$W/torch_plain.log" "$W/torch_kreplay.log" | tee -a "$O/summary.txt"
    ;;
  overhead)  # launches no tool replays (10,000 launches), alternating plain and injected
    for i in 1 2 3; do
      step "overhead_plain_$i" 60 "$D/bin/launch_overhead" 10000
      step "overhead_kreplay_$i" 60 env CUDA_INJECTION64_PATH="$INJ" KREPLAY_TOOL_LIBRARIES="$TOOL" \
        KREPLAY_TEST_KERNEL_REGEX=__none__ "$D/bin/launch_overhead" 10000
    done
    for f in "$W"/overhead_*.log; do note "$(basename "$f" .log): $(grep launch_overhead "$f")"; done
    ;;
  ncu)  # kreplay vs ncu on an 8 GiB application, 3 kernels writing 256 MiB each, 10-pass set
    RA=$D/bin/replay_app
    for i in 1 2; do
      t0=$(date +%s%N)
      step "bench_plain_$i" 60 "$RA" 8 3 6 256
      note "bench_plain_$i t0=$t0 $(grep replay_app "$W/bench_plain_$i.log")"
      t0=$(date +%s%N)
      step "bench_kreplay_$i" 300 env KREPLAY_PRINT_COSTS=1 "$K" --metrics "$TEN" -d "$W/bench_k$i" -o run -- "$RA" 8 3 6 256
      note "bench_kreplay_$i t0=$t0 $(grep replay_app "$W/bench_kreplay_$i.log")"
      t0=$(date +%s%N)
      step "bench_ncu_$i" 300 ncu --replay-mode kernel --cache-control none --clock-control none \
        --metrics "$TEN" "$RA" 8 3 6 256
      note "bench_ncu_$i t0=$t0 $(grep "^replay_app " "$W/bench_ncu_$i.log")"
    done
    python3 bench/cuda/ratios.py "$O/summary.txt" | tee -a "$O/summary.txt"
    ;;
  range)  # range replay: the suite and its counters against kernel replay
    step range_suite 330 env KREPLAY_SUITE_MODE=range tests/gpu/run_gpu_suite.sh "$D" "$W/range_suite"
    tail -1 "$W/range_suite.log" | tee -a "$O/summary.txt"
    grep -E "FAIL" "$W/range_suite.log" | head -5 | tee -a "$O/summary.txt"
    step range_counters 300 python3 tests/gpu/counters_check.py "$D" "$W/range_counters" --range
    tail -4 "$W/range_counters.log" | tee -a "$O/summary.txt"
    ;;
  rangecli)  # the kreplay command in range mode on the chain app: filters, one-pass ranges
    step rc_plain 30 "$APP"
    step rc_filter 120 "$K" --replay-mode range --pmc smsp__inst_executed.sum --pmc dram__bytes_read.sum \
      --kernel-include-regex link_b -d "$W/rc_filter" -o run -- "$APP"
    step rc_one_pass 120 "$K" --replay-mode range --pmc smsp__inst_executed.sum -d "$W/rc_one" -o run -- "$APP"
    grep -h KREPLAY_RESULT "$W/rc_plain.log" "$W/rc_filter.log" "$W/rc_one_pass.log" | tee -a "$O/summary.txt"
    grep -h "launches:" "$W/rc_filter.log" "$W/rc_one_pass.log" | tee -a "$O/summary.txt"
    python3 - "$W/rc_filter/run_results.db" "$W/rc_one/run_results.db" <<'PY' 2>&1 | tee -a "$O/summary.txt"
import sqlite3, sys
for db in sys.argv[1:]:
    c = sqlite3.connect(db)
    q = lambda s: c.execute(s).fetchall()
    print(db.split("/")[-2], "dispatches", q("select count(*), group_concat(distinct outcome) from dispatches"),
          "kernels", q("select group_concat(distinct k.demangled_name) from dispatches d join kernels k using (app_pass, kernel_id)"),
          "counter rows", q("select count(*), count(distinct dispatch_id), sum(value = 0) from counters"),
          "snapshots", q("select count(*) from replay_phases where phase = 'snapshot'"))
PY
    ;;
  rangebench)  # range replay vs kernel replay vs ncu: 1 GiB, 3 kernels, 4 windows of 24 launches
    RA=$D/bin/replay_app
    step rb_plain 60 "$RA" 1 3 96 64 24
    note "rb_plain $(grep replay_app "$W/rb_plain.log")"
    step rb_range 300 env KREPLAY_PRINT_COSTS=1 "$K" --replay-mode range --metrics "$TEN" -d "$W/rb_r" -o run -- "$RA" 1 3 96 64 24
    note "rb_range $(grep replay_app "$W/rb_range.log")"
    step rb_kernel 300 "$K" --replay-mode kernel --metrics "$TEN" -d "$W/rb_k" -o run -- "$RA" 1 3 96 64 24
    note "rb_kernel $(grep replay_app "$W/rb_kernel.log")"
    step rb_ncu 300 ncu --replay-mode kernel --cache-control none --clock-control none \
      --metrics "$TEN" "$RA" 1 3 96 64 24
    note "rb_ncu $(grep "^replay_app " "$W/rb_ncu.log")"
    python3 bench/cuda/ratios.py "$O/summary.txt" | tee -a "$O/summary.txt"
    ;;
  esac
done
tar czf "$O/work.tgz" -C /tmp kreplay-gpu-work 2>/dev/null
note done
