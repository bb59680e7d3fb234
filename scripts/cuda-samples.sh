#!/usr/bin/env bash
# NVIDIA's cuda-samples as a peer suite: programs nobody here wrote, run natively and under kreplay.
# The samples' code is never part of this repository: fetch github:NVIDIA/cuda-samples (the search
# tool's fetch verb gives a bare git directory) and extract it into an ignored folder.
#
#   scripts/cuda-samples.sh prepare <git-dir> <src-dir>     extract the newest commit (files whose
#                                                          blobs the copy lacks are skipped)
#   scripts/cuda-samples.sh build <src-dir> <bin-dir>      configure for sm_90 only, build every
#                                                          sample CMake can, copy the executables
#                                                          and their data files into <bin-dir>
#   scripts/cuda-samples.sh collect <src-dir> <bin-dir>    (part of build) gather executables and
#                                                          the files they read at run time
#   scripts/cuda-samples.sh pack <bin-dir> <file.tar.xz>   what run needs, as one small file
#   scripts/cuda-samples.sh run <bin-dir> <dist-dir> <out-dir> [mode ...]
#        modes: native pass3 kernel range (default: all four). Runs every self-checking sample in
#        each mode and prints one line per sample and mode, then per mode
#        "N passed, M failed, D fully declined".
# The build runs anywhere nvcc does (a GPU is not needed); run needs the GPU and a kreplay dist
# (scripts/make-gpu-dist.sh).
set -u
cmd=${1:-}
shift || true
case $cmd in
prepare)
  G=$1 S=$2
  rm -rf "$S" && mkdir -p "$S"
  missing=$(git --git-dir="$G" ls-tree -r HEAD | awk '{print $3" "$4}' |
    while read -r h p; do echo "$h $p"; done |
    awk '{print $1}' | git --git-dir="$G" cat-file --batch-check | awk '$2=="missing"{print $1}')
  excludes=()
  for h in $missing; do
    p=$(git --git-dir="$G" ls-tree -r HEAD | awk -v h="$h" '$3==h{print $4}')
    excludes+=(":!$p")
  done
  # git 2.39 still says "invalid object" for an excluded path whose blob is missing, and goes on.
  git --git-dir="$G" archive HEAD -- . "${excludes[@]}" 2> >(grep -v '^error: invalid object' >&2) |
    tar x -C "$S"
  echo "extracted $(git --git-dir="$G" rev-parse --short HEAD) into $S (${#excludes[@]} files without blobs skipped)"
  ;;
build)
  S=$1 B=$2
  # sm_90 only (the H200): every sample names its own architecture list.
  find "$S" -name CMakeLists.txt -exec sed -i 's/^\( *\)set(CMAKE_CUDA_ARCHITECTURES .*)/\1set(CMAKE_CUDA_ARCHITECTURES 90)/' {} +
  mkdir -p "$B/cmake"
  # A sample whose libraries this machine lacks (NPP, nvJPEG, ...) fails the configure step: drop
  # it from its parent's list and configure again.
  for attempt in $(seq 1 40); do
    if cmake -S "$S" -B "$B/cmake" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc >"$B/configure.log" 2>&1; then
      break
    fi
    bad=$( (grep -o 'CMake Error at Samples/[^ :]*/CMakeLists.txt' "$B/configure.log" | sed 's/CMake Error at //'
            grep -o 'in directory .*/Samples/[^ ]*' "$B/configure.log" | sed 's|.*/Samples/|Samples/|; s|$|/CMakeLists.txt|') | sort -u)
    [[ -n $bad ]] || { tail -20 "$B/configure.log"; exit 1; }
    for f in $bad; do
      dir=$(dirname "$f")
      echo "skipped (does not configure here): $(basename "$dir")" | tee -a "$B/skipped.txt"
      sed -i "/add_subdirectory($(basename "$dir"))/d" "$S/$(dirname "$dir")/CMakeLists.txt"
    done
  done
  # -k 0: a sample that does not build here (missing GL, EGL, MPI, ...) does not stop the others.
  cmake --build "$B/cmake" -j "$(nproc)" -- -k 0 >"$B/build.log" 2>&1
  "$0" collect "$S" "$B"
  echo "built $(find "$B/bin" -type f -executable | wc -l) executables into $B/bin"
  ;;
collect)
  # Executables, and what each sample reads at run time (data files, device code it compiles or
  # loads, input matrices): executables flat in <bin-dir>, each sample's files in
  # <bin-dir>/_own/<sample>/ (the run step starts the sample there: samples share file names, e.g.
  # vectorAdd_nvrtc's and vectorAddDrv's vectorAdd_kernel.cu differ) and, for older run steps, flat
  # too (first come first kept); data-manifest.txt says which sample needs which.
  S=$1 B=$2
  mkdir -p "$B/bin"
  rm -rf "$B/bin/_own"
  : >"$B/bin/data-manifest.txt"
  own() {  # own SAMPLE FILE: the sample's copy of FILE
    mkdir -p "$B/bin/_own/$1"
    cp -a "$2" "$B/bin/_own/$1/"
    echo "$1 $(basename "$2")" >>"$B/bin/data-manifest.txt"
  }
  find "$B/cmake/Samples" -type f -executable ! -name '*.so' ! -path '*/CMakeFiles/*' -exec cp -a {} "$B/bin/" \;
  find "$B/cmake/Samples" -type f \( -name '*.fatbin' -o -name '*.ptx' -o -name '*.cubin' \) \
    ! -path '*/CMakeFiles/*' | while read -r f; do
    cp -an "$f" "$B/bin/"
    own "$(basename "$(dirname "$f")")" "$f"
  done
  for dir in "$S"/Samples/*/*/; do
    sample=$(basename "$dir")
    for f in "$dir"* "$dir"data/*; do
      [[ -f $f ]] || continue
      case $(basename "$f") in CMakeLists.txt | README.md | Makefile | *.sln | *.vcxproj*) continue ;; esac
      cp -an "$f" "$B/bin/"
      own "$sample" "$f"
    done
  done
  cp -a "$S/test_args.json" "$B/bin/"
  strip --strip-unneeded "$B"/bin/* 2>/dev/null
  true
  ;;
pack)
  # The executables the run step would run (not the display, multi-GPU or interactive ones), the
  # data files of those samples, device code files and the argument list, as one .tar.xz small
  # enough to travel to the GPU machine.
  B=$1 T=$2
  list=$(python3 "$(dirname "$0")/cuda_samples_run.py" --pack-list "$B") || exit 1
  # shellcheck disable=SC2086
  tar cf - -C "$B" $list | xz -T0 -9 >"$T"
  echo "packed $(echo "$list" | wc -w) files into $T ($(du -h "$T" | cut -f1))"
  ;;
run)
  exec python3 "$(dirname "$0")/cuda_samples_run.py" "$@"
  ;;
*)
  sed -n '2,17p' "$0"
  exit 2
  ;;
esac
