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
#
# Builds with clang++ straight from traces/src (not through CMake) into build/fuzz/TARGET/. New
# inputs the fuzzer finds go to build/fuzz/TARGET/corpus/, crashes to build/fuzz/TARGET/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."

CXX=${CXX:-$(command -v clang++-14 || command -v clang++)}
SOURCES=(traces/src/*.cpp traces/src/import/*.cpp)
DEPS=$(pkg-config --cflags --libs libzstd fmt spdlog)

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
  *) echo "error: unknown fuzz target '$target' (trace_reader, pickle_reader, tf_log)" >&2; exit 2 ;;
esac
seed_dirs=("fuzz/corpus/$target")
if [ "$target" = tf_log ] && [ -d ../shared/data/tf ]; then seed_dirs+=(../shared/data/tf); fi

OUT=build/fuzz/$target
mkdir -p "$OUT/corpus" "$OUT/artifacts"
echo "==> building $OUT/fuzz with $CXX" >&2
"$CXX" -std=c++20 -g -O1 -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -DFRAGSCOPE_FUZZING=1 -Itraces/include \
  "fuzz/${target}_fuzz.cpp" "${SOURCES[@]}" $DEPS -pthread -o "$OUT/fuzz"

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
