#!/usr/bin/env python3
"""Hand-made TensorFlow / XLA BFC OOM logs, one per format era and edge case, with the facts each
must yield.

The script invents an allocator state (regions tiled by chunks, in use or free, a request and a
limit chosen to give a wanted OOM cause), computes the facts from that state by DESIGN.md's rules
(not with fragscope's reader), and prints the state in the log format of one TensorFlow era (the
eras of ../shared/data/README.md). tests/import/tf_fixtures_test.cpp reads every log with the C++
reader and asserts the facts. Seeded: the same files every run.

    python3 tests/tools/make_tf_fixtures.py tests/import/fixtures/tf
"""
import json
import os
import random
import sys

GiB, MiB, KiB = 1 << 30, 1 << 20, 1 << 10


def human(n):
    """TensorFlow's HumanReadableNumBytes: B below 1 KiB, one decimal for KiB, two above."""
    if n < KiB:
        return f"{n}B"
    if n < MiB:
        return f"{n / KiB:.1f}KiB"
    if n < GiB:
        return f"{n / MiB:.2f}MiB"
    return f"{n / GiB:.2f}GiB"


def bin_size(n):
    """BinNumForSize: 256 B << index for 21 bins, the last open-ended."""
    index = 0
    while index < 20 and (256 << (index + 1)) <= n:
        index += 1
    return 256 << index


def round256(n):
    return (n + 255) // 256 * 256


class State:
    """Regions of chunks: [(address, [(size, in_use)])]; no two free chunks touch (BFC coalesces)."""

    def __init__(self, rng, base, region_count, chunks_per_region, max_chunk):
        self.regions = []
        address = base
        for _ in range(region_count):
            chunks = []
            previous_free = True  # a region starts with an in-use chunk half the time
            for i in range(chunks_per_region):
                free = not previous_free and rng.random() < 0.45
                size = 256 * rng.randint(1, max_chunk // 256)
                chunks.append((size, not free))
                previous_free = free
            self.regions.append((address, chunks))
            address += sum(s for s, _ in chunks) + 64 * MiB  # a gap: regions never touch

    def chunks(self):
        for base, chunks in self.regions:
            address = base
            for size, in_use in chunks:
                yield address, size, in_use
                address += size

    def facts(self):
        sizes = [(s, u) for _, s, u in self.chunks()]
        reserved = sum(s for s, _ in sizes)
        in_use = sum(s for s, u in sizes if u)
        free = [s for s, u in sizes if not u]
        return {"regions": len(self.regions), "chunks": len(sizes), "reserved": reserved,
                "in_use": in_use, "in_use_chunks": sum(1 for _, u in sizes if u),
                "free_chunks": len(free), "largest_free": max(free, default=0)}


def choose(state, cause):
    """A (request, limit) that gives `cause` under DESIGN.md's rules for this state."""
    f = state.facts()
    free_total = f["reserved"] - f["in_use"]
    if cause == "fragmentation":  # fits in free bytes + headroom, in no hole, not in the headroom
        request = round256(f["largest_free"] + 256)
        headroom = 0 if request <= free_total else request - free_total
        headroom = max(headroom, 0)
        limit = f["reserved"] + headroom
        assert request <= free_total + headroom and max(f["largest_free"], headroom) < request
    elif cause == "capacity":  # live data plus the request exceed the limit
        limit = f["reserved"]
        request = round256(free_total + 4096)
        assert request <= limit, "too little in use for a capacity OOM"
    elif cause == "backing":  # the headroom alone would hold it: the device refused to grow
        request = round256(f["largest_free"] + 256)
        limit = f["reserved"] + 4 * request
    elif cause == "request-too-large":
        limit = f["reserved"] + MiB
        request = round256(limit + 3 * MiB)
    else:
        raise ValueError(cause)
    return request, limit


def stamp(era, n):
    return {"tf1": "2017-06-20 20:25:42.{:06d}", "tf115": "2020-02-07 18:28:12.{:06d}",
            "tf24": "2021-03-15 17:16:57.{:06d}"}[era].format(100000 + n)


def pointer(style, address):
    return {"0x": f"0x{address:x}", "bare": f"{address:x}", "upper": f"{address:016X}"}[style]


def render(state, request, limit, era, allocator="GPU_0_bfc", ptr="0x", exact_header=True,
           interleaved=True, next_first=False, two_spaces=True, bin_tab=False, stats8=False,
           double_summary=False, noise=False, indent=""):
    """The dump as one TensorFlow era printed it."""
    f = state.facts()
    lines, n = [], [0]
    source = {"tf1": "tensorflow/core/common_runtime/bfc_allocator.cc",
              "tf115": "tensorflow/core/common_runtime/bfc_allocator.cc",
              "tf24": "tensorflow/core/common_runtime/bfc_allocator.cc"}[era]

    def log(level, text):
        n[0] += 1
        lines.append(f"{indent}{stamp(era, n[0])}: {level} {source}:{600 + n[0]}] {text}")

    if noise:
        lines.append("Epoch 3/10")
        lines.append(" 12/375 [>.............................] - ETA: 1:02 - loss: 2.3011\r"
                     " 24/375 [>.............................] - ETA: 58s - loss: 2.2954")
    head = f"Allocator ({allocator}) ran out of memory trying to allocate {human(request)}"
    if exact_header:
        head += f" (rounded to {request})"
    if era == "tf24":
        head += "requested by op Conv2D"
        log("W", head)
        lines.append("If the cause is memory fragmentation maybe the environment variable "
                     "'TF_GPU_ALLOCATOR=cuda_malloc_async' will improve the situation. ")
        lines.append("Current allocation summary follows.")
        if double_summary:
            lines.append("Current allocation summary follows.")
        log("I", f"BFCAllocator dump for {allocator}")
    else:
        log("W", head + ".  Current allocation summary follows.")
    # Bin lines: TF 1.x counts free chunks only (in-use chunks leave their bin); later eras all.
    bins = {}
    for _, size, in_use in state.chunks():
        if era == "tf1" and in_use:
            continue
        b = bins.setdefault(bin_size(size), [0, 0, 0])
        b[0] += 1
        b[1] += 1 if in_use else 0
        b[2] += size
    for index in range(21):
        size = 256 << index
        total, used, nbytes = bins.get(size, [0, 0, 0])
        sep = "\t" if bin_tab else " " * max(1, 10 - len(str(size)))
        log("I", f"Bin ({size}):{sep}Total Chunks: {total}, Chunks in use: {used}. {human(nbytes)} "
                 f"allocated for chunks. {human(nbytes if used else 0)} in use in bin. "
                 f"{human(nbytes if used else 0)} client-requested in use in bin.")
    if noise:
        lines.append("INFO: some unrelated progress line")
    log("I", f"Bin for {human(request)} was {human(bin_size(request))}, Chunk State: ")
    free_word = "Free  at" if two_spaces else "Free at"
    if era == "tf1":
        # One loop over in-use chunks, then one over free chunks; no region lines.
        for address, size, in_use in state.chunks():
            if in_use:
                log("I", f"Chunk at {pointer(ptr, address)} of size {size}")
        for address, size, in_use in state.chunks():
            if not in_use:
                log("I", f"{free_word} {pointer(ptr, address)} of size {size}")
    else:
        for base, chunks in state.regions:
            log("I", f"Next region of size {sum(s for s, _ in chunks)}")
            address = base
            for i, (size, in_use) in enumerate(chunks):
                word = "InUse at" if in_use else free_word
                nxt = i + 1 if i + 1 < len(chunks) else 18446744073709551615
                if next_first:
                    log("I", f"{word} {pointer(ptr, address)} next {nxt} of size {size}")
                else:
                    log("I", f"{word} {pointer(ptr, address)} of size {size} next {nxt}")
                address += size
                if noise and i == 1:
                    lines.append("\tunrelated: step 12, loss 0.713")
    log("I", "     Summary of in-use Chunks by size: ")
    log("I", f"Sum Total of in-use chunks: {human(f['in_use'])}")
    if era != "tf1":
        log("I", f"total_region_allocated_bytes_: {f['reserved']} memory_limit_: {limit} available bytes: "
                 f"{limit - f['reserved']} curr_region_allocation_bytes_: {2 * f['reserved']}")
    log("I", "Stats: ")
    stats = [("Limit", limit), ("InUse", f["in_use"]), ("MaxInUse", f["in_use"]),
             ("NumAllocs", f["in_use_chunks"] * 3), ("MaxAllocSize", max(s for _, s, _ in state.chunks()))]
    if stats8:
        stats += [("Reserved", 0), ("PeakReserved", 0), ("LargestFreeBlock", 0)]
    for key, value in stats:
        lines.append(f"{key + ':':<20}{value:>20}")
    lines.append("")
    used_cells = round(100 * f["in_use"] / limit) if limit else 0
    log("W", "*" * used_cells + "_" * (100 - used_cells))
    lines.append(f"{indent}{stamp(era, 99)}: W tensorflow/core/framework/op_kernel.cc:1763] OP_REQUIRES "
                 f"failed : Resource exhausted: OOM when allocating tensor by allocator {allocator}")
    return lines


def expected(state, request, limit, cause, exact_header, allocator="GPU_0_bfc", stats_fields=5):
    f = state.facts()
    # The request itself is printed exactly only below 1 KiB ("768B"); "(rounded to N)" is exact,
    # and so is a TF 1.x size that prints exactly with two decimals (the generator picks such).
    return dict(f, allocator=allocator, request=request, rounded=request, limit=limit, cause=cause,
                request_exact=request < KiB, stats_fields=stats_fields,
                free_in_regions=f["reserved"] - f["in_use"])


def read_human(text):
    """The bytes a human size stands for, as printed (ScanHumanBytes: the fraction rounded to the
    nearest byte): "8.49GiB" -> 9116068086."""
    units = {"B": 0, "KiB": 10, "MiB": 20, "GiB": 30}
    for unit in sorted(units, key=len, reverse=True):
        if text.endswith(unit):
            number = text[: -len(unit)]
            break
    whole, _, frac = number.partition(".")
    scale = 1 << units[unit]
    frac_scale = 10 ** len(frac)
    return int(whole) * scale + (int(frac or 0) * scale * 2 + frac_scale) // (2 * frac_scale)


def classify(in_use, reserved, limit, rounded):
    """DESIGN.md's rules, read for a BFC dump (docs/importers.md, "Cause")."""
    if rounded > limit:
        return "request-too-large"
    if in_use + rounded > limit:
        return "capacity"
    if limit - reserved >= rounded:
        return "backing"
    return "fragmentation"


def stats_lines(pairs):
    return [f"{key + ':':<20}{value:>20}" for key, value in pairs]


def partial_fixtures(rng, files):
    """Dumps of which only a part survived (issue #16 item 4). Each entry carries "partial": the
    case, and the facts the documented reading of a partial dump gives (docs/importers.md)."""
    # TF 2.2: the author cut the chunk list after the first region (its other regions, the summary
    # and total_region_allocated_bytes_ are gone); the Stats block counts the whole allocator. All
    # memory is in use and the limit is 153 B above it: capacity. The chunks left alone would say
    # backing (the limit far above the one region listed).
    regions = []
    address = 0x7F3A52000000
    for _ in range(3):
        sizes = [256 * rng.randint(64, 4096) for _ in range(rng.randint(6, 10))]
        regions.append((address, sizes))
        address += sum(sizes) + 32 * MiB
    in_use = sum(sum(sizes) for _, sizes in regions)
    limit = in_use + 153
    request = 115200  # prints as 112.5KiB
    listed = regions[0]
    lines = [f"2020-06-02 11:04:23.{100000 + i:06d}: I tensorflow/core/common_runtime/bfc_allocator.cc:{900 + i}] "
             for i in range(4)]
    out = [
        "2020-06-02 11:04:23.093713: W tensorflow/core/common_runtime/bfc_allocator.cc:424] Allocator (GPU_0_bfc) ran "
        f"out of memory trying to allocate {human(request)} (rounded to {request}).  Current allocation summary follows.",
        lines[0] + f"Bin for {human(request)} was 64.0KiB, Chunk State: ",
        lines[1] + f"Next region of size {sum(listed[1])}",
    ]
    a = listed[0]
    for i, size in enumerate(listed[1]):
        out.append(lines[2] + f"InUse at {a:x} next {i + 1} of size {size}")
        a += size
    out.append("[... a few thousand lines cut by the author ...]")
    out.append(lines[3] + "Stats: ")
    out += stats_lines([("Limit", limit), ("InUse", in_use), ("MaxInUse", in_use), ("NumAllocs", 5123),
                        ("MaxAllocSize", max(max(s) for _, s in regions))])
    listed_in_use = sum(listed[1])
    assert classify(in_use, in_use, limit, request) == "capacity"
    assert classify(listed_in_use, listed_in_use, limit, request) == "backing"
    files["tf22_cut_chunk_list.log"] = (out, [{
        "partial": "cut-chunk-list", "allocator": "GPU_0_bfc", "request": request, "rounded": request,
        "request_exact": False, "limit": limit, "chunks": len(listed[1]), "regions": 1,
        "listed_in_use": listed_in_use, "listed_reserved": listed_in_use,
        # Stats InUse; reserved not printed: at least in use (nothing free is listed).
        "in_use": in_use, "reserved": in_use, "free_in_regions": 0, "largest_free": 0,
        "live_requested": in_use, "cause": "capacity", "cause_if_chunks_only": "backing"}])

    # TF 0.8: no header; bins, "Bin for", the chunks (in use, then free), Stats, the bar, and only
    # then "Ran out of memory trying to allocate 29.91MiB.  See logs for memory state."
    st = State(rng, 0x703680000, 1, 20, 2 * MiB)
    f = st.facts()
    request = round256(f["largest_free"] + MiB)
    request = (request + MiB // 4 - 1) // (MiB // 4) * (MiB // 4)  # prints exactly ("X.25MiB")
    limit = f["reserved"] + request - 256  # the headroom one step short: fragmentation needs free > it
    cause = classify(f["in_use"], f["reserved"], limit, request)
    out = []
    src = "W tensorflow/core/common_runtime/bfc_allocator.cc"
    out.append(f"I tensorflow/core/common_runtime/bfc_allocator.cc:639] Bin (256): \tTotal Chunks: 0, Chunks in use: 0 "
               "0B allocated for chunks. 0B client-requested for chunks. 0B in use in bin. 0B client-requested in use in bin.")
    out.append(f"I tensorflow/core/common_runtime/bfc_allocator.cc:656] Bin for {human(request)} was "
               f"{human(bin_size(request))}, Chunk State: ")
    for address, size, used in st.chunks():
        if used:
            out.append(f"I tensorflow/core/common_runtime/bfc_allocator.cc:674] Chunk at 0x{address:x} of size {size}")
    for address, size, used in st.chunks():
        if not used:
            out.append(f"I tensorflow/core/common_runtime/bfc_allocator.cc:674] Free at 0x{address:x} of size {size}")
    out.append("I tensorflow/core/common_runtime/bfc_allocator.cc:689] Stats: ")
    out += stats_lines([("Limit", limit), ("InUse", f["in_use"]), ("MaxInUse", f["in_use"]),
                        ("NumAllocs", 3 * f["in_use_chunks"]), ("MaxAllocSize", 2 * MiB)])
    cells = round(100 * f["in_use"] / limit)
    out.append(f"{src}:270] " + "*" * cells + "_" * (100 - cells))
    out.append(f"{src}:271] Ran out of memory trying to allocate {human(request)}.  See logs for memory state.")
    out.append("W tensorflow/core/framework/op_kernel.cc:909] Resource exhausted: OOM when allocating tensor")
    files["tf08_oom_after_stats.log"] = (out, [dict(f, partial="oom-after-dump", allocator="", request=request,
                                                    rounded=request, request_exact=False, limit=limit, cause=cause,
                                                    free_in_regions=f["reserved"] - f["in_use"],
                                                    listed_in_use=f["in_use"], listed_reserved=f["reserved"],
                                                    live_requested=f["in_use"])])

    # A fragment pasted into an issue: "Bin for 8.49GiB was 256.00MiB" and a few chunks of one
    # region, no header and no Stats: the request is 8.49GiB as printed; no limit, cause unknown.
    printed = "8.49GiB"
    sizes = [256 * rng.randint(1, 64) for _ in range(5)]
    base = 0x7F1E2C000000
    out = ["2021-07-11 09:12:40.551021: I tensorflow/core/common_runtime/bfc_allocator.cc:1033] Bin for "
           f"{printed} was 256.00MiB, Chunk State: ",
           f"2021-07-11 09:12:40.551108: I tensorflow/core/common_runtime/bfc_allocator.cc:1046] Next region of size {sum(sizes)}"]
    a = base
    for i, size in enumerate(sizes):
        out.append(f"2021-07-11 09:12:40.551200: I tensorflow/core/common_runtime/bfc_allocator.cc:1066] InUse at "
                   f"{a:x} of size {size} next {i + 1}")
        a += size
    files["bin_for_fragment.log"] = (out, [{
        "partial": "bin-for", "allocator": "", "request": read_human(printed),
        "rounded": round256(read_human(printed)), "request_exact": False, "chunks": len(sizes), "regions": 1,
        "in_use": sum(sizes), "reserved": sum(sizes), "listed_in_use": sum(sizes), "listed_reserved": sum(sizes),
        "limit": 0, "cause": "unknown"}])

    # Only the Stats block survived (TF 2.x, 8 fields): in use, limit, reserved, largest free.
    limit = 15 * GiB + 256 * rng.randint(1, 1 << 20)
    in_use = limit - 256 * rng.randint(1 << 12, 1 << 16)
    reserved = in_use + 256 * rng.randint(1 << 10, 1 << 11)
    largest = (reserved - in_use) // 2 // 256 * 256
    out = ["Stats: "] + stats_lines([("Limit", limit), ("InUse", in_use), ("MaxInUse", in_use + 4096),
                                     ("NumAllocs", 91234), ("MaxAllocSize", 2 * GiB), ("Reserved", reserved),
                                     ("PeakReserved", reserved), ("LargestFreeBlock", largest)])
    files["stats_only_fragment.log"] = (out, [{
        "partial": "stats-only", "allocator": "", "chunks": 0, "regions": 0, "limit": limit, "in_use": in_use,
        "reserved": reserved, "largest_free": largest, "free_in_regions": reserved - in_use,
        "max_in_use": in_use + 4096}])

    # TensorFlow's pinned host memory pool ran out (cuda_host_bfc): a whole TF 2.x dump, capacity.
    st = State(rng, 0x7F9C00000000, 1, 12, 64 * KiB)
    request, limit = choose(st, "capacity")
    files["cuda_host_bfc.log"] = (
        render(st, request, limit, "tf115", allocator="cuda_host_bfc", ptr="bare"),
        [dict(expected(st, request, limit, "capacity", True, allocator="cuda_host_bfc"), partial="host-memory",
              listed_in_use=st.facts()["in_use"], listed_reserved=st.facts()["reserved"])])


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    rng = random.Random(20261123)
    files = {}

    def state(base, regions, chunks, max_chunk):
        return State(rng, base, regions, chunks, max_chunk)

    # TF 1.2 (2017): separate in-use / free loops, 0x pointers, no region lines (one region),
    # request as a human size only, 5-field Stats, "Free at" with one space.
    s = state(0x7F2C40000000, 1, 24, 64 * KiB)
    request, limit = choose(s, "fragmentation")
    request = round256(request + MiB)  # a size that prints exactly in MiB with two decimals
    request = (request + MiB // 4 - 1) // (MiB // 4) * (MiB // 4)
    limit = s.facts()["reserved"] + request - 256  # headroom one step short: still fragmentation
    files["tf12_separate_loops.log"] = (
        render(s, request, limit, "tf1", exact_header=False, interleaved=False, two_spaces=False),
        [expected(s, request, limit, "fragmentation", exact_header=False)])

    # TF 1.15 / 2.0 (2020): "InUse at 0x.. next N of size M", two regions, capacity.
    s = state(0x2303B60000, 2, 16, 128 * KiB)
    request, limit = choose(s, "capacity")
    files["tf115_next_before_size.log"] = (
        render(s, request, limit, "tf115", next_first=True),
        [expected(s, request, limit, "capacity", True)])

    # TF 2.4 (2021): bare lower-case pointers, "of size M next N", tabs after Bin, the summary line
    # twice, 8-field Stats, progress bars and other lines in between: backing.
    s = state(0xF00950000, 3, 12, 32 * KiB)
    request, limit = choose(s, "backing")
    files["tf24_bare_pointers_noise.log"] = (
        render(s, request, limit, "tf24", ptr="bare", bin_tab=True, stats8=True, double_summary=True,
               noise=True),
        [expected(s, request, limit, "backing", True, stats_fields=8)])

    # TF 2.x on Windows: upper-case 16-digit pointers, every line indented by a tab: fragmentation.
    s = state(0x81C56C700 // 256 * 256, 2, 20, 64 * KiB)
    request, limit = choose(s, "fragmentation")
    files["tf2_upper_pointers_indented.log"] = (
        render(s, request, limit, "tf24", ptr="upper", stats8=True, indent="\t"),
        [expected(s, request, limit, "fragmentation", True, stats_fields=8)])

    # Two dumps in one log (two GPUs), a request larger than the limit in the second.
    a = state(0x7F0000000000, 1, 10, 16 * KiB)
    ra, la = choose(a, "capacity")
    b = state(0x7F8000000000, 2, 8, 16 * KiB)
    rb, lb = choose(b, "request-too-large")
    files["two_dumps_two_devices.log"] = (
        render(a, ra, la, "tf115", ptr="bare") + ["training step 14: loss 0.52"] +
        render(b, rb, lb, "tf115", allocator="GPU_1_bfc", ptr="bare"),
        [expected(a, ra, la, "capacity", True), expected(b, rb, lb, "request-too-large", True, allocator="GPU_1_bfc")])

    # XLA / JAX: only the header and the occupancy bar survived; the exact request comes from the
    # "Out of memory while trying to allocate N bytes." line.
    exact = 1234567 * 256 + 17
    files["xla_header_only.log"] = ([
        "2024-05-28 07:02:44.349554: W external/tsl/tsl/framework/bfc_allocator.cc:482] Allocator "
        f"(GPU_0_bfc) ran out of memory trying to allocate {human(exact)} (rounded to {round256(exact)})"
        "requested by op ",
        "2024-05-28 07:02:44.350162: W external/tsl/tsl/framework/bfc_allocator.cc:494] " + "*" * 60 + "_" * 40,
        "E0528 07:02:44.350251   27487 pjrt_stream_executor_client.cc:2826] Execution of replica 0 failed: "
        f"RESOURCE_EXHAUSTED: Out of memory while trying to allocate {exact} bytes.",
    ], [{"allocator": "GPU_0_bfc", "request": exact, "rounded": round256(exact), "request_exact": True,
         "chunks": 0, "regions": 0, "header_only": True, "bar_in_use_cells": 60}])

    partial_fixtures(rng, files)

    facts = []
    for name, (lines, dumps) in sorted(files.items()):
        with open(os.path.join(out_dir, name), "w", newline="\n") as out:
            out.write("\n".join(lines) + "\n")
        facts.append({"file": name, "dumps": dumps})
    with open(os.path.join(out_dir, "expected.json"), "w") as out:
        json.dump(facts, out, indent=1, sort_keys=True)
        out.write("\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_tf_fixtures.py OUT_DIR")
    main(sys.argv[1])
