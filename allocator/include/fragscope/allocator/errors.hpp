// Typed errors of the allocator. An OutOfMemory is a normal, reportable outcome of a request; an
// InvalidFree or a ConfigError is a caller's mistake; a BackingError is a failure of the memory
// source itself (a CUDA error that is not "out of memory", an mmap that fails for another reason).
// None of them leaves the allocator in a corrupt state.
#pragma once

#include <stdexcept>
#include <string>

#include "fragscope/allocator/oom_report.hpp"

namespace fragscope {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A bad configuration string or value. `key` names the offending key ("" when the string itself is
// malformed).
class ConfigError : public Error {
 public:
  ConfigError(std::string key, const std::string& message) : Error(message), key_(std::move(key)) {}
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

// A usage error by the caller: freeing a pointer the allocator does not own, or freeing twice.
class InvalidFree : public Error {
 public:
  InvalidFree(const void* ptr, const std::string& message) : Error(message), ptr_(ptr) {}
  const void* ptr() const { return ptr_; }

 private:
  const void* ptr_;
};

// The memory source failed for a reason other than lack of memory.
class BackingError : public Error {
 public:
  using Error::Error;
};

// A request could not be satisfied. Carries the full diagnosis.
class OutOfMemory : public Error {
 public:
  explicit OutOfMemory(OomReport report)
      : Error(report.Summary()), report_(std::move(report)) {}
  const OomReport& report() const { return report_; }

 private:
  OomReport report_;
};

}  // namespace fragscope
