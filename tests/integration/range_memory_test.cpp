// Range replay through memory calls (issue 30; docs/design.md, "Range replay"), pinned on the
// host device: memsets, copies into device memory, allocations and frees made by the range's
// thread on its stream stay inside the open range, run again in order on every pass, and the
// application still sees exactly one execution. Each test fails where kreplay would skip the
// call on the later passes (the memset, the copy), re-read a host buffer instead of its capture,
// forget memory allocated inside the range, or hand out a block the range still replays.
#include <thread>

#include "range_harness.hpp"

namespace kreplay::test {
namespace {

class RangeMemory : public Range {
 protected:
  void accumulate(float* y, const float* x, uint32_t n, hr::Stream s = 0) {
    ASSERT_TRUE(
        hr::launch_args(fx().accumulate, {(n + 63) / 64}, {64}, s ? s : stream_, y, x, n).ok());
  }
  // The one range that closed, its outcome checked for a replay of @p launches launches.
  RangeEvent one_range(uint64_t launches) {
    auto exits = S().exits();
    EXPECT_EQ(exits.size(), 1u);
    if (exits.empty()) return {};
    const auto& o = exits[0].outcome;
    EXPECT_EQ(o.outcome, KREPLAY_REPLAY_OUTCOME_REPLAYED);
    EXPECT_EQ(o.launches, launches);
    EXPECT_EQ(o.passes_executed, 3u);
    return exits[0];
  }
  static float v(float base, int i) { return base + 0.001f * static_cast<float>(i % 31); }
};

TEST_F(RangeMemory, AMemsetStaysInTheRangeAndRunsAgainOnEveryPass) {
  float* x = buffer(256, 0.5f);
  float* y = buffer(256, 3.0f);
  update(x, 256);
  ASSERT_TRUE(hr::memset_async(y, 0, 256 * sizeof(float), stream_).ok());
  accumulate(y, x, 256);                                          // y = 0 + x'
  ASSERT_TRUE(hr::memset(x + 128, 0, 128 * sizeof(float)).ok());  // the synchronous form too
  update(x, 256);
  EXPECT_TRUE(S().exits().empty()) << "a memset closed the range";
  // Without the memsets on passes 1 and 2, y would be 3.007 + x' and x[200] 2 * x'[200] + 1.
  EXPECT_EQ(read(y), expect(v(0.5f, 7), 1));
  EXPECT_EQ(read(x, 200), 1.0f);
  EXPECT_EQ(read(x), expect(v(0.5f, 7), 2));
  auto r = one_range(3);
  EXPECT_EQ(r.outcome.close_reason, KREPLAY_RANGE_CLOSE_MEMORY);
  EXPECT_EQ(r.close_call, "hostrt::memcpy");  // the copy back to the host closes it
  EXPECT_EQ(r.outcome.memory_calls, 2u);      // the two memsets, as the outcome record says
  EXPECT_EQ(*g_counter, 2u);
}

TEST_F(RangeMemory, ADeviceToDeviceCopyStaysInTheRange) {
  float* x = buffer(256, 0.5f);
  float* y = buffer(256, 7.0f);
  update(x, 256);
  ASSERT_TRUE(hr::memcpy_async(y, x, 256 * sizeof(float), stream_).ok());
  update(y, 256);  // y = 2x' + 1: with no copy on passes 1 and 2, 2 * 7.007 + 1
  ASSERT_TRUE(hr::memcpy(x + 100, y + 100, 4 * sizeof(float)).ok());  // synchronous
  EXPECT_TRUE(S().exits().empty()) << "a device copy closed the range";
  EXPECT_EQ(read(y), expect(expect(v(0.5f, 7), 1), 1));
  EXPECT_EQ(read(x, 100), expect(expect(v(0.5f, 100), 1), 1));
  EXPECT_EQ(read(x, 99), expect(v(0.5f, 99), 1));
  one_range(2);
}

TEST_F(RangeMemory, AHostCopyRunsAgainFromItsCaptureAfterTheBufferWasOverwritten) {
  float* x = buffer(256, 0.5f);
  float* y = buffer(256, 0.0f);
  std::vector<float> host(256, 10.0f);
  update(x, 256);
  ASSERT_TRUE(hr::memcpy_async(y, host.data(), 256 * sizeof(float), stream_).ok());
  std::fill(host.begin(), host.end(), -1.0f);  // the host reuses its buffer right away
  accumulate(x, y, 256);                       // x = x' + 10
  // Re-read on passes 1 and 2, the buffer would give x' - 1.
  EXPECT_EQ(read(x), expect(v(0.5f, 7), 1) + 10.0f);
  EXPECT_EQ(read(y, 3), 10.0f);
  one_range(2);
}

TEST_F(RangeMemory, AHostCopyOverTheCaptureLimitClosesTheRange) {
  set_range([](replay::RangeOptions& o) { o.capture_bytes = 512; });
  float* x = buffer(256, 0.5f);
  float* y = buffer(256, 0.0f);
  std::vector<float> host(256, 10.0f);
  update(x, 256);
  ASSERT_TRUE(hr::memcpy_async(y, host.data(), 100 * sizeof(float), stream_).ok());  // 400 B
  ASSERT_TRUE(hr::memcpy_async(y, host.data(), 256 * sizeof(float), stream_).ok());  // 1 KiB
  accumulate(x, y, 256);
  EXPECT_EQ(read(x), expect(v(0.5f, 7), 1) + 10.0f);
  auto exits = S().exits();
  ASSERT_EQ(exits.size(), 2u);
  EXPECT_EQ(exits[0].outcome.close_reason, KREPLAY_RANGE_CLOSE_MEMORY);
  EXPECT_EQ(exits[0].close_call, "hostrt::memcpy_async");
  EXPECT_EQ(exits[0].outcome.launches, 1u);
  EXPECT_EQ(exits[0].outcome.passes_executed, 3u);
}

// A block freed on another stream (and reached there) is handed to this stream's allocation inside
// the range, holding what its last user left: the range saves it as it was allocated, so every
// pass starts from those bytes.
TEST_F(RangeMemory, AnAsynchronousAllocationReusedFromAnotherStreamIsPartOfTheRangesState) {
  constexpr uint32_t n = 320;
  auto s1 = *hr::stream_create();
  auto* a = static_cast<float*>(*hr::malloc_async(n * sizeof(float), s1));
  std::vector<float> stale(n, 4.0f);
  ASSERT_TRUE(hr::memcpy(a, stale.data(), n * sizeof(float)).ok());
  ASSERT_TRUE(hr::free_async(a, s1).ok());
  ASSERT_TRUE(hr::stream_synchronize(s1).ok());  // s1 reached the free
  float* x = buffer(n, 0.5f);
  update(x, n);  // opens the range
  auto* b = static_cast<float*>(*hr::malloc_async(n * sizeof(float), stream_));
  EXPECT_EQ(b, a) << "the pool did not reuse the block";
  update(b, n);         // b = 2 * 4 + 1
  accumulate(x, b, n);  // x = x' + 9: without b saved at its allocation, x' + 19 on pass 2
  EXPECT_TRUE(S().exits().empty());
  EXPECT_EQ(read(x), expect(v(0.5f, 7), 1) + 9.0f);
  EXPECT_EQ(read(b), 9.0f);
  auto r = one_range(3);
  EXPECT_GE(r.outcome.bytes_snapshotted, n * sizeof(float) * 2);  // x's region and b's
  ASSERT_TRUE(hr::free_async(b, stream_).ok());
  ASSERT_TRUE(hr::stream_destroy(s1).ok());
}

// A free inside the range waits for its last pass: the block stays valid for the passes and the
// allocation that asks for it again (same size, same stream) gets other memory meanwhile.
TEST_F(RangeMemory, AFreeInsideTheRangeIsDeferredAndItsBlockNotHandedOutAgain) {
  constexpr uint32_t n = 288;
  const size_t bytes = n * sizeof(float);
  float* x = buffer(n, 0.5f);
  update(x, n);  // opens the range
  auto* a = static_cast<float*>(*hr::malloc_async(bytes, stream_));
  ASSERT_TRUE(hr::memset_async(a, 0, bytes, stream_).ok());
  accumulate(a, x, n);  // a = x'
  accumulate(x, a, n);  // x = 2x'
  ASSERT_TRUE(hr::free_async(a, stream_).ok());
  auto* b = static_cast<float*>(*hr::malloc_async(bytes, stream_));
  EXPECT_NE(b, a) << "a block the range still replays was handed out again";
  ASSERT_TRUE(hr::memset_async(b, 0, bytes, stream_).ok());
  accumulate(b, x, n);  // b = 2x'
  update(b, n);         // b = 4x' + 1
  accumulate(x, b, n);  // x = 6x' + 1
  EXPECT_TRUE(S().exits().empty()) << "an allocation or free closed the range";
  const uint64_t agent = hr::testing::agent_of();
  replay::Region region;
  EXPECT_TRUE(sdk::Runtime::get().inventory().find(agent, reinterpret_cast<uint64_t>(a), &region))
      << "the deferred block was retired while the range still replays it";
  const float x1 = expect(v(0.5f, 7), 1);
  EXPECT_EQ(read(x), 6.0f * x1 + 1.0f);
  EXPECT_EQ(read(b), 4.0f * x1 + 1.0f);
  one_range(6);
  // The range closed: the free happened, and the block is the pool's again.
  EXPECT_FALSE(sdk::Runtime::get().inventory().find(agent, reinterpret_cast<uint64_t>(a), &region));
  auto* c = static_cast<float*>(*hr::malloc_async(bytes, stream_));
  EXPECT_EQ(c, a);
  ASSERT_TRUE(hr::free_async(b, stream_).ok());
  ASSERT_TRUE(hr::free_async(c, stream_).ok());
}

TEST_F(RangeMemory, ATemporaryAllocatedAndFreedInsideTheRangeStaysValidForEveryPass) {
  float* x = buffer(256, 0.5f);
  update(x, 256);
  auto* t = static_cast<float*>(*hr::malloc(256 * sizeof(float)));
  ASSERT_TRUE(hr::memset(t, 0, 256 * sizeof(float)).ok());
  accumulate(t, x, 256);  // t = x'
  accumulate(x, t, 256);  // x = 2x'
  ASSERT_TRUE(hr::free(t).ok());
  update(x, 256);  // x = 4x' + 1
  EXPECT_TRUE(S().exits().empty());
  EXPECT_EQ(read(x), 4.0f * expect(v(0.5f, 7), 1) + 1.0f);
  auto r = one_range(4);
  EXPECT_EQ(r.close_call, "hostrt::memcpy");
  replay::Region region;
  EXPECT_FALSE(sdk::Runtime::get().inventory().find(hr::testing::agent_of(),
                                                    reinterpret_cast<uint64_t>(t), &region));
}

// The autograd thread's share of a training step: an allocation, a memset, launches and a free
// made by another thread on the range's stream join the range the main thread opened.
TEST_F(RangeMemory, AnotherThreadsMemoryCallsOnTheRangesStreamJoinIt) {
  float* x = buffer(256, 0.5f);
  update(x, 256);  // the main thread opens the range: x = x'
  float* t = nullptr;
  std::thread other([&] {
    t = static_cast<float*>(*hr::malloc(256 * sizeof(float)));
    ASSERT_TRUE(hr::memset_async(t, 0, 256 * sizeof(float), stream_).ok());
    accumulate(t, x, 256);  // t = x'
    accumulate(x, t, 256);  // x = 2x'
  });
  other.join();
  update(x, 256);  // x = 4x' + 1
  std::thread freer([&] { EXPECT_TRUE(hr::free(t).ok()); });
  freer.join();
  EXPECT_TRUE(S().exits().empty()) << "another thread's call on the range's stream closed it";
  replay::Region region;
  EXPECT_TRUE(sdk::Runtime::get().inventory().find(hr::testing::agent_of(),
                                                   reinterpret_cast<uint64_t>(t), &region))
      << "another thread's free was not deferred";
  // Without the memset on passes 1 and 2, t and so x would grow with every pass.
  EXPECT_EQ(read(x), 4.0f * expect(v(0.5f, 7), 1) + 1.0f);
  auto r = one_range(4);
  EXPECT_EQ(r.outcome.memory_calls, 3u);  // the allocation, the memset, the free
  EXPECT_FALSE(sdk::Runtime::get().inventory().find(hr::testing::agent_of(),
                                                    reinterpret_cast<uint64_t>(t), &region));
}

TEST_F(RangeMemory, CountersStayPerLaunch) {
  const char* names[] = {"threads_launched", "bytes_written"};
  ASSERT_EQ(kreplay_create_counter_config({hr::testing::agent_of()}, names, 2, &S().config),
            KREPLAY_STATUS_SUCCESS);
  float* x = buffer(1000, 0.5f);
  float* y = buffer(1000, 0.5f);
  update(x, 1000);
  ASSERT_TRUE(hr::memset_async(y, 0, 1000 * sizeof(float), stream_).ok());
  ASSERT_TRUE(hr::memcpy_async(y, x, 500 * sizeof(float), stream_).ok());
  update(x, 640);
  read(x);
  auto ids = one_range(2).dispatch_ids;
  ASSERT_EQ(ids.size(), 2u);
  std::map<std::tuple<uint64_t, uint64_t, std::string>, double> c;
  for (const auto& r : S().counters) c[{r.dispatch_id, r.pass, r.name}] = r.value;
  EXPECT_EQ(c.size(), 2u * 3 * 2);  // 2 launches x 3 passes x 2 counters: memory calls count none
  for (uint64_t p = 0; p < 3; ++p) {
    EXPECT_EQ((c[{ids[0], p, "threads_launched"}]), 16.0 * 64);
    EXPECT_EQ((c[{ids[1], p, "threads_launched"}]), 10.0 * 64);
    EXPECT_EQ((c[{ids[0], p, "bytes_written"}]), 1000.0 * 4 + 4);
    EXPECT_EQ((c[{ids[1], p, "bytes_written"}]), 640.0 * 4 + 4);
  }
}

// What still closes a range, and says which call did.
TEST_F(RangeMemory, MemoryCallsARangeCannotHoldCloseIt) {
  float* x = buffer(256, 0.5f);
  float* y = buffer(256, 1.0f);
  auto other = *hr::stream_create();
  auto* m = static_cast<float*>(*hr::malloc_managed(256 * sizeof(float)));
  update(x, 256);
  ASSERT_TRUE(hr::memset_async(y, 0, 16, other).ok());  // another stream, not ordered
  ASSERT_TRUE(hr::stream_synchronize(other).ok());
  update(x, 256);
  ASSERT_TRUE(hr::memset_async(m, 0, 16, stream_).ok());  // memory the host sees with no call
  update(x, 256);
  std::thread t([&] {  // another thread, on its own stream
    EXPECT_TRUE(hr::memset_async(y, 0, 16, hr::kPerThreadStream).ok());
    EXPECT_TRUE(hr::stream_synchronize(hr::kPerThreadStream).ok());
  });
  t.join();
  update(x, 256);
  set_range([](replay::RangeOptions& o) { o.join_memory = false; });  // KREPLAY_RANGE_MEMORY=close
  ASSERT_TRUE(hr::memset_async(y, 0, 16, stream_).ok());
  set_range([](replay::RangeOptions& o) { o.join_memory = true; });
  EXPECT_EQ(read(x), expect(v(0.5f, 7), 4));
  auto exits = S().exits();
  ASSERT_EQ(exits.size(), 4u);
  EXPECT_EQ(exits[0].outcome.close_reason, KREPLAY_RANGE_CLOSE_OTHER_STREAM);
  EXPECT_EQ(exits[0].close_call, "hostrt::memset_async");
  EXPECT_EQ(exits[1].outcome.close_reason, KREPLAY_RANGE_CLOSE_MEMORY);
  EXPECT_EQ(exits[1].close_call, "hostrt::memset_async");
  EXPECT_EQ(exits[2].outcome.close_reason, KREPLAY_RANGE_CLOSE_OTHER_THREAD);
  EXPECT_EQ(exits[2].close_call, "hostrt::memset_async");
  EXPECT_EQ(exits[3].outcome.close_reason, KREPLAY_RANGE_CLOSE_MEMORY);
  for (const auto& e : exits) EXPECT_EQ(e.outcome.passes_executed, 3u);
  EXPECT_TRUE(hr::free(m).ok());
  EXPECT_TRUE(hr::stream_destroy(other).ok());
}

// A stream that waited for an event recorded after the range's last item: its memset joins, and
// the later passes order it as the events did.
TEST_F(RangeMemory, AMemsetOnAStreamOrderedByAnEventJoins) {
  float* x = buffer(256, 0.5f);
  float* y = buffer(256, 2.0f);
  auto other = *hr::stream_create();
  auto ev = *hr::event_create();
  update(x, 256);
  ASSERT_TRUE(hr::event_record(ev, stream_).ok());
  ASSERT_TRUE(hr::stream_wait_event(other, ev).ok());
  ASSERT_TRUE(hr::memset_async(y, 0, 256 * sizeof(float), other).ok());
  ASSERT_TRUE(hr::event_record(ev, other).ok());
  ASSERT_TRUE(hr::stream_wait_event(stream_, ev).ok());
  accumulate(y, x, 256);  // y = x'
  EXPECT_TRUE(S().exits().empty());
  EXPECT_EQ(read(y), expect(v(0.5f, 7), 1));
  auto r = one_range(2);
  EXPECT_EQ(r.outcome.streams, 3u);  // stream_, other, stream_
  EXPECT_TRUE(hr::event_destroy(ev).ok());
  EXPECT_TRUE(hr::stream_destroy(other).ok());
}

// Copies to the host (KREPLAY_RANGE_HOST_READS=join, RangeOptions::join_host_reads).

// x[0] = the number of times the kernel ran in this process: a kernel whose later passes write
// what the application's did not (as a float atomic reduction may), from a host counter no
// snapshot holds.
std::atomic<uint32_t> g_runs{0};
void k_stamp(hr::ThreadContext& t) {
  auto* x = t.arg<float*>(0);
  if (t.global_thread_id() == 0) t.store(&x[0], static_cast<float>(++g_runs));
}

class RangeHostReads : public RangeMemory {
 protected:
  void SetUp() override {
    RangeMemory::SetUp();
    host_reads(true);
  }
  void host_reads(bool on) {
    set_range([on](replay::RangeOptions& o) { o.join_host_reads = on; });
  }
  // The value at x[i], read with a copy that closes the range.
  float read_closing(const float* x, uint32_t i = 7) {
    host_reads(false);
    return read(x, i);
  }
};

TEST_F(RangeHostReads, ACopyToTheHostStaysInTheRangeAndReadsTheApplicationsPass) {
  float* x = buffer(256, 0.5f);
  update(x, 256);
  float mid = 0, mid_async = 0;
  ASSERT_TRUE(hr::memcpy(&mid, x + 7, sizeof(mid)).ok());
  update(x, 256);
  ASSERT_TRUE(hr::memcpy_async(&mid_async, x + 7, sizeof(mid_async), stream_).ok());
  ASSERT_TRUE(hr::stream_synchronize(stream_).ok());  // span_syncs is off here: it closes
  EXPECT_EQ(mid, expect(v(0.5f, 7), 1));
  EXPECT_EQ(mid_async, expect(v(0.5f, 7), 2));
  EXPECT_EQ(read_closing(x), expect(v(0.5f, 7), 2));  // each update ran once for the application
  auto r = one_range(2);
  EXPECT_EQ(r.outcome.close_reason, KREPLAY_RANGE_CLOSE_SYNCHRONIZE);
  EXPECT_EQ(r.outcome.memory_calls, 2u);  // the two copies to the host
  EXPECT_EQ(*g_counter, 2u);
}

TEST_F(RangeHostReads, TheDeviceEndsAsTheHostReadItEvenWhereALaterPassWritesOtherwise) {
  auto m = hr::load_module({"host_reads_module", {{"_Z5stampPf", k_stamp, {8}}}, {}});
  ASSERT_TRUE(m.ok());
  const hr::Kernel stamp = *hr::get_kernel(*m, "_Z5stampPf");
  float* x = buffer(256, 0.5f);
  g_runs = 0;
  ASSERT_TRUE(hr::launch_args(stamp, {1}, {64}, stream_, x).ok());
  float seen = 0;
  ASSERT_TRUE(hr::memcpy(&seen, x, sizeof(seen)).ok());
  update(x, 256);  // the range goes on after the copy: x[0] = 2 * stamp + 1
  EXPECT_TRUE(S().exits().empty()) << "the copy to the host closed the range";
  EXPECT_EQ(seen, 1.0f);
  // Passes 1 and 2 stamped 2 and 3: without the first pass put back, x[0] would be 7.
  EXPECT_EQ(read_closing(x, 0), 3.0f);
  EXPECT_EQ(g_runs.load(), 3u);
  auto r = one_range(2);
  EXPECT_GT(r.outcome.bytes_restored, 0u);
}

TEST_F(RangeHostReads, CopiesToTheHostCloseTheRangeByDefaultAndIntoMemoryKreplayTracks) {
  float* x = buffer(256, 0.5f);
  auto* mapped = static_cast<float*>(*hr::malloc_host_mapped(256 * sizeof(float)));
  update(x, 256);
  ASSERT_TRUE(hr::memcpy_async(mapped, x, 256 * sizeof(float), stream_).ok());  // mapped: closes
  update(x, 256);
  host_reads(false);  // KREPLAY_RANGE_HOST_READS=close, the default
  float v7 = 0;
  ASSERT_TRUE(hr::memcpy(&v7, x + 7, sizeof(v7)).ok());
  EXPECT_EQ(v7, expect(v(0.5f, 7), 2));
  auto exits = S().exits();
  ASSERT_EQ(exits.size(), 2u);
  for (const auto& e : exits) {
    EXPECT_EQ(e.outcome.close_reason, KREPLAY_RANGE_CLOSE_MEMORY);
    EXPECT_EQ(e.outcome.passes_executed, 3u);
    EXPECT_EQ(e.outcome.memory_calls, 0u);
  }
  EXPECT_EQ(exits[0].close_call, "hostrt::memcpy_async");
  EXPECT_EQ(exits[1].close_call, "hostrt::memcpy");
  EXPECT_FALSE(replay::default_range_join_host_reads());
  EXPECT_TRUE(hr::free(mapped).ok());
}

}  // namespace
}  // namespace kreplay::test
