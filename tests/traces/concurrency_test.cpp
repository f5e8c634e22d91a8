// Several recorders at once, and processes that die while writing: a trace keeps every event that
// was recorded (or, for a killed process, every block that reached the file).
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "fragscope/traces/trace_reader.hpp"
#include "fragscope/traces/trace_writer.hpp"
#include "trace_test_support.hpp"

namespace fragscope::traces {
namespace {

using testing::TempDir;

TEST(Concurrency, FourThreadsRecordWithoutLoss) {
  TempDir dir;
  for (const bool background : {true, false}) {
    SCOPED_TRACE(background ? "background" : "foreground");
    const std::string path = dir.File("threads.fst");
    constexpr int kThreads = 4;
    constexpr std::uint64_t kPerThread = 50'000;
    {
      TraceWriter writer(path, TraceHeader{}, {.block_events = 1000, .background = background});
      std::vector<std::thread> threads;
      for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&writer, t] {
          const TagId mine = writer.Intern(fmt::format("thread {}", t));
          for (std::uint64_t i = 0; i < kPerThread; ++i) {
            Event e;
            e.type = EventType::kAlloc;
            e.device = static_cast<std::uint32_t>(t);
            e.thread = static_cast<std::uint32_t>(t);
            e.alloc_id = i;
            e.address = 0x1000 * i;
            e.size = i;
            e.tag = mine;
            if (i % 1000 == 0) e.tag = writer.Intern(fmt::format("thread {} step {}", t, i / 1000));
            writer.Record(e);
            if (i % 20000 == 0) writer.Flush();
          }
        });
      }
      for (auto& thread : threads) thread.join();
      writer.Close();
      EXPECT_EQ(writer.events_written(), kThreads * kPerThread);
    }
    const Trace trace = ReadTrace(path);
    EXPECT_TRUE(trace.warnings.empty());
    ASSERT_EQ(trace.events.size(), kThreads * kPerThread);
    std::vector<std::uint64_t> next(kThreads, 0);
    for (std::size_t i = 0; i < trace.events.size(); ++i) {
      const Event& e = trace.events[i];
      ASSERT_EQ(e.seq, i);
      ASSERT_LT(e.thread, static_cast<std::uint32_t>(kThreads));
      // Each thread's events appear in the order it recorded them, none missing.
      ASSERT_EQ(e.alloc_id, next[e.thread]++);
      const std::string tag = trace.TagName(e.tag);
      ASSERT_EQ(tag.rfind(fmt::format("thread {}", e.thread), 0), 0u) << tag;
    }
  }
}

// Runs `child` in a forked process and returns its wait status.
template <typename F>
int InChild(F child) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    child();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(Crash, ExitWithoutCloseKeepsEveryFlushedBlock) {
  TempDir dir;
  const std::string path = dir.File("exit.fst");
  const Trace trace = testing::AllocatorLikeTrace(1, 10'000);
  const int status = InChild([&] {
    TraceHeader header;
    header.producer = "child";
    TraceWriter writer(path, header, {.block_events = 1000});
    for (std::size_t i = 0; i < 3500; ++i) {
      Event e = trace.events[i];
      writer.Record(e);
    }
    writer.Flush();  // 4 blocks, the last one partial
    for (std::size_t i = 3500; i < 3900; ++i) {
      Event e = trace.events[i];
      writer.Record(e);
    }
    ::_exit(3);  // no Close, no destructors: the 400 buffered events are lost
  });
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 3);
  // Never closed, so never moved into place: the blocks are in the .partial file beside it.
  EXPECT_FALSE(std::filesystem::exists(path));
  const std::string partial = dir.PartialOf("exit.fst");
  ASSERT_FALSE(partial.empty());
  const Trace back = ReadTrace(partial);
  EXPECT_EQ(back.header.producer, "child");
  ASSERT_EQ(back.events.size(), 3500u);
  for (std::size_t i = 0; i < back.events.size(); ++i) ASSERT_EQ(back.events[i].seq, i);
  ASSERT_EQ(back.warnings.size(), 1u);
  EXPECT_NE(back.warnings[0].find("without an end-of-trace block"), std::string::npos) << back.warnings[0];
}

TEST(Crash, SigkillMidWriteLeavesAReadableFile) {
  TempDir dir;
  for (int round = 0; round < 5; ++round) {
    SCOPED_TRACE(round);
    const std::string path = dir.File("killed.fst");
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(pipe_fds[0]);
      TraceWriter writer(path, TraceHeader{}, {.block_events = 500});
      const TagId tag = writer.Intern("work");
      for (std::uint64_t i = 0;; ++i) {
        Event e;
        e.type = EventType::kAlloc;
        e.address = 0x7f0000000000ull + (i % 4096) * 512;
        e.size = 100 + i % 300;
        e.rounded = 512;
        e.alloc_id = i;
        e.tag = tag;
        writer.Record(e);
        if (i > 50'000'000) ::_exit(2);  // never reached unless the parent is gone
        if (i % 5000 == 4999) {
          writer.Flush();
          const std::uint64_t flushed = i + 1;
          if (::write(pipe_fds[1], &flushed, sizeof flushed) != sizeof flushed) ::_exit(1);
        }
      }
    }
    ::close(pipe_fds[1]);
    // Let it flush a few times, then kill it wherever it is.
    std::uint64_t flushed = 0;
    bool reads_ok = true;
    for (int k = 0; k < 3 + round && reads_ok; ++k) {
      reads_ok = ::read(pipe_fds[0], &flushed, sizeof flushed) == static_cast<ssize_t>(sizeof flushed);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100 * round));
    ::kill(pid, SIGKILL);
    EXPECT_TRUE(reads_ok);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(pipe_fds[0]);
    ASSERT_TRUE(WIFSIGNALED(status));

    EXPECT_FALSE(std::filesystem::exists(path));
    const std::string partial = dir.PartialOf("killed.fst");
    ASSERT_FALSE(partial.empty());
    const Trace back = ReadTrace(partial);
    std::filesystem::remove(partial);
    EXPECT_GE(back.events.size(), flushed);
    for (std::size_t i = 0; i < back.events.size(); ++i) {
      ASSERT_EQ(back.events[i].seq, i);
      ASSERT_EQ(back.events[i].alloc_id, i);
    }
    ASSERT_EQ(back.warnings.size(), 1u);  // truncated mid-block, or ended without the end block
  }
}

TEST(Crash, WriteErrorIsReportedByFlush) {
  // A file size limit makes writes fail with EFBIG once the trace passes 64 KiB.
  TempDir dir;
  const std::string path = dir.File("limited.fst");
  const int status = InChild([&] {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{64 << 10, 64 << 10};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(10);
    TraceWriter writer(path, TraceHeader{}, {.block_events = 1000, .compression_level = 1});
    std::mt19937_64 rng(1);
    for (int i = 0; i < 100'000; ++i) {
      Event e;
      e.type = EventType::kAlloc;
      e.address = rng() >> 2;  // incompressible, and the range stays inside 64 bits
      e.size = rng() >> 2;     // at most 4 EiB, the largest size a reader takes
      writer.Record(e);
    }
    try {
      writer.Flush();
      ::_exit(11);
    } catch (const TraceError& e) {
      const std::string what = e.what();
      if (what.find(path) == std::string::npos || what.find("write failed: File too large") == std::string::npos) {
        std::fprintf(stderr, "unexpected message: %s\n", e.what());
        ::_exit(12);
      }
    }
    try {
      writer.Close();
      ::_exit(13);
    } catch (const TraceError&) {
    }
    ::_exit(0);
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // The target was never replaced; what reached the disk is kept in the .partial file, and reads
  // back as complete blocks plus a truncation warning.
  EXPECT_FALSE(std::filesystem::exists(path));
  const std::string partial = dir.PartialOf("limited.fst");
  ASSERT_FALSE(partial.empty());
  const Trace back = ReadTrace(partial);
  EXPECT_GT(back.events.size(), 0u);
  EXPECT_EQ(back.warnings.size(), 1u);
}

}  // namespace
}  // namespace fragscope::traces
