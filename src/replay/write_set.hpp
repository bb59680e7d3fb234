// Write sets (DESIGN.md §3, write-bounded snapshots): which chunks of tracked memory a launch or
// a range changed, as chunk digests taken before and after its own pass found them, and which
// chunks the next launch of the same kernel (or the next range that opens with it) will change.
//
// A write set is learned in a form relative to the launch's arguments: each written extent is
// kept as an offset from the argument word that points nearest below it into the same allocation
// (or as an absolute address when no argument points there). A prediction translates the kept
// extents with the new launch's arguments, so a kernel called for layer 2 with other buffers is
// predicted from its call for layer 1, and a decode step from the step before. A prediction is
// only a guess: the engine proves it with the digests after the application's own pass, and a
// launch that wrote outside it is declined (WRITE_SET_UNKNOWN) and teaches the next one.
//
// Thread-safe (one mutex); the engine uses it inside replay windows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "device/device.hpp"
#include "replay/inventory.hpp"

namespace kreplay::replay {

/// [lo, hi): device addresses in the regions' writable numbering (Region::base).
struct Extent {
  uint64_t lo = 0;
  uint64_t hi = 0;
  bool operator==(const Extent&) const = default;
};

/// Sort and merge overlapping or touching extents; empty ones are dropped.
void normalize(std::vector<Extent>* extents);
/// Whether the union of @p outer holds every byte of @p inner (both normalized).
bool covers(std::span<const Extent> outer, std::span<const Extent> inner);
uint64_t extent_bytes(std::span<const Extent> extents);

/// The chunk numbering of a list of regions, as device::CopyRegion::first_chunk gives it: region
/// r covers chunks [first_chunk, first_chunk + ceil(size / chunk_bytes)). Storage addresses 0.
class ChunkLayout {
 public:
  ChunkLayout() = default;
  /// @p regions sorted by base and disjoint (MemoryInventory::regions gives them so).
  ChunkLayout(const std::vector<Region>& regions, uint64_t chunk_bytes);

  const std::vector<device::CopyRegion>& copies() const { return copies_; }
  const std::vector<Region>& regions() const { return regions_; }
  uint64_t chunk_bytes() const { return chunk_bytes_; }
  uint64_t total_chunks() const { return total_chunks_; }
  uint64_t total_bytes() const { return total_bytes_; }
  /// The extents of the listed global chunks (sorted), merged within each region only.
  std::vector<Extent> extents_of(std::span<const uint64_t> chunks) const;
  /// @p extents widened to whole chunks of the regions they fall in and cut to those regions;
  /// parts in no region are dropped. With @p next_chunk, each extent also takes the chunk after
  /// it in its region (a write front that moves forward: appends, ring buffers). Normalized.
  std::vector<Extent> to_chunks(std::span<const Extent> extents, bool next_chunk = false) const;
  /// The region holding @p address, or nullptr.
  const Region* region_of(uint64_t address) const;
  /// Same regions (bases and sizes) and chunk size.
  bool same_as(std::span<const device::CopyRegion> copies, uint64_t chunk_bytes) const;

 private:
  std::vector<Region> regions_;
  std::vector<device::CopyRegion> copies_;
  uint64_t chunk_bytes_ = 0;
  uint64_t total_chunks_ = 0;
  uint64_t total_bytes_ = 0;
};

class WriteSets {
 public:
  /// Write sets kept per exact key, at most; the oldest keys go first.
  static constexpr size_t kMaxExactKeys = 4096;
  /// Extents kept per write set, at most (closer ones are merged beyond it).
  static constexpr size_t kMaxExtents = 4096;
  /// Earlier write sets of one exact key whose union is the prediction.
  static constexpr size_t kHistory = 2;

  /// What a launch of @p kernel (or a range opening with it) with argument bytes @p args will
  /// write, in whole chunks of @p layout plus the chunk after each extent: from earlier launches
  /// with the same arguments when there were some, else from the latest launch of the kernel with
  /// the same arguments but its pointers (shape_key_of), else from the kernel's latest launch,
  /// translated to these arguments. nullopt: nothing learned yet. With @p exact_only, only
  /// earlier launches with these very arguments count.
  std::optional<std::vector<Extent>> predict(uint64_t kernel, std::span<const std::byte> args,
                                             const ChunkLayout& layout,
                                             bool exact_only = false) const;
  /// Argument words looked at by pointer_chunks, at most.
  static constexpr size_t kMaxPointerGuesses = 64;
  /// A guess for a launch with nothing (or nothing but an empty set) learned: the chunk each of
  /// its argument words points into, and the chunk after it in its region, since an output passed
  /// by pointer starts there. Normalized; at most kMaxPointerGuesses words.
  static std::vector<Extent> pointer_chunks(std::span<const std::byte> args,
                                            const ChunkLayout& layout);
  /// A launch of @p kernel with @p args changed @p written (normalized, inside @p layout).
  void learn(uint64_t kernel, std::span<const std::byte> args, std::span<const Extent> written,
             const ChunkLayout& layout);
  /// Keys learned (tests).
  size_t exact_keys() const;
  /// Forget everything learned (tests).
  void clear();

 private:
  /// One written extent: relative to argument word `word` (its value plus `offset`), or absolute
  /// (`word` < 0, `offset` the address).
  struct Rel {
    int32_t word = -1;
    int64_t offset = 0;
    uint64_t len = 0;
  };
  using RelSet = std::vector<Rel>;
  struct Entry {
    std::deque<RelSet> history;  // newest last
    uint64_t used = 0;           // learn() counter when last learned (eviction)
  };
  static uint64_t key_of(uint64_t kernel, std::span<const std::byte> args);
  /// key_of with every argument word that points into @p layout's regions left out: the same
  /// kernel called with the same sizes and strides on other buffers (a training step's tensors,
  /// which the caching allocator places anew) shares it.
  static uint64_t shape_key_of(uint64_t kernel, std::span<const std::byte> args,
                               const ChunkLayout& layout);
  static RelSet relative(std::span<const std::byte> args, std::span<const Extent> written,
                         const ChunkLayout& layout);
  static void translate(const RelSet& set, std::span<const std::byte> args,
                        std::vector<Extent>* out);

  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Entry> exact_;   // key_of(kernel, args)
  std::unordered_map<uint64_t, RelSet> shape_;   // shape_key_of(kernel, args), latest
  std::unordered_map<uint64_t, RelSet> latest_;  // kernel
  uint64_t learned_ = 0;
};

/// How a window saves memory (write_bounded.cpp).
enum class SaveKind {
  kNone,  ///< nothing saved (not replayed)
  kFull,  ///< every tracked region of the scope
  /// The predicted write set (empty when nothing is known yet: then every chunk the launch
  /// writes must have held zeros), proven by digests of all tracked memory.
  kWriteSet,
};

/// What a window knows of its write-bounded snapshot (kWriteSet), and, for a full snapshot, the
/// layout its changed chunks are learned in.
struct WriteSetWindow {
  SaveKind kind = SaveKind::kNone;
  ChunkLayout layout;         ///< every tracked region of the device, as the digests see it
  std::vector<Extent> saved;  ///< kWriteSet: the chunks saved
  bool predicted = false;     ///< kWriteSet: `saved` came from a prediction (else nothing known)
  /// kWriteSet: chunks of `layout` the application's pass changed outside `saved` that held zeros
  /// before (fresh memory): restored by Device::zero_chunks, with no copy.
  std::vector<uint64_t> zeroed;
  uint64_t kernel = 0;          ///< the key: the (first) launch's kernel ...
  std::vector<std::byte> args;  ///< ... and its argument bytes
  bool learned = false;         ///< the application's pass was measured and learned
  std::vector<Extent> written;  ///< when learned (kWriteSet): what the application's pass changed
};

/// A write-bounded range closed before a launch whose own range wrote more than it saved
/// (KREPLAY_RANGE_CLOSE_WRITE_SET): its key and writes, kept until the range that launch opens
/// has been measured; then the key learns both ranges' writes, so that next time it saves them
/// and the launch joins again (range.cpp, range_close.cpp).
struct RangeCut {
  uint64_t kernel = 0;
  std::vector<std::byte> args;
  std::vector<Extent> written;
};

}  // namespace kreplay::replay
