#include "common/util.hpp"

#include <cxxabi.h>
#include <fmt/format.h>
#include <link.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <memory>

namespace kreplay {

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t thread_id() {
  thread_local uint64_t tid = static_cast<uint64_t>(::syscall(SYS_gettid));
  return tid;
}

std::string demangle(std::string_view mangled) {
  if (mangled.size() < 2 || mangled[0] != '_' || mangled[1] != 'Z') return std::string(mangled);
  std::string copy(mangled);
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(
      abi::__cxa_demangle(copy.c_str(), nullptr, nullptr, &status), &std::free);
  if (status != 0 || !out) return copy;
  return std::string(out.get());
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::vector<std::string> suggest(std::string_view wanted, const std::vector<std::string>& candidates,
                                 size_t max) {
  struct Scored {
    size_t score;
    const std::string* name;
  };
  std::vector<Scored> scored;
  size_t limit = std::max<size_t>(2, wanted.size() / 3);
  for (const auto& c : candidates) {
    size_t d = edit_distance(wanted, c);
    bool contains = wanted.size() >= 3 &&
                    (c.find(wanted) != std::string::npos || wanted.find(c) != std::string::npos);
    if (d <= limit || contains) scored.push_back({contains && d > limit ? limit + 1 : d, &c});
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const Scored& x, const Scored& y) { return x.score < y.score; });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && out.size() < max; ++i) out.push_back(*scored[i].name);
  return out;
}

std::string join_or(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += (i + 1 == items.size()) ? " or " : ", ";
    out += items[i];
  }
  return out;
}

std::string format_bytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024.0 && unit < 4) {
    v /= 1024.0;
    ++unit;
  }
  if (unit == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.1f} {}", v, kUnits[unit]);
}

bool process_has_library(std::string_view name) {
  struct Query {
    std::string_view name;
    bool found = false;
  } q{name};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* q = static_cast<Query*>(data);
        if (info->dlpi_name != nullptr && std::string_view(info->dlpi_name).find(q->name) !=
                                               std::string_view::npos) {
          q->found = true;
          return 1;
        }
        return 0;
      },
      &q);
  return q.found;
}

}  // namespace kreplay
