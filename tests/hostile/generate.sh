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
printf '%s\n' '{"type":"header","producer":"hostile"}' \
  '{"type":"alloc","seq":0,"address":4096,"size":18446744073709551615,"rounded":0}' >"$out/jsonl_size_wraps.jsonl"
printf '%s\n' '{"type":"header","producer":"hostile"}' \
  '{"type":"region_reserve","seq":0,"address":18446744073709551360,"size":512}' >"$out/jsonl_region_past_end.jsonl"
# A request of 2^64 - 1 recorded as an OOM is evidence, not an allocation: it reads, and replay
# refuses it as request-too-large.
printf '%s\n' '{"type":"header","producer":"hostile","alloc_conf":"backing=sim,capacity=1GiB"}' \
  '{"type":"alloc","seq":0,"address":4096,"size":1000,"rounded":1024}' \
  '{"type":"oom","seq":1,"size":18446744073709551615}' >"$out/jsonl_oom_request_wraps.jsonl"

# --- damaged and empty files
head -c 0 "$sample" >"$out/empty.fst"
head -c 40 "$sample" >"$out/fst_header_only_cut.fst"
head -c 4000 "$sample" >"$out/fst_cut_mid_block.fst"
printf 'this is not a trace at all\n' >"$out/garbage.fst"
mkdir -p "$out/a_directory.fst"
touch "$out/a_directory.fst/.keep"
# (hostile_test.cpp adds victim.fst, a copy of the sample, and victim_link.fst, a link to it, to
# its working copy of this folder: outputs that are inputs.)

echo "wrote $(find "$out" -type f | wc -l) inputs to tests/hostile/$out" >&2
