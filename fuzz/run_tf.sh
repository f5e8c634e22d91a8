#!/usr/bin/env bash
# Fuzzes the TensorFlow / XLA BFC OOM log reader with libFuzzer, ASan and UBSan.
#
#   fuzz/run_tf.sh [SECONDS]    build, then fuzz for SECONDS (default 60); prints the number of
#                               executions and findings; exits non-zero when something was found
#
# Builds with clang++ straight from traces/src (not through CMake) into build/fuzz/. Seeds: a few
# synthetic dumps of each format era written here, plus the third-party logs in ../shared/data/tf
# when that folder exists (read in place, never copied into the project). New inputs go to
# build/fuzz/tf_corpus/; crashes to build/fuzz/tf_artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."

CXX=${CXX:-$(command -v clang++-14 || command -v clang++)}
OUT=build/fuzz
SOURCES=(traces/src/*.cpp traces/src/import/tf_*.cpp)
DEPS=$(pkg-config --cflags --libs libzstd fmt spdlog)
mkdir -p "$OUT"

seconds=${1:-60}
echo "==> building $OUT/tf_log_fuzz with $CXX" >&2
"$CXX" -std=c++20 -g -O1 -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -DFRAGSCOPE_FUZZING=1 -Itraces/include \
  fuzz/tf_log_fuzz.cpp "${SOURCES[@]}" $DEPS -pthread -o "$OUT/tf_log_fuzz"

seeds="$OUT/tf_seeds"
rm -rf "$seeds"
mkdir -p "$seeds" "$OUT/tf_corpus" "$OUT/tf_artifacts"
cat >"$seeds/tf1.log" <<'LOG'
2017-06-20 20:25:42.825757: W bfc_allocator.cc:273] Allocator (GPU_0_bfc) ran out of memory trying to allocate 286.00MiB.  Current allocation summary follows.
2017-06-20 20:25:42.825808: I bfc_allocator.cc:643] Bin (256):   Total Chunks: 1, Chunks in use: 0 256B allocated for chunks. 0B client-requested for chunks.
2017-06-20 20:25:42.826064: I bfc_allocator.cc:678] Chunk at 0xb05e40000 of size 1280
2017-06-20 20:25:42.826064: I bfc_allocator.cc:678] Chunk at 0xb05e40600 of size 256
2017-06-20 20:25:42.826440: I bfc_allocator.cc:687] Free at 0xb05e40500 of size 256
2017-06-20 20:25:42.826575: I bfc_allocator.cc:702] Stats: 
Limit:                   1792
InUse:                   1536
MaxInUse:                1536
NumAllocs:                  2
MaxAllocSize:            1280

2017-06-20 20:25:42.826589: W bfc_allocator.cc:277] **************______________________________________________________________________________________
LOG
printf '%s\n' \
  '2021-03-15 17:16:57.1: W bfc_allocator.cc:456] Allocator (GPU_1_bfc) ran out of memory trying to allocate 1.00MiB (rounded to 1048576)requested by op MatMul' \
  'Current allocation summary follows.' 'Current allocation summary follows.' \
  '2021-03-15 17:16:57.2: I bfc_allocator.cc:991] BFCAllocator dump for GPU_1_bfc' \
  "2021-03-15 17:16:57.3: I bfc_allocator.cc:998] Bin (256): $(printf '\t')Total Chunks: 1, Chunks in use: 1. 256B allocated for chunks. 256B in use in bin. 200B client-requested in use in bin." \
  '2021-03-15 17:16:57.4: I bfc_allocator.cc:1011] Next region of size 768' \
  '2021-03-15 17:16:57.5: I bfc_allocator.cc:1031] InUse at 00000007FF000000 of size 256 next 1' \
  '2021-03-15 17:16:57.5: I bfc_allocator.cc:1031] Free  at 7ff000100 of size 512 next 18446744073709551615' \
  '2021-03-15 17:16:57.6: I bfc_allocator.cc:1046] total_region_allocated_bytes_: 768 memory_limit_: 2048 available bytes: 1280' \
  '2021-03-15 17:16:57.7: I bfc_allocator.cc:1052] Stats: ' 'Limit: 2048' 'InUse: 256' 'MaxInUse: 256' \
  'NumAllocs: 1' 'MaxAllocSize: 256' 'Reserved: 0' 'PeakReserved: 0' 'LargestFreeBlock: 0' \
  '2021-03-15 17:16:57.8: W bfc_allocator.cc:467] *****___________' \
  'Resource exhausted: OOM when allocating tensor with shape[1024,256] and type float on GPU:0 by allocator GPU_1_bfc' \
  >"$seeds/tf2.log"
printf '%s\n' \
  '2024-05-28 07:02:44.349554: W external/tsl/tsl/framework/bfc_allocator.cc:482] Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.97GiB (rounded to 2110783744)requested by op ' \
  '2024-05-28 07:02:44.350162: W external/tsl/tsl/framework/bfc_allocator.cc:494] ***************************__******************************************************************_____' \
  'E0528 07:02:44.350251   27487 pjrt_stream_executor_client.cc:2826] RESOURCE_EXHAUSTED: Out of memory while trying to allocate 2110783616 bytes.' \
  >"$seeds/jax.log"
seed_dirs=("$seeds")
if [ -d ../shared/data/tf ]; then seed_dirs+=(../shared/data/tf); fi

rm -f "$OUT"/tf_artifacts/*
echo "==> fuzzing for $seconds s" >&2
set +e
"$OUT/tf_log_fuzz" "$OUT/tf_corpus" "${seed_dirs[@]}" \
  -max_total_time="$seconds" -max_len=262144 -timeout=20 -rss_limit_mb=4096 \
  -artifact_prefix="$OUT/tf_artifacts/" -print_final_stats=1 2>"$OUT/tf_fuzz.log"
status=$?
set -e

executions=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$OUT/tf_fuzz.log" | grep -o '[0-9]*$' || true)
findings=$(find "$OUT/tf_artifacts" -type f | wc -l)
corpus=$(find "$OUT/tf_corpus" -type f | wc -l)
echo "executions: ${executions:-unknown}"
echo "corpus: $corpus inputs"
echo "findings: $findings"
if [ "$status" -ne 0 ] || [ "$findings" -ne 0 ]; then
  tail -n 60 "$OUT/tf_fuzz.log"
  find "$OUT/tf_artifacts" -type f
  exit 1
fi
