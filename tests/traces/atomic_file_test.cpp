// AtomicFile: outputs replace their target only when complete, never overwrite an input, and name
// the file in every error.
#include "fragscope/traces/atomic_file.hpp"

#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "trace_test_support.hpp"

namespace fragscope::traces {
namespace {

namespace fs = std::filesystem;
using testing::ReadBytes;
using testing::TempDir;
using testing::WriteBytes;

std::string ReadText(const std::string& path) {
  const std::vector<std::uint8_t> bytes = ReadBytes(path);
  return {bytes.begin(), bytes.end()};
}

void WriteText(const std::string& path, const std::string& text) {
  WriteBytes(path, std::vector<std::uint8_t>(text.begin(), text.end()), text.size());
}

std::size_t FilesIn(const std::string& dir) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

TEST(AtomicFile, CommitReplacesTheTargetAndLeavesNothingElse) {
  TempDir dir;
  const std::string target = dir.File("out.txt");
  WriteText(target, "old contents");
  {
    AtomicFile file(target);
    file.Write("new ", 4);
    file.stream() << "contents " << 42;
    // Until Commit the target keeps its old bytes and the new ones sit in the .partial file.
    EXPECT_EQ(ReadText(target), "old contents");
    EXPECT_NE(file.writing_path().find(".partial"), std::string::npos);
    EXPECT_TRUE(fs::exists(file.writing_path()));
    file.Commit();
  }
  EXPECT_EQ(ReadText(target), "new contents 42");
  EXPECT_EQ(FilesIn(fs::path(target).parent_path().string()), 1u);
}

TEST(AtomicFile, WithoutCommitTheTargetIsUntouchedAndTheTemporaryFileRemoved) {
  TempDir dir;
  const std::string target = dir.File("out.txt");
  WriteText(target, "keep me");
  {
    AtomicFile file(target);
    file.Write("half a file", 11);
  }  // an exception on the way, say
  EXPECT_EQ(ReadText(target), "keep me");
  EXPECT_EQ(FilesIn(fs::path(target).parent_path().string()), 1u);
}

TEST(AtomicFile, RefusesAnOutputThatIsAnInput) {
  TempDir dir;
  const std::string input = dir.File("trace.fst");
  WriteText(input, "precious");
  const std::string link = dir.File("link.fst");
  fs::create_symlink(input, link);
  const std::string other_spelling = (fs::path(input).parent_path() / "." / "trace.fst").string();
  for (const std::string& target : {input, link, other_spelling}) {
    SCOPED_TRACE(target);
    try {
      AtomicFile file(target, {input});
      FAIL() << "accepted";
    } catch (const OutputError& error) {
      const std::string what = error.what();
      EXPECT_NE(what.find(target), std::string::npos) << what;
      EXPECT_NE(what.find("the output is the input"), std::string::npos) << what;
    }
  }
  // The reverse: the input given through the link.
  EXPECT_THROW(AtomicFile(input, {link}), OutputError);
  EXPECT_EQ(ReadText(input), "precious");
  // Standard input and unrelated files are no reason to refuse.
  EXPECT_NO_THROW(AtomicFile(dir.File("other.fst"), {"-", input}));
}

TEST(AtomicFile, WritingThroughALinkReplacesTheFileItPointsTo) {
  TempDir dir;
  const std::string real = dir.File("real.txt");
  const std::string link = dir.File("link.txt");
  WriteText(real, "before");
  fs::create_symlink(real, link);
  AtomicFile file(link);
  file.Write("after", 5);
  file.Commit();
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(ReadText(real), "after");
}

TEST(AtomicFile, ErrorsNameTheFile) {
  TempDir dir;
  const std::string folder = dir.File("");
  try {
    AtomicFile file(folder);
    FAIL() << "a directory was accepted";
  } catch (const OutputError& error) {
    EXPECT_NE(std::string(error.what()).find("is a directory"), std::string::npos) << error.what();
  }
  const std::string missing = dir.File("no/such/folder/out.txt");
  try {
    AtomicFile file(missing);
    FAIL() << "a missing folder was accepted";
  } catch (const OutputError& error) {
    EXPECT_NE(std::string(error.what()).find("no/such/folder/out.txt"), std::string::npos) << error.what();
  }
  EXPECT_THROW(AtomicFile(""), OutputError);
}

TEST(AtomicFile, AFullDeviceIsAnErrorNotASuccess) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  AtomicFile file("/dev/full");
  EXPECT_EQ(file.writing_path(), "/dev/full");  // a device is written in place
  const std::string data(100000, 'x');
  try {
    file.Write(data.data(), data.size());
    file.Commit();
    FAIL() << "writing to /dev/full succeeded";
  } catch (const OutputError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("/dev/full"), std::string::npos) << what;
    EXPECT_NE(what.find("No space left on device"), std::string::npos) << what;
  }
}

TEST(AtomicFile, AbandonKeepsWhatWasWritten) {
  TempDir dir;
  const std::string target = dir.File("trace.fst");
  AtomicFile file(target);
  file.Write("blocks", 6);
  file.Flush();
  const std::string kept = file.Abandon();
  EXPECT_FALSE(fs::exists(target));
  EXPECT_EQ(ReadText(kept), "blocks");
}

}  // namespace
}  // namespace fragscope::traces
