#include "tool/divergence.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace kreplay::tool {

void DivergenceTally::add(std::string_view kernel) {
  ++launches_;
  auto it = by_kernel_.find(kernel);
  if (it == by_kernel_.end()) it = by_kernel_.emplace(std::string(kernel), 0).first;
  ++it->second;
}

std::string DivergenceTally::line(size_t max_kernels) const {
  if (launches_ == 0) return "";
  std::vector<std::pair<std::string_view, uint64_t>> kernels(by_kernel_.begin(), by_kernel_.end());
  std::stable_sort(kernels.begin(), kernels.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string names;
  for (size_t i = 0; i < kernels.size() && i < max_kernels; ++i) {
    names += fmt::format("{}{} ({})", i == 0 ? "" : ", ", kernels[i].first, kernels[i].second);
  }
  if (kernels.size() > max_kernels)
    names += fmt::format(" and {} more", kernels.size() - max_kernels);
  return fmt::format(
      "{} launch{} of {} kernel{} left different memory on different passes, so "
      "their passes did not measure the same work: {}",
      launches_, launches_ == 1 ? "" : "es", kernels.size(), kernels.size() == 1 ? "" : "s", names);
}

}  // namespace kreplay::tool
