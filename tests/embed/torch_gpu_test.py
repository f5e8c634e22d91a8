#!/usr/bin/env python3
"""The real thing: PyTorch on a GPU allocating through libfragscope_torch.so, then
`fragscope report` on the trace. Skips (exit 77) without PyTorch or without a GPU.

    torch_gpu_test.py LIBFRAGSCOPE_TORCH FRAGSCOPE_CLI EXAMPLE_SCRIPT WORKDIR
"""
import json
import os
import subprocess
import sys

SKIP = 77


def main():
    lib, cli, example, work = sys.argv[1:5]
    try:
        import torch  # noqa: F401
    except ImportError:
        print("SKIPPED: PyTorch is not installed")
        return SKIP
    if not torch.cuda.is_available():
        print("SKIPPED: PyTorch finds no CUDA GPU")
        return SKIP
    os.makedirs(work, exist_ok=True)
    trace = os.path.join(work, "torch.fst")
    env = dict(os.environ, FRAGSCOPE_TORCH_LIB=lib, FRAGSCOPE_TRACE=trace,
               FRAGSCOPE_ALLOC_CONF="backing=cuda,growth=on")
    # The allocator must be chosen before CUDA allocates anything: a fresh interpreter.
    subprocess.run([sys.executable, example], env=env, check=True)
    report = subprocess.run([cli, "report", trace, "--json"], capture_output=True, text=True)
    assert report.returncode in (0, 1), report.stderr
    document = json.loads(report.stdout)
    assert document["events"] > 0
    assert document["devices"][0]["peak_load"] > 0
    print(f"ok: {document['events']} events, peak LOAD {document['devices'][0]['peak_load']} B")
    return 0


if __name__ == "__main__":
    sys.exit(main())
