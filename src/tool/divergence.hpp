// The run's tally of launches whose passes left different memory (--check-divergence, issue 12
// item 4): counted as outcome records arrive, said in one line when the run ends.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace kreplay::tool {

class DivergenceTally {
 public:
  /// A launch of @p kernel whose passes diverged. Not thread-safe: the caller holds its lock.
  void add(std::string_view kernel);
  uint64_t launches() const { return launches_; }
  /// "" when no launch diverged; else one line with the count and the kernels (launches each,
  /// most first, at most @p max_kernels named).
  std::string line(size_t max_kernels = 5) const;

 private:
  std::map<std::string, uint64_t, std::less<>> by_kernel_;
  uint64_t launches_ = 0;
};

}  // namespace kreplay::tool
