// Counter ids and counter configs over the devices' CounterBackends (counters.h).
//
// Counter ids are stable per (agent, name) for the life of the process; configs are never
// destroyed (tools create a handful). Thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.hpp"
#include "device/device.hpp"
#include "kreplay/counters.h"

namespace kreplay::sdk {

struct CounterEntry {
  kreplay_counter_info_t info{};
  std::string name, description, unit;
};

struct ConfigEntry {
  uint64_t handle = 0;
  uint64_t agent = 0;
  std::shared_ptr<device::CounterSet> set;
  std::vector<uint64_t> counter_ids;  ///< same order as set->names()
};

class Counters {
 public:
  /// Every counter of @p agent (listing it from the device on first use).
  Result<std::vector<kreplay_counter_info_t>> list(uint64_t agent, device::Device* dev);
  const CounterEntry* counter(uint64_t id) const;
  /// Id of @p name on @p agent, registering it (without description) if the device listed none.
  uint64_t id_for(uint64_t agent, const std::string& name);

  Result<uint64_t> create_config(uint64_t agent, device::Device* dev,
                                 const std::vector<std::string>& names);
  const ConfigEntry* config(uint64_t handle) const;

 private:
  uint64_t id_for_locked(uint64_t agent, const std::string& name);

  mutable std::mutex mu_;
  std::deque<CounterEntry> counters_;  // id = index + 1
  std::unordered_map<std::string, uint64_t> by_key_;  // "agent:name" → id
  std::unordered_map<uint64_t, bool> listed_;
  std::deque<ConfigEntry> configs_;  // handle = index + 1
};

}  // namespace kreplay::sdk
