// Stacks for people: the user's frames first, framework internals folded (issue 17, item 5).
#include "fragscope/analysis/stack_view.hpp"

#include <gtest/gtest.h>

namespace fragscope::analysis {
namespace {

// The shape of a PyTorch snapshot's stack: C++ allocator frames, PyTorch's Python, the standard
// library, then the user's script, innermost first.
const std::string kStack =
    "??:0:torch::unwind::unwind()\n"
    "??:0:torch::CapturedTraceback::gather(bool, bool, bool)\n"
    "CUDACachingAllocator.cpp:1234:c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(int, unsigned long, CUstream_st*)\n"
    "/usr/lib/python3/dist-packages/torch/nn/modules/conv.py:456:_conv_forward\n"
    "/usr/lib/python3.11/contextlib.py:81:inner\n"
    "<frozen runpy>:88:_run_code\n"
    "/home/me/model.py:42:forward\n"
    "/home/me/.venv/lib/python3.11/site-packages/lightning/loop.py:7:run\n"
    "train.py:12:<module>\n";

TEST(StackView, UserFramesFirstInternalsFolded) {
  const StackView view = ViewStack(kStack, false, 12);
  EXPECT_TRUE(view.user_frames);
  EXPECT_EQ(view.frames, (std::vector<std::string>{"/home/me/model.py:42:forward",
                                                   "/home/me/.venv/lib/python3.11/site-packages/lightning/loop.py:7:run",
                                                   "train.py:12:<module>"}));
  EXPECT_EQ(view.total, 9u);
  EXPECT_EQ(view.hidden, 6u);
}

TEST(StackView, ShowAllAndLimits) {
  const StackView all = ViewStack(kStack, true, 4);
  EXPECT_FALSE(all.user_frames);
  ASSERT_EQ(all.frames.size(), 4u);
  EXPECT_EQ(all.frames[0], "??:0:torch::unwind::unwind()");
  EXPECT_EQ(all.hidden, 5u);
  const StackView two = ViewStack(kStack, false, 2);
  EXPECT_EQ(two.frames.size(), 2u);
  EXPECT_EQ(two.frames[0], "/home/me/model.py:42:forward");
  EXPECT_EQ(two.hidden, 7u);
}

TEST(StackView, NoUserFrameShowsTheInnermost) {
  const StackView view = ViewStack("??:0:a()\n??:0:b()\n/x/torch/f.py:1:g\n", false, 2);
  EXPECT_FALSE(view.user_frames);
  EXPECT_EQ(view.frames, (std::vector<std::string>{"??:0:a()", "??:0:b()"}));
  EXPECT_EQ(view.hidden, 1u);
  EXPECT_EQ(ViewStack("", false, 5).total, 0u);
}

TEST(StackView, TheFileIsBeforeTheLineNumber) {
  EXPECT_TRUE(IsUserFrame("train.py:12:<module>"));
  EXPECT_FALSE(IsUserFrame("??:0:torch::unwind::unwind()"));       // colons in the function
  EXPECT_FALSE(IsUserFrame("/a/torch/nn/functional.py:3:relu"));  // PyTorch's own Python
  EXPECT_FALSE(IsUserFrame("/usr/lib/python3.11/threading.py:9:run"));
  EXPECT_TRUE(IsUserFrame("/opt/lib/python3.11/site-packages/pkg/m.py:9:run"));
}

}  // namespace
}  // namespace fragscope::analysis
