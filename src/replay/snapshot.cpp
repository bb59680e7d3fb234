#include "replay/snapshot.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "common/logging.hpp"
#include "common/util.hpp"

namespace kreplay::replay {
namespace {

constexpr uint64_t kAlign = 256;
uint64_t align_up(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

}  // namespace

Status StoragePool::ensure(device::Device& dev, device::StorageTier tier, device::Storage* block,
                           uint64_t want, uint64_t minimum) {
  if (block->size >= minimum) return Status::Ok();
  // Replace the block by one that holds `want` if possible, else as much as the tier has
  // (at least `minimum`).
  uint64_t available = dev.storage_available(tier) + block->size;
  if (available < minimum) {
    return Error(KREPLAY_STATUS_ERROR_OUT_OF_RESOURCES, "tier full");
  }
  uint64_t size = std::min(available, std::max(want, block->size + block->size / 2));
  size = std::max(size, minimum);
  if (block->size) dev.free_storage(*block);
  *block = {};
  auto fresh = dev.allocate_storage(tier, size);
  if (!fresh.ok()) {
    // Fall back to exactly the minimum.
    fresh = dev.allocate_storage(tier, minimum);
    if (!fresh.ok()) return fresh.status();
  }
  *block = *fresh;
  if (tier == device::StorageTier::kDevice)
    device_peak_ = std::max(device_peak_, block->size);
  else
    host_peak_ = std::max(host_peak_, block->size);
  return Status::Ok();
}

uint64_t StoragePool::peak_bytes(device::StorageTier tier) const {
  return tier == device::StorageTier::kDevice ? device_peak_ : host_peak_;
}

bool StoragePool::fits_device(device::Device& dev, const std::vector<Region>& regions) const {
  uint64_t need = 0;
  for (const auto& r : regions) need += align_up(r.size);
  if (need <= device_block_.size) return true;
  return need <= dev.storage_available(device::StorageTier::kDevice) + device_block_.size;
}

Result<Placement> StoragePool::place(device::Device& dev, const std::vector<Region>& regions,
                                     uint64_t chunk_bytes, uint64_t max_bytes) {
  Placement p;
  uint64_t need = 0;
  for (const auto& r : regions) need += align_up(r.size);
  p.total_bytes = 0;
  for (const auto& r : regions) p.total_bytes += r.size;
  if (max_bytes != 0 && p.total_bytes > max_bytes) {
    return Error(KREPLAY_STATUS_ERROR_OUT_OF_RESOURCES,
                 "snapshot of " + format_bytes(p.total_bytes) + " exceeds the limit of " +
                     format_bytes(max_bytes));
  }
  if (need == 0) return p;

  // Device tier first: as much as it can hold (whole regions only), the rest on the host.
  uint64_t dev_cap = device_block_.size;
  if (dev_cap < need) {
    uint64_t avail = dev.storage_available(device::StorageTier::kDevice) + device_block_.size;
    if (avail > dev_cap) {
      // Grow the device block towards `need` (largest useful size).
      uint64_t smallest_region = UINT64_MAX;
      for (const auto& r : regions) smallest_region = std::min(smallest_region, align_up(r.size));
      uint64_t target = std::min(avail, need);
      if (target >= smallest_region &&
          ensure(dev, device::StorageTier::kDevice, &device_block_, need, target).ok()) {
        dev_cap = device_block_.size;
      }
    }
  }
  // Largest regions first on the device tier (fewest bytes left for the slower host tier).
  std::vector<size_t> order(regions.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return regions[a].size > regions[b].size; });
  uint64_t dev_used = 0, host_need = 0;
  std::vector<bool> on_device(regions.size(), false);
  for (size_t i : order) {
    uint64_t sz = align_up(regions[i].size);
    if (dev_used + sz <= dev_cap) {
      on_device[i] = true;
      dev_used += sz;
    } else {
      host_need += sz;
    }
  }
  if (host_need > 0) {
    Status s = ensure(dev, device::StorageTier::kPinnedHost, &host_block_, host_need, host_need);
    if (!s.ok()) {
      return Error(KREPLAY_STATUS_ERROR_OUT_OF_RESOURCES,
                   "snapshot needs " + format_bytes(need) + " of storage: " +
                       format_bytes(dev_used) + " fit device storage and pinned host storage " +
                       "cannot take the remaining " + format_bytes(host_need));
    }
    KR_WARN_ONCE("pinned-snapshot",
                 "device memory is short: {} of a {} snapshot goes to pinned host memory, which is "
                 "slower to save and restore (KREPLAY_DEVICE_HEADROOM sets how much device memory "
                 "kreplay leaves to the application)",
                 format_bytes(host_need), format_bytes(need));
  }
  uint64_t dev_off = 0, host_off = 0, chunk = 0;
  p.copies.reserve(regions.size());
  for (size_t i = 0; i < regions.size(); ++i) {
    device::CopyRegion c;
    c.live = regions[i].base;
    c.size = regions[i].size;
    c.first_chunk = chunk;
    chunk += device::chunk_count(c.size, chunk_bytes);
    if (on_device[i]) {
      c.storage = device_block_.address + dev_off;
      dev_off += align_up(c.size);
      p.device_bytes += c.size;
    } else {
      c.storage = host_block_.address + host_off;
      host_off += align_up(c.size);
      p.host_bytes += c.size;
    }
    p.copies.push_back(c);
  }
  p.total_chunks = chunk;
  return p;
}

std::string snapshot_too_large_message(device::Device& dev, const std::vector<Region>& regions,
                                       const std::string& why) {
  const Region* largest = nullptr;
  uint64_t total = 0;
  for (const auto& r : regions) {
    total += r.size;
    if (largest == nullptr || r.size > largest->size) largest = &r;
  }
  std::string msg = fmt::format("the snapshot needs {} ({} allocations", format_bytes(total),
                                regions.size());
  if (largest != nullptr) {
    msg += fmt::format("; the largest, at {:#x}, is {}", largest->base, format_bytes(largest->size));
  }
  msg += fmt::format(") and {} of device memory and {} of pinned host memory are free ({})",
                     format_bytes(dev.storage_available(device::StorageTier::kDevice)),
                     format_bytes(dev.storage_available(device::StorageTier::kPinnedHost)), why);
  const uint64_t device_bytes = dev.desc().memory_bytes;
  if (largest != nullptr && device_bytes > 0 && largest->size * 4 >= device_bytes) {
    // One allocation with a quarter of the device or more: a framework's memory arena.
    if (process_has_library("xla_extension") || process_has_library("jaxlib") ||
        process_has_library("libjax")) {
      msg += "; it is JAX/XLA's preallocated arena: run with XLA_PYTHON_CLIENT_PREALLOCATE=false "
             "(or a smaller XLA_PYTHON_CLIENT_MEM_FRACTION) so kreplay can save what the "
             "application uses";
    } else if (process_has_library("libtensorflow")) {
      msg += "; it is TensorFlow's preallocated arena: run with TF_FORCE_GPU_ALLOW_GROWTH=true so "
             "kreplay can save what the application uses";
    } else {
      msg += fmt::format("; one allocation holds {:.0f}% of the device, as a framework's memory "
                         "pool would: make the application allocate what it uses",
                         100.0 * static_cast<double>(largest->size) /
                             static_cast<double>(device_bytes));
    }
  }
  return msg;
}

void StoragePool::release(device::Device& dev) {
  if (device_block_.size || host_block_.size) ++releases_;
  if (device_block_.size) dev.free_storage(device_block_);
  if (host_block_.size) dev.free_storage(host_block_);
  device_block_ = {};
  host_block_ = {};
}

uint64_t StoragePool::held_bytes(device::StorageTier tier) const {
  return tier == device::StorageTier::kDevice ? device_block_.size : host_block_.size;
}

Status Snapshot::take(device::Device& dev, Placement placement, uint64_t chunk_bytes) {
  placement_ = std::move(placement);
  chunk_bytes_ = chunk_bytes;
  learned_.clear();
  learned_valid_ = false;
  digests_.assign(placement_.total_chunks, 0);
  if (placement_.copies.empty()) return Status::Ok();
  return dev.snapshot(placement_.copies, chunk_bytes_, digests_);
}

uint64_t Snapshot::chunk_size(uint64_t chunk) const {
  return chunk_live(chunk).second;
}

Result<uint64_t> Snapshot::live_digest(device::Device& dev) {
  std::vector<uint64_t> digests(placement_.total_chunks);
  RETURN_IF_ERROR(dev.digest_live(placement_.copies, chunk_bytes_, digests));
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the chunk digests
  for (uint64_t d : digests) h = (h ^ d) * 1099511628211ull;
  return h;
}

Status Snapshot::learn_changed(device::Device& dev) {
  std::vector<uint64_t> changed;
  RETURN_IF_ERROR(dev.find_changed(placement_.copies, chunk_bytes_, digests_, &changed));
  std::sort(changed.begin(), changed.end());
  if (learned_valid_) {
    // verify: keep restoring what earlier passes changed too.
    std::vector<uint64_t> merged;
    std::set_union(learned_.begin(), learned_.end(), changed.begin(), changed.end(),
                   std::back_inserter(merged));
    learned_ = std::move(merged);
  } else {
    learned_ = std::move(changed);
  }
  learned_valid_ = true;
  return Status::Ok();
}

Result<std::vector<uint64_t>> Snapshot::changed_chunks(device::Device& dev) {
  if (!learned_valid_ && !placement_.copies.empty()) RETURN_IF_ERROR(learn_changed(dev));
  return learned_;
}

std::pair<uint64_t, uint64_t> Snapshot::chunk_live(uint64_t chunk) const {
  return device::chunk_live(placement_.copies, chunk_bytes_, chunk);
}

Result<uint64_t> Snapshot::restore(device::Device& dev, bool verify) {
  if (placement_.copies.empty()) return uint64_t{0};
  if (!learned_valid_ || verify) RETURN_IF_ERROR(learn_changed(dev));
  if (learned_.empty()) return uint64_t{0};
  RETURN_IF_ERROR(dev.restore(placement_.copies, chunk_bytes_, learned_));
  uint64_t bytes = 0;
  for (uint64_t c : learned_) bytes += chunk_size(c);
  return bytes;
}

}  // namespace kreplay::replay
