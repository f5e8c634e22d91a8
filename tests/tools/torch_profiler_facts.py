#!/usr/bin/env python3
"""Facts about torch.profiler traces with memory events, computed independently of fragscope's C++
reader: Python's own json and gzip modules, the running sum of "Bytes" per device.

Prints per file: the "[memory]" events per device (CUDA id N as "cuda:N", the CPU as "cpu"), the
allocations (Bytes > 0) and frees (Bytes < 0) per device, and the peak of live bytes per device
(the running sum of Bytes, from 0 at the trace's first memory event; a free of memory allocated
before profiling started would lower it below 0, which the C++ reader leaves out: the script
counts such frees as "unmatched" and leaves them out alike, pairing frees by address where the
trace has Addr, else by size). tests/import/torch_profiler_test.cpp asserts the C++ reader
against the JSON this writes:

    python3 tests/tools/torch_profiler_facts.py ../shared/data/torch_profiler/*.json* \\
        > tests/import/torch_profiler_facts.json
"""
import collections
import gzip
import json
import os
import sys


def device_name(args):
    if args.get("Device Type") == 1:
        return f"cuda:{args.get('Device Id')}"
    if args.get("Device Type", 0) == 0:
        return "cpu"
    return f"type{args.get('Device Type')}:{max(args.get('Device Id', 0), 0)}"


def facts(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    memory = [e for e in events if e.get("name") == "[memory]" and "Bytes" in e.get("args", {})]
    memory.sort(key=lambda e: e["ts"])  # stable: file order among equal times
    counts = collections.Counter()
    allocs = collections.Counter()
    frees = collections.Counter()
    live = collections.Counter()
    peak = collections.Counter()
    unmatched = 0
    by_size = collections.defaultdict(int)  # (device, size) -> live count
    by_addr = {}
    for e in memory:
        args = e["args"]
        device = device_name(args)
        size = args["Bytes"]
        counts[device] += 1
        if size > 0:
            allocs[device] += 1
            if "Addr" in args:
                by_addr[(device, args["Addr"])] = size
            else:
                by_size[(device, size)] += 1
            live[device] += size
            peak[device] = max(peak[device], live[device])
        elif size < 0:
            if "Addr" in args:
                matched = by_addr.pop((device, args["Addr"]), None) is not None
            else:
                matched = by_size[(device, -size)] > 0
                if matched:
                    by_size[(device, -size)] -= 1
            if not matched:
                unmatched += 1
                continue
            frees[device] += 1
            live[device] += size
    return {
        "file": os.path.basename(path),
        "memory_events": dict(sorted(counts.items())),
        "allocations": dict(sorted(allocs.items())),
        "frees": dict(sorted(frees.items())),
        "peak_live_bytes": dict(sorted(peak.items())),
        "unmatched_frees": unmatched,
    }


if __name__ == "__main__":
    json.dump([facts(p) for p in sorted(sys.argv[1:])], sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
