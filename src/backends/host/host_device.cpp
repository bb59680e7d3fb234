#include "backends/host/host_device.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <set>
#include <utility>

#include "backends/host/executor.hpp"
#include "common/util.hpp"
#include "device/range_flushes.hpp"
#include "sdk/runtime.hpp"

namespace kreplay::hostrt {
namespace {

constexpr uint64_t kStorageAlign = 256;

struct CounterSpec {
  const char* name;
  const char* description;
  const char* unit;
};

constexpr CounterSpec kCounters[] = {
    {"threads_launched", "Threads in the launch's grid (grid size times block size).", "threads"},
    {"blocks_launched", "Blocks in the launch's grid.", "blocks"},
    {"bytes_written", "Bytes the kernel stored through ThreadContext::store/atomic_add.", "bytes"},
    {"bytes_read", "Bytes the kernel loaded through ThreadContext::load/atomic_add.", "bytes"},
    {"ops", "Operations the kernel counted with ThreadContext::count_ops.", "ops"},
    {"launches", "Executions of the kernel (1 per executed pass).", "launches"},
    {"duration_ns", "Wall time the execution took on the worker thread.", "ns"},
};

// 64-bit digest of a byte range (FNV-1a over 8-byte words, then the tail).
uint64_t digest(const std::byte* p, uint64_t n) {
  uint64_t h = 1469598103934665603ull;
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 1099511628211ull;
  }
  for (; i < n; ++i) h = (h ^ static_cast<uint64_t>(p[i])) * 1099511628211ull;
  return h ^ n;
}

// Values of @p names from one execution record.
std::vector<device::CounterValue> values_of(const std::vector<std::string>& names,
                                            const ExecRecord* rec) {
  std::vector<device::CounterValue> vals;
  for (const auto& n : names) {
    double v = 0;
    if (rec != nullptr) {
      if (n == "threads_launched") v = static_cast<double>(rec->threads);
      else if (n == "blocks_launched") v = static_cast<double>(rec->blocks);
      else if (n == "bytes_written") v = static_cast<double>(rec->bytes_written);
      else if (n == "bytes_read") v = static_cast<double>(rec->bytes_read);
      else if (n == "ops") v = static_cast<double>(rec->ops);
      else if (n == "launches") v = 1;
      else if (n == "duration_ns") v = static_cast<double>(rec->end_ns - rec->start_ns);
    }
    vals.push_back({n, v});
  }
  return vals;
}

}  // namespace

uint64_t ThreadContext::global_thread_id() const {
  uint64_t block = (uint64_t{block_idx.z} * grid_dim.y + block_idx.y) * grid_dim.x + block_idx.x;
  uint64_t per_block = uint64_t{block_dim.x} * block_dim.y * block_dim.z;
  uint64_t thread = (uint64_t{thread_idx.z} * block_dim.y + thread_idx.y) * block_dim.x + thread_idx.x;
  return block * per_block + thread;
}

void ExecRecord::finish() {
  std::lock_guard lock(mu);
  done = true;
  cv.notify_all();
}

bool ExecRecord::wait(uint64_t timeout_ms) {
  std::unique_lock lock(mu);
  return cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), [this] { return done; });
}

HostStream::HostStream(int device, Stream id) : device_(device), id_(id) {
  worker_ = std::thread([this] { run(); });
}

HostStream::~HostStream() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void HostStream::enqueue(std::function<void()> work) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(work));
  }
  cv_.notify_one();
}

bool HostStream::wait_idle(uint64_t timeout_ms) {
  std::unique_lock lock(mu_);
  return idle_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                           [this] { return queue_.empty() && !busy_; });
}

void HostStream::run() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty() && stop_) return;
    auto work = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    work();
    lock.lock();
    busy_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

HostDevice::HostDevice(int index, const Config& config)
    : capacity_(config.memory_bytes),
      pinned_capacity_(config.pinned_bytes),
      counters_per_pass_(config.counters_per_pass) {
  desc_.type = KREPLAY_AGENT_TYPE_HOST_DEVICE;
  desc_.device_index = static_cast<uint32_t>(index);
  desc_.name = fmt::format("kreplay host device {}", index);
  desc_.chip = "HOSTDEV";
  desc_.uuid = fmt::format("HOST-{:08x}", index);
  desc_.memory_bytes = config.memory_bytes;
  desc_.multiprocessor_count = 1;
  desc_.counters_per_pass = config.counters_per_pass;
  services_ = host_services();
}

device::PassService* HostDevice::service(int kind) {
  for (auto& s : services_) {
    if (static_cast<int>(s->kind()) == kind) return s.get();
  }
  return nullptr;
}

bool HostDevice::reserve(uint64_t bytes) {
  uint64_t cur = used_.load();
  while (true) {
    if (cur + bytes > capacity_) return false;
    if (used_.compare_exchange_weak(cur, cur + bytes)) return true;
  }
}

void HostDevice::unreserve(uint64_t bytes) { used_ -= bytes; }

void HostDevice::add_stream(std::shared_ptr<HostStream> s) {
  std::lock_guard lock(streams_mu_);
  streams_[s->id()] = std::move(s);
}

void HostDevice::remove_stream(Stream id) {
  std::lock_guard lock(streams_mu_);
  streams_.erase(id);
}

std::vector<std::shared_ptr<HostStream>> HostDevice::streams() {
  std::lock_guard lock(streams_mu_);
  std::vector<std::shared_ptr<HostStream>> out;
  for (auto& [id, s] : streams_) out.push_back(s);
  return out;
}

Status HostDevice::drain(uint64_t timeout_ms) {
  uint64_t deadline = now_ns() + timeout_ms * 1000000ull;
  for (auto& s : streams()) {
    uint64_t now = now_ns();
    uint64_t left_ms = now >= deadline ? 0 : (deadline - now) / 1000000ull;
    if (!s->wait_idle(left_ms)) {
      return Error(KREPLAY_STATUS_ERROR,
                   fmt::format("stream {} did not become idle within {} ms", s->id(), timeout_ms));
    }
  }
  return Status::Ok();
}

uint64_t HostDevice::storage_available(device::StorageTier tier) {
  if (tier == device::StorageTier::kDevice) {
    uint64_t used = used_.load();
    return used >= capacity_ ? 0 : capacity_ - used;
  }
  uint64_t used = pinned_used_.load();
  return used >= pinned_capacity_ ? 0 : pinned_capacity_ - used;
}

Result<device::Storage> HostDevice::allocate_storage(device::StorageTier tier, uint64_t bytes) {
  if (tier == device::StorageTier::kDevice) {
    if (!reserve(bytes)) return Error(KREPLAY_STATUS_ERROR_OUT_OF_RESOURCES, "device memory full");
  } else {
    uint64_t cur = pinned_used_.load();
    do {
      if (cur + bytes > pinned_capacity_)
        return Error(KREPLAY_STATUS_ERROR_OUT_OF_RESOURCES, "pinned host memory full");
    } while (!pinned_used_.compare_exchange_weak(cur, cur + bytes));
  }
  void* p = std::aligned_alloc(kStorageAlign, (bytes + kStorageAlign - 1) / kStorageAlign * kStorageAlign);
  if (p == nullptr) {
    if (tier == device::StorageTier::kDevice) unreserve(bytes); else pinned_used_ -= bytes;
    return Error(KREPLAY_STATUS_ERROR_OUT_OF_RESOURCES, "host allocation failed");
  }
  return device::Storage{reinterpret_cast<uint64_t>(p), bytes, tier, 0};
}

void HostDevice::free_storage(const device::Storage& s) {
  std::free(reinterpret_cast<void*>(s.address));
  if (s.tier == device::StorageTier::kDevice) unreserve(s.size); else pinned_used_ -= s.size;
}

Status HostDevice::snapshot(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                            std::span<uint64_t> digests) {
  if (fail_next_snapshot_.exchange(false)) {
    return Error(KREPLAY_STATUS_ERROR, "injected snapshot failure (hostrt::testing)");
  }
  for (const auto& r : regions) {
    auto* live = reinterpret_cast<const std::byte*>(r.live);
    std::memcpy(reinterpret_cast<void*>(r.storage), live, r.size);
    uint64_t n = device::chunk_count(r.size, chunk_bytes);
    for (uint64_t c = 0; c < n; ++c) {
      uint64_t off = c * chunk_bytes;
      digests[r.first_chunk + c] = digest(live + off, std::min(chunk_bytes, r.size - off));
    }
  }
  return Status::Ok();
}

Status HostDevice::digest_live(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                               std::span<uint64_t> digests) {
  for (const auto& r : regions) {
    auto* live = reinterpret_cast<const std::byte*>(r.live);
    uint64_t n = device::chunk_count(r.size, chunk_bytes);
    for (uint64_t c = 0; c < n; ++c) {
      uint64_t off = c * chunk_bytes;
      if (r.first_chunk + c >= digests.size()) {
        return Error(KREPLAY_STATUS_ERROR_INTERNAL, "chunk outside the digest array");
      }
      digests[r.first_chunk + c] = digest(live + off, std::min(chunk_bytes, r.size - off));
    }
  }
  return Status::Ok();
}

Status HostDevice::digest_baseline(std::span<const device::CopyRegion> regions,
                                   uint64_t chunk_bytes) {
  uint64_t chunks = 0;
  for (const auto& r : regions)
    chunks = std::max(chunks, r.first_chunk + device::chunk_count(r.size, chunk_bytes));
  std::vector<uint64_t> digests(chunks, 0);
  RETURN_IF_ERROR(digest_live(regions, chunk_bytes, digests));
  std::lock_guard lock(baseline_mu_);
  baseline_.assign(regions.begin(), regions.end());
  baseline_chunk_bytes_ = chunk_bytes;
  baseline_digests_ = std::move(digests);
  ++baseline_digests_taken_;
  return Status::Ok();
}

Status HostDevice::changed_since_baseline(std::span<const device::CopyRegion> regions,
                                          uint64_t chunk_bytes, bool update,
                                          std::vector<uint64_t>* changed,
                                          std::vector<uint64_t>* was_zero) {
  std::lock_guard lock(baseline_mu_);
  const bool same_layout =
      chunk_bytes == baseline_chunk_bytes_ && regions.size() == baseline_.size() &&
      std::equal(regions.begin(), regions.end(), baseline_.begin(), [](const auto& a, const auto& b) {
        return a.live == b.live && a.size == b.size && a.first_chunk == b.first_chunk;
      });
  if (!same_layout) {
    return Error(KREPLAY_STATUS_ERROR, "no digest baseline of this memory layout is kept");
  }
  for (const auto& r : regions) {
    auto* live = reinterpret_cast<const std::byte*>(r.live);
    uint64_t n = device::chunk_count(r.size, chunk_bytes);
    for (uint64_t c = 0; c < n; ++c) {
      uint64_t off = c * chunk_bytes;
      const uint64_t len = std::min(chunk_bytes, r.size - off);
      const uint64_t d = digest(live + off, len);
      uint64_t& base = baseline_digests_[r.first_chunk + c];
      if (d != base) {
        changed->push_back(r.first_chunk + c);
        if (was_zero != nullptr) {
          const std::vector<std::byte> zeros(len);
          if (base == digest(zeros.data(), len)) was_zero->push_back(r.first_chunk + c);
        }
        if (update) base = d;
      }
    }
  }
  std::sort(changed->begin(), changed->end());
  if (was_zero != nullptr) std::sort(was_zero->begin(), was_zero->end());
  return Status::Ok();
}

Status HostDevice::zero_chunks(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                               std::span<const uint64_t> chunks) {
  for (uint64_t chunk : chunks) {
    const device::CopyRegion* r = nullptr;
    for (const auto& x : regions) {
      if (chunk >= x.first_chunk && chunk < x.first_chunk + device::chunk_count(x.size, chunk_bytes))
        r = &x;
    }
    if (r == nullptr) return Error(KREPLAY_STATUS_ERROR_INTERNAL, "chunk outside the regions");
    const uint64_t off = (chunk - r->first_chunk) * chunk_bytes;
    std::memset(reinterpret_cast<void*>(r->live + off), 0, std::min(chunk_bytes, r->size - off));
  }
  return Status::Ok();
}

uint64_t HostDevice::baseline_digests_taken() {
  std::lock_guard lock(baseline_mu_);
  return baseline_digests_taken_;
}

Status HostDevice::find_changed(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                                std::span<const uint64_t> digests, std::vector<uint64_t>* changed) {
  for (const auto& r : regions) {
    auto* live = reinterpret_cast<const std::byte*>(r.live);
    uint64_t n = device::chunk_count(r.size, chunk_bytes);
    for (uint64_t c = 0; c < n; ++c) {
      uint64_t off = c * chunk_bytes;
      if (digest(live + off, std::min(chunk_bytes, r.size - off)) != digests[r.first_chunk + c])
        changed->push_back(r.first_chunk + c);
    }
  }
  return Status::Ok();
}

Status HostDevice::restore(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                           std::span<const uint64_t> chunks) {
  size_t ri = 0;
  for (uint64_t chunk : chunks) {  // chunks are sorted; so are regions by first_chunk
    while (ri + 1 < regions.size() && regions[ri + 1].first_chunk <= chunk) ++ri;
    const auto& r = regions[ri];
    uint64_t off = (chunk - r.first_chunk) * chunk_bytes;
    if (off >= r.size) return Error(KREPLAY_STATUS_ERROR_INTERNAL, "chunk outside its region");
    std::memcpy(reinterpret_cast<void*>(r.live + off), reinterpret_cast<const void*>(r.storage + off),
                std::min(chunk_bytes, r.size - off));
  }
  return Status::Ok();
}

Result<std::vector<device::CounterDesc>> HostDevice::list() {
  std::vector<device::CounterDesc> out;
  for (const auto& c : kCounters)
    out.push_back({c.name, c.description, c.unit, KREPLAY_COUNTER_VALUE_TYPE_COUNT});
  return out;
}

Result<std::shared_ptr<device::CounterSet>> HostDevice::create(const std::vector<std::string>& names) {
  std::vector<std::string> known;
  for (const auto& c : kCounters) known.emplace_back(c.name);
  std::vector<std::string> unique;
  for (const auto& n : names) {
    if (std::find(known.begin(), known.end(), n) == known.end()) {
      auto close = suggest(n, known);
      return Error(KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND,
                   close.empty()
                       ? fmt::format("unknown counter '{}' on the host device; list them with "
                                     "--list-avail",
                                     n)
                       : fmt::format("unknown counter '{}' on the host device; did you mean {}?", n,
                                     join_or(close)));
    }
    if (std::find(unique.begin(), unique.end(), n) == unique.end()) unique.push_back(n);
  }
  if (unique.size() > counters_per_pass_) {
    return Error(KREPLAY_STATUS_ERROR_EXCEEDS_HW_LIMIT,
                 fmt::format("counter group [{}] needs {} counters but the host device collects {} "
                             "per pass; split it into groups of at most {}",
                             fmt::join(unique, ", "), unique.size(), counters_per_pass_,
                             counters_per_pass_));
  }
  return std::shared_ptr<device::CounterSet>(std::make_shared<HostCounterSet>(std::move(unique)));
}

Status HostDevice::injected_counter_failure() {
  if (fail_counter_passes_.load() > 0 && fail_counter_passes_.fetch_sub(1) > 0) {
    return Error(KREPLAY_STATUS_ERROR,
                 "injected counter failure (KREPLAY_HOST_FAIL_COUNTER_PASSES or hostrt::testing)");
  }
  return Status::Ok();
}

Status HostDevice::begin_pass(device::Launch& launch, std::span<device::CounterSet* const> sets) {
  auto* hl = dynamic_cast<HostWork*>(&launch);
  if (hl == nullptr) return Error(KREPLAY_STATUS_ERROR_INTERNAL, "not a host launch");
  RETURN_IF_ERROR(injected_counter_failure());
  std::vector<std::string> all;
  for (auto* s : sets) {
    for (const auto& n : s->names()) {
      if (std::find(all.begin(), all.end(), n) == all.end()) all.push_back(n);
    }
  }
  if (all.size() > counters_per_pass_) {
    return Error(KREPLAY_STATUS_ERROR_EXCEEDS_HW_LIMIT,
                 fmt::format("the configs picked for this pass need {} counters; the host device "
                             "collects {} per pass",
                             all.size(), counters_per_pass_));
  }
  hl->armed.clear();
  for (auto* s : sets) hl->armed.push_back(s->names());
  return Status::Ok();
}

Result<std::vector<std::vector<device::CounterValue>>> HostDevice::end_pass(device::Launch& launch) {
  auto* hl = dynamic_cast<HostWork*>(&launch);
  if (hl == nullptr) return Error(KREPLAY_STATUS_ERROR_INTERNAL, "not a host launch");
  std::vector<std::vector<device::CounterValue>> out;
  const ExecRecord* rec = hl->last.get();
  for (const auto& names : hl->armed) out.push_back(values_of(names, rec));
  hl->armed.clear();
  return out;
}

void HostDevice::note_submission(const std::shared_ptr<ExecRecord>& rec) {
  std::lock_guard lock(range_mu_);
  if (range_active_) range_records_.push_back(rec);
}

Status HostDevice::begin_range_pass(device::CounterSet* set, bool /*first_pass*/,
                                    bool /*whole_graph*/, bool /*flushes*/) {
  // A graph launch notes one execution record for all its kernels: one value set either way.
  RETURN_IF_ERROR(injected_counter_failure());
  if (set->names().size() > counters_per_pass_) {
    return Error(KREPLAY_STATUS_ERROR_EXCEEDS_HW_LIMIT,
                 fmt::format("the config needs {} counters; the host device collects {} per pass",
                             set->names().size(), counters_per_pass_));
  }
  {
    std::lock_guard lock(range_mu_);
    range_active_ = true;
    range_names_ = set->names();
    range_records_.clear();
    range_flushes_.clear();
  }
  // As CUPTI's Start on CUDA: beginning a session writes device memory of its own, which the
  // next launch would write back unless the caches are flushed after it.
  std::lock_guard lock(flush_mu_);
  dirty_bytes_ += kSessionStartDirtyBytes;
  return Status::Ok();
}

void HostDevice::range_flush(size_t launches) {
  std::lock_guard lock(range_mu_);
  if (range_active_) range_flushes_.push_back(launches);
}

Result<std::vector<std::vector<device::CounterValue>>> HostDevice::end_range_pass(size_t launches) {
  std::lock_guard lock(range_mu_);
  std::vector<std::vector<device::CounterValue>> out;
  // As on CUDA: the flushes' ranges are left out where the engine said they fell. Were a
  // position wrong, a launch would get a flush's (zero) values or its neighbour's.
  const std::vector<size_t> ranges = device::launch_ranges(range_records_.size(), range_flushes_);
  for (size_t i = 0; i < launches && i < ranges.size(); ++i)
    out.push_back(values_of(range_names_, range_records_[ranges[i]].get()));
  range_active_ = false;
  range_records_.clear();
  range_flushes_.clear();
  return out;
}

void HostDevice::set_flush_hook(std::function<void()> hook) {
  std::lock_guard lock(flush_mu_);
  flush_hook_ = std::move(hook);
}

Status HostDevice::flush_caches() {
  std::function<void()> hook;
  {
    std::lock_guard lock(flush_mu_);
    hook = flush_hook_;
  }
  if (hook) hook();
  {
    std::lock_guard lock(range_mu_);
    if (range_active_) range_records_.push_back(nullptr);  // a range of its own, as on CUDA
  }
  std::lock_guard lock(flush_mu_);
  ++flushes_.total;
  if (running_.load() > 0) ++flushes_.inside_pass;
  ++pending_flushes_;
  dirty_bytes_ = 0;
  return Status::Ok();
}

void HostDevice::execution_started() {
  std::lock_guard lock(flush_mu_);
  flushes_.dirty_at_start.push_back(dirty_bytes_);
}

void HostDevice::execution_finished(uint64_t bytes_written) {
  std::lock_guard lock(flush_mu_);
  dirty_bytes_ += bytes_written;
}

uint64_t HostDevice::submission_started() {
  running_.fetch_add(1);
  std::lock_guard lock(flush_mu_);
  flushes_.before_submission.push_back(pending_flushes_);
  return std::exchange(pending_flushes_, 0);
}

HostDevice::FlushLog HostDevice::flush_log() {
  std::lock_guard lock(flush_mu_);
  return flushes_;
}

std::unique_ptr<device::Launch> HostLaunch::record() {
  auto copy = std::make_unique<HostLaunch>(*this);
  copy->probe_next.reset();
  copy->probe_armed = nullptr;
  copy->info_.arg_bytes = std::span<const std::byte>(copy->args.data(), copy->args.size());
  return copy;
}

namespace {
thread_local int tl_bound_contexts = 0;
}  // namespace

std::shared_ptr<void> HostDevice::bind_launch_context(device::Launch& launch) {
  (void)launch;
  ++tl_bound_contexts;
  return std::shared_ptr<void>(this, [](void*) { --tl_bound_contexts; });
}

bool HostDevice::launch_context_bound() { return tl_bound_contexts > 0; }

Status HostLaunch::submit() {
  if (origin != std::this_thread::get_id() && !HostDevice::launch_context_bound()) {
    return Error(KREPLAY_STATUS_ERROR,
                 "a launch submitted again on a thread other than its own, outside "
                 "Device::bind_launch_context (CUDA: no context current there)");
  }
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0 ||
      uint64_t{block.x} * block.y * block.z > 1024) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                 fmt::format("invalid launch configuration grid ({},{},{}) block ({},{},{})", grid.x,
                             grid.y, grid.z, block.x, block.y, block.z));
  }
  HostDevice* dev = device;
  enqueue_execution([dev, fn = fn, grid = grid, block = block, args = args,
                     offsets = offsets](ExecRecord& rec) {
    ThreadContext ctx;
    ctx.grid_dim = grid;
    ctx.block_dim = block;
    Executor::run(fn, ctx, args.data(), offsets.data(), rec, rec.probe.get(),
                  dev != nullptr ? dev->heap() : nullptr);
  });
  return Status::Ok();
}

void HostWork::enqueue_execution(std::function<void(ExecRecord&)> run) {
  auto rec = std::make_shared<ExecRecord>();
  rec->probe = std::move(probe_next);
  last = rec;
  if (device != nullptr) {
    device->note_submission(rec);
    device->submission_started();
  }
  stream->enqueue([rec, dev = device, run = std::move(run)] {
    if (dev != nullptr) dev->execution_started();
    rec->start_ns = now_ns();
    run(*rec);
    if (rec->probe) rec->probe->finish();
    rec->end_ns = now_ns();
    if (rec->end_ns == rec->start_ns) ++rec->end_ns;
    // Before finish(): whoever waits for the pass may flush at once, and that is not inside it.
    if (dev != nullptr) {
      dev->execution_finished(rec->bytes_written);
      dev->submission_finished();
    }
    rec->finish();
  });
}

Status HostWork::wait(uint64_t timeout_ms, device::PassTiming* timing) {
  if (!last) return Error(KREPLAY_STATUS_ERROR_INTERNAL, "nothing was submitted");
  if (!last->wait(timeout_ms)) {
    return Error(KREPLAY_STATUS_ERROR,
                 fmt::format("the launch did not complete within {} ms", timeout_ms));
  }
  if (last->trapped) {
    return Error(KREPLAY_STATUS_ERROR_DEVICE_FAULT, "the kernel trapped (a device-side assert)");
  }
  if (timing) {
    timing->start_ns = last->start_ns;
    timing->end_ns = last->end_ns;
  }
  return Status::Ok();
}

Status HostWork::wait_stream(uint64_t timeout_ms) {
  if (!stream->wait_idle(timeout_ms)) {
    return Error(KREPLAY_STATUS_ERROR,
                 fmt::format("stream {} did not become idle within {} ms", stream->id(), timeout_ms));
  }
  return Status::Ok();
}

}  // namespace kreplay::hostrt
