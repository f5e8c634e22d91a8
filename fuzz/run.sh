#!/usr/bin/env bash
# Fuzzes one of fragscope's readers with libFuzzer, ASan and UBSan.
#
#   fuzz/run.sh [TARGET] [SECONDS]   build TARGET, then fuzz it for SECONDS (default 60); prints the
#                                    number of executions and findings; exits non-zero when
#                                    something was found
#   fuzz/run.sh --make-corpus        rewrite the seed corpus fuzz/corpus/trace_reader/ with the
#                                    current trace writer
#
# Targets (fuzz/TARGET_fuzz.cpp, seeds in fuzz/corpus/TARGET/):
#   trace_reader    fragscope trace files (.fst), the default
#   pickle_reader   the pickle reader and the PyTorch snapshot importer
#   tf_log          the TensorFlow / XLA BFC log reader (also seeded, read in place, with
#                   ../shared/data/tf when present)
#   rmm_csv         the RAPIDS RMM CSV log reader, and the writer's round trip
#   torch_profiler  torch.profiler Chrome traces with memory events (JSON, gzip'd or not)
#   oom_message     out-of-memory error messages and their diagnosis (also seeded, read in place,
#                   with ../shared/data/oom_messages when present)
#   memory_summary  torch.cuda.memory_summary() tables in log text
#   allocator_api   the allocator's API on sim and host backings under every policy: sizes near
#                   every power of two and 2^64, frees of foreign and interior pointers
#   alloc_conf      the configuration parser (--alloc-conf, FRAGSCOPE_ALLOC_CONF)
#
# Builds with clang++ straight from traces/src (not through CMake) into build/fuzz/TARGET/. New
# inputs the fuzzer finds go to build/fuzz/TARGET/corpus/, crashes to build/fuzz/TARGET/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."

CXX=${CXX:-$(command -v clang++-14 || command -v clang++)}
SOURCES=(traces/src/*.cpp traces/src/import/*.cpp)
DEPS=$(pkg-config --cflags --libs libzstd fmt spdlog zlib)

if [ "${1:-}" = "--make-corpus" ]; then
  mkdir -p build/fuzz
  "$CXX" -std=c++20 -O1 -Itraces/include fuzz/make_corpus.cpp "${SOURCES[@]}" $DEPS -pthread \
    -o build/fuzz/make_corpus
  rm -rf fuzz/corpus/trace_reader
  build/fuzz/make_corpus fuzz/corpus/trace_reader
  exit 0
fi

target=trace_reader
if [ $# -gt 0 ] && ! [[ "$1" =~ ^[0-9]+$ ]]; then
  target=$1
  shift
fi
seconds=${1:-60}
case "$target" in
  trace_reader) max_len=16384 ;;
  pickle_reader) max_len=65536 ;;
  tf_log) max_len=262144 ;;
  rmm_csv) max_len=65536 ;;
  oom_message) max_len=65536 ;;
  memory_summary) max_len=65536 ;;
  torch_profiler) max_len=65536 ;;
  allocator_api) max_len=4096 ;;
  alloc_conf) max_len=1024 ;;
  *) echo "error: unknown fuzz target '$target' (trace_reader, pickle_reader, tf_log, rmm_csv," \
          "oom_message, memory_summary, torch_profiler, allocator_api, alloc_conf)" >&2; exit 2 ;;
esac
seed_dirs=("fuzz/corpus/$target")
if [ "$target" = tf_log ]; then seed_dirs+=(tests/import/fixtures/tf); fi
if [ "$target" = tf_log ] && [ -d ../shared/data/tf ]; then seed_dirs+=(../shared/data/tf); fi
if [ "$target" = oom_message ] && [ -d ../shared/data/oom_messages ]; then seed_dirs+=(../shared/data/oom_messages); fi

FLAGS=(-std=c++20 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined
       -fno-sanitize-recover=all -DFRAGSCOPE_FUZZING=1 -Itraces/include -Itraces/src)
# The trace library, instrumented, built once for every target and rebuilt only when a source is
# newer than the archive (CI fuzzes four targets in a row).
LIB=build/fuzz/lib/libfragscope_traces_fuzz.a
stale=0
if [ ! -e "$LIB" ]; then stale=1; else
  for source in "${SOURCES[@]}" traces/include/fragscope/traces/*.hpp traces/src/import/*.hpp fuzz/run.sh; do
    if [ "$source" -nt "$LIB" ]; then stale=1; break; fi
  done
fi
if [ "$stale" -eq 1 ]; then
  echo "==> building $LIB with $CXX" >&2
  rm -rf build/fuzz/lib && mkdir -p build/fuzz/lib/obj
  pids=()
  for source in "${SOURCES[@]}"; do
    object=build/fuzz/lib/obj/$(echo "$source" | tr / _).o
    "$CXX" "${FLAGS[@]}" $(pkg-config --cflags libzstd fmt spdlog zlib) -c "$source" -o "$object" &
    pids+=($!)
    if [ ${#pids[@]} -ge "$(nproc)" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
  ar rcs "$LIB" build/fuzz/lib/obj/*.o
fi

# The allocator targets link the allocator's sources too (no CUDA backings), instrumented the same
# way, into a second archive.
TARGET_LIBS=("$LIB")
TARGET_SOURCES=()
case "$target" in
  allocator_api|alloc_conf)
    ALLOC_SOURCES=(allocator/src/*.cpp)
    ALLOC_LIB=build/fuzz/lib/libfragscope_allocator_fuzz.a
    stale=0
    if [ ! -e "$ALLOC_LIB" ]; then stale=1; else
      for source in "${ALLOC_SOURCES[@]}" allocator/src/*.hpp allocator/include/fragscope/allocator/*.hpp \
                    traces/include/fragscope/traces/*.hpp fuzz/run.sh; do
        if [ "$source" -nt "$ALLOC_LIB" ]; then stale=1; break; fi
      done
    fi
    if [ "$stale" -eq 1 ]; then
      echo "==> building $ALLOC_LIB with $CXX" >&2
      rm -rf build/fuzz/lib/alloc_obj && mkdir -p build/fuzz/lib/alloc_obj
      pids=()
      for source in "${ALLOC_SOURCES[@]}"; do
        object=build/fuzz/lib/alloc_obj/$(basename "$source" .cpp).o
        "$CXX" "${FLAGS[@]}" -Iallocator/include -Iallocator/src $(pkg-config --cflags fmt spdlog) \
          -c "$source" -o "$object" &
        pids+=($!)
        if [ ${#pids[@]} -ge "$(nproc)" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
      done
      for pid in "${pids[@]}"; do wait "$pid"; done
      rm -f "$ALLOC_LIB"
      ar rcs "$ALLOC_LIB" build/fuzz/lib/alloc_obj/*.o
    fi
    TARGET_LIBS=("$ALLOC_LIB" "$LIB")
    FLAGS+=(-Iallocator/include)
    ;;
  oom_message)  # the diagnosis sources are compiled in, instrumented with the parser
    FLAGS+=(-Iinspector/analysis/include)
    TARGET_SOURCES=(inspector/analysis/src/message_diagnosis*.cpp)
    ;;
esac

OUT=build/fuzz/$target
mkdir -p "$OUT/corpus" "$OUT/artifacts"
echo "==> building $OUT/fuzz with $CXX" >&2
"$CXX" "${FLAGS[@]}" -fsanitize=fuzzer "fuzz/${target}_fuzz.cpp" "${TARGET_SOURCES[@]}" "${TARGET_LIBS[@]}" $DEPS -pthread -o "$OUT/fuzz"

rm -f "$OUT"/artifacts/*
echo "==> fuzzing $target for $seconds s" >&2
set +e
"$OUT/fuzz" "$OUT/corpus" "${seed_dirs[@]}" \
  -max_total_time="$seconds" -max_len="$max_len" -timeout=20 -rss_limit_mb=4096 \
  -artifact_prefix="$OUT/artifacts/" -print_final_stats=1 2>"$OUT/fuzz.log"
status=$?
set -e

executions=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$OUT/fuzz.log" | grep -o '[0-9]*$' || true)
findings=$(find "$OUT/artifacts" -type f | wc -l)
corpus=$(find "$OUT/corpus" -type f | wc -l)
echo "$target: executions: ${executions:-unknown}"
echo "$target: corpus: $corpus inputs"
echo "$target: findings: $findings"
if [ "$status" -ne 0 ] || [ "$findings" -ne 0 ]; then
  tail -n 60 "$OUT/fuzz.log"
  find "$OUT/artifacts" -type f
  exit 1
fi
