#!/usr/bin/env bash
# fragscope's one entry point for people and CI: installs what is missing, builds, runs.
#
#   ./build.sh run          install dependencies, build, run the main job
#   ./build.sh test         install dependencies, build, run the whole test suite
#   ./build.sh sanitize     ASan+UBSan and TSan builds of the allocator, trace, importer, hostile tests
#   ./build.sh bench        build and run the benchmarks (not part of the test suite)
#   ./build.sh fuzz [T] [S] fuzz target T (trace_reader, pickle_reader, tf_log, rmm_csv, allocator_api,
#                           alloc_conf) for S seconds
#   ./build.sh deps         only install the Debian packages
set -euo pipefail
cd "$(dirname "$0")"

# Debian 12 packages the build and the tests need. The CUDA toolkit is not a Debian package here:
# it is found when installed (nvcc on the PATH or in /usr/local/cuda) and the CUDA parts are off
# otherwise.
PACKAGES=(
  cmake ninja-build g++ pkg-config
  libfmt-dev libspdlog-dev libcli11-dev nlohmann-json3-dev libzstd-dev libboost-dev zlib1g-dev
  libgtest-dev libbenchmark-dev
  libimgui-dev libglfw3-dev libstb-dev xvfb xauth libgl1-mesa-dri  # the inspector GUI and its tests
  fonts-dejavu-core  # the inspector's font when scaled (--scale, HiDPI monitors)
)

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

deps() {
  local missing=()
  for package in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$package")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    return 0
  fi
  log "installing ${missing[*]}"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "error: need root (or sudo) to install: ${missing[*]}" >&2; exit 2; }
    sudo=(sudo)
  fi
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

cuda_path() {
  # Make nvcc findable for find_package(CUDAToolkit) on machines that have it but not on PATH.
  if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH="/usr/local/cuda/bin:$PATH"
  fi
}

build() {  # build PRESET [TARGET...]
  local preset=$1
  shift
  cuda_path
  log "configuring and building ($preset)"
  cmake --preset "$preset" >/dev/null
  # Build progress goes to stderr, like the log: stdout is the main job's (one JSON document with
  # `run --json`).
  if [ $# -gt 0 ]; then
    cmake --build --preset "$preset" --target "$@" >&2
  else
    cmake --build --preset "$preset" >&2
  fi
}

test_targets() {  # the test executables of the given tests/ folders
  for dir in "$@"; do
    for source in tests/"$dir"/*_test.cpp; do
      [ -e "$source" ] && basename "$source" .cpp
    done
  done
}

case "${1:-help}" in
  deps)
    deps
    ;;
  run)
    deps
    build release fragscope-train fragscope
    # The trace goes to build/release/run.fst unless the arguments name one; --help and --json
    # print the trainer's own output only (--json: one JSON document on stdout, no report after it).
    trace=build/release/run.fst
    own_trace=1
    report=1
    prev=""
    for arg in "${@:2}"; do
      case "$arg" in
        --trace=*) trace="${arg#--trace=}"; own_trace=0 ;;
        -h|--help|--json) report=0 ;;
      esac
      [ "$prev" = "--trace" ] && { trace="$arg"; own_trace=0; }
      prev="$arg"
    done
    if [ "$own_trace" -eq 1 ]; then
      rm -f "$trace"  # never report a trace an earlier run left
      set -- "$1" --trace "$trace" "${@:2}"
    fi
    log "main job: train the tiny model on the cpu backend and the default allocator policy"
    status=0
    ./build/release/trainer/fragscope-train "${@:2}" || status=$?
    [ "$status" -le 1 ] || exit "$status"  # 1 is an OOM, which the report explains
    if [ "$report" -eq 1 ] && [ -f "$trace" ]; then
      log "report of the trace it wrote ($trace)"
      report_status=0
      ./build/release/inspector/fragscope report "$trace" || report_status=$?
      [ "$report_status" -le 1 ] || exit "$report_status"  # 2: bad input, not an OOM
    fi
    exit "$status"
    ;;
  test)
    deps
    build release
    log "test suite"
    ctest --preset release
    ;;
  sanitize)
    # Only the suites each sanitizer is for: memory errors in the allocator, in everything that
    # parses files and in the executables on hostile input (ASan+UBSan), data races in the
    # allocator and the trace writer (TSan).
    deps
    t=$SECONDS
    build asan $(test_targets allocator traces import hostile) fragscope fragscope-train
    log "asan build took $((SECONDS - t)) s; allocator, trace, importer and hostile-input tests under AddressSanitizer + UndefinedBehaviorSanitizer"
    t=$SECONDS
    ctest --preset asan
    log "asan tests took $((SECONDS - t)) s"
    t=$SECONDS
    build tsan $(test_targets allocator traces)
    log "tsan build took $((SECONDS - t)) s; allocator and trace tests under ThreadSanitizer"
    t=$SECONDS
    ctest --preset tsan
    log "tsan tests took $((SECONDS - t)) s"
    ;;
  bench)
    deps
    build release alloc_bench trace_bench
    ./build/release/bench/alloc_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true "${@:2}"
    ./build/release/bench/trace_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true "${@:2}"
    ;;
  fuzz)
    PACKAGES+=(clang libclang-rt-14-dev)
    deps
    fuzz/run.sh "${@:2}"
    ;;
  help|-h|--help)
    sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
    ;;
  *)
    echo "error: unknown command '$1' (try: ./build.sh help)" >&2
    exit 2
    ;;
esac
