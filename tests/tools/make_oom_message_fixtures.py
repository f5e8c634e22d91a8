#!/usr/bin/env python3
"""Hand-made out-of-memory error messages, one (at least) per wording family, each inside a few
lines of invented log text, with the numbers each must yield and the cause they imply.

The script invents the figures of a failure (chosen, with a seeded generator, inside ranges that
give a wanted cause), prints them in the wording of one framework and era (the families of
../shared/data/oom_messages/SOURCES.md and docs/importers.md, "Out-of-memory error messages"),
reads the printed sizes back the way the parser does (1024-based units, the value as printed,
rounded to the nearest byte) and computes the cause with its own arithmetic by the decision rule of
SOURCES.md as docs/importers.md orders it. None of fragscope's code is used.

tests/import/oom_message_fixtures_test.cpp checks what traces::FindOomMessages reads (framework,
wording, every number, the count of messages); tests/analysis/message_fixtures_test.cpp checks that
analysis::DiagnoseMessage gives the cause computed here. An entry with "known_disagreement" is one
where the C++ is believed wrong; both tests skip it with the reason. Seeded: the same files every
run.

    python3 tests/tools/make_oom_message_fixtures.py tests/import/fixtures/oom_messages
"""
import json
import math
import os
import random
import sys
from fractions import Fraction

KiB, MiB, GiB, TiB = 1 << 10, 1 << 20, 1 << 30, 1 << 40

# The thresholds of the rule (docs/importers.md): memory outside the framework decides the cause
# at a third of the device and above a CUDA context's size; a request above 512 GiB is larger than
# any accelerator; an XLA program whose own buffers need less than 1 GiB cannot fill a GPU alone.
OUTSIDE_SHARE, OUTSIDE_FLOOR = Fraction(1, 3), 2 * GiB
LARGER_THAN_ANY_DEVICE = 512 * GiB
SMALL_PROGRAM = GiB

UNITS = {"bytes": 0, "B": 0, "KiB": 1, "MiB": 2, "GiB": 3, "TiB": 4, "KB": 1, "MB": 2, "GB": 3,
         "TB": 4, "K": 1, "M": 2, "G": 3, "T": 4}
DTYPE_SIZE = {"float": 4, "double": 8, "half": 2, "bfloat16": 2, "int32": 4, "int64": 8, "int8": 1}


# ---- sizes as printed and as read back ---------------------------------------------------------

class Size:
    """A printed size: its text, its value in bytes (nearest byte) and half a unit of its last digit."""

    def __init__(self, text):
        self.text = text
        number = text.rstrip("BbytesKMGTi ").strip() if not text.endswith("bytes") else text[:-5].strip()
        unit = text[len(number):].strip()
        scale = 1024 ** UNITS[unit]
        value = Fraction(number) * scale
        self.bytes = math.floor(value + Fraction(1, 2))
        decimals = len(number.split(".")[1]) if "." in number else 0
        self.tol = Fraction(scale, 2 * 10 ** decimals) if decimals or scale > 1 else Fraction(0)
        self.v = Fraction(self.bytes)


def exact(n):
    """A size printed in bytes ("4770354232 bytes", "(3206250496B)")."""
    return Size(f"{n} bytes")


def torch_size(n):
    """c10's format_size: bytes up to 1 KiB, then KiB, MiB, GiB with two decimals (upper bound inclusive)."""
    if n <= KiB:
        return Size(f"{n} bytes")
    if n <= MiB:
        return Size(f"{n / KiB:.2f} KiB")
    if n <= GiB:
        return Size(f"{n / MiB:.2f} MiB")
    return Size(f"{n / GiB:.2f} GiB")


def mps_size(n):
    """PyTorch's MPS message of 2023: the same two decimals, but written GB / MB (1024-based)."""
    t = torch_size(n).text
    return Size(t.replace("GiB", "GB").replace("MiB", "MB").replace("KiB", "KB"))


def human(n):
    """tsl's HumanReadableNumBytes (XLA statistics): B, one decimal for KiB, two above."""
    if n < KiB:
        return Size(f"{n}B")
    if n < MiB:
        return Size(f"{n / KiB:.1f}KiB")
    if n < GiB:
        return Size(f"{n / MiB:.2f}MiB")
    return Size(f"{n / GiB:.2f}GiB")


def short(n):
    """stream_executor / XLA:TPU short form: 32.00M, 1.52G, 0B."""
    if n < KiB:
        return Size(f"{n}B")
    if n < MiB:
        return Size(f"{n / KiB:.2f}K")
    if n < GiB:
        return Size(f"{n / MiB:.2f}M")
    return Size(f"{n / GiB:.2f}G")


# ---- the decision rule -------------------------------------------------------------------------

class Decide:
    """Comparisons of printed values: a margin within the rounding of the figures decides nothing,
    and a fixture must never depend on one (the script stops instead)."""

    def gt(self, a, b, what):
        margin = a.v - b.v
        tol = max(a.tol, b.tol)
        if abs(margin) <= tol:
            raise AssertionError(f"inconclusive comparison {what}: margin {float(margin)} within {float(tol)}")
        return margin > 0


class V:
    """A value (a sum or difference of printed ones) with the coarsest rounding of its parts."""

    def __init__(self, v, tol=Fraction(0)):
        self.v, self.tol = Fraction(v), Fraction(tol)

    def __add__(self, o):
        return V(self.v + o.v, max(self.tol, o.tol))

    def __sub__(self, o):
        return V(self.v - o.v, max(self.tol, o.tol))


def val(s):
    return None if s is None else V(s.v, s.tol)


def segment(r):
    """SOURCES.md: S = 2 MiB for R ≤ 1 MiB, 20 MiB below 10 MiB, else R rounded up to 2 MiB."""
    if r <= MiB:
        return 2 * MiB
    if r < 10 * MiB:
        return 20 * MiB
    return (r + 2 * MiB - 1) // (2 * MiB) * (2 * MiB)


def pytorch_cause(n, why):
    """The caching allocator's rule (SOURCES.md; order of docs/importers.md)."""
    d = Decide()
    R, T, F, A = val(n.get("request")), val(n.get("total")), val(n.get("free")), val(n.get("allocated"))
    Rv, U, W = val(n.get("reserved")), val(n.get("unallocated")), val(n.get("allowed"))
    if R is None:
        why.append("no sizes")
        return "unknown"
    if Rv is None and A is not None and U is not None:
        Rv = A + U  # 2.x: allocated by PyTorch + reserved but unallocated
    if U is None and Rv is not None and A is not None:
        U = Rv - A  # the reserved era
    S = V(segment(n["request"].bytes), R.tol)
    if T is not None and d.gt(R, T, "R > T"):
        why.append("R > T")
        return "request-too-large"
    if T is not None and ((A is not None and d.gt(A, T, "A > T")) or (Rv is not None and d.gt(Rv, T, "Rv > T"))):
        why.append("A or Rv > T: WDDM spill, not the card's memory")
        return "unknown"
    if W is not None:
        if d.gt(R, W, "R > allowed"):
            why.append("R > allowed")
            return "request-too-large"
        if Rv is not None and d.gt(Rv + S, W, "Rv + S > allowed"):
            why.append("Rv + S > allowed: capacity of the memory fraction")
            return "capacity"
    if F is None:
        held = Rv if Rv is not None else A if A is not None else V(0)
        if T is not None and d.gt(R + held, T, "R + Rv > T"):
            why.append("no free figure; R + Rv > T")
            return "capacity"
        why.append("no free figure; R + Rv <= T")
        return "unknown"
    if not d.gt(S, F, "S > F"):
        why.append("S <= F: a fresh segment fits in free (inconsistent)")
        return "unknown"
    if T is not None and Rv is not None:
        outside = T - F - Rv
        if outside.v >= OUTSIDE_SHARE * T.v and outside.v > OUTSIDE_FLOOR:
            why.append(f"outside = T - F - Rv = {float(outside.v) / GiB:.2f} GiB >= T/3 and > 2 GiB")
            return "backing"
    FU = F + (U if U is not None else V(0))
    if d.gt(R, FU, "R > F + U"):
        why.append("S > F; R > F + U")
        return "capacity"
    why.append("S > F; R <= F + U")
    return "fragmentation"


def async_cause(n, why):
    d = Decide()
    R, C, L, F = val(n["request"]), val(n["allocated"]), val(n["device_limit"]), val(n.get("free"))
    if d.gt(R, L, "R > L"):
        why.append("R > L")
        return "request-too-large"
    if d.gt(C + R, L, "C + R > L"):
        why.append("C + R > L")
        return "capacity"
    if F is None or not d.gt(R, F, "R > F"):
        why.append("R <= F or no F")
        return "unknown"
    why.append("C + R <= L, R > F: L - C - F held by no live tensor")
    return "backing"


def mps_cause(n, why):
    d = Decide()
    R, M, W = val(n["request"]), val(n["allocated"]), val(n["allowed"])
    O = val(n.get("other_allocations")) or V(0)
    if d.gt(R, W, "R > W"):
        why.append("R > W")
        return "request-too-large"
    if (M + O + R).v <= W.v:
        why.append("M + O + R <= W")
        return "unknown"
    if O.v >= OUTSIDE_SHARE * W.v and O.v > OUTSIDE_FLOOR:
        why.append("M + O + R > W; O >= W/3 and > 2 GiB")
        return "backing"
    why.append("M + O + R > W")
    return "capacity"


def xla_cause(n, why):
    R = n.get("request")
    if R is None:
        return "unknown"
    if R.bytes > LARGER_THAN_ANY_DEVICE:
        why.append("R > 512 GiB: larger than any device")
        return "request-too-large"
    total = n.get("xla.total")
    if total is not None:
        why.append(f"program total {total.text} {'>=' if total.bytes >= SMALL_PROGRAM else '<'} 1 GiB")
        return "capacity" if total.bytes >= SMALL_PROGRAM else "unknown"
    why.append("only the request")
    return "unknown"


def tpu_cause(n, why):
    d = Decide()
    used, cap, largest = n["tpu.used"], n["tpu.capacity"], n.get("tpu.largest_allocation")
    if largest is not None and largest.bytes > cap.bytes:
        why.append("largest allocation > capacity")
        return "request-too-large"
    if d.gt(val(used), val(cap), "used > capacity"):
        why.append("used > capacity")
        return "capacity"
    return "unknown"


def tf_cause(kind, n, why):
    d = Decide()
    R = n.get("request")
    if kind == "tf-host-alloc":
        why.append("pinned host memory, not device memory")
        return "backing"
    if R is None:
        return "unknown"
    if kind == "tf-tensor":
        why.append("only the tensor, not the pool")
        return "request-too-large" if R.bytes > LARGER_THAN_ANY_DEVICE else "unknown"
    T, F = n.get("total"), n.get("free")
    if T is None or F is None:
        why.append("no device totals")
        return "unknown"
    if d.gt(val(R), val(T), "R > T"):
        return "request-too-large"
    if not d.gt(val(R), val(F), "R > F"):
        why.append("R <= F: inconsistent")
        return "unknown"
    why.append("R > F: the rest of the device is held elsewhere")
    return "backing"


def cause_of(kind, n, why):
    if kind == "pytorch-caching":
        return pytorch_cause(n, why)
    if kind == "pytorch-async":
        return async_cause(n, why)
    if kind == "pytorch-mps":
        return mps_cause(n, why)
    if kind in ("xla-runtime", "xla-request"):
        return xla_cause(n, why)
    if kind == "xla-tpu-compile":
        return tpu_cause(n, why)
    if kind in ("tf-tensor", "tf-device-alloc", "tf-host-alloc"):
        return tf_cause(kind, n, why)
    why.append("no sizes")
    return "unknown"


# ---- surrounding log text ----------------------------------------------------------------------

def training_lines(rng, count):
    lines = []
    step = rng.randint(100, 9000)
    for _ in range(count):
        step += rng.randint(1, 50)
        loss = rng.uniform(0.2, 3.0)
        kind = rng.randint(0, 2)
        if kind == 0:
            lines.append(f"step {step} | loss {loss:.4f} | lr {rng.uniform(1e-5, 1e-3):.2e} | "
                         f"{rng.uniform(80, 400):.1f} samples/s")
        elif kind == 1:
            lines.append(f"Epoch {step // 500}: {rng.randint(1, 99)}%|####      | {step % 500}/500 "
                         f"[{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}<00:{rng.randint(10, 59)}, "
                         f"{rng.uniform(1, 9):.2f}it/s]")
        else:
            lines.append(f"INFO:root:saving checkpoint to runs/exp{rng.randint(1, 40)}/ckpt_{step}.pt")
    return lines


def torch_traceback(rng, last):
    file = rng.choice(["train.py", "main.py", "run_finetune.py"])
    return ["Traceback (most recent call last):",
            f'  File "{file}", line {rng.randint(40, 400)}, in <module>',
            "    main()",
            f'  File "{file}", line {rng.randint(40, 400)}, in main',
            "    loss.backward()",
            '  File "/opt/venv/lib/python3.10/site-packages/torch/_tensor.py", line 522, in backward',
            "    torch.autograd.backward(",
            last]


class Clock:
    """TensorFlow's log stamps, increasing: "2018-03-02 17:29:50.408721"."""

    def __init__(self, rng, date):
        self.rng, self.date = rng, date
        self.us = rng.randint(0, 20 * 3600) * 10 ** 6

    def __call__(self):
        self.us += self.rng.randint(200, 150000)
        s, us = divmod(self.us, 10 ** 6)
        return f"{self.date} {s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}.{us:06d}"


# ---- the fixtures ------------------------------------------------------------------------------

HINT_MAX_SPLIT = ("If reserved memory is >> allocated memory try setting max_split_size_mb to avoid "
                  "fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF")
HINT_21 = ("If reserved but unallocated memory is large try setting max_split_size_mb to avoid "
           "fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF")


def hint_22(env="PYTORCH_CUDA_ALLOC_CONF"):
    return (f"If reserved but unallocated memory is large try setting {env}=expandable_segments:True to "
            "avoid fragmentation.  See documentation for Memory Management  "
            "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")


def rand_bytes(rng, low, high, quantum=MiB):
    return rng.randint(low // quantum, high // quantum) * quantum


class Fixture:
    def __init__(self, name, family, lines, messages, want=None):
        self.name, self.family, self.lines, self.messages = name, family, lines, messages
        self.want = want  # the cause each message was designed for (checked against the rule)


def message(kind, framework, numbers=None, cause_want=None, **extra):
    numbers = {k: v for k, v in (numbers or {}).items() if v is not None}
    why = []
    cause = cause_of(kind, numbers, why)
    if cause_want is not None and cause != cause_want:
        raise AssertionError(f"{kind}: designed for {cause_want}, the rule gives {cause} ({why})")
    entry = {"kind": kind, "framework": framework, "cause": cause, "why": "; ".join(why),
             "numbers": {k: v.bytes for k, v in sorted(numbers.items())},
             "printed": {k: v.text for k, v in sorted(numbers.items())}}
    entry.update(extra)
    return entry


def caching_2x(R, T, F, A, U, processes=(), this_process=None, this_after=0, allowed=None, private=None,
               backend="CUDA", gpu=0, spelling="capacity", head="torch.OutOfMemoryError: ", tail=None):
    """The ≥ 2.1 wording; `spelling` "capacty" is 2.1's typo."""
    text = f"{head}{backend} out of memory. Tried to allocate {R.text}. GPU {gpu} has a total {spelling} of {T.text}"
    text += f" of which {F.text} is free." if F is not None else "."
    parts = [f"Process {pid} has {size.text} memory in use." for pid, size in processes]
    if this_process is not None:
        parts.insert(this_after, f"Including non-PyTorch memory, this process has {this_process.text} memory in use.")
    for p in parts:
        text += " " + p
    if allowed is not None:
        text += f" {allowed.text} allowed;"
    text += f" Of the allocated memory {A.text} is allocated by PyTorch,"
    if private is not None:
        graphs = "HIP Graphs" if backend == "HIP" else "CUDA Graphs"
        text += f" with {private.text} allocated in private pools (e.g., {graphs}),"
    text += f" and {U.text} is reserved by PyTorch but unallocated."
    text += " " + (tail if tail is not None else hint_22("PYTORCH_HIP_ALLOC_CONF" if backend == "HIP" else
                                                         "PYTORCH_CUDA_ALLOC_CONF"))
    return text


def fixtures(rng):
    out = []

    # -- PyTorch, legacy THC (≤ 0.3): THCudaCheck FAIL and the RuntimeError are one message.
    lines = training_lines(rng, 3)
    lines.append("THCudaCheck FAIL file=/pytorch/torch/lib/THC/generic/THCStorage.cu line=66 error=2 : out of memory")
    lines += torch_traceback(rng, "    variables, grad_variables, retain_graph)")[:-1]
    lines.append("RuntimeError: cuda runtime error (2) : out of memory at "
                 "/pytorch/torch/lib/THC/generic/THCStorage.cu:66")
    out.append(Fixture("pytorch_legacy_thc.log", "PyTorch legacy THC `cuda runtime error (2)`", lines,
                       [message("pytorch-legacy", "pytorch", cause_want="unknown")]))

    # -- PyTorch, `… cached)` era (≤ 1.3): fragmentation (S > F, R ≤ F + U).
    T = torch_size(rand_bytes(rng, 7 * GiB, 8 * GiB, 10 * MiB))
    A = torch_size(T.bytes - rand_bytes(rng, 700 * MiB, 900 * MiB))
    F = torch_size(rand_bytes(rng, 10 * MiB, 25 * MiB, KiB * 64))
    U = torch_size(rand_bytes(rng, 150 * MiB, 240 * MiB, KiB * 16))
    R = torch_size(rand_bytes(rng, 64 * MiB, 120 * MiB, 2 * MiB))
    lines = training_lines(rng, 4) + torch_traceback(rng, "    allow_unreachable=True)  # allow_unreachable flag")
    lines.append(f"RuntimeError: CUDA out of memory. Tried to allocate {R.text} (GPU 0; {T.text} total capacity; "
                 f"{A.text} already allocated; {F.text} free; {U.text} cached)")
    out.append(Fixture("pytorch_cached_era.log", "PyTorch `… cached)` era", lines, [message(
        "pytorch-caching", "pytorch", dict(request=R, total=T, free=F, allocated=A, unallocated=U),
        cause_want="fragmentation")]))

    # -- PyTorch, `reserved in total by PyTorch` era (1.4 – 1.12): capacity.
    T = torch_size(rand_bytes(rng, 10 * GiB, 11 * GiB, 10 * MiB))
    Rv = torch_size(T.bytes - rand_bytes(rng, 1200 * MiB, 1500 * MiB))
    A = torch_size(Rv.bytes - rand_bytes(rng, 200 * MiB, 350 * MiB))
    F = torch_size(rand_bytes(rng, 400 * MiB, 600 * MiB, 64 * KiB))
    R = torch_size(rand_bytes(rng, 1200 * MiB, 1900 * MiB, 2 * MiB))
    lines = training_lines(rng, 3) + torch_traceback(rng, "    Variable._execution_engine.run_backward(")
    lines.append(f"RuntimeError: CUDA out of memory. Tried to allocate {R.text} (GPU 0; {T.text} total capacity; "
                 f"{A.text} already allocated; {F.text} free; {Rv.text} reserved in total by PyTorch)")
    lines.append("wandb: Waiting for W&B process to finish... (failed 1).")
    out.append(Fixture("pytorch_reserved_era.log", "PyTorch `reserved in total by PyTorch` era", lines, [message(
        "pytorch-caching", "pytorch", dict(request=R, total=T, free=F, allocated=A, reserved=Rv),
        cause_want="capacity")]))

    # -- PyTorch 1.13 – 2.0, the max_split_size_mb hint: backing (most of the card is outside).
    T = torch_size(rand_bytes(rng, 23 * GiB, 24 * GiB, 10 * MiB))
    Rv = torch_size(rand_bytes(rng, 5 * GiB, 7 * GiB, 10 * MiB))
    A = torch_size(Rv.bytes - rand_bytes(rng, 100 * MiB, 300 * MiB))
    F = torch_size(rand_bytes(rng, 100 * MiB, 300 * MiB, 64 * KiB))
    R = torch_size(rand_bytes(rng, 400 * MiB, 900 * MiB, 2 * MiB))
    lines = training_lines(rng, 2) + torch_traceback(rng, "    return F.linear(input, self.weight, self.bias)")
    lines.append(f"torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate {R.text} (GPU 0; {T.text} "
                 f"total capacity; {A.text} already allocated; {F.text} free; {Rv.text} reserved in total by "
                 f"PyTorch) {HINT_MAX_SPLIT}")
    out.append(Fixture("pytorch_max_split_hint.log", "PyTorch max_split_size_mb hint era", lines, [message(
        "pytorch-caching", "pytorch", dict(request=R, total=T, free=F, allocated=A, reserved=Rv),
        cause_want="backing")]))

    # -- PyTorch 2.1, "total capacty": one request larger than the card.
    T = torch_size(12 * GiB - rand_bytes(rng, 0, 20 * MiB, 10 * MiB))
    F = torch_size(rand_bytes(rng, 8 * GiB, 10 * GiB, 10 * MiB))
    A = torch_size(rand_bytes(rng, 600 * MiB, 1000 * MiB, 16 * KiB))
    U = torch_size(rand_bytes(rng, 100 * MiB, 500 * MiB, 16 * KiB))
    R = torch_size(rand_bytes(rng, 30 * GiB, 60 * GiB, 10 * MiB))
    lines = training_lines(rng, 2) + [
        "  File \"render.py\", line 88, in forward",
        "    return torch.grid_sampler(input, grid, mode_enum, padding_mode_enum, align_corners)",
        "torch.cuda.OutOfMemoryError: " + caching_2x(R, T, F, A, U, spelling="capacty", head="", tail=HINT_21)]
    out.append(Fixture("pytorch_21_total_capacty.log", "PyTorch 2.1 \"total capacty\" typo", lines, [message(
        "pytorch-caching", "pytorch", dict(request=R, total=T, free=F, allocated=A, unallocated=U),
        cause_want="request-too-large")]))

    # -- PyTorch 2.1 typo with `Process N has` lines and "this process": backing.
    T = torch_size(79 * GiB + 154 * MiB)
    others = [(rng.randint(100000, 4000000), torch_size(rand_bytes(rng, 18 * GiB, 30 * GiB, 10 * MiB))),
              (rng.randint(100000, 4000000), torch_size(rand_bytes(rng, 8 * GiB, 12 * GiB, 10 * MiB)))]
    A = torch_size(rand_bytes(rng, 30 * GiB, 33 * GiB, 10 * MiB))
    U = torch_size(rand_bytes(rng, 300 * MiB, 600 * MiB, 16 * KiB))
    P = torch_size(A.bytes + U.bytes + rand_bytes(rng, 500 * MiB, 900 * MiB))
    F = torch_size(T.bytes - P.bytes - sum(s.bytes for _, s in others) - rand_bytes(rng, 100 * MiB, 200 * MiB))
    R = torch_size(F.bytes + rand_bytes(rng, 1 * GiB, 2 * GiB, 2 * MiB))
    text = caching_2x(R, T, F, A, U, processes=others, this_process=P, this_after=1, head="OutOfMemoryError: ",
                      spelling="capacty", backend="CUDA", tail=HINT_21)
    lines = training_lines(rng, 3) + torch_traceback(rng, text)
    out.append(Fixture("pytorch_21_processes.log", "PyTorch 2.1 with `Process N has … memory in use` lines",
                       lines, [message("pytorch-caching", "pytorch",
                                       dict(request=R, total=T, free=F, allocated=A, unallocated=U,
                                            process_total=P), cause_want="backing",
                                       other_processes=[[pid, s.bytes] for pid, s in others])]))

    # -- PyTorch ≥ 2.2 `torch.OutOfMemoryError`, "this process" between two other processes: backing.
    T = torch_size(23 * GiB + 655 * MiB)
    others = [(rng.randint(100000, 4000000), torch_size(rand_bytes(rng, 300 * MiB, 600 * MiB, 16 * KiB))),
              (rng.randint(100000, 4000000), torch_size(rand_bytes(rng, 12 * GiB, 14 * GiB, 10 * MiB)))]
    A = torch_size(rand_bytes(rng, 7 * GiB, 8 * GiB, 10 * MiB))
    U = torch_size(rand_bytes(rng, 30 * MiB, 60 * MiB, 16 * KiB))
    P = torch_size(A.bytes + U.bytes + rand_bytes(rng, 300 * MiB, 500 * MiB))
    F = torch_size(rand_bytes(rng, 40 * MiB, 80 * MiB, 64 * KiB))
    R = torch_size(rand_bytes(rng, 120 * MiB, 300 * MiB, 2 * MiB))
    text = caching_2x(R, T, F, A, U, processes=others, this_process=P, this_after=1)
    lines = training_lines(rng, 2) + [
        '  File "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1160, in convert',
        "    return t.to(device, dtype if t.is_floating_point() or t.is_complex() else None, non_blocking)",
        text]
    out.append(Fixture("pytorch_22_processes.log", "PyTorch ≥ 2.2 `torch.OutOfMemoryError`, process lines",
                       lines, [message("pytorch-caching", "pytorch",
                                       dict(request=R, total=T, free=F, allocated=A, unallocated=U,
                                            process_total=P), cause_want="backing",
                                       other_processes=[[pid, s.bytes] for pid, s in others])]))

    # -- PyTorch ≥ 2.2, "this process" only: fragmentation (R ≤ U, near capacity).
    T = torch_size(15 * GiB + 717 * MiB)
    A = torch_size(rand_bytes(rng, 14 * GiB + 400 * MiB, 14 * GiB + 800 * MiB, 10 * MiB))
    U = torch_size(rand_bytes(rng, 300 * MiB, 500 * MiB, 16 * KiB))
    P = torch_size(A.bytes + U.bytes + rand_bytes(rng, 200 * MiB, 400 * MiB))
    F = torch_size(rand_bytes(rng, 100 * MiB, 250 * MiB, 16 * KiB))
    R = torch_size(rand_bytes(rng, F.bytes + 20 * MiB, F.bytes + U.bytes - 20 * MiB, 2 * MiB))
    lines = training_lines(rng, 4) + torch_traceback(rng, caching_2x(R, T, F, A, U, this_process=P))
    out.append(Fixture("pytorch_22_fragmentation.log", "PyTorch ≥ 2.2 `Of the allocated memory`", lines, [message(
        "pytorch-caching", "pytorch", dict(request=R, total=T, free=F, allocated=A, unallocated=U, process_total=P),
        cause_want="fragmentation")]))

    # -- PyTorch ≥ 2.2 on Windows: allocated above the card (WDDM spill): unknown.
    T = torch_size(4 * GiB)
    A = torch_size(rand_bytes(rng, 6 * GiB, 7 * GiB, 10 * MiB))
    U = torch_size(rand_bytes(rng, 100 * MiB, 200 * MiB, 16 * KiB))
    R = torch_size(rand_bytes(rng, 12 * MiB, 40 * MiB, 2 * MiB))
    F = torch_size(0)
    lines = training_lines(rng, 2) + [
        "C:\\Users\\me\\ComfyUI\\python_embeded\\Lib\\site-packages\\torch\\nn\\modules\\conv.py:456: UserWarning: "
        "Plan failed with a cudnnException",
        "torch.cuda.OutOfMemoryError: " + caching_2x(R, T, F, A, U, head="")]
    out.append(Fixture("pytorch_22_wddm.log", "PyTorch ≥ 2.2, allocated above the card (WDDM)", lines, [message(
        "pytorch-caching", "pytorch", dict(request=R, total=T, free=F, allocated=A, unallocated=U),
        cause_want="unknown")]))

    # -- PyTorch ≥ 2.2: the fresh segment fits in free: unknown (inconsistent).
    T = torch_size(23 * GiB + 655 * MiB)
    A = torch_size(rand_bytes(rng, 15 * GiB, 17 * GiB, 10 * MiB))
    U = torch_size(rand_bytes(rng, 40 * MiB, 90 * MiB, 16 * KiB))
    P = torch_size(A.bytes + U.bytes + rand_bytes(rng, 300 * MiB, 500 * MiB))
    F = torch_size(rand_bytes(rng, 1 * GiB, 2 * GiB, 10 * MiB))
    R = torch_size(rand_bytes(rng, 100 * MiB, 500 * MiB, 2 * MiB))
    lines = training_lines(rng, 3) + torch_traceback(rng, caching_2x(R, T, F, A, U, this_process=P))
    out.append(Fixture("pytorch_22_fits_in_free.log", "PyTorch ≥ 2.2, the fresh segment fits in free", lines,
                       [message("pytorch-caching", "pytorch",
                                dict(request=R, total=T, free=F, allocated=A, unallocated=U, process_total=P),
                                cause_want="unknown")]))

    # -- `X allowed;` (a per-process memory fraction) on CUDA: capacity of the allowed share.
    T = torch_size(79 * GiB + 154 * MiB)
    W = torch_size(8 * GiB)
    A = torch_size(rand_bytes(rng, 7 * GiB + 700 * MiB, 7 * GiB + 800 * MiB, 10 * MiB))
    U = torch_size(rand_bytes(rng, 120 * MiB, 180 * MiB, 16 * KiB))
    F = torch_size(rand_bytes(rng, 60 * GiB, 70 * GiB, 10 * MiB))
    R = torch_size(rand_bytes(rng, 256 * MiB, 400 * MiB, 2 * MiB))
    lines = ["============================= test session starts ==============================",
             "collected 12 items", ""]
    lines.append("FAILED tests/test_memory_fraction.py::test_big_matmul - " +
                 caching_2x(R, T, F, A, U, allowed=W))
    out.append(Fixture("pytorch_allowed_fraction.log", "PyTorch `X allowed;` (memory fraction)", lines, [message(
        "pytorch-caching", "pytorch", dict(request=R, total=T, free=F, allocated=A, unallocated=U, allowed=W),
        cause_want="capacity")]))

    # -- Private pools (CUDA Graphs), inside a vLLM log line and a repr: fragmentation.
    T = torch_size(39 * GiB + 400 * MiB)
    A = torch_size(rand_bytes(rng, 35 * GiB, 36 * GiB, 10 * MiB))
    priv = torch_size(rand_bytes(rng, 20 * MiB, 300 * MiB, 16 * KiB))
    U = torch_size(rand_bytes(rng, 600 * MiB, 800 * MiB, 16 * KiB))
    P = torch_size(T.bytes - rand_bytes(rng, 5 * MiB, 15 * MiB, 64 * KiB))
    F = torch_size(rand_bytes(rng, 2 * MiB, 15 * MiB, 16 * KiB))
    R = torch_size(rand_bytes(rng, 64 * MiB, 256 * MiB, 2 * MiB))
    text = caching_2x(R, T, F, A, U, this_process=P, private=priv, head="")
    lines = [f"INFO 10-{rng.randint(10, 28)} 12:27:{rng.randint(10, 59)} model_runner.py:1335] Capturing the model "
             "for CUDA graphs. This may lead to unexpected consequences if the model is not static."]
    lines.append(f"ERROR 10-{rng.randint(10, 28)} 12:27:29 engine.py:157] OutOfMemoryError('{text}')")
    out.append(Fixture("pytorch_private_pools.log", "PyTorch private pools (CUDA Graphs)", lines, [message(
        "pytorch-caching", "pytorch", dict(request=R, total=T, free=F, allocated=A, unallocated=U,
                                           process_total=P, private_pools=priv), cause_want="fragmentation")]))

    # -- cudaMallocAsync: "would exceed allowed memory", aligned columns: backing.
    L = torch_size(23 * GiB + 706 * MiB)
    C = torch_size(rand_bytes(rng, 5 * GiB, 8 * GiB, 10 * MiB))
    R = torch_size(rand_bytes(rng, 200 * MiB, 900 * MiB, 2 * MiB))
    F = torch_size(rand_bytes(rng, 1 * MiB, 20 * MiB, 16 * KiB))
    lines = training_lines(rng, 2) + [
        "torch.cuda.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out of memory)",
        f"Currently allocated     : {C.text}",
        f"Requested               : {R.text}",
        f"Device limit            : {L.text}",
        f"Free (according to CUDA): {F.text}",
        "PyTorch limit (set by user-supplied memory fraction)",
        "                        : 17179869184.00 GiB",
        "Prompt executed in 3.41 seconds"]
    out.append(Fixture("pytorch_async.log", "PyTorch cudaMallocAsync \"would exceed allowed memory\"", lines,
                       [message("pytorch-async", "pytorch",
                                dict(request=R, allocated=C, device_limit=L, free=F), cause_want="backing")]))

    # -- MPS (GiB units): capacity.
    W = torch_size(18 * GiB + 133 * MiB)
    M = torch_size(rand_bytes(rng, 14 * GiB, 16 * GiB, 10 * MiB))
    O = torch_size(rand_bytes(rng, 1 * MiB, 10 * MiB, 16 * KiB))
    R = torch_size(rand_bytes(rng, 3 * GiB, 6 * GiB, 10 * MiB))
    lines = training_lines(rng, 2) + [
        f"RuntimeError: MPS backend out of memory (MPS allocated: {M.text}, other allocations: {O.text}, max "
        f"allowed: {W.text}). Tried to allocate {R.text} on private pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 "
        "to disable upper limit for memory allocations (may cause system failure)."]
    out.append(Fixture("pytorch_mps.log", "PyTorch on MPS", lines, [message(
        "pytorch-mps", "pytorch", dict(request=R, allocated=M, other_allocations=O, allowed=W),
        cause_want="capacity")]))

    # -- MPS, 2023 wording in "GB"/"MB" (1024-based): other Metal memory decides it: backing.
    W = torch_size(32 * GiB)
    O = mps_size(rand_bytes(rng, 20 * GiB, 24 * GiB, 10 * MiB))
    M = mps_size(W.bytes - O.bytes - rand_bytes(rng, 50 * MiB, 100 * MiB))
    W = mps_size(W.bytes)
    R = mps_size(rand_bytes(rng, 200 * MiB, 400 * MiB, 2 * MiB))
    lines = ["Loading pipeline components...: 100%|##########| 7/7 [00:03<00:00,  2.01it/s]",
             f"MPS backend out of memory (MPS allocated: {M.text}, other allocations: {O.text}, max allowed: "
             f"{W.text}). Tried to allocate {R.text} on private pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to "
             "disable upper limit for memory allocations (may cause system failure)."]
    out.append(Fixture("pytorch_mps_gb_units.log", "PyTorch on MPS (GB units)", lines, [message(
        "pytorch-mps", "pytorch", dict(request=R, allocated=M, other_allocations=O, allowed=W),
        cause_want="backing")]))

    # -- XPU, 2.8 wording with free and `empty_cache`: the request fits in free: unknown.
    T = torch_size(15 * GiB + 113 * MiB)
    F = torch_size(rand_bytes(rng, 12 * GiB, 14 * GiB, 10 * MiB))
    R = torch_size(rand_bytes(rng, 4 * GiB, 8 * GiB, 1 * GiB))
    Z = torch_size(0)
    lines = ["Traceback (most recent call last):", '  File "<stdin>", line 1, in <module>',
             caching_2x(R, T, F, Z, Z, backend="XPU", tail="Please use `empty_cache` to release all unoccupied "
                        "cached memory.")]
    out.append(Fixture("pytorch_xpu.log", "PyTorch on XPU", lines, [message(
        "pytorch-caching", "pytorch", dict(request=R, total=T, free=F, allocated=Z, unallocated=Z),
        cause_want="unknown")]))

    # -- HIP / ROCm: capacity.
    T = torch_size(63 * GiB + 1000 * MiB)
    A = torch_size(rand_bytes(rng, 61 * GiB, 62 * GiB, 10 * MiB))
    U = torch_size(rand_bytes(rng, 200 * MiB, 400 * MiB, 16 * KiB))
    F = torch_size(T.bytes - A.bytes - U.bytes - rand_bytes(rng, 600 * MiB, 900 * MiB))
    R = torch_size(F.bytes + U.bytes + rand_bytes(rng, 200 * MiB, 600 * MiB, 2 * MiB))
    lines = training_lines(rng, 3) + torch_traceback(rng, caching_2x(R, T, F, A, U, backend="HIP"))
    out.append(Fixture("pytorch_hip.log", "PyTorch on HIP / ROCm", lines, [message(
        "pytorch-caching", "pytorch", dict(request=R, total=T, free=F, allocated=A, unallocated=U),
        cause_want="capacity")]))

    # -- Two ranks of one DDP job in one log, each its own message: fragmentation and capacity.
    T = torch_size(79 * GiB + 154 * MiB)
    msgs, lines = [], training_lines(rng, 2)
    for rank, want in ((0, "fragmentation"), (1, "capacity")):
        A = torch_size(rand_bytes(rng, 74 * GiB, 76 * GiB, 10 * MiB))
        U = torch_size(rand_bytes(rng, 1 * GiB, 2 * GiB, 16 * KiB))
        P = torch_size(A.bytes + U.bytes + rand_bytes(rng, 500 * MiB, 800 * MiB))
        F = torch_size(rand_bytes(rng, 100 * MiB, 300 * MiB, 64 * KiB))
        R = torch_size(rand_bytes(rng, 400 * MiB, 900 * MiB, 2 * MiB) if want == "fragmentation"
                       else U.bytes + F.bytes + rand_bytes(rng, 200 * MiB, 900 * MiB, 2 * MiB))
        lines.append(f"[rank{rank}]: Traceback (most recent call last):")
        lines.append(f"[rank{rank}]:   File \"train_ddp.py\", line 211, in <module>")
        lines.append(f"[rank{rank}]: " + caching_2x(R, T, F, A, U, this_process=P, gpu=rank))
        msgs.append(message("pytorch-caching", "pytorch",
                            dict(request=R, total=T, free=F, allocated=A, unallocated=U, process_total=P),
                            cause_want=want))
    lines.append("W0312 10:02:11.123000 140 torch/distributed/elastic/multiprocessing/api.py:858] Sending process "
                 "4121 closing signal SIGTERM")
    out.append(Fixture("pytorch_ddp_two_ranks.log", "PyTorch ≥ 2.2, two messages in one log", lines, msgs))

    # -- JAX / XLA runtime, RESOURCE_EXHAUSTED with BufferAssignment statistics: capacity.
    param = human(rand_bytes(rng, 200 * MiB, 500 * MiB, KiB))
    const = human(rand_bytes(rng, 10 * KiB, 90 * KiB, 512))
    out_ = human(rand_bytes(rng, 6 * GiB, 10 * GiB, MiB))
    temp_bytes = rand_bytes(rng, 3 * GiB, 5 * GiB, 256)
    temp = human(temp_bytes)
    total = human(param.bytes + const.bytes + out_.bytes + temp.bytes)
    frag = human(rand_bytes(rng, 100 * MiB, 700 * MiB, KiB))
    pct = 100 * frag.bytes / total.bytes
    R = exact(temp_bytes)
    lines = [
        "I0000 00:00:1698830000.123456   42 service.cc:145] XLA service 0x55d1 initialized for platform CUDA",
        '  File "/opt/venv/lib/python3.10/site-packages/jax/_src/interpreters/pxla.py", line 1229, in __call__',
        "    results = self.xla_executable.execute_sharded(input_bufs)",
        f"jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
        f"{temp_bytes} bytes.",
        "BufferAssignment OOM Debugging.",
        "BufferAssignment stats:",
        f"             parameter allocation: {param.text:>10}",
        f"              constant allocation: {const.text:>10}",
        f"        maybe_live_out allocation: {out_.text:>10}",
        f"     preallocated temp allocation: {temp.text:>10}",
        f"                 total allocation: {total.text:>10}",
        f"              total fragmentation: {frag.text:>10} ({pct:.2f}%)"]
    out.append(Fixture("jax_buffer_assignment.log", "JAX/XLA RESOURCE_EXHAUSTED with BufferAssignment statistics",
                       lines, [message("xla-runtime", "jax", {
                           "request": R, "xla.parameter": param, "xla.constant": const,
                           "xla.maybe_live_out": out_, "xla.preallocated_temp": temp, "xla.total": total,
                           "xla.fragmentation": frag}, cause_want="capacity")]))

    # -- JAX, 2021 wording: a request larger than any device.
    R = exact(rng.randint(6, 12) * TiB)
    lines = ["--> 357   out_bufs = compiled.execute(input_bufs)",
             "    358   check_special(prim, out_bufs)", "",
             f"RuntimeError: Resource exhausted: Out of memory while trying to allocate {R.bytes} bytes.: while "
             "running replica 0 and partition 0 of a replicated computation (other replicas may have failed as well)."]
    out.append(Fixture("jax_huge_request.log", "JAX/XLA `Resource exhausted` (2021), impossible request", lines,
                       [message("xla-runtime", "jax", {"request": R}, cause_want="request-too-large")]))

    # -- JAX / PJRT request: only the request: unknown.
    n = rand_bytes(rng, 1 * GiB, 3 * GiB, 256)
    R = exact(n)
    lines = ["2024-06-19 10:11:12,345 INFO Starting inference", "Original error: RESOURCE_EXHAUSTED: Failed to "
             f"allocate request for {human(n).text} ({n}B) on device ordinal 0"]
    out.append(Fixture("jax_pjrt_request.log", "JAX/PJRT `Failed to allocate request for`", lines,
                       [message("xla-request", "jax", {"request": R}, cause_want="unknown")]))

    # -- XLA:TPU compile-time hbm: capacity.
    cap = short(rand_bytes(rng, 15 * GiB, 16 * GiB, 10 * MiB))
    program = short(cap.bytes + rand_bytes(rng, 3 * GiB, 8 * GiB, 10 * MiB))
    used = program
    exceeded = short(used.bytes - cap.bytes)
    reserved = short(rand_bytes(rng, 500 * MiB, 600 * MiB, 10 * MiB))
    args = short(0)
    total_usage = short(reserved.bytes + program.bytes)
    lines = ["I0312 09:10:11.000000 140 tpu_compile_op_common.cc:245] Compilation of train_step started.",
             "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out "
             f"of memory in memory space hbm. Used {used.text} of {cap.text} hbm. Exceeded hbm capacity by "
             f"{exceeded.text}.", "",
             f"Total hbm usage >= {total_usage.text}:",
             f"    reserved        {reserved.text}",
             f"    program          {program.text}",
             f"    arguments            {args.text}"]
    out.append(Fixture("tpu_hbm_compile.log", "XLA:TPU compile-time hbm", lines, [message(
        "xla-tpu-compile", "jax", {"tpu.used": used, "tpu.capacity": cap, "tpu.exceeded": exceeded,
                                   "tpu.total_usage": total_usage, "tpu.reserved": reserved,
                                   "tpu.program": program, "tpu.arguments": args}, cause_want="capacity")]))

    # -- TensorFlow tensor, graph mode: shape × float.
    shape = [rng.choice([32, 64, 128]), rng.choice([128, 256, 512]), rng.choice([28, 56]), rng.choice([28, 56])]
    R = exact(math.prod(shape) * DTYPE_SIZE["float"])
    lines = [f"{Clock(rng, '2019-10-11')()}: I tensorflow/core/common_runtime/bfc_allocator.cc:818] total_region_"
             "allocated_bytes_: 7967801344 memorylimit_: 7967801344 available bytes: 0 curr_region_allocation_"
             "bytes_: 15935602688",
             "ResourceExhaustedError: OOM when allocating tensor with shape["
             f"{','.join(map(str, shape))}] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by "
             "allocator GPU_0_bfc",
             "\t [[Node: conv3/Conv2D = Conv2D[T=DT_FLOAT, data_format=\"NHWC\", padding=\"SAME\", "
             "strides=[1, 1, 1, 1], use_cudnn_on_gpu=true, _device=\"/job:localhost/replica:0/task:0/device:GPU:0\"]"
             "(conv2/Relu, conv3/weights/read)]]",
             "Hint: If you want to see a list of allocated tensors when OOM happens, add report_tensor_allocations_"
             "upon_oom to RunOptions for current allocation info."]
    out.append(Fixture("tf_tensor_float.log", "TensorFlow `OOM when allocating tensor with shape[…] and type "
                       "float`", lines, [message("tf-tensor", "tensorflow", {"request": R}, cause_want="unknown",
                                                 tensor_shape=shape, tensor_dtype="float")]))

    # -- TensorFlow tensor, eager, half precision.
    shape = [rng.choice([8, 16]), rng.choice([1024, 2048]), rng.choice([4096, 8192])]
    R = exact(math.prod(shape) * DTYPE_SIZE["half"])
    lines = ["Epoch 1/20",
             "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with "
             f"shape[{','.join(map(str, shape))}] and type half on /job:localhost/replica:0/task:0/device:GPU:0 by "
             "allocator GPU_0_bfc [Op:MatMul]"]
    out.append(Fixture("tf_tensor_eager_half.log", "TensorFlow tensor, eager, type half", lines, [message(
        "tf-tensor", "tensorflow", {"request": R}, cause_want="unknown", tensor_shape=shape, tensor_dtype="half")]))

    # -- TensorFlow stream_executor "failed to allocate" with Total/Free and the ×0.9 cascade: backing.
    T = Size(f"{rand_bytes(rng, 10 * GiB, 11 * GiB, 10 * MiB) / GiB:.2f}GiB")
    F = Size(f"{rand_bytes(rng, 2 * GiB, 4 * GiB, 10 * MiB) / GiB:.2f}GiB")
    first = rand_bytes(rng, 9 * GiB, 10 * GiB, 256)
    first = min(first, T.bytes - 64 * MiB)
    attempts = [first]
    for _ in range(2):
        attempts.append(int(attempts[-1] * 0.9) // 256 * 256)
    assert attempts[-1] > F.bytes + 64 * MiB
    stamp = Clock(rng, "2018-03-02")
    lines = [f"{stamp()}: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1212] Found device 0 with "
             "properties: ",
             "name: GeForce GTX 1080 Ti major: 6 minor: 1 memoryClockRate(GHz): 1.582",
             "pciBusID: 0000:02:00.0",
             f"totalMemory: {T.text} freeMemory: {F.text}".replace("totalMemory", "Total memory").replace(
                 " freeMemory", "\nFree memory")]
    lines = lines[:-1] + lines[-1].split("\n")
    lines.append(f"{stamp()}: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1312] Adding visible "
                 "gpu devices: 0")
    for a in attempts:
        lines.append(f"{stamp()}: E tensorflow/stream_executor/cuda/cuda_driver.cc:936] failed to "
                     f"allocate {short(a).text} ({a} bytes) from device: CUDA_ERROR_OUT_OF_MEMORY")
    out.append(Fixture("tf_device_alloc_cascade.log", "TensorFlow `failed to allocate … CUDA_ERROR_OUT_OF_MEMORY`, "
                       "×0.9 retries", lines, [message("tf-device-alloc", "tensorflow",
                                                       {"request": exact(attempts[0]), "total": T, "free": F},
                                                       cause_want="backing", attempts=attempts)]))

    # -- TensorFlow stream_executor short form, no totals: unknown.
    a = rand_bytes(rng, 64 * MiB, 256 * MiB, 256)
    lines = training_lines(rng, 1) + [
        f"{Clock(rng, '2017-09-13')()}: E tensorflow/stream_executor/cuda/cuda_driver.cc:893] failed to "
        f"allocate {short(a).text} ({a} bytes) from device: CUDA_ERROR_OUT_OF_MEMORY"]
    out.append(Fixture("tf_device_alloc_short.log", "TensorFlow `failed to allocate`, no totals", lines, [message(
        "tf-device-alloc", "tensorflow", {"request": exact(a)}, cause_want="unknown", attempts=[a])]))

    # -- TensorFlow pinned host memory, ×0.9 cascade: backing (host memory).
    attempts = [rand_bytes(rng, 500 * MiB, 900 * MiB, 256)]
    for _ in range(2):
        attempts.append(int(attempts[-1] * 0.9) // 256 * 256)
    stamp = Clock(rng, "2022-07-03")
    lines = training_lines(rng, 1)
    for a in attempts:
        lines.append(f"{stamp()}: E tensorflow/stream_executor/cuda/cuda_driver.cc:802] failed to alloc "
                     f"{a} bytes on host: CUDA_ERROR_OUT_OF_MEMORY: out of memory")
        lines.append(f"{stamp()}: W tensorflow/core/common_runtime/device/device_host_allocator.h:46] "
                     f"could not allocate pinned host memory of size: {a}")
    out.append(Fixture("tf_pinned_host.log", "TensorFlow pinned host memory", lines, [message(
        "tf-host-alloc", "tensorflow", {"request": exact(attempts[0])}, cause_want="backing", attempts=attempts)]))

    # -- Raw CUDA (PyTorch 1.10-era text): unknown.
    lines = training_lines(rng, 2) + torch_traceback(rng, "    return F.conv2d(input, weight, bias, self.stride,")
    lines += ["RuntimeError: CUDA error: out of memory",
              "CUDA kernel errors might be asynchronously reported at some other API call,so the stacktrace below "
              "might be incorrect.",
              "For debugging consider passing CUDA_LAUNCH_BLOCKING=1."]
    out.append(Fixture("cuda_raw.log", "raw CUDA `CUDA error: out of memory`", lines,
                       [message("cuda-raw", "pytorch", cause_want="unknown")]))

    # -- cuBLAS: unknown.
    lines = training_lines(rng, 2) + [
        "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
        "Exception raised from createCublasHandle at ../aten/src/ATen/cuda/CublasHandlePool.cpp:8 (most recent "
        "call first):",
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x42 (0x7f3a2c1d4d62 in "
        "/opt/venv/lib/python3.8/site-packages/torch/lib/libc10.so)"]
    out.append(Fixture("cublas_alloc_failed.log", "cuBLAS `CUBLAS_STATUS_ALLOC_FAILED`", lines,
                       [message("cublas", "pytorch", cause_want="unknown")]))

    # -- cuDNN (MXNet): unknown.
    lines = [f"[{rng.randint(10, 23)}:{rng.randint(10, 59)}:{rng.randint(10, 59)}] src/io/iter_image_recordio_2.cc:"
             "178: ImageRecordIOParser2: data/train.rec, use 4 threads for decoding..",
             f"mxnet.base.MXNetError: [{rng.randint(10, 23)}:{rng.randint(10, 59)}:{rng.randint(10, 59)}] "
             "src/operator/nn/./cudnn/cudnn_convolution-inl.h:875: Check failed: e == CUDNN_STATUS_SUCCESS (2 vs. 0) "
             "cuDNN: CUDNN_STATUS_ALLOC_FAILED"]
    out.append(Fixture("cudnn_alloc_failed.log", "cuDNN `CUDNN_STATUS_ALLOC_FAILED`", lines,
                       [message("cudnn", "mxnet", cause_want="unknown")]))
    return out


def main(out_dir):
    rng = random.Random(20260312)
    os.makedirs(out_dir, exist_ok=True)
    facts = []
    for f in fixtures(rng):
        with open(os.path.join(out_dir, f.name), "w", newline="\n") as out:
            out.write("\n".join(f.lines) + "\n")
        facts.append({"file": f.name, "family": f.family, "messages": f.messages})
    names = [f["file"] for f in facts]
    assert len(names) == len(set(names))
    with open(os.path.join(out_dir, "expected.json"), "w") as out:
        json.dump(sorted(facts, key=lambda f: f["file"]), out, indent=1, sort_keys=True, ensure_ascii=False)
        out.write("\n")
    counts = {}
    for f in facts:
        for m in f["messages"]:
            counts[m["cause"]] = counts.get(m["cause"], 0) + 1
    print(f"{len(facts)} files, {sum(counts.values())} messages: " +
          ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_oom_message_fixtures.py OUT_DIR")
    main(sys.argv[1])
