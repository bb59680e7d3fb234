// Range replay, the close (range.cpp's "close" step): under the window lock, wait for the
// application's pass, deliver its services, then per further pass restore, flush, resubmit every
// recorded launch and memory call in order, wait and deliver; CONFIG EXIT with the outcome. Also
// the helpers a replayed range's passes use: keeping the host's writes to mapped memory, waiting
// for the launch before, and the cache flush before each launch.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "common/logging.hpp"
#include "common/util.hpp"
#include "replay/engine.hpp"
#include "replay/range_internal.hpp"

namespace kreplay::replay {
namespace {

using detail::RangeDepth;

bool range_should_continue(const RangeState& r) {
  if (!r.plan.indefinite && r.pass + 1 >= r.plan.requested) return false;
  if (r.replay_continue == nullptr) return true;
  kreplay_range_info_t info = r.info;
  info.launch_count = r.launches.size();
  return r.replay_continue(info, r.pass, r.plan.indefinite ? 0 : r.plan.requested, r.user_data) !=
         0;
}

}  // namespace

void Engine::keep_host_writes(device::Device& dev, RangeState& r) {
  // Mapped host memory is host memory: read and written here directly, with every launch of the
  // application's pass complete and the window held.
  if (r.host_mapped.empty()) return;
  Result<std::vector<uint64_t>> changed = r.snapshot.changed_chunks(dev);
  if (!changed.ok()) {
    KR_WARN("range {}: cannot tell what the host wrote: {}", r.info.range_id,
            changed.status().message());
    return;
  }
  for (uint64_t chunk : *changed) {
    const auto [live, size] = r.snapshot.chunk_live(chunk);
    const bool host = std::any_of(r.host_mapped.begin(), r.host_mapped.end(), [&](const auto& m) {
      return live >= m.first && live + size <= m.first + m.second;
    });
    if (!host) continue;
    std::vector<std::byte> bytes(size);
    std::memcpy(bytes.data(), reinterpret_cast<const void*>(live), size);
    r.host_kept.emplace_back(live, std::move(bytes));
  }
}

bool Engine::wait_for_launch_before(RangeState& r, size_t index) {
  // Every launch before it ran one after another on the range's stream or streams: waiting for
  // the one before waits for them all. On pass 0 that is the application's submission, waited
  // for through its recorded copy. The first launch's pass was drained (pass 0: at open; later
  // passes: by the restore).
  device::Launch* before = index > 0 ? r.launches[index - 1]->recorded.get() : nullptr;
  if (before == nullptr) return true;
  Status w = before->wait(options().drain_timeout_ms, nullptr);
  // Memory calls made after that launch come before this one (on its stream, or ordered there).
  if (w.ok() && !wait_memops(r, index))
    w = Error(KREPLAY_STATUS_ERROR, "a memory call before it did not complete");
  if (!w.ok()) {
    KR_WARN_ONCE("range-flush-wait",
                 "range {} pass {}: the caches were not flushed before a launch, the launch "
                 "before it did not complete: {}",
                 r.info.range_id, r.pass, w.message());
    return false;
  }
  return true;
}

void Engine::flush_before_launch(DeviceSlot& slot, RangeState& r, size_t index) {
  if (!r.flush_launches || index > r.launches.size()) return;
  // The flush runs on kreplay's own stream: the launches before must have completed, or their
  // dirty lines would be written back during this launch.
  if (!wait_for_launch_before(r, index)) return;
  if (!flush_before_pass(*slot.device)) return;
  // Inside the pass's counter session the flush may be counted work of its own (CUDA: a CUPTI
  // range): the backend leaves it out of the launches' values.
  device::CounterBackend* counters = slot.device->counters();
  if (r.counter_set != nullptr && counters != nullptr && index >= r.counted_from)
    counters->range_flush(index - r.counted_from);
}

void Engine::learn_range_cut(DeviceSlot& slot, RangeState& r, kreplay_range_close_reason_t why) {
  // This range closed before a launch whose own range wrote beyond what it saved: kept until
  // that launch's range is measured (range_enter hands it over).
  if (why == KREPLAY_RANGE_CLOSE_WRITE_SET)
    slot.range_cut = RangeCut{r.ws.kernel, r.ws.args, r.ws.written};
  // This range was opened by the launch that cut the one before: that range's key learns both
  // ranges' writes, so that it saves them next time, the launch joins again, and the ranges grow
  // back to the length of the program's repeating work (one cut undone per occurrence).
  if (!r.cut) return;
  std::vector<Extent> both = std::move(r.cut->written);
  both.insert(both.end(), r.ws.written.begin(), r.ws.written.end());
  normalize(&both);
  slot.range_writes.learn(r.cut->kernel, r.cut->args, both, r.ws.layout);
  r.cut.reset();
}

void Engine::close_range(DeviceSlot& slot, kreplay_range_close_reason_t why, const char* call) {
  RangeDepth depth;
  // The range leaves the slot now (calls made from inside the close see none), but range_open
  // stays set until the end: other threads' barriers then wait on range_mu for the close.
  std::unique_ptr<RangeState> owned = std::move(slot.range);
  RangeState& r = *owned;
  const Options opt = options();
  device::Device& dev = *slot.device;
  // The close may come from another thread's call (CUDA: one that may have no context current):
  // the passes run in the context the range's launches were made in.
  std::shared_ptr<void> bound;
  if (!r.launches.empty()) {
    const RangeLaunch& first = *r.launches.front();
    device::Launch* l = first.recorded ? first.recorded.get() : first.st->launch;
    if (l != nullptr) bound = dev.bind_launch_context(*l);
  }
  device::CounterBackend* counters = dev.counters();
  std::unique_lock window(slot.window_mu);
  detail::thread_windows().push_back(&slot);
  LocalContextScope scope(r.pre_active, r.overrides);
  auto& out = r.outcome;
  out.close_reason = why;
  out.close_call = call;
  out.memory_calls = r.memory_calls;
  out.launches = r.launches.size();
  out.outcome = KREPLAY_REPLAY_OUTCOME_REPLAYED;
  for (const auto& rl : r.launches) {
    out.selected_launches += rl->selected ? 1 : 0;
    r.dispatch_ids.push_back(rl->st->info.dispatch_id);
  }

  // Finish a pass whose launches were all submitted: wait, counters, services' EXIT, PASS EXIT.
  bool faulted = false;  // a launch failed on the device: nothing more runs there
  auto complete_pass = [&]() -> bool {
    bool ok = true;
    r.pass_timing = {};
    // The pass's memory calls (the application's own on pass 0) complete with it.
    if (r.declined == KREPLAY_DECLINE_REASON_NONE && !r.memops.empty() && !wait_memops(r, SIZE_MAX))
      ok = false;
    for (auto& rl : r.launches) {
      DispatchState& ls = *rl->st;
      if (r.declined != KREPLAY_DECLINE_REASON_NONE && r.counter_set == nullptr) {
        // Not waited for: a declined launch may wait for the host, which cannot act now. One that
        // waited for the host before is held as a host waiter while it runs, as after its probe,
        // so that the launches queued behind it are not waited for either.
        ls.timing = {};
        if (r.declined == KREPLAY_DECLINE_REASON_WAITS_FOR_HOST && rl->recorded != nullptr &&
            !rl->recorded->completed()) {
          ls.launch = nullptr;
          hold_host_waiter(slot, ls.info, std::move(rl->recorded), opt.host_wait_ms);
        }
        continue;
      }
      const bool probing = r.probe && r.pass == 0;
      const uint64_t limit = probing ? std::min(opt.host_wait_ms, opt.drain_timeout_ms)
                                     : opt.drain_timeout_ms;
      if (Status w = ls.launch->wait(limit, &ls.timing); !w.ok()) {
        ls.timing = {};
        ok = false;
        if (probing) {
          r.declined = KREPLAY_DECLINE_REASON_WAITS_FOR_HOST;
          hold_host_waiter(slot, ls.info, std::move(rl->recorded), opt.host_wait_ms);
          ls.launch = nullptr;
        } else if (w.code() == KREPLAY_STATUS_ERROR_DEVICE_FAULT) {
          faulted = true;
          KR_WARN(
              "range {} pass {}: {} failed on the device: {}; the range is not replayed "
              "further (the application sees the error as it would without kreplay)",
              r.info.range_id, r.pass, ls.info.kernel_name, w.message());
        } else {
          KR_WARN("range {} pass {}: {}", r.info.range_id, r.pass, w.message());
        }
      }
      if (ls.timing.end_ns != 0) {
        if (r.pass_timing.start_ns == 0 || ls.timing.start_ns < r.pass_timing.start_ns)
          r.pass_timing.start_ns = ls.timing.start_ns;
        r.pass_timing.end_ns = std::max(r.pass_timing.end_ns, ls.timing.end_ns);
      }
    }
    const size_t from = std::min(r.counted_from, r.launches.size());
    if (r.counter_set != nullptr && counters != nullptr) {
      auto values = counters->end_range_pass(r.launches.size() - from);
      if (!values.ok()) {
        KR_WARN("range {} pass {}: reading counters failed: {}", r.info.range_id, r.pass,
                values.status().message());
        r.counter_failure = values.status();
      } else {
        for (size_t i = 0; from + i < r.launches.size() && i < values->size(); ++i)
          r.launches[from + i]->st->range_values = std::move((*values)[i]);
      }
    }
    for (size_t i = 0; i < r.launches.size(); ++i) {
      auto& rl = r.launches[i];
      // A failed session loses the counters of the launches it was to count.
      if (!r.counter_failure.ok() && i >= from) rl->st->range_counters_lost = r.counter_failure;
      hooks_.after_complete(*rl->st);
      rl->st->range_values.reset();
      rl->st->range_counters_lost = Status::Ok();
    }
    r.counter_failure = Status::Ok();
    hooks_.range_pass_exit(r);
    if (ok) {
      ++out.passes_executed;
      stats_.passes.fetch_add(r.launches.size(), std::memory_order_relaxed);
    }
    return ok;
  };

  bool ok = complete_pass();
  if (!ok) {
    out.reason =
        faulted ? KREPLAY_DECLINE_REASON_LAUNCH_FAILED : KREPLAY_DECLINE_REASON_PASS_TIMEOUT;
  }
  if (ok && r.ws.kind == SaveKind::kWriteSet && r.declined == KREPLAY_DECLINE_REASON_NONE &&
      opt.check_write_sets) {
    // The application's own pass: what it changed is the range's write set, learned; a
    // write-bounded range replays only when all of it was saved.
    bool covered = false;
    if (Status m = measure_writes(slot, r.ws, !r.whole_graph, &out.bytes_changed, &covered);
        !m.ok()) {
      KR_WARN("range {}: what its launches wrote could not be measured ({}); it is not replayed",
              r.info.range_id, m.message());
      r.declined = KREPLAY_DECLINE_REASON_SNAPSHOT_FAILED;
    } else {
      keep_baseline(slot, r.ws);
      if (!covered) {
        if (r.ws.predicted) {
          KR_WARN_ONCE("range-write-set-miss",
                       "range {} wrote outside the {} kreplay predicted and saved: its launches "
                       "ran once (the application's own run) and are counted as declined "
                       "(write_set_unknown); later ranges like it save what it wrote",
                       r.info.range_id, format_bytes(extent_bytes(r.ws.saved)));
        } else {
          KR_WARN_ONCE("range-write-set-unknown",
                       "range {} not replayed: a snapshot of all {} of tracked memory does not "
                       "fit and what its launches write was not known yet; they ran once while "
                       "kreplay learned what they write, and later ranges that open with the "
                       "same launch save only that (ranges like it are counted as declined: "
                       "write_set_unknown)",
                       r.info.range_id, format_bytes(r.ws.layout.total_bytes()));
        }
        r.declined = KREPLAY_DECLINE_REASON_WRITE_SET_UNKNOWN;
      }
    }
  } else if (r.ws.kind == SaveKind::kWriteSet) {
    slot.baseline_valid = false;
  }
  if (r.ws.kind == SaveKind::kWriteSet && r.ws.learned) learn_range_cut(slot, r, why);
  if (r.declined != KREPLAY_DECLINE_REASON_NONE) {
    ok = false;
    out.outcome = KREPLAY_REPLAY_OUTCOME_DECLINED;
    out.reason = r.declined;
    stats_.declined.fetch_add(1);
  } else if (ok && out.selected_launches == 0) {
    out.outcome = KREPLAY_REPLAY_OUTCOME_NOT_REQUESTED;
    out.reason = KREPLAY_DECLINE_REASON_NOTHING_SELECTED;
  } else if (!r.plan.replay) {
    out.outcome = KREPLAY_REPLAY_OUTCOME_NOT_REQUESTED;  // one pass: the application's own
  }
  bool host_writes_kept = false;
  while (ok && r.plan.replay && out.selected_launches > 0 && range_should_continue(r)) {
    if (!host_writes_kept) {  // before the first restore
      keep_host_writes(dev, r);
      host_writes_kept = true;
      // The host read what the application's pass wrote: the device must end as that pass left
      // it, whatever a later pass writes (put back after the loop).
      if (r.host_read) {
        uint64_t t0 = now_ns();
        if (Status s = save_first_pass(dev, r); !s.ok()) {
          KR_WARN_ONCE("range-host-read-save",
                       "range {}: the host read from it, and the device memory its launches "
                       "changed could not be saved ({}); it is not replayed (counted as "
                       "declined: snapshot_too_large)",
                       r.info.range_id, s.message());
          out.outcome = KREPLAY_REPLAY_OUTCOME_DECLINED;
          out.reason = KREPLAY_DECLINE_REASON_SNAPSHOT_TOO_LARGE;
          stats_.declined.fetch_add(1);
          break;
        }
        uint64_t t1 = now_ns();
        out.bytes_snapshotted += r.first_pass.bytes;
        out.snapshot_ns += t1 - t0;
        r.intervals.push_back(
            {KREPLAY_REPLAY_INTERVAL_SNAPSHOT, r.pass, t0, t1, r.first_pass.bytes});
      }
    }
    uint64_t t0 = now_ns();
    Result<uint64_t> restored = r.snapshot.restore(dev, opt.verify_restore);
    if (restored.ok() && r.ws.kind == SaveKind::kWriteSet)
      add_restored(restored, restore_zeroed(slot, r.ws));
    if (restored.ok() && r.heap_saved) add_restored(restored, restore_device_heap(dev));
    if (restored.ok() && !r.allocations.empty())  // memory allocated inside the range
      add_restored(restored, restore_allocations(dev, r));
    uint64_t t1 = now_ns();
    if (!restored.ok()) {
      KR_ERROR("range {}: restore after pass {} failed: {}", r.info.range_id, r.pass,
               restored.status().message());
      out.reason = KREPLAY_DECLINE_REASON_SNAPSHOT_FAILED;
      break;
    }
    out.bytes_restored += *restored;
    out.restore_ns += t1 - t0;
    r.intervals.push_back({KREPLAY_REPLAY_INTERVAL_RESTORE, r.pass, t0, t1, *restored});
    learn_full(slot, r.ws, !r.whole_graph, r.snapshot, &out.bytes_changed);
    // With flushes per launch, the first launch's comes below, after the counter session began.
    if (!r.flush_launches) flush_before_pass(dev);
    ++r.pass;
    for (auto& rl : r.launches) rl->st->pass = r.pass;
    hooks_.range_pass_enter(r, scope);
    r.counter_set = nullptr;
    r.counted_from = 0;  // later passes count from the first resubmitted launch
    for (auto& rl : r.launches) hooks_.before_submit(*rl->st);
    if (counters != nullptr) {
      for (auto& rl : r.launches) {
        if (device::CounterSet* set = hooks_.armed_set(*rl->st)) {
          // A probe range's first counted pass is pass 1: a new collection.
          const bool first = r.probe && r.pass == 1;
          if (Status s = counters->begin_range_pass(set, first, r.whole_graph, r.flush_launches);
              s.ok()) {
            r.counter_set = set;
          } else {
            KR_WARN("range {} pass {}: counters not collected: {}", r.info.range_id, r.pass,
                    s.message());
            r.counter_failure = s;
          }
          break;
        }
      }
    }
    bool submitted = true;
    PassCursor cursor;  // the item submitted last (a launch or a memory call)
    for (size_t i = 0; i < r.launches.size(); ++i) {
      RangeLaunch& rl = *r.launches[i];
      // The memory calls the application made between the launch before and this one.
      if (i > 0 && !resubmit_memops(r, i, cursor)) {
        submitted = false;
        break;
      }
      const uint64_t stream = rl.st->info.stream_id.handle;
      if (r.flush_launches) {
        // Waits for the launch before (if any) and the memory calls after it, then flushes.
        flush_before_launch(slot, r, i);
      } else if (cursor.any && cursor.stream != stream) {
        // Items on another stream than the one before were ordered by the application's events
        // on pass 0; on later passes kreplay orders them by waiting for the item before.
        if (Status w = cursor.wait(opt.drain_timeout_ms); !w.ok())
          KR_WARN("range {} pass {}: {}", r.info.range_id, r.pass, w.message());
      }
      const bool serviced = hooks_.range_services_begin(*rl.st);
      if (Status s = rl.recorded->relaunch(); !s.ok()) {
        KR_ERROR("range {} pass {}: resubmission failed: {}", r.info.range_id, r.pass,
                 s.message());
        if (serviced) hooks_.range_services_end(*rl.st);
        submitted = false;
        break;
      }
      if (serviced) {
        // A per-pass service holds the device for this launch alone: let it finish first.
        if (Status w = rl.recorded->wait(opt.drain_timeout_ms, nullptr); !w.ok())
          KR_WARN("range {} pass {}: {}", r.info.range_id, r.pass, w.message());
        hooks_.range_services_end(*rl.st);
      }
      cursor = {rl.recorded.get(), nullptr, stream, true};
    }
    // The memory calls after the range's last launch.
    if (submitted && !resubmit_memops(r, r.launches.size(), cursor)) submitted = false;
    ok = complete_pass();
    if (!submitted) {
      out.reason = KREPLAY_DECLINE_REASON_LAUNCH_FAILED;
      break;
    }
    if (!ok) {
      out.reason =
          faulted ? KREPLAY_DECLINE_REASON_LAUNCH_FAILED : KREPLAY_DECLINE_REASON_PASS_TIMEOUT;
      break;
    }
  }
  if (r.first_pass.saved) {
    // Even after a pass that failed: the application saw its own pass.
    uint64_t t0 = now_ns();
    Result<uint64_t> put = put_back_first_pass(dev, r);
    uint64_t t1 = now_ns();
    if (!put.ok()) {
      KR_ERROR("range {}: the device memory its first pass left could not be put back ({}); it "
               "may now differ from what the application read",
               r.info.range_id, put.status().message());
    } else {
      out.bytes_restored += *put;
      out.restore_ns += t1 - t0;
      r.intervals.push_back({KREPLAY_REPLAY_INTERVAL_RESTORE, r.pass, t0, t1, *put});
    }
  }
  if (r.ws.kind == SaveKind::kWriteSet && out.outcome == KREPLAY_REPLAY_OUTCOME_REPLAYED &&
      r.declined == KREPLAY_DECLINE_REASON_NONE && opt.check_write_sets) {
    if (out.passes_executed > 1 &&
        !verify_last_pass(slot, r.ws, r.info.first_dispatch_id, "a range"))
      out.reason = KREPLAY_DECLINE_REASON_WRITE_SET_UNKNOWN;
    keep_baseline(slot, r.ws);
  }
  // The application's pass left mapped host memory as it should be; the restores put the range's
  // entry state back: return what the host (or that pass) wrote.
  for (const auto& [live, bytes] : r.host_kept)
    std::memcpy(reinterpret_cast<void*>(live), bytes.data(), bytes.size());
  r.host_kept.clear();
  out.intervals = r.intervals.data();
  out.interval_count = r.intervals.size();
  out.dispatch_ids = r.dispatch_ids.data();
  if (out.outcome == KREPLAY_REPLAY_OUTCOME_REPLAYED) stats_.replayed.fetch_add(1);
  hooks_.range_config_exit(r);
  for (auto& rl : r.launches) hooks_.end_dispatch(*rl->st);
  // Frees deferred during the range, and the storage of what it allocated (range_memops.cpp).
  end_range_memory(dev, r);
  if (r.heap_saved) dev.drop_heap();
  auto& windows = detail::thread_windows();
  windows.erase(std::find(windows.begin(), windows.end(), &slot));
  slot.range_open.store(false, std::memory_order_release);
}

}  // namespace kreplay::replay
