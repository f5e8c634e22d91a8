#!/usr/bin/env bash
# Fuzzes the pickle reader and the PyTorch snapshot importer with libFuzzer, ASan and UBSan.
#
#   fuzz/run_pickle.sh [SECONDS]   build, then fuzz for SECONDS (default 60); prints the number of
#                                  executions and findings; exits non-zero when something was found
#
# Builds with clang++ straight from traces/src (not through CMake) into build/fuzz-pickle/. Seeds:
# fuzz/corpus/pickle_reader/ (tiny hand-made pickles). New inputs go to build/fuzz-pickle/corpus/,
# crashes to build/fuzz-pickle/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."

CXX=${CXX:-$(command -v clang++-14 || command -v clang++)}
OUT=build/fuzz-pickle
SOURCES=(traces/src/*.cpp traces/src/import/pickle_*.cpp traces/src/import/pytorch_*.cpp)
DEPS=$(pkg-config --cflags --libs libzstd fmt spdlog)
mkdir -p "$OUT"

seconds=${1:-60}
echo "==> building $OUT/pickle_reader_fuzz with $CXX" >&2
"$CXX" -std=c++20 -g -O1 -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -DFRAGSCOPE_FUZZING=1 -Itraces/include \
  fuzz/pickle_reader_fuzz.cpp "${SOURCES[@]}" $DEPS -pthread -o "$OUT/pickle_reader_fuzz"

mkdir -p "$OUT/corpus" "$OUT/artifacts"
rm -f "$OUT"/artifacts/*
echo "==> fuzzing for $seconds s" >&2
set +e
"$OUT/pickle_reader_fuzz" "$OUT/corpus" fuzz/corpus/pickle_reader \
  -max_total_time="$seconds" -max_len=8192 -timeout=20 -rss_limit_mb=4096 \
  -artifact_prefix="$OUT/artifacts/" -print_final_stats=1 2>"$OUT/fuzz.log"
status=$?
set -e

executions=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$OUT/fuzz.log" | grep -o '[0-9]*$' || true)
findings=$(find "$OUT/artifacts" -type f | wc -l)
corpus=$(find "$OUT/corpus" -type f | wc -l)
echo "executions: ${executions:-unknown}"
echo "corpus: $corpus inputs"
echo "findings: $findings"
if [ "$status" -ne 0 ] || [ "$findings" -ne 0 ]; then
  tail -n 60 "$OUT/fuzz.log"
  find "$OUT/artifacts" -type f
  exit 1
fi
