"""A few training steps of a small PyTorch model with fragscope as the CUDA allocator.

    export FRAGSCOPE_TORCH_LIB=/usr/local/lib/libfragscope_torch.so  # where fragscope is installed
    export FRAGSCOPE_ALLOC_CONF=backing=cuda,growth=on,gc=on          # any fragscope configuration
    export FRAGSCOPE_TRACE=run.fst                                    # optional: record every event
    python torch_fragscope.py
    fragscope report run.fst                                          # peaks, overhead, OOMs explained
    fragscope view run.fst                                            # the inspector

tests/embed/torch_gpu_test.py runs this file where a GPU and PyTorch are present.
"""
import ctypes
import os

import torch

lib = os.environ.get("FRAGSCOPE_TORCH_LIB", "libfragscope_torch.so")
# Before anything is allocated on the GPU: PyTorch cannot switch allocators afterwards.
allocator = torch.cuda.memory.CUDAPluggableAllocator(
    lib, "fragscope_torch_malloc", "fragscope_torch_free")
torch.cuda.memory.change_current_allocator(allocator)
fragscope = ctypes.CDLL(lib)  # the same library, for step markers in the trace

model = torch.nn.Sequential(
    torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 10)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
for step in range(5):
    fragscope.fragscope_torch_mark(0, f"step {step} begin".encode())
    batch = torch.randn(256 * (1 + step % 2), 1024, device="cuda")  # batch sizes vary
    loss = torch.nn.functional.cross_entropy(
        model(batch), torch.randint(0, 10, (batch.shape[0],), device="cuda"))
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
torch.cuda.synchronize()
print(f"loss {loss.item():.4f}")  # the trace is flushed when Python exits
