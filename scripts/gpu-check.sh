#!/usr/bin/env bash
# Everything kreplay checks and measures on a GPU machine, from a tree built elsewhere.
#   scripts/gpu-check.sh <dist-dir> <out-dir> [section ...]
# Sections (default: all, in this order): unit suite injection counters cli torch frameworks fwsuite fwrange nccl
# overhead storage permission passcost ncu range rangecli rangebench, and on request traffic divergence graphprobe peer
# services servicesbench servicesuite multigpu writeset writesetbench nvtxsel pcbisect pcprobe pcorder pcstart pcfix heapprobe freeprobe rangefree modload convlazy convcrash hostreads rangespan real apicost warmprobe warmstart. (nccl and multigpu need two
# GPUs; with one nccl says SKIP and multigpu checks its programs on the one.) suite and range leave out the framework programs (torch.compile, JAX,
# CuPy, Triton: tests/gpu/apps/*.py), which compile from a cold cache in every run; fwsuite and fwrange run the suite
# on them alone, frameworks under the kreplay command. KREPLAY_FW_APPS="app ..." picks some of them (default all five),
# e.g. to keep one device command under its limit (all five: ~8 min for frameworks, more for fwsuite).
# real runs bench/real/run.py; KREPLAY_REAL_PROGRAMS=a,b picks some of its programs (default all seven).
# <dist-dir> holds bin/ lib/ share/ of a build (scripts/make-gpu-dist.sh). Each step has its own
# time limit; logs go to /tmp/kreplay-gpu-work (tarred into <out-dir>/work.tgz) and a line per
# step to <out-dir>/summary.txt.
set -u
D=$(cd "$1" && pwd)
O=$2
shift 2
SECTIONS=("$@")
((${#SECTIONS[@]})) || SECTIONS=(unit suite injection counters cli torch frameworks fwsuite fwrange nccl overhead storage permission passcost ncu range rangecli rangebench)
W=/tmp/kreplay-gpu-work
mkdir -p "$W" "$O"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$D/lib:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
K=$D/bin/kreplay
APP=$D/bin/kreplay_gpu_multi_kernel_chain
TOOL=$D/lib/libkreplay_test_pass_tool.so
INJ=$D/lib/libkreplay_cuda.so
# kreplay::cupti::kTenPassMetrics (16 metrics, 10 passes on GH100), as the GPU scripts share it.
TEN=$(paste -sd, "$(dirname "$0")/../tests/gpu/ten_pass_metrics.txt")

# kreplay::cupti::kTenPassSmMetrics (src/backends/cuda/cupti/metric_sets.hpp): SM side only, 10 passes on GH100.
SM10="sm__inst_executed_pipe_alu.sum,sm__inst_executed_pipe_fma.sum,sm__inst_executed_pipe_lsu.sum,sm__inst_executed_pipe_xu.sum,sm__inst_executed_pipe_fp64.sum,sm__inst_executed_pipe_tensor.sum,sm__inst_executed_pipe_uniform.sum,sm__inst_executed_pipe_cbu.sum,sm__inst_executed_pipe_adu.sum,sm__inst_executed_pipe_tex.sum,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_math_pipe_throttle_per_warp_active.pct,smsp__warp_issue_stalled_wait_per_warp_active.pct,smsp__warp_issue_stalled_not_selected_per_warp_active.pct,smsp__warp_issue_stalled_selected_per_warp_active.pct,smsp__warp_issue_stalled_lg_throttle_per_warp_active.pct,smsp__warp_issue_stalled_mio_throttle_per_warp_active.pct,smsp__warp_issue_stalled_no_instruction_per_warp_active.pct,smsp__warp_issue_stalled_branch_resolving_per_warp_active.pct,smsp__warp_issue_stalled_dispatch_stall_per_warp_active.pct,smsp__warp_issue_stalled_drain_per_warp_active.pct,smsp__warp_issue_stalled_imc_miss_per_warp_active.pct,smsp__warp_issue_stalled_membar_per_warp_active.pct,smsp__warp_issue_stalled_misc_per_warp_active.pct,smsp__warp_issue_stalled_sleeping_per_warp_active.pct,smsp__warp_issue_stalled_tex_throttle_per_warp_active.pct"

# The framework programs (tests/gpu/apps/*.py), their command lines, and a regex for the suite.
read -r -a FW_APPS <<<"${KREPLAY_FW_APPS:-torch_compile torch_compile_graphs jax_train cupy_ops triton_kernels}"
FW_ALL='^(torch_compile|torch_compile_graphs|jax_train|cupy_ops|triton_kernels)$'
FW_SEL="^($(IFS='|'; echo "${FW_APPS[*]}"))\$"
fw_cmd() {  # fw_cmd APP: sets FW to its command line (run from the source tree, like torch)
  case $1 in
    torch_compile_graphs) FW=(python3 tests/gpu/apps/torch_compile.py --graphs) ;;
    *) FW=(python3 "tests/gpu/apps/$1.py") ;;
  esac
}
fw_digest() {  # fw_digest APP LOG: the digest of APP's KREPLAY_RESULT line in LOG, or nothing
  grep -h "^KREPLAY_RESULT $1 " "$2" 2>/dev/null | tail -1 | cut -d' ' -f3
}

pcb() {  # pcb SECTION NAME kreplay-args...: services_kernels under kreplay, then the PC samples
         # its database holds and the first line saying PC sampling collected nothing
  local section=$1 name=$2 run=${1}_$2
  shift 2
  step "$run" 60 "$K" "$@" --kernel-include-regex . -d "$W/$run" -o run -- "$D/bin/kreplay_gpu_services_kernels"
  note "$section $name: $(python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); r=c.execute("select count(*), coalesce(sum(samples),0), group_concat(distinct replay_pass) from pc_samples").fetchone(); print("%d rows, %d samples, passes %s" % r); print(" per dispatch:pass", " ".join("%d:%d=%d" % t for t in c.execute("select dispatch_id, replay_pass, sum(samples) from pc_samples group by 1, 2 order by 1, 2"))); print("; sass rows %d, pm rows %d, counter rows %d" % tuple(c.execute("select count(*) from " + t).fetchone()[0] for t in ("sass_metrics", "pm_samples", "counters")))' "$W/$run/run_results.db" 2>&1 | tail -3 | tr -d '\n') | $(grep -h "collected no sample\|not collected" "$W/$run.log" | head -1 | cut -c1-120)"
}

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
    step gpu_suite 330 env KREPLAY_SUITE_EXCLUDE="$FW_ALL" tests/gpu/run_gpu_suite.sh "$D" "$W/suite"
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
  crash)  # a fatal signal with a range open: the range is closed before the outputs (issue 13 item 5)
    step crash_check 300 python3 tests/gpu/crash_check.py "$D" "$W/crash"
    grep -E "^crash" "$W/crash_check.log" | tee -a "$O/summary.txt"
    ;;
  fallback)  # the range profiler made unavailable: counting falls back to the profiler API (issue 13 item 2)
    step fallback_check 300 env KREPLAY_TEST_RANGE_PROFILER_UNAVAILABLE=1 python3 tests/gpu/counters_check.py "$D" "$W/fallback"
    tail -8 "$W/fallback_check.log" | tee -a "$O/summary.txt"
    note "fallback: $(cat "$W"/fallback/*.stderr 2>/dev/null | grep -c "counting with CUPTI's profiler API instead") fallback warnings"
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
  frameworks)  # framework programs plainly, then under the kreplay command (10-pass set), kernel and range replay
    for a in "${FW_APPS[@]}"; do
      fw_cmd "$a"
      step "fw_${a}_plain" 180 "${FW[@]}"
      prc=$?
      want=$(fw_digest "$a" "$W/fw_${a}_plain.log")
      note "fw_${a}_plain: digest ${want:-none} $(grep -h "^KREPLAY_APP_INFO\|^SKIP" "$W/fw_${a}_plain.log" | tr '\n' ' ')"
      ((prc == 77)) && continue  # no GPU or no framework: nothing to compare
      for mode in kernel range; do
        name=fw_${a}_$mode out=$W/fw_$a
        [[ $mode == range ]] && out+=_range
        step "$name" 300 "$K" --metrics "$TEN" --replay-mode "$mode" -d "$out" -o run -- "${FW[@]}"
        got=$(fw_digest "$a" "$W/$name.log")
        verdict=MISMATCH
        [[ -n $want && $got == "$want" ]] && verdict=OK
        note "$name: $verdict plain=${want:-none} kreplay=${got:-none} | $(grep -h "launches:" "$W/$name.log" | tail -1)"
      done
    done
    ;;
  fwsuite)  # the suite (2, 3, 8 passes, early exit) on the framework programs alone
    step fw_suite 590 env KREPLAY_SUITE_FILTER="$FW_SEL" tests/gpu/run_gpu_suite.sh "$D" "$W/fw_suite"
    grep -E "FAIL|SKIP| passed, " "$W/fw_suite.log" | awk '!seen[$0]++' | tail -20 | tee -a "$O/summary.txt"
    ;;
  fwrange)  # the same in range replay
    step fw_range_suite 590 env KREPLAY_SUITE_MODE=range KREPLAY_SUITE_FILTER="$FW_SEL" \
      tests/gpu/run_gpu_suite.sh "$D" "$W/fw_range_suite"
    grep -E "FAIL|SKIP| passed, " "$W/fw_range_suite.log" | awk '!seen[$0]++' | tail -20 | tee -a "$O/summary.txt"
    ;;
  nccl)  # two ranks, one GPU each: NCCL all_reduce kernels declined (COLLECTIVE), never replayed
    step nccl_plain 120 python3 tests/gpu/apps/nccl_allreduce.py
    step nccl_kreplay 240 env CUDA_INJECTION64_PATH="$INJ" KREPLAY_TOOL_LIBRARIES="$TOOL" KREPLAY_TEST_PASSES=3 \
      python3 tests/gpu/apps/nccl_allreduce.py
    step nccl_cli 240 "$K" --pmc smsp__inst_executed.sum dram__bytes_read.sum --metrics "$TEN" -d "$W/nccl_cli" -o "run_%pid%" -- \
      python3 tests/gpu/apps/nccl_allreduce.py
    grep -h "KREPLAY_RESULT\|KREPLAY_TEST_TOOL \|KREPLAY_TEST_TOOL_DECLINES\|collective\|launches:\|SKIP" \
      "$W/nccl_plain.log" "$W/nccl_kreplay.log" "$W/nccl_cli.log" | tee -a "$O/summary.txt"
    ;;
  multigpu)  # issue 15 item 4: two_gpu_peer under 3 passes (windows on both devices overlap), DDP under
             # torchrun inside and outside kreplay, kreplay merge of the ranks (tests/gpu/multigpu_check.py;
             # with one GPU the programs run on it and the two-GPU claims say SKIP)
    step multigpu_check 590 python3 tests/gpu/multigpu_check.py "$D" "$W/multigpu"
    grep -hE "^(PASS|FAIL|SKIP) " "$W/multigpu_check.log" | tee -a "$O/summary.txt"
    ;;
  overhead)  # launches no tool replays (10,000 launches), alternating plain and injected
    # Launch-bound (tiny kernels) and GPU-bound (50 and 100 us kernels); each process timed from its start
    # (t0) to its end (t1), so bench/cuda/overhead.py can split the wall into before main, the
    # launch loop, and after it.
    timed_overhead() {  # timed_overhead KIND US ROUND [env ...]: one run, noted with t0 and t1
      local name="overhead_$1_$2_$3" us=$2 t0
      shift 3
      t0=$(date +%s%N)
      step "$name" 60 env "$@" "$D/bin/launch_overhead" 10000 "$us"
      note "$name t0=$t0 t1=$(date +%s%N) $(grep launch_overhead "$W/$name.log")"
    }
    for us in 0 50 100; do
      for i in 1 2 3 4 5; do
        timed_overhead plain "$us" "$i"
        timed_overhead kreplay "$us" "$i" CUDA_INJECTION64_PATH="$INJ" KREPLAY_TOOL_LIBRARIES="$TOOL" \
          KREPLAY_TEST_KERNEL_REGEX=__none__
        # CUPTI's own share: an injection that only subscribes (bench/cuda/cupti_floor.c).
        timed_overhead cuptifloor "$us" "$i" CUDA_INJECTION64_PATH="$D/lib/libcupti_floor.so"
      done
    done
    step overhead_costs 60 env CUDA_INJECTION64_PATH="$INJ" KREPLAY_TOOL_LIBRARIES="$TOOL" \
      KREPLAY_TEST_KERNEL_REGEX=__none__ KREPLAY_PRINT_COSTS=1 "$D/bin/launch_overhead" 10000 0
    grep -h "startup\|launch_overhead" "$W/overhead_costs.log" | tee -a "$O/summary.txt"
    python3 bench/cuda/overhead.py "$O/summary.txt" | tee -a "$O/summary.txt"
    ;;
  storage)  # snapshot storage: pinned host memory when the device is short, decline when neither fits
    A=$D/bin/kreplay_gpu_inplace_counter
    step st_plain 30 "$A"
    # No device storage at all (headroom above the device's size): every snapshot in pinned memory.
    step st_pinned 120 env CUDA_INJECTION64_PATH="$INJ" KREPLAY_TOOL_LIBRARIES="$TOOL" KREPLAY_TEST_PASSES=3 \
      KREPLAY_DEVICE_HEADROOM=100000G "$A"
    # Neither tier fits: declined with its reason, the application runs once.
    step st_decline 120 env CUDA_INJECTION64_PATH="$INJ" KREPLAY_TOOL_LIBRARIES="$TOOL" KREPLAY_TEST_PASSES=3 \
      KREPLAY_DEVICE_HEADROOM=100000G KREPLAY_PINNED_BUDGET=4K "$A"
    step st_cli 120 env KREPLAY_DEVICE_HEADROOM=100000G "$K" --metrics "$TEN" -d "$W/st_cli" -o run -- "$A"
    for f in st_plain st_pinned st_decline st_cli; do
      note "$f: $(grep -h "KREPLAY_RESULT\|KREPLAY_TEST_TOOL \|KREPLAY_TEST_TOOL_DECLINES\|pinned host\|launches:" "$W/$f.log" | tr '\n' ' ')"
    done
    python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print("st_cli phases", c.execute("select phase, count(*), sum(bytes), round(sum(end_ns-start_ns)/1e6,2) from replay_phases group by phase").fetchall(), "counters", c.execute("select count(*), sum(value is null) from counters").fetchone())' \
      "$W/st_cli/run_results.db" 2>&1 | tee -a "$O/summary.txt"
    ;;
  permission)  # counters as a user the driver does not let profile: one line, the application runs
    note "driver: $(grep -i profiling /proc/driver/nvidia/params 2>&1 | tr '\n' ' ')"
    P=/tmp/kreplay-perm
    rm -rf "$P" && mkdir -p "$P/out" && cp -a "$D" "$P/dist" && chmod -R a+rX "$P" && chmod 777 "$P/out"
    step perm_plain 30 setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/tmp "$P/dist/bin/kreplay_gpu_multi_kernel_chain"
    step perm_kreplay 120 setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/tmp \
      "$P/dist/bin/kreplay" --pmc smsp__inst_executed.sum -d "$P/out" -o run -- "$P/dist/bin/kreplay_gpu_multi_kernel_chain"
    note "perm_plain: $(grep -h KREPLAY_RESULT "$W/perm_plain.log")"
    note "perm_kreplay: $(grep -h "KREPLAY_RESULT\|==KREPLAY==" "$W/perm_kreplay.log" | tr '\n' '|')"
    ;;
  passcost)  # what one CUPTI pass costs and what it depends on (bench/cuda/pass_cost.cu)
    step pass_cost 240 "$D/bin/pass_cost" 4
    grep -h "^pass_cost" "$W/pass_cost.log" | tee -a "$O/summary.txt"
    ;;
  apicost)  # range profiler vs the legacy profiler API per pass, session per dispatch vs kept (bench/cuda/profiler_api_cost.cu)
    # All cases in one process; if it dies (the legacy API is deprecated and may crash rather than
    # refuse) or a case was unavailable (exit 3), every case again in a process of its own (after
    # `range`, the values_agree baseline), so that no case reports what an earlier one left behind.
    if ! step profiler_api_cost 300 "$D/bin/profiler_api_cost" 8; then
      for c in $("$D/bin/profiler_api_cost" --list); do
        step "profiler_api_cost_$c" 120 "$D/bin/profiler_api_cost" 8 "range,$c"
      done
    fi
    grep -h "^profiler_api" "$W"/profiler_api_cost*.log | tee -a "$O/summary.txt"
    ;;
  warmprobe)  # can the warm start be one pass? range, range_warm_full and range_warm_light of
             # bench/cuda/profiler_api_cost.cu, each in a process of its own (first Start paid once)
    for c in range range_warm_full range_warm_light; do
      step "warmprobe_$c" 120 "$D/bin/profiler_api_cost" 8 "$c"
    done
    grep -h "^profiler_api" "$W"/warmprobe_*.log | tee -a "$O/summary.txt"
    # kreplay itself, range replay of Thrust's sort and scan: the whole warm-up, the one-pass one
    # (KREPLAY_WARM_START=light) and none; wall ms (step), digest, and counter values left empty
    for w in 1 light 0 1 light 0; do
      n=$((${n:-0} + 1))
      step "warm_${w}_$n" 60 env KREPLAY_WARM_START=$w KREPLAY_PRINT_COSTS=1 "$K" --replay-mode range \
        --metrics "$TEN" -d "$W/warm_${w}_$n" -o run -- "$D/bin/real_thrust_sort_scan"
      nulls=$(python3 -c "import sqlite3,glob,sys; c=sqlite3.connect(glob.glob(sys.argv[1]+'/*.db')[0]); print(c.execute('select count(*), sum(value is null) from counters').fetchone())" "$W/warm_${w}_$n" 2>&1)
      note "warm $w: $(grep -h "RESULT\|cost warm_start \|cost start " "$W/warm_${w}_$n.log" | tr -s ' ' | tr '\n' ' ' | cut -c1-300) counters(rows, null)=$nulls"
    done
    ;;
  ncu)  # kreplay vs ncu in kernel replay: two 10-pass sets (TEN: memory system; SM10: SM side), 8 and 1 GiB
    RA=$D/bin/replay_app
    for run in ten8g_1:TEN:8:256 sm8g_1:SM10:8:256 ten8g_2:TEN:8:256 sm8g_2:SM10:8:256 ten1g_1:TEN:1:64 sm1g_1:SM10:1:64; do
      IFS=: read -r r set gib mib <<<"$run"
      M=${!set}
      t0=$(date +%s%N)
      step "bench_plain_$r" 60 "$RA" "$gib" 3 6 "$mib"
      note "bench_plain_$r t0=$t0 $(grep replay_app "$W/bench_plain_$r.log")"
      t0=$(date +%s%N)
      step "bench_kreplay_$r" 300 env KREPLAY_PRINT_COSTS=1 "$K" --replay-mode kernel --metrics "$M" -d "$W/bench_k$r" -o run -- "$RA" "$gib" 3 6 "$mib"
      note "bench_kreplay_$r t0=$t0 $(grep replay_app "$W/bench_kreplay_$r.log")"
      note "bench_values_$r $(python3 -c 'import sqlite3,sys; print("counter rows %d, NaN %d" % sqlite3.connect(sys.argv[1]).execute("select count(*), coalesce(sum(value is null),0) from counters").fetchone())' "$W/bench_k$r/run_results.db" 2>&1)"
      t0=$(date +%s%N)
      step "bench_ncu_$r" 300 ncu --replay-mode kernel --cache-control none --clock-control none \
        --metrics "$M" "$RA" "$gib" 3 6 "$mib"
      note "bench_ncu_$r t0=$t0 $(grep "^replay_app " "$W/bench_ncu_$r.log")"
    done
    python3 bench/cuda/ratios.py "$O/summary.txt" | tee -a "$O/summary.txt"
    ;;
  warmstart)  # KREPLAY_WARM_START=1 vs 0 (cuda_warm_start.cpp): does dispatch 0 of a 10-pass set run at the
              # steady cost once a throw-away collection took the first CUPTI Start, with no NaN value?
    RA=$D/bin/replay_app
    for v in 1 0; do  # 1 GiB footprint, one kernel updating 256 MiB in place, 8 launches, synchronized
      step "warmstart_$v" 300 env KREPLAY_WARM_START=$v KREPLAY_PRINT_COSTS=1 KREPLAY_LOG_LEVEL=debug \
        "$K" --replay-mode kernel --metrics "$TEN" -d "$W/ws$v" -o run -- "$RA" 1 1 8 256
      grep -hE "^==KREPLAY== cost (warm_start|start |stop )" "$W/warmstart_$v.log" | tee -a "$O/summary.txt"
      grep -h "warm start" "$W/warmstart_$v.log" | head -3 | cut -c1-300 | tee -a "$O/summary.txt"
      note "warmstart_$v $(grep "^replay_app " "$W/warmstart_$v.log")"
    done
    python3 - "$W/ws1/run_results.db" "$W/ws0/run_results.db" "$W/warmstart_1.log" "$W/warmstart_0.log" \
      <<'PY' 2>&1 | tee -a "$O/summary.txt"
import re, sqlite3, statistics, sys
def app_first_launch(log):
    # replay_app's loop: its first launch as the application sees it (warm-up included) = the loop
    # minus the later launches at their steady time.
    try:
        line = [l for l in open(log) if l.startswith("replay_app ")][-1]
        f = {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)", line)}
        return f"app first_launch_ms={f['loop_ms'] - f['steady_per_launch_ms'] * (f['launches'] - 1):.1f} steady_per_launch_ms={f['steady_per_launch_ms']:.1f}"
    except Exception as e:
        return f"app: {e}"
def load(db):
    c = sqlite3.connect(db)
    # Per dispatch (in launch order): the GPU time of its passes (passes.start_ns..end_ns, summed),
    # and its window: from its snapshot's start (or its first pass) to its last pass's end, which
    # holds every CUPTI Start and Stop of its passes.
    rows = c.execute("""
        select d.dispatch_id, d.passes_executed,
               (select sum(p.end_ns - p.start_ns) from passes p
                 where p.app_pass = d.app_pass and p.dispatch_id = d.dispatch_id),
               d.end_ns - coalesce((select min(r.start_ns) from replay_phases r
                                     where r.app_pass = d.app_pass and r.dispatch_id = d.dispatch_id
                                       and r.phase = 'snapshot'), d.start_ns)
        from dispatches d where d.outcome = 'replayed' order by d.dispatch_id""").fetchall()
    vals = c.execute("select count(*), coalesce(sum(value is null), 0) from counters").fetchone()
    return rows, vals
ok = True
for label, db, log in (("warm", sys.argv[1], sys.argv[3]), ("cold", sys.argv[2], sys.argv[4])):
    try:
        rows, (nvals, nan) = load(db)
    except Exception as e:  # no database: the run failed
        print(f"warmstart {label}: {db}: {e}")
        ok = ok and label != "warm"
        continue
    if len(rows) < 3:
        print(f"warmstart {label}: only {len(rows)} replayed dispatches")
        ok = ok and label != "warm"
        continue
    ms = lambda ns: (ns or 0) / 1e6
    first_pass, first_win = ms(rows[0][2]), ms(rows[0][3])
    med_pass = statistics.median(ms(r[2]) for r in rows[1:])
    med_win = statistics.median(ms(r[3]) for r in rows[1:])
    pass_ok = abs(first_pass - med_pass) <= 0.25 * med_pass
    win_ok = abs(first_win - med_win) <= 0.25 * med_win
    print(f"warmstart {label}: dispatches={len(rows)} passes={rows[0][1]} "
          f"pass_ms first={first_pass:.2f} later_median={med_pass:.2f} ratio={first_pass / med_pass:.2f}; "
          f"window_ms first={first_win:.2f} later_median={med_win:.2f} ratio={first_win / med_win:.2f}; "
          f"counter values={nvals} NaN={nan}; {app_first_launch(log)}")
    if label == "warm":
        ok = ok and pass_ok and nan == 0 and nvals > 0
        print(f"warmstart window (information, not part of PASS): first dispatch's window "
              f"{'within' if win_ok else 'NOT within'} 25% of the later median")
print("warmstart: " + ("PASS" if ok else "FAIL") +
      " (warm run: first dispatch's pass time within 25% of the later dispatches' median, no NaN value)")
PY
    ;;
  range)  # range replay: the suite and its counters against kernel replay
    step range_suite 330 env KREPLAY_SUITE_MODE=range KREPLAY_SUITE_EXCLUDE="$FW_ALL" \
      tests/gpu/run_gpu_suite.sh "$D" "$W/range_suite"
    tail -1 "$W/range_suite.log" | tee -a "$O/summary.txt"
    grep -E "FAIL" "$W/range_suite.log" | head -5 | tee -a "$O/summary.txt"
    step range_counters 300 python3 tests/gpu/counters_check.py "$D" "$W/range_counters" --range
    tail -4 "$W/range_counters.log" | tee -a "$O/summary.txt"
    ;;
  hostreads)  # range replay with copies to the host inside ranges (KREPLAY_RANGE_HOST_READS=join):
              # the range suite's self-checks, then bench/real's compaction and torch_train
    step hostreads_suite 330 env KREPLAY_RANGE_HOST_READS=join KREPLAY_SUITE_MODE=range \
      KREPLAY_SUITE_EXCLUDE="$FW_ALL" tests/gpu/run_gpu_suite.sh "$D" "$W/hostreads_suite"
    tail -1 "$W/hostreads_suite.log" | tee -a "$O/summary.txt"
    grep -E "FAIL" "$W/hostreads_suite.log" | head -5 | tee -a "$O/summary.txt"
    step hostreads_real 500 env KREPLAY_RANGE_HOST_READS=join python3 bench/real/run.py \
      --bin "$D/bin" --kreplay "$K" --out "$W/hostreads_real" --timeout 150 \
      --programs "${KREPLAY_REAL_PROGRAMS:-compaction,torch_train}"
    grep -hE "^[a-z0-9_]+ +[0-9]+ ranges|^TOTAL|range/ncu|CORRECTNESS|FAIL" "$W/hostreads_real.log" |
      tee -a "$O/summary.txt"
    ;;
  rangespan)  # ranges across synchronizations and event-ordered streams (event_streams), kernel vs range
    step range_span 400 python3 tests/gpu/range_span_check.py "$D" "$W/range_span"
    grep -vE "^\s*$" "$W/range_span.log" | tail -14 | tee -a "$O/summary.txt"
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
  graphs)  # graph apps, a cuFFT plan: plain, then kreplay --metrics TEN in kernel (node and graph
           # profiling) and range replay; digests must equal the plain run's
    for app in graph_launch graph_conditional graph_memnodes cufft_plan; do
      A=$D/bin/kreplay_gpu_$app
      step "g_plain_$app" 60 "$A"
      base=$(grep -h KREPLAY_RESULT "$W/g_plain_$app.log")
      for v in "kernel|--replay-mode kernel" "graph|--replay-mode kernel --graph-profiling graph" "range|--replay-mode range"; do
        IFS='|' read -r vname vopts <<<"$v"
        # shellcheck disable=SC2086
        step "g_${vname}_$app" 240 "$K" --metrics "$TEN" $vopts -d "$W/g_${vname}_$app" -o run -- "$A"
        got=$(grep -h KREPLAY_RESULT "$W/g_${vname}_$app.log")
        verdict=MISMATCH
        [[ -n $base && $got == "$base" ]] && verdict=OK
        note "graphs $app $vname: $verdict ($got) $(grep -h "launches:" "$W/g_${vname}_$app.log" | sed 's/==KREPLAY== //')"
        grep -h "crashed\|error" "$W/g_${vname}_$app.log" | head -3 | tee -a "$O/summary.txt"
      done
    done
    ;;
  traffic)  # DRAM bytes per launch, kreplay kernel and range replay vs ncu --cache-control all (and known bytes)
    step traffic 420 python3 tests/gpu/traffic_check.py "$D" "$W/traffic"
    cat "$W/traffic.log" | tee -a "$O/summary.txt" | tail -3
    ;;
  divergence)  # --check-divergence on CUDA: float atomics diverge between passes, x = 0.5x + 0.25 does not
    step divergence 180 "$K" --metrics "$TEN" --check-divergence --summary -d "$W/divergence" -o run -- \
      "$D/bin/kreplay_gpu_float_reduce"
    python3 - "$W/divergence/run_results.db" <<'PY' | tee -a "$O/summary.txt"
import sqlite3, sys
try:
    con = sqlite3.connect(sys.argv[1])
    rows = con.execute("SELECT k.demangled_name, COUNT(*), SUM(d.divergence_checked), "
                       "SUM(d.diverged_passes > 0), MAX(d.passes_executed) FROM dispatches d "
                       "JOIN kernels k USING (app_pass, kernel_id) GROUP BY k.demangled_name").fetchall()
except Exception as e:  # no database: the step's log says why
    print("divergence: no database ({})".format(e)); sys.exit(0)
got = {name.split("(")[0]: (n, checked, diverged, passes) for name, n, checked, diverged, passes in rows}
for name, (n, checked, diverged, passes) in sorted(got.items()):
    print("divergence: {} {} launches, {} checked, {} diverged ({} passes)".format(name, n, checked, diverged, passes))
s, c = got.get("sum_atomic", (0, 0, 0, 0)), got.get("scale", (0, 0, 0, 0))
ok = s[1] == s[0] > 0 and s[2] > 0 and c[1] == c[0] > 0 and c[2] == 0
print("divergence_check: {}".format("OK" if ok else "FAILED (want every launch checked, sum_atomic diverged, scale never)"))
PY
    grep -h "Diverged:" "$W/divergence.log" | cut -c1-300 | tee -a "$O/summary.txt"
    ;;
  services)  # the per-pass services (issue 11 item 7): PC samples of a hot loop, SASS counts against the
              # counter, PM samples of a compute then streaming kernel, counters next to the services
    step services_list_avail 60 "$K" --list-avail
    grep -E "^# (chip .*(SASS metrics|stall reasons)|SASS metrics|PM sampling|PC sampling)" \
      "$W/services_list_avail.log" | tee -a "$O/summary.txt"
    step services_check 110 python3 tests/gpu/services_check.py "$D" "$W/services"
    grep -hE "^(PASS|FAIL|SKIP) " "$W/services_check.log" | tee -a "$O/summary.txt"
    ;;
  pcbisect)  # which neighbour of PC sampling leaves it without samples (issue 11): services_kernels
             # under PC sampling alone (one run, pass 0), behind a timing pass (a replayed pass), with
             # counters before and after it, with SASS metrics, with eager module loading, in range replay; PC samples each
    pcb pcbisect alone --pc-sampling
    CUDA_MODULE_LOADING=EAGER pcb pcbisect eager --pc-sampling
    pcb pcbisect replayed --timing-pass --pc-sampling
    pcb pcbisect replayed_nocache --timing-pass --pc-sampling --cache-control none
    pcb pcbisect after_counters --pmc smsp__inst_executed.sum --pc-sampling
    pcb pcbisect before_counters --pmc smsp__inst_executed.sum --pc-sampling --pc-sampling-pass-position 0
    pcb pcbisect with_sass --pc-sampling --source-counters
    pcb pcbisect with_pm --pc-sampling --pm-sampling smsp__inst_executed.sum
    pcb pcbisect range --pc-sampling --replay-mode range
    pcb pcbisect range_counters --pmc smsp__inst_executed.sum --pc-sampling --replay-mode range
    KREPLAY_WARM_START=0 pcb pcbisect after_counters_nowarm --pmc smsp__inst_executed.sum --pc-sampling
    pcb pcbisect after_counters_nocache --pmc smsp__inst_executed.sum --pc-sampling --cache-control none
    pcb pcbisect counters_timing_pc --pmc smsp__inst_executed.sum --timing-pass --pc-sampling
    KREPLAY_COUNTER_API=profiler pcb pcbisect after_counters_api --pmc smsp__inst_executed.sum --pc-sampling
    KREPLAY_LOG_LEVEL=debug pcb pcbisect after_counters_debug --pmc smsp__inst_executed.sum --pc-sampling \
      --launch-count 2
    ;;
  pcprobe)  # bench/cuda/pc_sampling_probe.cpp: PC sampling after whole counter collections (issue 11)
    PP=$D/bin/pc_sampling_probe
    step pcp_alone 60 "$PP" pc pc pc pcidle
    step pcp_collect_drop 60 "$PP" pc collect:smsp__inst_executed.sum drop pc pc
    step pcp_collect_kept 60 "$PP" pc collect:smsp__inst_executed.sum pc drop pc
    step pcp_collect10 60 "$PP" pc "collect:$TEN" drop pc pcidle pc
    step pcp_collect_nodrop 60 "$PP" collect:smsp__inst_executed.sum sync pc
    step pcp_collect_twice 60 "$PP" collect:smsp__inst_executed.sum collect:smsp__inst_executed.sum drop pc
    step pcp_in_callback 60 "$PP" pc cb:smsp__inst_executed.sum pc
    step pcp_exit_plain 60 "$PP" pc cbexit: pc
    step pcp_exit_counted 60 "$PP" pc cbexit:smsp__inst_executed.sum pc
    step pcp_exit_other 60 "$PP" pc cbexitk:smsp__inst_executed.sum pc
    step pcp_other_enabled 60 "$PP" collect:smsp__inst_executed.sum other sync drop pc
    step pcp_first_collect 60 "$PP" collect:smsp__inst_executed.sum drop pc pc
    step pcp_idle_first 60 "$PP" pcidle collect:smsp__inst_executed.sum drop pc
    step pcp_stream 60 "$PP" kernel=stream pc pc
    step pcp_stream_exit 60 "$PP" kernel=stream pc cbexit: pc cbexit:
    step pcp_stream_exit_first 60 "$PP" kernel=stream cbexit: pc
    step pcp_hot_exit_first 60 "$PP" cbexit: pc
    step pcp_s1_new_relaunch 60 "$PP" pc kernel=stream cbexit: cbexit:
    step pcp_s2_known_relaunch 60 "$PP" kernel=stream launch kernel=hot pc kernel=stream cbexit:
    step pcp_s3_new_plain 60 "$PP" pc kernel=stream pc
    step pcp_s4_new_then_plain 60 "$PP" pc kernel=stream launch pc cbexit:
    step pcp_s5_kept 60 "$PP" enable pc kernel=stream launch pc cbexit: disable
    step pcp_s6_kept_counters 60 "$PP" enable pc collect:smsp__inst_executed.sum drop pc disable
    step pcp_s7_kept_first_counters 60 "$PP" collect:smsp__inst_executed.sum drop enable pc disable
    step pcp_s8_other_pc_first 60 "$PP" kernel=stream pc kernel=hot collect:smsp__inst_executed.sum drop pc
    M=collect:smsp__inst_executed.sum
    step pcp_k1_counters_while_enabled 60 "$PP" kernel=stream $M drop kernel=hot enable pc $M pc drop pc disable pc
    step pcp_k2_first_under_both 60 "$PP" kernel=stream $M drop kernel=hot enable $M drop pc disable
    step pcp_k3_mixed 60 "$PP" kernel=stream $M drop enable kernel=hot launch pc $M drop kernel=stream pc cbexit: disable
    step pcp_s9_kept_new_counters 60 "$PP" enable pc disable kernel=stream collect:smsp__inst_executed.sum drop enable pc cbexit: disable
    grep -h "^pc_sampling_probe" "$W"/pcp_*.log | tee -a "$O/summary.txt"
    ;;
  pcorder)  # PC sampling next to other passes (issue 11): on a relaunch after a timing pass, after
            # counters (the default), after a timing pass and counters, before the counters, in
            # range replay, and with SASS metrics and PM sampling on their own passes too; per
            # dispatch, every launch of services_kernels should have samples
    pcb pcorder replayed --timing-pass --pc-sampling
    pcb pcorder after_counters --pmc smsp__inst_executed.sum --pc-sampling
    pcb pcorder timing_first --timing-pass --timing-pass-position 0 --pmc smsp__inst_executed.sum --pc-sampling
    pcb pcorder pc_before_counters --pmc smsp__inst_executed.sum --pc-sampling --pc-sampling-pass-position 0
    pcb pcorder range_counters --pmc smsp__inst_executed.sum --pc-sampling --replay-mode range
    pcb pcorder all_services --pmc smsp__inst_executed.sum --pc-sampling --source-counters \
      --pm-sampling dram__bytes_read.sum
    pcb pcorder all_services_range --pmc smsp__inst_executed.sum --pc-sampling --source-counters \
      --pm-sampling dram__bytes_read.sum --replay-mode range
    pcb pcorder services_no_counters --timing-pass --pc-sampling --source-counters \
      --pm-sampling dram__bytes_read.sum
    pcb pcorder services_no_counters_range --pc-sampling --source-counters \
      --pm-sampling dram__bytes_read.sum --replay-mode range
    pcb pcorder period_change --pmc smsp__inst_executed.sum --pc-sampling --pc-sampling-period 12
    grep -h "warning" "$W"/pcorder_*.log | sort | uniq -c | head -20 | tee -a "$O/summary.txt"
    ;;
  pcstart)  # what in kreplay stops the range profiler from starting next to an enabled PC sampling
            # (issue 11; bench/RESULTS.md, eleventh session): each candidate before the enable and
            # the collection in the probe; a collection that fails says which
    PP=$D/bin/pc_sampling_probe
    M=collect:smsp__inst_executed.sum
    step pcs_memops_first 60 "$PP" memops enable $M drop pc disable
    step pcs_memops_after 60 "$PP" enable memops $M drop pc disable
    step pcs_stallquery 60 "$PP" stallquery enable $M drop pc disable
    step pcs_offline 60 "$PP" offline:smsp__inst_executed.sum enable $M drop pc disable
    step pcs_all 60 "$PP" stallquery offline:smsp__inst_executed.sum memops enable $M drop pc disable
    step pcs_devsupported 60 "$PP" devsupported enable $M drop pc disable
    step pcs_devsupported_after 60 "$PP" enable devsupported $M drop pc disable
    step pcs_atcreate 60 env PC_PROBE_ENABLE_AT_CREATE=1 "$PP" $M drop pc disable
    step pcs_atcreate_eager 60 env PC_PROBE_ENABLE_AT_CREATE=1 CUDA_MODULE_LOADING=EAGER "$PP" $M drop pc disable
    step pcs_atcreate_memops 60 env PC_PROBE_ENABLE_AT_CREATE=1 CUDA_MODULE_LOADING=EAGER "$PP" \
      devsupported memops $M drop pc disable
    for f in "$W"/pcs_*.log; do
      echo "${f##*/}: $(grep -h "^pc_sampling_probe" "$f" | sed 's/^pc_sampling_probe //' | tr '\n' ';')"
    done | tee -a "$O/summary.txt"
    # kreplay itself with PC sampling kept enabled next to counters: the CUPTI calls in order
    for c in after_counters:--pc-sampling-pass-position=1 before_counters:--pc-sampling-pass-position=0; do
      KREPLAY_PC_SAMPLING_KEEP_ENABLED=1 KREPLAY_LOG_LEVEL=debug \
        pcb pcstart "keep_${c%%:*}" --pmc smsp__inst_executed.sum --pc-sampling "${c#*:}"
      grep -h "PC sampling:\|range profiler:\|counters:\|warning\|error" "$W/pcstart_keep_${c%%:*}.log" | head -60 | cut -c1-220 >>"$O/summary.txt"
    done
    KREPLAY_PC_SAMPLING_KEEP_ENABLED=1 KREPLAY_WARM_START=0 KREPLAY_LOG_LEVEL=debug \
      pcb pcstart keep_nowarm --pmc smsp__inst_executed.sum --pc-sampling
    grep -h "PC sampling:\|range profiler:\|counters:\|warning\|error" "$W/pcstart_keep_nowarm.log" | head -40 | cut -c1-220 >>"$O/summary.txt"
    ;;
  pcfix)  # PC sampling kept enabled next to counters (issue 11): a module loaded while it is enabled
          # stops the range profiler (counter availability, Start) until it is enabled again
    PP=$D/bin/pc_sampling_probe
    M=collect:smsp__inst_executed.sum
    step pcf_memload 60 "$PP" enable memload $M drop pc disable
    step pcf_memops_reenable 60 "$PP" enable memops reenable $M drop pc disable
    step pcf_atcreate_reenable 60 env PC_PROBE_ENABLE_AT_CREATE=1 CUDA_MODULE_LOADING=EAGER "$PP" reenable $M drop pc disable
    step pcf_cached_start 60 "$PP" $M drop enable memops $M drop pc disable
    step pcf_cached_reenable 60 "$PP" $M drop enable memops reenable $M drop pc disable
    step pcf_rp_kept_reenable 60 "$PP" $M enable memops reenable $M drop pc disable
    for f in "$W"/pcf_*.log; do
      echo "${f##*/}: $(grep -h "^pc_sampling_probe" "$f" | sed 's/^pc_sampling_probe //;s/ pcs=[0-9]*//;s/ samples=0//' | tr '\n' ';')"
    done | tee -a "$O/summary.txt"
    # kreplay, PC sampling kept enabled next to counters: every launch sampled and counted, in
    # every order and mode
    pcb pcfix after_counters --pmc smsp__inst_executed.sum --pc-sampling
    pcb pcfix after_counters_range --pmc smsp__inst_executed.sum --pc-sampling --replay-mode range
    pcb pcfix timing_first --timing-pass --timing-pass-position 0 --pmc smsp__inst_executed.sum --pc-sampling
    pcb pcfix ten_pass --metrics "$TEN" --pc-sampling
    pcb pcfix all_services --pmc smsp__inst_executed.sum --pc-sampling --source-counters \
      --pm-sampling dram__bytes_read.sum
    pcb pcfix all_services_range --pmc smsp__inst_executed.sum --pc-sampling --source-counters \
      --pm-sampling dram__bytes_read.sum --replay-mode range
    grep -h "warning\|error" "$W"/pcfix_*.log | sort | uniq -c | head -20 | cut -c1-240 | tee -a "$O/summary.txt"
    ;;
  writeset)  # issue 29: programs that hold most of the GPU (tests/gpu/writeset_check.py);
              # KREPLAY_WS_PROGRAMS, KREPLAY_WS_MODES, KREPLAY_WS_VARIANTS pick (default: all)
    step writeset_check "${KREPLAY_WS_LIMIT:-540}" python3 tests/gpu/writeset_check.py "$D" \
      --out "$W/writeset" --programs "${KREPLAY_WS_PROGRAMS:-kv_decode,device_heap,torch_bigpool,jax_default}" \
      --modes "${KREPLAY_WS_MODES:-kernel,range}" --variants "${KREPLAY_WS_VARIANTS:-tool,default,full}" \
      --timeout "${KREPLAY_WS_RUN_LIMIT:-240}"
    grep -v '^\s*$' "$W/writeset_check.log" | tail -40 | tee -a "$O/summary.txt"
    ;;
  nvtxsel)  # issue 31 item 5: one training step by NVTX range and by profiler start/stop, in kernel,
            # range and auto replay (tests/gpu/nvtxsel_check.py); KREPLAY_NVTXSEL_MODES picks
    step nvtxsel_check "${KREPLAY_NVTXSEL_LIMIT:-540}" python3 tests/gpu/nvtxsel_check.py "$D" \
      --out "$W/nvtxsel" --modes "${KREPLAY_NVTXSEL_MODES:-kernel,range,auto}" \
      --timeout "${KREPLAY_NVTXSEL_RUN_LIMIT:-240}"
    grep -v '^\s*$' "$W/nvtxsel_check.log" | tail -20 | tee -a "$O/summary.txt"
    ;;
  writesetbench)  # issue 29 item 4: bench/writeset_bench.py (kreplay, ncu, small footprint)
    step writeset_bench "${KREPLAY_WSB_LIMIT:-540}" python3 bench/writeset_bench.py "$D" \
      --out "$W/writeset-bench" --programs "${KREPLAY_WS_PROGRAMS:-kv_decode,torch_bigpool,jax_default}" \
      --timeout "${KREPLAY_WS_RUN_LIMIT:-240}" --ncu-timeout "${KREPLAY_WSB_NCU_LIMIT:-120}"
    grep -v '^\s*$' "$W/writeset_bench.log" | tail -40 | tee -a "$O/summary.txt"
    ;;
  modload)  # issue 30 item 6: what CUDA_MODULE_LOADING=EAGER (forced with SASS-patched metrics) costs the
            # cuBLAS sequence, and whether lazy loading still breaks a cuFFT relaunch under the 10-pass set
    step modload_native_warm 60 "$D/bin/real_cublas_inplace"
    for L in EAGER LAZY; do
      step "modload_native_$L" 60 env CUDA_MODULE_LOADING=$L "$D/bin/real_cublas_inplace"
      step "modload_cublas_$L" 120 env CUDA_MODULE_LOADING=$L "$K" --metrics "$TEN" -- "$D/bin/real_cublas_inplace"
      step "modload_cufft_$L" 120 env CUDA_MODULE_LOADING=$L "$K" --metrics "$TEN" -- "$D/bin/kreplay_gpu_cufft_plan"
      grep -h "replayed\|declined\|rror\|egmentation" "$W/modload_cublas_$L.log" "$W/modload_cufft_$L.log" |
        tail -4 | cut -c1-200 | tee -a "$O/summary.txt"
    done
    step modload_ncu 180 ncu --replay-mode kernel --cache-control all --clock-control none --metrics "$TEN" \
      "$D/bin/real_cublas_inplace"
    ;;
  freeprobe)  # bench/cuda/free_probe.cu: can an injected library hold an application's free back
              # (issue 30 item 3): plainly, then injected with each FREE_PROBE_* switch
    for sw in "" "FREE_PROBE_WRAP=1" "FREE_PROBE_WRAP=1 FREE_PROBE_DEFER=1" "FREE_PROBE_SWAP=1"; do
      note "free_probe ${sw:-plain}"
      # shellcheck disable=SC2086
      env ${sw:+CUDA_INJECTION64_PATH=$D/lib/libfree_probe_inject.so} $sw timeout 60 \
        "$D/bin/free_probe" 2>&1 | grep free_probe | tee -a "$O/summary.txt"
    done
    ;;
  rangefree)  # frees (and the other memory calls) inside ranges: --replay-mode range with set basic,
              # KREPLAY_RANGE_MEMORY=close then join, on Thrust, CUB and two suite programs; the
              # tally's ranges, what closed them, and how many frees were deferred
    for p in real_thrust_sort_scan real_cub_async kreplay_gpu_malloc_async kreplay_gpu_multi_kernel_chain; do
      step "rangefree_${p}_native" 60 "$D/bin/$p"
      for mem in close join; do
        step "rangefree_${p}_$mem" 120 env KREPLAY_PRINT_COSTS=1 KREPLAY_RANGE_MEMORY=$mem "$K" \
          --replay-mode range -d "$W/rangefree_${p}_$mem" -o run -- "$D/bin/$p"
        grep -h "RESULT\|ranges held\|range_frees\|rror" "$W/rangefree_${p}_$mem.log" | cut -c1-260 |
          tee -a "$O/summary.txt"
      done
    done
    ;;
  heapprobe)  # bench/cuda/heap_probe.cu: can the device malloc heap be found and restored (issue 10 item 3)
    step heap_probe 60 "$D/bin/heap_probe"
    step heap_probe_64 60 "$D/bin/heap_probe" 64
    step heap_probe_control 60 "$D/bin/heap_probe" control
    step heap_probe_checkpoint 60 "$D/bin/heap_probe" checkpoint
    step heap_probe_checkpoint_64 60 "$D/bin/heap_probe" checkpoint 64
    step heap_probe_checkpoint_null 60 "$D/bin/heap_probe" checkpoint null
    step heap_probe_checkpoint_plain 60 "$D/bin/heap_probe" checkpoint plain
    grep -h "^heap_probe" "$W"/heap_probe*.log | tee -a "$O/summary.txt"
    ;;
  servicesbench)  # time per launch of each service's pass, kreplay next to ncu's sections, on
                  # services_kernels (6 launches, every one profiled), one run each
    SA=$D/bin/kreplay_gpu_services_kernels
    step sb_plain 10 "$SA"
    step sb_timing 25 "$K" --timing-pass --kernel-include-regex . -d "$W/sb_timing" -o run -- "$SA"
    step sb_pc 25 "$K" --pc-sampling --kernel-include-regex . -d "$W/sb_pc" -o run -- "$SA"
    step sb_sass 25 "$K" --source-counters --kernel-include-regex . -d "$W/sb_sass" -o run -- "$SA"
    step sb_pm 25 "$K" --pm-sampling dram__bytes_read.sum,smsp__inst_executed.sum \
      --kernel-include-regex . -d "$W/sb_pm" -o run -- "$SA"
    # PC sampling's pass next to counters (after them, the default order): against counters alone
    step sb_counters 25 "$K" --pmc smsp__inst_executed.sum --kernel-include-regex . -d "$W/sb_counters" -o run -- "$SA"
    step sb_pc_counters 25 "$K" --pmc smsp__inst_executed.sum --pc-sampling --kernel-include-regex . \
      -d "$W/sb_pc_counters" -o run -- "$SA"
    for sec in WarpStateStats SourceCounters PmSampling; do
      step "sb_ncu_$sec" 23 ncu --replay-mode kernel --cache-control all --clock-control none \
        --section "$sec" "$SA"
    done
    python3 - "$O/summary.txt" <<'PY' 2>&1 | tee -a "$O/summary.txt"
import re, sys
ms = {}
for line in open(sys.argv[1]):
    m = re.match(r"(sb_\w+) rc=(\d+) ms=(\d+)", line)
    if m:
        ms[m.group(1)] = (int(m.group(2)), int(m.group(3)))
launches = 6
def per(name, base="sb_plain"):
    if name not in ms or base not in ms or ms[name][0] != 0:
        return "   n/a"
    return f"{(ms[name][1] - ms[base][1]) / launches:6.1f}"
print(f"servicesbench ms per launch over the plain run ({launches} launches); kreplay's replay alone "
      f"(--timing-pass) {per('sb_timing')}")
for svc, k, n in [("PC sampling", "sb_pc", "sb_ncu_WarpStateStats"),
                  ("SASS metrics", "sb_sass", "sb_ncu_SourceCounters"),
                  ("PM sampling", "sb_pm", "sb_ncu_PmSampling")]:
    print(f"servicesbench {svc:13s} kreplay {per(k)} (pass alone {per(k, 'sb_timing')})   "
          f"ncu --section {n[7:]:15s} {per(n)}")
print(f"servicesbench PC sampling next to counters: counters alone {per('sb_counters')}, with PC "
      f"sampling after them {per('sb_pc_counters')} (PC pass {per('sb_pc_counters', 'sb_counters')})")
PY
    ;;
  servicesuite)  # the GPU suite's CUDA apps under counters and all three per-pass services, in kernel and
                 # range replay (KREPLAY_SS_MODES): digests equal to the plain runs; per service and mode,
                 # how many apps got records
    ok=0 bad=0
    for a in inplace_counter lazy_globals atomic_histogram malloc_async vmm managed mapped_host \
             multistream_threads cublas_gemm cluster_launch multi_kernel_chain graph_launch coop_ptsz \
             surface_array graph_conditional graph_memnodes cufft_plan; do
      app=$D/bin/kreplay_gpu_$a
      timeout 60 "$app" >"$W/ss_${a}_plain.log" 2>&1
      want=$(grep -h "^KREPLAY_RESULT" "$W/ss_${a}_plain.log" | tail -1 | cut -d' ' -f3)
      for mode in ${KREPLAY_SS_MODES:-kernel range}; do
        # --launch-count 4: a PM sampling pass costs ~0.4 s of CUPTI enable/disable; the
        # launches after the fourth run once, unprofiled, and the digest still covers them.
        timeout -k 5 60 "$K" --replay-mode "$mode" --launch-count 4 --pmc smsp__inst_executed.sum --pc-sampling \
          --source-counters --pm-sampling dram__bytes_read.sum,smsp__inst_executed.sum \
          -d "$W/ss_${a}_$mode" -o run -- "$app" >"$W/ss_${a}_$mode.log" 2>&1
        rc=$?
        got=$(grep -h "^KREPLAY_RESULT" "$W/ss_${a}_$mode.log" | tail -1 | cut -d' ' -f3)
        if [[ $rc -eq 0 && -n $want && $got == "$want" ]]; then
          ok=$((ok + 1))
        else
          bad=$((bad + 1))
          note "servicesuite $a $mode: FAIL rc=$rc plain=${want:-none} kreplay=${got:-none} | $(grep -h "==KREPLAY==" "$W/ss_${a}_$mode.log" | grep -v "output file" | head -2 | tr '\n' ' ' | cut -c1-250)"
        fi
        grep -h "records from" "$W/ss_${a}_$mode.log" | sed "s/^/servicesuite $a $mode: /" | cut -c1-200 >>"$W/servicesuite_records.txt"
      done
    done
    note "servicesuite: $ok passed, $bad failed (17 apps x ${KREPLAY_SS_MODES:-kernel range}, counters + PC sampling + SASS metrics + PM sampling)"
    for mode in ${KREPLAY_SS_MODES:-kernel range}; do
      for svc in pc_sampling sass_metrics pm_sampling; do
        with=$(grep -E " $mode: (==KREPLAY== )?$svc: [1-9][0-9]* records" "$W/servicesuite_records.txt" | wc -l)
        note "servicesuite $mode $svc: records in $with of 17 apps"
      done
    done
    cp "$W/servicesuite_records.txt" "$O/servicesuite_records.txt"
    ;;
  graphprobe)  # what CUPTI's range profiler reports for graph launches (bench/cuda/graph_probe.cu)
    for g in chain fork mixed child memnodes cond_if cond_while; do
      for m in none auto user auto10; do
        step "graph_probe_${g}_$m" 60 "$D/bin/graph_probe" "$g" "$m"
        grep -h "^graph_probe" "$W/graph_probe_${g}_$m.log" | tee -a "$O/summary.txt"
      done
    done
    ;;
  real)  # the real-program benchmark (bench/real/run.py): each program natively, under kreplay in kernel and
          # in range replay, and under ncu --replay-mode kernel --cache-control all, all with TEN; wall,
          # overhead, the ratios against ncu and the CUPTI floor per program and in total
    # (KREPLAY_REAL_SKIP_KERNEL=1: range replay against ncu only, for a short lease)
    step real 590 python3 bench/real/run.py --bin "$D/bin" --kreplay "$K" --out "$W/real" --timeout 240 \
      ${KREPLAY_REAL_PROGRAMS:+--programs "$KREPLAY_REAL_PROGRAMS"} \
      ${KREPLAY_REAL_SKIP_KERNEL:+--skip-kernel}
    grep -hE "^[a-z0-9_]+ (native|kernel|range|ncu): |launches:|CORRECTNESS" "$W/real.log" | cut -c1-300 \
      | tee -a "$O/summary.txt"
    sed -n '/^real: wall s per mode/,$p' "$W/real.log" | tee -a "$O/summary.txt"
    [[ -f $W/real/real.json ]] && cp "$W/real/real.json" "$O/real.json"
    ;;
  convlazy)  # issue 30 item 6: cuda-samples' convolutionFFT2D (the crash eager loading was once forced
             # for) under the 10-pass set, 30 launches, lazy and with the command's loading (lazy too)
    B=$(cd "${KREPLAY_SAMPLES_BIN:-.peer/samples-build/bin}" && pwd)
    for c in "kernel LAZY" "range LAZY" "kernel default" "range default"; do
      read -r m l <<<"$c"
      loading=()
      [[ $l == LAZY ]] && loading=(CUDA_MODULE_LOADING=LAZY)
      (cd "$B/_own/convolutionFFT2D" 2>/dev/null || cd "$B" || exit
       step "convlazy_${m}_$l" 120 env "${loading[@]}" "$K" --metrics "$TEN" \
         --replay-mode "$m" --launch-count 30 -d "$W/convlazy_${m}_$l" -o run -- "$B/convolutionFFT2D")
      note "convlazy $m $l: $(grep -hE "launches:|Test Summary|killed by signal" "$W/convlazy_${m}_$l.log" | tr '\n' ' ' | cut -c1-220)"
    done
    ;;
  convcrash)  # convolutionFFT2D's intermittent SIGSEGV in kernel replay (libnvperf_host under a
             # pass's cuLaunchKernel, lazy and eager loading alike): ncu with the same set, and
             # kreplay without the set's SASS-patched metrics, with only them, and with all of it
    B=$(cd "${KREPLAY_SAMPLES_BIN:-.peer/samples-build/bin}" && pwd)
    TEN_FILE=$(dirname "$0")/../tests/gpu/ten_pass_metrics.txt
    NOSASS=$(grep -v sass "$TEN_FILE" | paste -sd,)
    SASS=$(grep sass "$TEN_FILE" | paste -sd,)
    for c in ncu:1 ncu:2 ncu:3 nosass:1 nosass:2 nosass:3 nosass:4 sass:1 sass:2 sass:3 sass:4 \
             ten:1 ten:2 ten:3 ten:4; do
      IFS=: read -r v i <<<"$c"
      case $v in
        ncu) cmd=(ncu --replay-mode kernel --cache-control all --clock-control none --metrics "$TEN"
                  --launch-count 30) ;;
        *) case $v in nosass) m=$NOSASS ;; sass) m=$SASS ;; *) m=$TEN ;; esac
           cmd=("$K" --metrics "$m" --replay-mode kernel --launch-count 30 -d "$W/cc_$v$i" -o run --) ;;
      esac
      (cd "$B/_own/convolutionFFT2D" 2>/dev/null || cd "$B" || exit
       step "convcrash_$v$i" 90 "${cmd[@]}" "$B/convolutionFFT2D")
      note "convcrash $v $i: $(grep -hE "launches:|Test Summary|killed by signal|==ERROR==" "$W/convcrash_$v$i.log" | tr '\n' ' ' | cut -c1-200)"
    done
    grep -hA40 "crashed; backtrace" "$W"/convcrash_*.log 2>/dev/null | head -90 >>"$O/backtraces.txt"
    ;;
  exitclose)  # issue 30 item 5: the cuda-samples that exited with a range open in range replay with
             # memory calls joining (a deferred free), which the exit handler now closes first
    B=$(cd "${KREPLAY_SAMPLES_BIN:-.peer/samples-build/bin}" && pwd)
    step exitclose 120 env KREPLAY_RANGE_MEMORY=join \
      KREPLAY_SAMPLES_FILTER='^(LargeKernelParameter|batchCUBLAS|cdpSimplePrint)$' \
      KREPLAY_SAMPLES_LAUNCH_COUNT=8 python3 scripts/cuda_samples_run.py "$B" "$D" "$W/exitclose" native range
    grep -E "^cuda-samples |FAIL" "$W/exitclose.log" | tee -a "$O/summary.txt"
    grep -hA30 "crashed; backtrace" "$W"/exitclose/logs/*.log 2>/dev/null | head -60 >>"$O/backtraces.txt"
    ;;
  peer)  # NVIDIA's cuda-samples (scripts/cuda-samples.sh), modes from KREPLAY_PEER_MODES (all four)
    # shellcheck disable=SC2086
    step peer 590 scripts/cuda-samples.sh run "${KREPLAY_SAMPLES_BIN:-.peer/samples-build/bin}" "$D" \
      "$W/peer" ${KREPLAY_PEER_MODES:-}
    modes=${KREPLAY_PEER_MODES:-all}
    cp "$W/peer.log" "$O/peer-${modes// /-}.txt"
    [[ -f $W/peer/native.json ]] && cp "$W/peer/native.json" "$O/native.json"
    grep -E "^cuda-samples " "$W/peer.log" | tee -a "$O/summary.txt"
    grep -hA40 "crashed; backtrace" "$W"/peer/logs/*.log 2>/dev/null | head -150 >>"$O/backtraces.txt"
    ;;
  esac
done
tar czf "$O/work.tgz" -C /tmp kreplay-gpu-work 2>/dev/null
note done
