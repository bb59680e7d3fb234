// VMM bookkeeping: physical allocations (cuMemCreate) mapped at one or more virtual addresses
// (cuMemMap), each view readable or writable (cuMemSetAccess), with unmapped holes between.
//
// The inventory must save and restore each piece of physical memory once, through a writable
// view: for every (handle, offset, size) view that has at least one writable mapping, the tracker
// keeps one region at the first writable mapping and registers every other mapping of the same
// view as an alias (so a kernel argument pointing at a read-only alias still finds it). Views with
// no writable mapping cannot be written by kernels and are not tracked. Not thread-safe: the
// caller serializes (the interceptor holds a mutex).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace kreplay::cuda {

/// Where the tracker's decisions go (the SDK inventory in production, a recorder in tests).
class VmmSink {
 public:
  virtual ~VmmSink() = default;
  virtual uint64_t add_region(uint64_t va, uint64_t size) = 0;
  virtual void add_alias(uint64_t region, uint64_t va, uint64_t size) = 0;
  virtual void remove(uint64_t va) = 0;
};

class VmmTracker {
 public:
  explicit VmmTracker(VmmSink& sink) : sink_(sink) {}

  void on_create(uint64_t handle, uint64_t size);
  void on_release(uint64_t handle);
  void on_map(uint64_t va, uint64_t size, uint64_t offset, uint64_t handle);
  void on_unmap(uint64_t va, uint64_t size);
  /// Access for every mapping inside [va, va+size): writable when any location may write.
  void on_set_access(uint64_t va, uint64_t size, bool writable);

  /// Mapped bytes of live handles with no writable view (for diagnostics).
  size_t mapping_count() const { return mappings_.size(); }

 private:
  struct Mapping {
    uint64_t size = 0, offset = 0, handle = 0;
    bool writable = false;
  };
  struct ViewKey {
    uint64_t handle, offset, size;
    bool operator<(const ViewKey& o) const {
      return handle != o.handle ? handle < o.handle
             : offset != o.offset ? offset < o.offset
                                  : size < o.size;
    }
  };
  void resync(const ViewKey& key);

  VmmSink& sink_;
  std::map<uint64_t, uint64_t> handles_;     // handle → size
  std::map<uint64_t, Mapping> mappings_;     // va → mapping
  std::map<ViewKey, uint64_t> registered_;   // view → va of its tracked region (0 = none)
  std::map<ViewKey, std::vector<uint64_t>> registered_vas_;  // every va registered for the view
};

}  // namespace kreplay::cuda
