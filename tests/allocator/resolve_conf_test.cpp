// Which configuration a program runs with: --alloc-conf when given (not blank), else
// FRAGSCOPE_ALLOC_CONF (not blank), else the defaults; errors name where the text came from.
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/size.hpp"

namespace fragscope {
namespace {

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// ---------------------------------------------------------------------------------------------
// Resolution: command line, then FRAGSCOPE_ALLOC_CONF, then defaults

// Sets or unsets FRAGSCOPE_ALLOC_CONF for one test and restores it afterwards.
class ScopedEnv {
 public:
  explicit ScopedEnv(const char* value) {
    if (const char* old = std::getenv(kAllocConfEnv)) saved_ = old;
    Set(value);
  }
  ~ScopedEnv() { Set(saved_ ? saved_->c_str() : nullptr); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  static void Set(const char* value) {
    if (value != nullptr) {
      ::setenv(kAllocConfEnv, value, 1);
    } else {
      ::unsetenv(kAllocConfEnv);
    }
  }
  std::optional<std::string> saved_;
};

TEST(ResolveAllocConf, DefaultsWhenNothingIsGiven) {
  ScopedEnv env(nullptr);
  std::string source;
  EXPECT_EQ(ResolveAllocConf("", &source), AllocConf{});
  EXPECT_EQ(source, "defaults");
  EXPECT_EQ(ResolveAllocConf(""), AllocConf{});  // source is optional
}

TEST(ResolveAllocConf, EmptyEnvironmentMeansDefaults) {
  ScopedEnv env("");
  std::string source;
  EXPECT_EQ(ResolveAllocConf("", &source), AllocConf{});
  EXPECT_EQ(source, "defaults");
}

TEST(ResolveAllocConf, Environment) {
  ScopedEnv env("backing=host,growth=off");
  std::string source;
  const AllocConf conf = ResolveAllocConf("", &source);
  EXPECT_EQ(source, "FRAGSCOPE_ALLOC_CONF");
  EXPECT_EQ(conf.backing, BackingKind::kHost);
  EXPECT_FALSE(conf.growth);
}

TEST(ResolveAllocConf, CommandLineWinsOverEnvironment) {
  ScopedEnv env("backing=host,growth=off");
  std::string source;
  const AllocConf conf = ResolveAllocConf("gc=off", &source);
  EXPECT_EQ(source, "--alloc-conf");
  EXPECT_EQ(conf.backing, BackingKind::kSim);
  EXPECT_TRUE(conf.growth);
  EXPECT_FALSE(conf.gc);
}

TEST(ResolveAllocConf, CommandLineWithoutEnvironment) {
  ScopedEnv env(nullptr);
  std::string source;
  EXPECT_EQ(ResolveAllocConf("limit=1GiB", &source).limit, GiB);
  EXPECT_EQ(source, "--alloc-conf");
}

TEST(ResolveAllocConf, EnvironmentErrorsNameTheVariable) {
  ScopedEnv env("growth=maybe");
  std::string source;
  try {
    ResolveAllocConf("", &source);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "growth");
    EXPECT_STREQ(e.what(),
                 "FRAGSCOPE_ALLOC_CONF: bad value 'maybe' for key 'growth': expected on or off");
  }
  EXPECT_EQ(source, "FRAGSCOPE_ALLOC_CONF");
}

TEST(ResolveAllocConf, EnvironmentSyntaxErrorsNameTheVariable) {
  ScopedEnv env("growth=on,,gc=on");
  try {
    ResolveAllocConf("");
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "");
    EXPECT_TRUE(Contains(e.what(), "FRAGSCOPE_ALLOC_CONF: empty item")) << e.what();
  }
}

TEST(ResolveAllocConf, BadEnvironmentIsIgnoredWhenTheCommandLineIsGiven) {
  ScopedEnv env("nonsense");
  EXPECT_FALSE(ResolveAllocConf("growth=off").growth);
}

TEST(ResolveAllocConf, CommandLineErrorsAreNotPrefixed) {
  ScopedEnv env(nullptr);
  try {
    ResolveAllocConf("gc=maybe");
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "gc");
    EXPECT_STREQ(e.what(), "bad value 'maybe' for key 'gc': expected on or off");
  }
}

// ---------------------------------------------------------------------------------------------
// Issue 13: a fraction whose text is above 1 is refused even when it reads as the double 1.0;
// blank values count as not given.

TEST(ResolveAllocConf, BlankCommandLineCountsAsNotGiven) {
  {
    ScopedEnv env(nullptr);
    std::string source;
    EXPECT_EQ(ResolveAllocConf("   ", &source), AllocConf{});
    EXPECT_EQ(source, "defaults");
    EXPECT_EQ(ResolveAllocConf(" \t\n", &source), AllocConf{});
    EXPECT_EQ(source, "defaults");
  }
  ScopedEnv env("growth=off");
  std::string source;
  EXPECT_FALSE(ResolveAllocConf("  ", &source).growth);
  EXPECT_EQ(source, "FRAGSCOPE_ALLOC_CONF");
}

TEST(ResolveAllocConf, BlankEnvironmentMeansDefaults) {
  ScopedEnv env("   ");
  std::string source;
  EXPECT_EQ(ResolveAllocConf("", &source), AllocConf{});
  EXPECT_EQ(source, "defaults");
}

}  // namespace
}  // namespace fragscope
