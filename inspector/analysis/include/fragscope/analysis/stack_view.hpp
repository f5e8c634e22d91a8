// A call stack for people. PyTorch records dozens of frames per allocation, the innermost of them the
// allocator's own C++ (unwind, CapturedTraceback, CUDACachingAllocator::malloc) and PyTorch's Python;
// what a user needs is their own code. The view keeps the user's frames, innermost first, and folds
// the rest into a count (all frames on request). GUI-free: the inspector draws it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace fragscope::analysis {

struct StackView {
  std::vector<std::string> frames;  // shown, innermost first ("file:line:function")
  std::size_t hidden = 0;           // frames left out (framework internals, or past max_frames)
  std::size_t total = 0;            // frames in the stack
  bool user_frames = false;         // the frames shown are the user's own (else the innermost ones)
};

// Whether a "file:line:function" frame is the user's own code: a Python file outside PyTorch
// (no "/torch/"), outside the Python standard library (a "/lib/python" path not under
// site-packages or dist-packages) and not frozen ("<frozen ...>").
bool IsUserFrame(std::string_view frame);

// `stack`: frames one per line, innermost first (traces' stack format). With `show_all`, the first
// `max_frames` frames whatever they are; else the user's frames (at most `max_frames`), or the
// innermost frames when the stack has none of the user's.
StackView ViewStack(std::string_view stack, bool show_all, std::size_t max_frames);

}  // namespace fragscope::analysis
