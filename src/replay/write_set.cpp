#include "replay/write_set.hpp"

#include <algorithm>
#include <cstring>
#include <map>

namespace kreplay::replay {

void normalize(std::vector<Extent>* extents) {
  auto& e = *extents;
  std::erase_if(e, [](const Extent& x) { return x.hi <= x.lo; });
  std::sort(e.begin(), e.end(), [](const Extent& a, const Extent& b) { return a.lo < b.lo; });
  size_t out = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    if (out > 0 && e[i].lo <= e[out - 1].hi) {
      e[out - 1].hi = std::max(e[out - 1].hi, e[i].hi);
    } else {
      e[out++] = e[i];
    }
  }
  e.resize(out);
}

bool covers(std::span<const Extent> outer, std::span<const Extent> inner) {
  size_t o = 0;
  for (const Extent& x : inner) {
    while (o < outer.size() && outer[o].hi <= x.lo) ++o;
    if (o == outer.size() || outer[o].lo > x.lo || outer[o].hi < x.hi) return false;
  }
  return true;
}

uint64_t extent_bytes(std::span<const Extent> extents) {
  uint64_t n = 0;
  for (const Extent& x : extents) n += x.hi - x.lo;
  return n;
}

ChunkLayout::ChunkLayout(const std::vector<Region>& regions, uint64_t chunk_bytes)
    : regions_(regions), chunk_bytes_(chunk_bytes) {
  std::sort(regions_.begin(), regions_.end(),
            [](const Region& a, const Region& b) { return a.base < b.base; });
  copies_.reserve(regions_.size());
  for (const Region& r : regions_) {
    device::CopyRegion c;
    c.live = r.base;
    c.size = r.size;
    c.first_chunk = total_chunks_;
    total_chunks_ += device::chunk_count(r.size, chunk_bytes);
    total_bytes_ += r.size;
    copies_.push_back(c);
  }
}

const Region* ChunkLayout::region_of(uint64_t address) const {
  auto it = std::upper_bound(regions_.begin(), regions_.end(), address,
                             [](uint64_t a, const Region& r) { return a < r.base; });
  if (it == regions_.begin()) return nullptr;
  --it;
  return address < it->base + it->size ? &*it : nullptr;
}

std::vector<Extent> ChunkLayout::extents_of(std::span<const uint64_t> chunks) const {
  std::vector<Extent> out;
  size_t ri = 0;
  size_t last_region = SIZE_MAX;
  for (uint64_t c : chunks) {
    while (ri + 1 < copies_.size() && copies_[ri + 1].first_chunk <= c) ++ri;
    if (ri >= copies_.size()) break;
    const auto& r = copies_[ri];
    const uint64_t off = (c - r.first_chunk) * chunk_bytes_;
    if (off >= r.size) continue;
    const Extent x{r.live + off, r.live + std::min(r.size, off + chunk_bytes_)};
    if (!out.empty() && last_region == ri && out.back().hi == x.lo) {
      out.back().hi = x.hi;
    } else {
      out.push_back(x);
    }
    last_region = ri;
  }
  return out;
}

std::vector<Extent> ChunkLayout::to_chunks(std::span<const Extent> extents, bool next_chunk) const {
  std::vector<Extent> out;
  for (const Extent& x : extents) {
    if (x.hi <= x.lo) continue;
    // The regions the extent overlaps, each cut to it.
    auto it = std::upper_bound(regions_.begin(), regions_.end(), x.lo,
                               [](uint64_t a, const Region& r) { return a < r.base; });
    if (it != regions_.begin()) --it;
    for (; it != regions_.end() && it->base < x.hi; ++it) {
      const uint64_t end = it->base + it->size;
      const uint64_t lo = std::max(x.lo, it->base);
      const uint64_t hi = std::min(x.hi, end);
      if (lo >= hi) continue;
      uint64_t clo = it->base + (lo - it->base) / chunk_bytes_ * chunk_bytes_;
      uint64_t chi = it->base + (hi - it->base + chunk_bytes_ - 1) / chunk_bytes_ * chunk_bytes_;
      if (next_chunk) chi += chunk_bytes_;
      out.push_back({clo, std::min(chi, end)});
    }
  }
  normalize(&out);
  return out;
}

bool ChunkLayout::same_as(std::span<const device::CopyRegion> copies, uint64_t chunk_bytes) const {
  return chunk_bytes == chunk_bytes_ && copies.size() == copies_.size() &&
         std::equal(copies.begin(), copies.end(), copies_.begin(), [](const auto& a, const auto& b) {
           return a.live == b.live && a.size == b.size && a.first_chunk == b.first_chunk;
         });
}

namespace {

uint64_t word_at(std::span<const std::byte> args, size_t w) {
  uint64_t v = 0;
  std::memcpy(&v, args.data() + w * 8, 8);
  return v;
}

// fn(word index, value, region) for each 8-byte argument word that points into @p layout.
template <typename Fn>
void for_each_pointer(std::span<const std::byte> args, const ChunkLayout& layout, Fn&& fn) {
  for (size_t w = 0; w < args.size() / 8; ++w) {
    const uint64_t v = word_at(args, w);
    if (const Region* r = layout.region_of(v)) fn(w, v, *r);
  }
}

// Merge the closest neighbours until at most `cap` extents remain (each merge may save a gap).
void cap_extents(std::vector<Extent>* e, size_t cap) {
  uint64_t gap = 1;
  while (e->size() > cap) {
    std::vector<Extent> merged;
    for (const Extent& x : *e) {
      if (!merged.empty() && x.lo - merged.back().hi <= gap)
        merged.back().hi = std::max(merged.back().hi, x.hi);
      else
        merged.push_back(x);
    }
    *e = std::move(merged);
    gap *= 4;
  }
}

}  // namespace

uint64_t WriteSets::key_of(uint64_t kernel, std::span<const std::byte> args) {
  uint64_t h = 1469598103934665603ull ^ (kernel * 0x9e3779b97f4a7c15ull);
  for (std::byte b : args) h = (h ^ static_cast<uint64_t>(b)) * 1099511628211ull;
  return h;
}

uint64_t WriteSets::shape_key_of(uint64_t kernel, std::span<const std::byte> args,
                                 const ChunkLayout& layout) {
  // The arguments with each pointer word made one value, wherever it points.
  std::vector<std::byte> shape(args.begin(), args.end());
  for_each_pointer(args, layout, [&](size_t w, uint64_t, const Region&) {
    std::memset(shape.data() + w * 8, 0xff, 8);
  });
  return key_of(kernel, shape);
}

WriteSets::RelSet WriteSets::relative(std::span<const std::byte> args,
                                      std::span<const Extent> written, const ChunkLayout& layout) {
  // Argument words that point into a tracked region, by region base: (value, word), sorted.
  std::map<uint64_t, std::vector<std::pair<uint64_t, int32_t>>> pointers;
  for_each_pointer(args, layout, [&](size_t w, uint64_t v, const Region& r) {
    pointers[r.base].emplace_back(v, static_cast<int32_t>(w));
  });
  for (auto& [base, list] : pointers) std::sort(list.begin(), list.end());
  RelSet out;
  out.reserve(written.size());
  for (const Extent& x : written) {
    Rel rel;
    rel.len = x.hi - x.lo;
    rel.word = -1;
    rel.offset = static_cast<int64_t>(x.lo);
    const Region* r = layout.region_of(x.lo);
    if (r != nullptr) {
      auto it = pointers.find(r->base);
      if (it != pointers.end()) {
        const auto& list = it->second;
        // The pointer nearest below the extent, else the nearest above.
        auto above = std::upper_bound(list.begin(), list.end(), std::make_pair(x.lo, INT32_MAX));
        const auto& p = above != list.begin() ? *(above - 1) : *above;
        rel.word = p.second;
        rel.offset = static_cast<int64_t>(x.lo - p.first);
      }
    }
    out.push_back(rel);
  }
  return out;
}

void WriteSets::translate(const RelSet& set, std::span<const std::byte> args,
                          std::vector<Extent>* out) {
  for (const Rel& r : set) {
    uint64_t lo = static_cast<uint64_t>(r.offset);
    if (r.word >= 0) {
      if (static_cast<size_t>(r.word + 1) * 8 > args.size()) continue;
      lo = word_at(args, static_cast<size_t>(r.word)) + static_cast<uint64_t>(r.offset);
    }
    if (lo + r.len < lo) continue;  // wrapped: not an address
    out->push_back({lo, lo + r.len});
  }
}

std::optional<std::vector<Extent>> WriteSets::predict(uint64_t kernel,
                                                      std::span<const std::byte> args,
                                                      const ChunkLayout& layout,
                                                      bool exact_only) const {
  std::vector<Extent> raw;
  {
    std::lock_guard lock(mu_);
    auto it = exact_.find(key_of(kernel, args));
    if (it != exact_.end()) {
      for (const RelSet& s : it->second.history) translate(s, args, &raw);
    } else if (exact_only) {
      return std::nullopt;
    } else if (auto sh = shape_.find(shape_key_of(kernel, args, layout)); sh != shape_.end()) {
      translate(sh->second, args, &raw);
    } else if (auto k = latest_.find(kernel); k != latest_.end()) {
      translate(k->second, args, &raw);
    } else {
      return std::nullopt;
    }
  }
  return layout.to_chunks(raw, /*next_chunk=*/true);
}

std::vector<Extent> WriteSets::pointer_chunks(std::span<const std::byte> args,
                                              const ChunkLayout& layout) {
  std::vector<Extent> raw;
  for_each_pointer(args, layout, [&](size_t, uint64_t v, const Region&) {
    if (raw.size() < kMaxPointerGuesses) raw.push_back({v, v + 1});
  });
  return layout.to_chunks(raw, /*next_chunk=*/true);
}

void WriteSets::learn(uint64_t kernel, std::span<const std::byte> args,
                      std::span<const Extent> written, const ChunkLayout& layout) {
  std::vector<Extent> w(written.begin(), written.end());
  cap_extents(&w, kMaxExtents);
  RelSet rel = relative(args, w, layout);
  const uint64_t shape = shape_key_of(kernel, args, layout);
  std::lock_guard lock(mu_);
  ++learned_;
  const uint64_t key = key_of(kernel, args);
  if (exact_.size() >= kMaxExactKeys && exact_.find(key) == exact_.end()) {
    // Forget the least recently learned key.
    auto oldest = std::min_element(exact_.begin(), exact_.end(), [](const auto& a, const auto& b) {
      return a.second.used < b.second.used;
    });
    exact_.erase(oldest);
  }
  Entry& e = exact_[key];
  e.used = learned_;
  e.history.push_back(rel);
  while (e.history.size() > kHistory) e.history.pop_front();
  if (shape_.size() >= kMaxExactKeys && shape_.find(shape) == shape_.end())
    shape_.erase(shape_.begin());  // bounded; any one goes
  shape_[shape] = rel;
  latest_[kernel] = std::move(rel);
}

void WriteSets::clear() {
  std::lock_guard lock(mu_);
  exact_.clear();
  shape_.clear();
  latest_.clear();
}

size_t WriteSets::exact_keys() const {
  std::lock_guard lock(mu_);
  return exact_.size();
}

}  // namespace kreplay::replay
