#!/usr/bin/env python3
"""Facts about PyTorch memory snapshots, computed independently of fragscope's C++ reader.

Loads each snapshot with Python's own unpickler, restricted so that nothing can be executed (any
GLOBAL/REDUCE is refused), and prints per file: events per action and device, segments, reserved
bytes, the blocks live at the end, and the blocks live before recording started. tests/import/pytorch_facts_test.cpp asserts the C++ reader
against the JSON this writes:

    python3 tests/tools/pytorch_snapshot_facts.py ../shared/data/torch/*.pickle \
        > tests/import/pytorch_facts.json
"""
import collections
import io
import json
import os
import pickle
import sys


class RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module, name):  # the snapshots need no class: refuse every one
        raise pickle.UnpicklingError(f"refused global {module}.{name}")


def facts(path):
    with open(path, "rb") as f:
        snapshot = RestrictedUnpickler(io.BytesIO(f.read())).load()
    segments = snapshot.get("segments", [])
    actions = collections.Counter()
    for device, trace in enumerate(snapshot.get("device_traces", []) or []):
        for event in trace:
            actions[f"{device}:{event['action']}"] += 1
    live_blocks = 0
    live_requested = 0
    for segment in segments:
        for block in segment.get("blocks", []):
            if block.get("state") == "active_allocated":
                live_blocks += 1
                live_requested += block.get("requested_size", block.get("size", 0))
    # Blocks live before recording: the live blocks at the end with the trace undone backwards
    # (an alloc in the trace was not live before it; a free_completed of a block was).
    before = {}
    for segment in segments:
        address = segment["address"]  # blocks tile their segment in order
        for block in segment.get("blocks", []):
            if block.get("state") == "active_allocated":
                before[(segment["device"], address)] = block.get("requested_size", block.get("size", 0))
            address += block["size"]
    for device, trace in enumerate(snapshot.get("device_traces", []) or []):
        for event in reversed(trace):
            if event["action"] == "alloc":
                before.pop((device, event["addr"]), None)
            elif event["action"] == "free_completed":
                before[(device, event["addr"])] = event["size"]
    return {
        "file": os.path.basename(path),
        "before_recording_blocks": len(before),
        "before_recording_requested": sum(before.values()),
        "segments": len(segments),
        "reserved": sum(s["total_size"] for s in segments),
        "segment_requested": sum(s.get("requested_size", 0) for s in segments),
        "live_blocks_at_end": live_blocks,
        "live_requested_at_end": live_requested,
        "events": sum(actions.values()),
        "actions": dict(sorted(actions.items())),
        "devices": sorted({s["device"] for s in segments}),
    }


def main(paths):
    json.dump([facts(p) for p in sorted(paths)], sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
