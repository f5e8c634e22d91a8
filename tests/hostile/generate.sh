#!/usr/bin/env bash
# Writes the hostile-input suite's inputs into tests/hostile/inputs/: small files, each built to
# break one promise (a size that wraps, a range past 2^64, a file cut short, a directory, ...).
# Deterministic: run it again and `git diff` shows nothing. What each input must produce (exit code
# and the first line of stderr) is in cases.tsv beside this script; hostile_test.cpp runs them.
#
#   tests/hostile/generate.sh
set -euo pipefail
cd "$(dirname "$0")"
out=inputs
rm -rf "$out"
mkdir -p "$out"
sample=../../traces/samples/synth-small.fst
rmm_header='Thread,Time,Action,Pointer,Size,Stream'

# --- sizes: above 4 EiB, or wrapping when rounded, or ranges past the end of the address space
printf '%s\n1,10:00:00.000001,allocate,0x1000,18446744073709551615,0x0\n' "$rmm_header" >"$out/rmm_size_wraps.csv"
printf '%s\n1,10:00:00.000001,allocate,0x1000,4611686018427387905,0x0\n' "$rmm_header" >"$out/rmm_size_over_cap.csv"
{
  echo "$rmm_header"
  for i in 0 1 2 3 4 5; do
    printf '1,10:00:00.00000%d,allocate,0x%x000000000000000,4611686018427387904,0x0\n' "$i" "$((i + 1))"
  done
} >"$out/rmm_live_sum_overflows.csv"
printf '%s\n1,10:00:00.000001,allocate,0xffffffffffffff00,4096,0x0\n' "$rmm_header" >"$out/rmm_range_past_end.csv"
# A short line in the middle is an error naming it; only a last line without its end (a crash's
# cut) is left out with a warning.
printf '%s\n1,10:00:00.000001,allocate,0x1000,256,0x0\n1,10:00:00.0000\n1,10:00:00.000003,free,0x1000,256,0x0\n' \
  "$rmm_header" >"$out/rmm_short_line_middle.csv"
printf '%s\n1,10:00:00.000001,allocate,0x1000,256,0x0\n1,10:00:00.0000' "$rmm_header" >"$out/rmm_cut_last_line.csv"
printf '%s\n' '{"type":"header","producer":"hostile"}' \
  '{"type":"alloc","seq":0,"address":4096,"size":18446744073709551615,"rounded":0}' >"$out/jsonl_size_wraps.jsonl"
printf '%s\n' '{"type":"header","producer":"hostile"}' \
  '{"type":"region_reserve","seq":0,"address":18446744073709551360,"size":512}' >"$out/jsonl_region_past_end.jsonl"
# A request of 2^64 - 1 recorded as an OOM is evidence, not an allocation: it reads, and replay
# refuses it as request-too-large.
printf '%s\n' '{"type":"header","producer":"hostile","alloc_conf":"backing=sim,capacity=1GiB"}' \
  '{"type":"alloc","seq":0,"address":4096,"size":1000,"rounded":1024}' \
  '{"type":"oom","seq":1,"size":18446744073709551615}' >"$out/jsonl_oom_request_wraps.jsonl"

# --- TensorFlow BFC dumps: the base reads cleanly; each variant changes one line (tf_log LINE TEXT)
tf_log() {
  local line=$1 text=$2 i=0
  while IFS= read -r base; do
    i=$((i + 1))
    if [ "$i" -eq "$line" ]; then printf '%s\n' "$text"; else printf '%s\n' "$base"; fi
  done <<'LOG'
2021-03-15 17:16:57.000001: W bfc_allocator.cc:456] Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00KiB (rounded to 1024)requested by op MatMul
I bfc_allocator.cc:1011] Next region of size 2048
I bfc_allocator.cc:1031] InUse at 0x7f0000000000 of size 768 next 1
I bfc_allocator.cc:1031] Free  at 0x7f0000000300 of size 512 next 2
I bfc_allocator.cc:1031] InUse at 0x7f0000000500 of size 768 next 3
I bfc_allocator.cc:1052] Stats: 
Limit:                        2048
InUse:                        1536
MaxInUse:                     1536
NumAllocs:                       2
W op_kernel.cc:1763] OP_REQUIRES failed : Resource exhausted: OOM when allocating tensor with shape[256] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc
LOG
}
tf_log 0 '' >"$out/tf_clean.log"
cp ../import/fixtures/tf/xla_header_only.log "$out/tf_xla_header_only.log"  # header and bar only: no limit
tf_log 3 'I bfc_allocator.cc:1031] InUse at 0x7f0000000000 of size 9223372036854775808 next 1' >"$out/tf_chunk_2e63.log"
tf_log 3 'I bfc_allocator.cc:1031] InUse at 0x1234567890123456789 of size 768 next 1' >"$out/tf_pointer_19_digits.log"
tf_log 2 'I bfc_allocator.cc:1011] Next region of size 18446744073709551615' >"$out/tf_region_2e64.log"
tf_log 7 'Limit:                        -5' >"$out/tf_limit_negative.log"
tf_log 7 'Limit:                        -5.00GiB' >"$out/tf_limit_human_negative.log"  # XLA 2026 prints Stats in units
# A pasted "Summary of in-use Chunks by size" whose lines each fit but add up to more than 4 EiB.
printf '%s\n' 'I bfc_allocator.cc:692] 1 Chunks of size 4611686018427387904 totalling 4.00EiB' \
  'I bfc_allocator.cc:692] 1 Chunks of size 256 totalling 256B' >"$out/tf_summary_over_cap.log"
tf_log 11 'W op_kernel.cc:1763] OP_REQUIRES failed : Resource exhausted: OOM when allocating tensor with shape[-1,3] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc' >"$out/tf_shape_negative.log"

# --- JSON Lines naming more devices than --max-devices (5 here)
{
  printf '%s\n' '{"type":"header","producer":"hostile"}'
  for d in 0 1 2 3 4 5 6; do
    printf '{"type":"alloc","seq":%d,"device":%d,"address":4096,"size":256}\n' "$d" "$d"
  done
} >"$out/jsonl_seven_devices.jsonl"

# --- a PyTorch snapshot whose one block is 8 EiB (python3 writes the pickle: protocol 2, as torch)
python3 - "$out/pytorch_block_8eib.pickle" <<'PY'
import pickle, sys
size = 2**63
block = {'size': size, 'requested_size': size, 'state': 'active_allocated', 'address': 4096, 'frames': []}
segment = {'device': 0, 'address': 4096, 'total_size': size, 'allocated_size': size, 'active_size': size,
           'requested_size': size, 'stream': 0, 'segment_type': 'large', 'blocks': [block]}
with open(sys.argv[1], 'wb') as f:
    f.write(pickle.dumps({'segments': [segment], 'device_traces': [[]]}, protocol=2))
PY

# --- torch.profiler traces: cut while written (read up to the cut, a warning), malformed in the
# middle (an error naming the byte), a Total Reserved over 4 EiB (an error naming the device)
profiler_event() {  # TS BYTES ADDR [TOTAL_RESERVED]
  printf '{"ph": "i", "name": "[memory]", "ts": %s, "args": {"Device Type": 1, "Device Id": 0, "Bytes": %s, "Addr": %s, "Total Allocated": %s, "Total Reserved": %s}}' \
    "$1" "$2" "$3" "$2" "${4:-2097152}"
}
{
  printf '{"schemaVersion": 1, "traceEvents": [\n'
  profiler_event 1 512 4096
  printf ',\n'
  profiler_event 2 -512 4096 | head -c 60
} >"$out/profiler_cut.json"
{
  printf '{"schemaVersion": 1, "traceEvents": [\n'
  profiler_event 1 512 4096
  printf ',\n@'
  profiler_event 2 -512 4096
  printf ']}\n'
} >"$out/profiler_garbage.json"
{
  printf '{"schemaVersion": 1, "traceEvents": [\n'
  profiler_event 1 512 4096 18446744073709551615
  printf ']}\n'
} >"$out/profiler_reserved_2e64.json"

# --- a PyTorch snapshot saved with json.dump, cut short: an error naming the byte
printf '{"segments": [{"device": 0, "address": 4096, "total_size": 2097152, "blocks": [' >"$out/snapshot_json_cut.json"

# --- damaged and empty files
head -c 0 "$sample" >"$out/empty.fst"
head -c 40 "$sample" >"$out/fst_header_only_cut.fst"
head -c 4000 "$sample" >"$out/fst_cut_mid_block.fst"
printf 'this is not a trace at all\n' >"$out/garbage.fst"
mkdir -p "$out/a_directory.fst"
touch "$out/a_directory.fst/.keep"
# --- out-of-memory error messages: a size over 4 EiB, a message cut mid-number, a tensor whose
# shape describes more than 2^64 bytes: each an OOM report with cause unknown, never a crash
printf '%s\n' 'RuntimeError: CUDA out of memory. Tried to allocate 99999999999 GiB (GPU 0; 11.17 GiB total capacity; 10.90 GiB already allocated; 576.00 KiB free; 30.96 MiB cached)' >"$out/msg_request_over_cap.log"
printf '%s' 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 4.0' >"$out/msg_truncated.log"
printf '%s\n' 'ResourceExhaustedError: OOM when allocating tensor with shape[4294967296,4294967296,4294967296] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc' >"$out/msg_tensor_over_cap.log"
# TensorFlow's "ran out of memory … not a failure" warning alone, of a size over 4 EiB: no OOM, exit 0
printf '%s\n' 'W tensorflow/core/common_runtime/bfc_allocator.cc:246] Allocator (GPU_0_bfc) ran out of memory trying to allocate 99999999999.00EiB with freed_by_count=0. The caller indicates that this is not a failure, but may mean that there could be performance gains if more memory were available.' >"$out/msg_tf_not_a_failure_over_cap.log"

# (hostile_test.cpp adds victim.fst, a copy of the sample, and victim_link.fst, a link to it, to
# its working copy of this folder: outputs that are inputs.)

echo "wrote $(find "$out" -type f | wc -l) inputs to tests/hostile/$out" >&2
