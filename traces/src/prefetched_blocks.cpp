#include "fragscope/traces/prefetched_blocks.hpp"

#include <algorithm>
#include <utility>

namespace fragscope::traces {

PrefetchedBlocks::PrefetchedBlocks(BlockFunction upstream, std::size_t depth)
    : upstream_(std::move(upstream)), depth_(std::max<std::size_t>(1, depth)) {}

PrefetchedBlocks::~PrefetchedBlocks() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool PrefetchedBlocks::Next(std::vector<Event>* events) {
  if (!thread_.joinable()) thread_ = std::thread([this] { ReadAhead(); });
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !ready_.empty() || finished_; });
  if (ready_.empty()) {
    if (error_) std::rethrow_exception(error_);
    return false;
  }
  events->swap(ready_.front());
  ready_.front().clear();
  spare_.push_back(std::move(ready_.front()));
  ready_.pop_front();
  lock.unlock();
  changed_.notify_all();
  return true;
}

void PrefetchedBlocks::ReadAhead() {
  for (;;) {
    std::vector<Event> block;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return ready_.size() < depth_ || stopping_; });
      if (stopping_) return;
      if (!spare_.empty()) {
        block = std::move(spare_.back());
        spare_.pop_back();
      }
    }
    bool more = false;
    std::exception_ptr error;
    try {
      more = upstream_(&block);
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard lock(mutex_);
      if (more) {
        ready_.push_back(std::move(block));
      } else {
        error_ = error;
        finished_ = true;
      }
    }
    changed_.notify_all();
    if (!more) return;
  }
}

}  // namespace fragscope::traces
