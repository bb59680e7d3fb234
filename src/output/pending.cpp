#include "output/pending.hpp"

#include <algorithm>
#include <limits>

namespace kreplay::output {

PendingDispatch& PendingDispatches::get(uint32_t app_pass, uint64_t dispatch_id) {
  return map_[{app_pass, dispatch_id}];
}

PendingDispatch PendingDispatches::take(uint32_t app_pass, uint64_t dispatch_id) {
  auto it = map_.find({app_pass, dispatch_id});
  if (it == map_.end()) return {};
  PendingDispatch out = std::move(it->second);
  map_.erase(it);
  return out;
}

std::vector<std::pair<DispatchRecord, PendingDispatch>> PendingDispatches::take_incomplete() {
  std::vector<std::pair<DispatchRecord, PendingDispatch>> out;
  for (auto& [key, pending] : map_) {
    DispatchRecord d;
    d.app_pass = key.first;
    d.dispatch_id = key.second;
    d.outcome = "incomplete";
    d.passes_executed = pending.passes.size();
    if (!pending.counters.empty()) {
      d.agent_id = pending.counters.front().agent_id;
      d.kernel_id = pending.counters.front().kernel_id;
    }
    bool first = true;
    for (const auto& p : pending.passes) {
      d.agent_id = p.agent_id;
      d.stream_id = p.stream_id;
      d.start_ns = first ? p.start_ns : std::min(d.start_ns, p.start_ns);
      d.end_ns = first ? p.end_ns : std::max(d.end_ns, p.end_ns);
      first = false;
    }
    out.emplace_back(std::move(d), std::move(pending));
  }
  map_.clear();
  return out;
}

std::map<std::string, const CounterRecord*> first_pass_values(const PendingDispatch& pending) {
  std::map<std::string, const CounterRecord*> out;
  for (const auto& c : pending.counters) {
    auto [it, inserted] = out.emplace(c.name, &c);
    if (!inserted && c.replay_pass < it->second->replay_pass) it->second = &c;
  }
  return out;
}

double dispatch_duration_ns(const DispatchRecord& dispatch, const PendingDispatch& pending) {
  // Signed differences, like the SQL views compute them.
  auto span = [](uint64_t start, uint64_t end) {
    return static_cast<double>(static_cast<int64_t>(end - start));
  };
  if (pending.passes.empty()) return span(dispatch.start_ns, dispatch.end_ns);
  double sum = 0;
  for (const auto& p : pending.passes) sum += span(p.start_ns, p.end_ns);
  return sum / static_cast<double>(pending.passes.size());
}

double pass_spread_pct(const PendingDispatch& pending) {
  double lo = 0, hi = 0;
  size_t n = 0;
  for (const auto& p : pending.passes) {
    const auto d = static_cast<int64_t>(p.end_ns - p.start_ns);
    if (d <= 0) continue;
    lo = n == 0 ? d : std::min<double>(lo, d);
    hi = n == 0 ? d : std::max<double>(hi, d);
    ++n;
  }
  return n < 2 ? std::numeric_limits<double>::quiet_NaN() : 100.0 * (hi - lo) / lo;
}

bool is_count_counter(const std::string& name) {
  static constexpr const char* kNotCounts[] = {
      "cycles", "time", "duration", "pct",  "per_",      "throughput", "rate",
      "ratio",  ".avg", ".max",     ".min", "frequency", "occupancy"};
  for (const char* w : kNotCounts) {
    if (name.find(w) != std::string::npos) return false;
  }
  return true;
}

const PassRecord* find_pass(const PendingDispatch& pending, uint64_t replay_pass) {
  for (const auto& p : pending.passes) {
    if (p.replay_pass == replay_pass) return &p;
  }
  return nullptr;
}

}  // namespace kreplay::output
