#include "replay/inventory.hpp"

#include <algorithm>
#include <cstring>
#include <set>

namespace kreplay::replay {

namespace {

/// Calls @p fn(word) for every non-zero 8-byte-aligned word of @p args until it returns true;
/// returns whether one did.
template <typename Fn>
bool for_each_word(std::span<const std::byte> args, Fn&& fn) {
  for (size_t off = 0; off + sizeof(uint64_t) <= args.size(); off += sizeof(uint64_t)) {
    uint64_t word = 0;
    std::memcpy(&word, args.data() + off, sizeof(word));
    if (word != 0 && fn(word)) return true;
  }
  return false;
}

}  // namespace

uint64_t MemoryInventory::add(uint64_t agent, uint64_t base, uint64_t size,
                              kreplay_memory_kind_t kind) {
  std::unique_lock lock(mu_);
  auto& s = agents_[agent];
  if (auto it = s.ranges.find(base); it != s.ranges.end()) {
    // Re-allocation at a tracked address: the old region is gone.
    uint64_t old = it->second.region_id;
    if (auto rit = s.regions.find(old); rit != s.regions.end()) --s.kinds[rit->second.kind];
    s.regions.erase(old);
    std::erase_if(s.ranges, [old](const auto& kv) { return kv.second.region_id == old; });
  }
  uint64_t id = next_id_++;
  s.regions.emplace(id, Region{id, agent, base, size, kind});
  s.ranges.emplace(base, Range{size, id});
  ++s.kinds[kind];
  return id;
}

void MemoryInventory::add_alias(uint64_t id, uint64_t alias, uint64_t size) {
  std::unique_lock lock(mu_);
  for (auto& [agent, s] : agents_) {
    if (s.regions.count(id)) {
      s.ranges[alias] = Range{size, id};
      return;
    }
  }
}

bool MemoryInventory::remove(uint64_t agent, uint64_t address, Region* removed) {
  std::unique_lock lock(mu_);
  auto ait = agents_.find(agent);
  if (ait == agents_.end()) return false;
  auto& s = ait->second;
  const Region* r = lookup_locked(s, address);
  if (r == nullptr) return false;
  uint64_t id = r->id;
  if (removed) *removed = *r;
  --s.kinds[r->kind];
  std::erase_if(s.ranges, [id](const auto& kv) { return kv.second.region_id == id; });
  s.regions.erase(id);
  return true;
}

void MemoryInventory::remove_alias(uint64_t agent, uint64_t alias) {
  std::unique_lock lock(mu_);
  auto ait = agents_.find(agent);
  if (ait == agents_.end()) return;
  auto& s = ait->second;
  auto it = s.ranges.find(alias);
  if (it == s.ranges.end()) return;
  auto rit = s.regions.find(it->second.region_id);
  if (rit != s.regions.end() && rit->second.base == alias) return;  // the base is not an alias
  s.ranges.erase(it);
}

const Region* MemoryInventory::lookup_locked(const AgentState& s, uint64_t address) const {
  auto it = s.ranges.upper_bound(address);
  if (it == s.ranges.begin()) return nullptr;
  --it;
  if (address >= it->first + it->second.size) return nullptr;
  auto rit = s.regions.find(it->second.region_id);
  return rit == s.regions.end() ? nullptr : &rit->second;
}

std::vector<Region> MemoryInventory::regions(uint64_t agent) const {
  std::shared_lock lock(mu_);
  std::vector<Region> out;
  auto ait = agents_.find(agent);
  if (ait == agents_.end()) return out;
  out.reserve(ait->second.regions.size());
  for (const auto& [id, r] : ait->second.regions) out.push_back(r);
  std::sort(out.begin(), out.end(), [](const Region& a, const Region& b) { return a.base < b.base; });
  return out;
}

std::vector<Region> MemoryInventory::regions_for_args(uint64_t agent,
                                                      std::span<const std::byte> args) const {
  std::shared_lock lock(mu_);
  std::vector<Region> out;
  auto ait = agents_.find(agent);
  if (ait == agents_.end()) return out;
  const auto& s = ait->second;
  std::set<uint64_t> ids;
  for_each_word(args, [&](uint64_t word) {
    if (const Region* r = lookup_locked(s, word)) ids.insert(r->id);
    return false;
  });
  for (const auto& [id, r] : s.regions) {
    if (r.kind == KREPLAY_MEMORY_KIND_MODULE_GLOBAL) ids.insert(id);
  }
  for (uint64_t id : ids) out.push_back(s.regions.at(id));
  std::sort(out.begin(), out.end(), [](const Region& a, const Region& b) { return a.base < b.base; });
  return out;
}

bool MemoryInventory::args_point_into(uint64_t agent, std::span<const std::byte> args,
                                      kreplay_memory_kind_t kind) const {
  std::shared_lock lock(mu_);
  auto ait = agents_.find(agent);
  if (ait == agents_.end()) return false;
  return for_each_word(args, [&](uint64_t word) {
    const Region* r = lookup_locked(ait->second, word);
    return r != nullptr && r->kind == kind;
  });
}

bool MemoryInventory::holds(uint64_t agent, kreplay_memory_kind_t kind) const {
  std::shared_lock lock(mu_);
  auto ait = agents_.find(agent);
  return ait != agents_.end() && kind < KREPLAY_MEMORY_KIND_LAST && ait->second.kinds[kind] > 0;
}

uint64_t MemoryInventory::peer_agent(uint64_t agent, std::span<const std::byte> args) const {
  std::shared_lock lock(mu_);
  if (agents_.size() < 2) return 0;
  uint64_t peer = 0;
  for_each_word(args, [&](uint64_t word) {
    for (const auto& [other, s] : agents_) {
      if (other != agent && lookup_locked(s, word) != nullptr) {
        peer = other;
        return true;
      }
    }
    return false;
  });
  return peer;
}

bool MemoryInventory::find(uint64_t agent, uint64_t address, Region* out) const {
  std::shared_lock lock(mu_);
  auto ait = agents_.find(agent);
  if (ait == agents_.end()) return false;
  const Region* r = lookup_locked(ait->second, address);
  if (r && out) *out = *r;
  return r != nullptr;
}

uint64_t MemoryInventory::total_bytes(uint64_t agent) const {
  std::shared_lock lock(mu_);
  uint64_t total = 0;
  auto ait = agents_.find(agent);
  if (ait == agents_.end()) return 0;
  for (const auto& [id, r] : ait->second.regions) total += r.size;
  return total;
}

size_t MemoryInventory::count(uint64_t agent) const {
  std::shared_lock lock(mu_);
  auto ait = agents_.find(agent);
  return ait == agents_.end() ? 0 : ait->second.regions.size();
}

}  // namespace kreplay::replay
