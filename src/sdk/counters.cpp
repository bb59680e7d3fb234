#include "sdk/counters.hpp"

#include <fmt/format.h>

namespace kreplay::sdk {

uint64_t Counters::id_for_locked(uint64_t agent, const std::string& name) {
  std::string key = fmt::format("{}:{}", agent, name);
  if (auto it = by_key_.find(key); it != by_key_.end()) return it->second;
  CounterEntry& e = counters_.emplace_back();
  uint64_t id = counters_.size();
  e.name = name;
  e.info.size = sizeof(e.info);
  e.info.id.handle = id;
  e.info.agent_id.handle = agent;
  e.info.name = e.name.c_str();
  e.info.description = e.description.c_str();
  e.info.unit = e.unit.c_str();
  e.info.value_type = KREPLAY_COUNTER_VALUE_TYPE_COUNT;
  by_key_.emplace(std::move(key), id);
  return id;
}

uint64_t Counters::id_for(uint64_t agent, const std::string& name) {
  std::lock_guard lock(mu_);
  return id_for_locked(agent, name);
}

Result<std::vector<kreplay_counter_info_t>> Counters::list(uint64_t agent, device::Device* dev) {
  device::CounterBackend* backend = dev ? dev->counters() : nullptr;
  if (backend == nullptr) {
    return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE, "the agent has no hardware counters");
  }
  std::lock_guard lock(mu_);
  std::vector<kreplay_counter_info_t> out;
  if (!listed_[agent]) {
    auto descs = backend->list();
    if (!descs.ok()) return descs.status();
    for (const auto& d : *descs) {
      uint64_t id = id_for_locked(agent, d.name);
      CounterEntry& e = counters_[id - 1];
      e.description = d.description;
      e.unit = d.unit;
      e.info.description = e.description.c_str();
      e.info.unit = e.unit.c_str();
      e.info.value_type = d.type;
    }
    listed_[agent] = true;
  }
  for (const auto& e : counters_) {
    if (e.info.agent_id.handle == agent && !e.description.empty()) out.push_back(e.info);
  }
  return out;
}

const CounterEntry* Counters::counter(uint64_t id) const {
  std::lock_guard lock(mu_);
  if (id == 0 || id > counters_.size()) return nullptr;
  return &counters_[id - 1];
}

Result<uint64_t> Counters::create_config(uint64_t agent, device::Device* dev,
                                         const std::vector<std::string>& names) {
  device::CounterBackend* backend = dev ? dev->counters() : nullptr;
  if (backend == nullptr) {
    return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE, "the agent has no hardware counters");
  }
  auto set = backend->create(names);
  if (!set.ok()) return set.status();
  std::lock_guard lock(mu_);
  ConfigEntry& c = configs_.emplace_back();
  c.handle = configs_.size();
  c.agent = agent;
  c.set = *set;
  for (const auto& n : c.set->names()) c.counter_ids.push_back(id_for_locked(agent, n));
  return c.handle;
}

const ConfigEntry* Counters::config(uint64_t handle) const {
  std::lock_guard lock(mu_);
  if (handle == 0 || handle > configs_.size()) return nullptr;
  return &configs_[handle - 1];
}

}  // namespace kreplay::sdk
