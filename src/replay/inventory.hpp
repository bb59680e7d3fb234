// The memory inventory: every device region the replay may save and restore (DESIGN.md §3).
//
// Backends add regions when the application allocates (or a module with globals loads) and remove
// them *before* the memory goes away. A region is saved and restored through one writable address
// (`base`); further virtual ranges that map the same memory are aliases, used only to find the
// region an argument points into. Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "kreplay/fwd.h"

namespace kreplay::replay {

struct Region {
  uint64_t id = 0;    ///< unique in the process
  uint64_t agent = 0; ///< agent handle
  uint64_t base = 0;  ///< writable address used for copies
  uint64_t size = 0;
  kreplay_memory_kind_t kind = KREPLAY_MEMORY_KIND_DEVICE;
};

class MemoryInventory {
 public:
  /// Track [base, base+size) on @p agent. Returns the region id. A region already tracked at
  /// @p base is replaced (the backend saw a re-allocation at the same address).
  uint64_t add(uint64_t agent, uint64_t base, uint64_t size, kreplay_memory_kind_t kind);

  /// Make [alias, alias+size) another view of region @p id (for argument lookup only).
  void add_alias(uint64_t id, uint64_t alias, uint64_t size);

  /// Stop tracking the region whose base or alias is @p address. Returns the removed region.
  bool remove(uint64_t agent, uint64_t address, Region* removed = nullptr);

  /// Remove every alias that starts at @p alias (VMM unmap of one view).
  void remove_alias(uint64_t agent, uint64_t alias);

  /// Every region of @p agent, sorted by base address.
  std::vector<Region> regions(uint64_t agent) const;

  /// Regions of @p agent that some 8-byte-aligned word of @p args points into (directly or through
  /// an alias), plus every module-scope variable of the agent; sorted by base.
  std::vector<Region> regions_for_args(uint64_t agent, std::span<const std::byte> args) const;

  /// Whether some 8-byte-aligned word of @p args points into a region of @p kind.
  bool args_point_into(uint64_t agent, std::span<const std::byte> args,
                       kreplay_memory_kind_t kind) const;

  /// Another agent one of whose regions some 8-byte-aligned word of @p args points into (peer
  /// memory: a snapshot of @p agent would not save it), or 0.
  uint64_t peer_agent(uint64_t agent, std::span<const std::byte> args) const;

  /// The region containing @p address (through base or alias), if any.
  bool find(uint64_t agent, uint64_t address, Region* out) const;

  /// Whether @p agent holds a region of @p kind.
  bool holds(uint64_t agent, kreplay_memory_kind_t kind) const;

  uint64_t total_bytes(uint64_t agent) const;
  size_t count(uint64_t agent) const;

 private:
  struct Range {
    uint64_t size;
    uint64_t region_id;
  };
  struct AgentState {
    std::map<uint64_t, Range> ranges;  // start → range (bases and aliases)
    std::unordered_map<uint64_t, Region> regions;  // id → region
    std::array<uint64_t, KREPLAY_MEMORY_KIND_LAST> kinds{};  // regions of each kind
  };
  const Region* lookup_locked(const AgentState& s, uint64_t address) const;

  mutable std::shared_mutex mu_;
  std::unordered_map<uint64_t, AgentState> agents_;
  uint64_t next_id_ = 1;
};

}  // namespace kreplay::replay
