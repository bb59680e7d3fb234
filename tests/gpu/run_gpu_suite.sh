#!/usr/bin/env bash
# kreplay GPU correctness suite: every application twice without kreplay (the baseline digest,
# which must repeat), then under kreplay with the test tool at 2, 3 and 8 passes and at 8 passes
# ending after pass 1.
# A variant passes when the application exits 0, prints the baseline's digest, and the tool
# reports errors=0, replayed>0 and passes = replayed x (passes per dispatch); declined must be 0,
# except in surface_array (> 0, every one UNTRACKED_MEMORY) and in graph_memnodes, where it must
# be > 0 and every decline be GRAPH_MEMORY (its graph that frees an allocation another graph made),
# and except the reasons MAY_DECLINE (below) lists for an application: launches declined for
# those run once and are accepted (replayed > 0 stays mandatory); any other reason fails the
# variant. Every other application's launches, graph launches included, are replayable by design.
#
#   tests/gpu/run_gpu_suite.sh [--list] <build-dir> [out-dir]
#
#   --list                    print the applications (after the filters) and exit
#   KREPLAY_SUITE_FILTER=re   run only applications whose name matches the bash regex re
#   KREPLAY_SUITE_EXCLUDE=re  skip applications whose name matches the bash regex re
#   KREPLAY_SUITE_TIMEOUT=s   per-run timeout in seconds (default 120)
#   KREPLAY_SUITE_FW_TIMEOUT=s  per-run timeout of the framework programs (FW_APPS; default 300:
#                             each run compiles from a cold cache)
#   KREPLAY_SUITE_PYTHON=py   interpreter for the Python applications (default python3)
#   KREPLAY_SUITE_MAY_DECLINE="app=REASON[,REASON] ..."  decline reasons accepted for an application,
#                             in addition to MAY_DECLINE (e.g. to try one out without editing this)
#
# Exit status: 0 all passed; 1 something failed; 77 no GPU (nothing ran); 2 usage.
# Needs bash and coreutils only (timeout, mkdir); python only for the Python applications (a
# Python application exiting 77 is a skip: no GPU, or its framework is missing).
set -u

APPS=(inplace_counter lazy_globals atomic_histogram malloc_async vmm managed mapped_host
      multistream_threads cublas_gemm cluster_launch multi_kernel_chain graph_launch
      coop_ptsz surface_array graph_conditional graph_memnodes cufft_plan event_streams torch_inplace
      torch_compile torch_compile_graphs jax_train cupy_ops triton_kernels)
# Python applications: the script in bin/ (copied there by CMake) and its arguments.
declare -A PY_APPS=([torch_inplace]=torch_inplace.py [torch_compile]=torch_compile.py
  [torch_compile_graphs]="torch_compile.py --graphs" [jax_train]=jax_train.py
  [cupy_ops]=cupy_ops.py [triton_kernels]=triton_kernels.py)
# Framework programs (tests/gpu/apps/*.py): slow to start (cold compilation), own timeout.
FW_APPS=" torch_compile torch_compile_graphs jax_train cupy_ops triton_kernels "
# Decline reasons (kreplay_decline_reason_t names, space-separated) an application may show, its
# launches so declined running once; default none. In range mode the range tool gives no reasons:
# an application listed here may then show declined ranges of any reason. Graph launches
# (GRAPH_LAUNCH, STREAM_CAPTURE) are deliberately not listed for the framework programs, whose
# CUDA graphs (reduce-overhead, XLA command buffers) kreplay is to replay.
declare -A MAY_DECLINE=()
for _entry in ${KREPLAY_SUITE_MAY_DECLINE:-}; do
  if [[ ! $_entry =~ ^([a-z0-9_]+)=([A-Z_,]+)$ ]]; then
    echo "KREPLAY_SUITE_MAY_DECLINE: '$_entry' is not app=REASON[,REASON...]" >&2
    exit 2
  fi
  _have=${MAY_DECLINE[${BASH_REMATCH[1]}]:-}
  MAY_DECLINE[${BASH_REMATCH[1]}]="${_have:+$_have }${BASH_REMATCH[2]//,/ }"
done
# name | KREPLAY_TEST_PASSES | KREPLAY_TEST_EARLY_EXIT | passes each replayed dispatch must run
VARIANTS=("passes2|2||2" "passes3|3||3" "passes8|8||8" "passes8-early1|8|1|2")
# KREPLAY_SUITE_MODE=range: the same applications under range replay (RANGE_REPLAY tool).
MODE=${KREPLAY_SUITE_MODE:-kernel}
if [[ $MODE == range ]]; then
  VARIANTS=("range2|2||2" "range3|3||3" "range10|10||10" "range10-early1|10|1|2")
fi

usage() {
  echo "usage: $0 [--list] <build-dir> [out-dir]" >&2
  exit 2
}

list_only=0
if [[ ${1:-} == --list ]]; then
  list_only=1
  shift
fi
[[ ${1:-} == -* ]] && usage

selected=()
for app in "${APPS[@]}"; do
  if [[ -n ${KREPLAY_SUITE_EXCLUDE:-} && $app =~ ${KREPLAY_SUITE_EXCLUDE} ]]; then
    continue
  fi
  if [[ -z ${KREPLAY_SUITE_FILTER:-} || $app =~ ${KREPLAY_SUITE_FILTER} ]]; then
    selected+=("$app")
  fi
done
if ((list_only)); then
  ((${#selected[@]})) && printf '%s\n' "${selected[@]}"
  exit 0
fi

[[ $# -ge 1 && $# -le 2 ]] || usage
[[ -d $1 ]] || { echo "build dir '$1' does not exist" >&2; exit 2; }
BUILD=$(cd "$1" && pwd)
OUT=${2:-$BUILD/gpu-suite}
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
TIMEOUT=${KREPLAY_SUITE_TIMEOUT:-120}
FW_TIMEOUT=${KREPLAY_SUITE_FW_TIMEOUT:-300}
PYTHON=${KREPLAY_SUITE_PYTHON:-python3}
INJECTION=$BUILD/lib/libkreplay_cuda.so
TOOL=$BUILD/lib/libkreplay_test_pass_tool.so
[[ ${KREPLAY_SUITE_MODE:-kernel} == range ]] && TOOL=$BUILD/lib/libkreplay_test_range_tool.so
# The toolkit's runtime, cuBLAS and CUPTI (some layouts keep CUPTI under extras/).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONUNBUFFERED=1
# The baseline must run without kreplay, whatever the caller's environment holds.
unset CUDA_INJECTION64_PATH KREPLAY_TOOL_LIBRARIES KREPLAY_TEST_PASSES KREPLAY_TEST_EARLY_EXIT \
      KREPLAY_TEST_KERNEL_REGEX

if ((${#selected[@]} == 0)); then
  echo "no application matches KREPLAY_SUITE_FILTER='${KREPLAY_SUITE_FILTER:-}'" \
       "(KREPLAY_SUITE_EXCLUDE='${KREPLAY_SUITE_EXCLUDE:-}')" >&2
  exit 2
fi

# A GPU is present when nvidia-smi lists one. Without nvidia-smi the applications decide: each
# exits 77 when CUDA sees no device. With a GPU listed, a 77 from an application is a failure.
gpu=unknown
if command -v nvidia-smi >/dev/null 2>&1; then
  gpu=no
  smi=$(nvidia-smi -L 2>/dev/null) || smi=
  [[ $smi == *"GPU "* ]] && gpu=yes
fi
if [[ $gpu == no ]]; then
  echo "SKIP: nvidia-smi lists no GPU" >&2
  exit 77
fi

app_command() {  # sets CMD to the command line of application $1, RUN_TIMEOUT to its timeout
  local words
  if [[ -n ${PY_APPS[$1]:-} ]]; then
    read -r -a words <<<"${PY_APPS[$1]}"
    CMD=("$PYTHON" "$BUILD/bin/kreplay_gpu_${words[0]}" "${words[@]:1}")
  else
    CMD=("$BUILD/bin/kreplay_gpu_$1")
  fi
  RUN_TIMEOUT=$TIMEOUT
  [[ $FW_APPS == *" $1 "* ]] && RUN_TIMEOUT=$FW_TIMEOUT
}

# run_one <log> [VAR=value ...]: runs CMD under the timeout with the given environment;
# sets RC, SECS, DIGEST (of the KREPLAY_RESULT line for $app), TOOL_LINE, DECLINES, NOTE.
run_one() {
  local log=$1
  shift
  local start=${EPOCHREALTIME:-}
  env "$@" timeout -k 10 "$RUN_TIMEOUT" "${CMD[@]}" >"$log" 2>&1
  RC=$?
  if [[ -n $start && -n ${EPOCHREALTIME:-} ]]; then
    local s=${start/[.,]/} e=${EPOCHREALTIME/[.,]/}
    SECS=$(((e - s) / 1000000)).$(((e - s) / 100000 % 10))
  else
    SECS=?
  fi
  DIGEST= TOOL_LINE= DECLINES= NOTE=
  local line digests=0 tools=0
  while IFS= read -r line || [[ -n $line ]]; do
    line=${line%$'\r'}
    if [[ $line =~ ^KREPLAY_RESULT\ ([a-z_]+)\ ([0-9a-f]{16})$ ]]; then
      if [[ ${BASH_REMATCH[1]} == "$app" ]]; then
        DIGEST=${BASH_REMATCH[2]}
        digests=$((digests + 1))
      fi
    elif [[ $line =~ KREPLAY_TEST_TOOL\ (replayed=.*)$ ]]; then
      TOOL_LINE=${BASH_REMATCH[1]}
      tools=$((tools + 1))
    elif [[ $line =~ KREPLAY_TEST_TOOL_DECLINES(.*)$ ]]; then
      DECLINES=${BASH_REMATCH[1]# }
    fi
  done <"$log"
  if ((digests > 1)); then NOTE="$digests result lines"; DIGEST=; fi
  if ((tools > 1)); then NOTE="${NOTE:+$NOTE; }$tools tool summary lines"; TOOL_LINE=; fi
  case $RC in
    124 | 137) NOTE="${NOTE:+$NOTE; }timed out after ${RUN_TIMEOUT}s" ;;
  esac
}

# field <name> <line>: the value of name=N in line, or empty (0 with a third argument).
field() {
  if [[ " $2 " =~ \ $1=([0-9]+)\  ]]; then echo "${BASH_REMATCH[1]}"; else echo "${3:-}"; fi
}

passed=0 failed=0 skipped=0
ROWS=()
record() {  # record <app> <variant> <PASS|FAIL|SKIP> <secs> <detail>
  local row
  printf -v row '%-20s %-15s %-4s %6ss  %s' "$1" "$2" "$3" "$4" "$5"
  ROWS+=("$row")
  echo "$row"
  case $3 in
    PASS) passed=$((passed + 1)) ;;
    FAIL) failed=$((failed + 1)) ;;
    SKIP) skipped=$((skipped + 1)) ;;
  esac
}

echo "kreplay GPU suite: build $BUILD, logs $OUT, timeout ${TIMEOUT}s (framework programs ${FW_TIMEOUT}s)"
[[ -f $INJECTION ]] || echo "warning: $INJECTION is missing: every kreplay variant will fail" >&2
[[ -f $TOOL ]] || echo "warning: $TOOL is missing: every kreplay variant will fail" >&2

for app in "${selected[@]}"; do
  app_command "$app"
  if [[ -n ${PY_APPS[$app]:-} && ! -f ${CMD[1]} ]]; then
    record "$app" baseline FAIL - "${CMD[1]} is missing (not configured?)"
    continue
  elif [[ -z ${PY_APPS[$app]:-} && ! -x ${CMD[0]} ]]; then
    record "$app" baseline FAIL - "${CMD[0]} is missing (not built?)"
    continue
  fi

  run_one "$OUT/$app-baseline.log"
  if ((RC == 77)); then
    if [[ $gpu == yes && -z ${PY_APPS[$app]:-} ]]; then
      record "$app" baseline FAIL "$SECS" "exit 77 (no GPU) although nvidia-smi lists one"
    elif [[ -n ${PY_APPS[$app]:-} ]]; then
      skip_line=$(grep -m1 '^SKIP:' "$OUT/$app-baseline.log")
      record "$app" baseline SKIP "$SECS" "exit 77: ${skip_line:-no GPU or no framework}"
    else
      record "$app" baseline SKIP "$SECS" "exit 77: no GPU"
    fi
    continue
  fi
  if ((RC != 0)) || [[ -z $DIGEST ]]; then
    record "$app" baseline FAIL "$SECS" "exit $RC, digest '${DIGEST}' ${NOTE}"
    continue
  fi
  base=$DIGEST
  record "$app" baseline PASS "$SECS" "$base"

  # The same run again: an application whose digest varies without kreplay cannot judge it.
  run_one "$OUT/$app-baseline-repeat.log"
  if ((RC != 0)) || [[ $DIGEST != "$base" ]]; then
    record "$app" baseline-repeat FAIL "$SECS" "exit $RC, digest '${DIGEST}' != $base ${NOTE}"
    continue
  fi
  record "$app" baseline-repeat PASS "$SECS" "$DIGEST"

  for v in "${VARIANTS[@]}"; do
    IFS='|' read -r vname vpasses vearly vper <<<"$v"
    envs=("CUDA_INJECTION64_PATH=$INJECTION" "KREPLAY_TOOL_LIBRARIES=$TOOL"
          "KREPLAY_TEST_PASSES=$vpasses")
    [[ -n $vearly ]] && envs+=("KREPLAY_TEST_EARLY_EXIT=$vearly")
    run_one "$OUT/$app-$vname.log" "${envs[@]}"
    why=()
    ((RC == 0)) || why+=("exit $RC")
    [[ -n $NOTE ]] && why+=("$NOTE")
    if [[ -z $DIGEST ]]; then
      why+=("no result line")
    elif [[ $DIGEST != "$base" ]]; then
      why+=("digest $DIGEST != baseline")
    fi
    if [[ -z $TOOL_LINE ]]; then
      why+=("no KREPLAY_TEST_TOOL summary (tool not loaded or not finalized)")
    else
      replayed=$(field replayed "$TOOL_LINE") declined=$(field declined "$TOOL_LINE")
      passes=$(field passes "$TOOL_LINE") errors=$(field errors "$TOOL_LINE")
      [[ $errors == 0 ]] || why+=("tool errors=${errors:-?}")
      [[ -n $replayed && $replayed -gt 0 ]] || why+=("replayed=${replayed:-?}")
      [[ -n $passes && -n $replayed && $passes -eq $((replayed * vper)) ]] ||
        why+=("passes=${passes:-?} != replayed x $vper")
      if [[ $app == surface_array ]]; then
        # The launches made while a surface-writable array exists run once, declined (in range
        # mode: their ranges; the range tool does not break declines down by reason).
        [[ -n $declined && $declined -gt 0 ]] || why+=("launches on the array not declined")
        if [[ $MODE != range ]]; then
          untracked=$(field UNTRACKED_MEMORY "$DECLINES" 0)
          [[ -n $declined && $declined -eq $untracked ]] || why+=("declined for other reasons: $DECLINES")
        fi
      elif [[ $app == graph_memnodes ]]; then
        # The graph that frees memory another graph allocated runs once, declined (in range
        # mode: its ranges of one launch); its other graphs are replayed node by node.
        [[ -n $declined && $declined -gt 0 ]] || why+=("the graph that frees another's allocation not declined")
        if [[ $MODE != range ]]; then
          memory=$(field GRAPH_MEMORY "$DECLINES" 0)
          [[ -n $declined && $declined -eq $memory ]] || why+=("declined for other reasons: $DECLINES")
        fi
      elif [[ $MODE == range ]]; then
        # The range tool does not name reasons: an application with accepted reasons may show
        # declined ranges.
        [[ $declined == 0 || ( -n ${MAY_DECLINE[$app]:-} && -n $declined ) ]] ||
          why+=("declined=${declined:-?}")
      elif [[ $declined != 0 ]]; then
        accepted=0
        for reason in ${MAY_DECLINE[$app]:-}; do
          accepted=$((accepted + $(field "$reason" "$DECLINES" 0)))
        done
        [[ -n $declined && $declined -eq $accepted ]] ||
          why+=("declined=${declined:-?} ($DECLINES)${MAY_DECLINE[$app]:+, accepted: ${MAY_DECLINE[$app]}}")
      fi
    fi
    if ((${#why[@]})); then
      detail=$(IFS=';'; echo "${why[*]}")
      record "$app" "$vname" FAIL "$SECS" "${detail//;/; }${TOOL_LINE:+ | $TOOL_LINE}"
    else
      record "$app" "$vname" PASS "$SECS" "$TOOL_LINE"
    fi
  done
done

echo
printf '%-20s %-15s %-4s %7s  %s\n' app variant res time detail
printf '%s\n' "${ROWS[@]}"
echo
((skipped)) && echo "$skipped skipped (exit 77)"
echo "$passed passed, $failed failed"
if ((failed)); then
  echo "logs: $OUT" >&2
  exit 1
fi
if ((passed == 0)); then
  exit 77
fi
exit 0
