// kreplay-cli-test-app: a host-device application for the end-to-end tests of the kreplay command
// (tests/cli). It does what kreplay-sample-app cannot: run slowly, exit with a chosen code, or die
// by a signal part-way through, after some launches have completed.
//
//   kreplay-cli-test-app [--launches N] [--sleep-ms MS] [--exit-code C]
//                        [--die term|segv|abort|kill --after K] [--untracked-from K]
//                        [--two-kernels] [--sync-every S] [--read-every S] [--memset-every S]
//                        [--profiler A B] [--nvtx NAME A B]
//                        [--hang-after K] [--stamp] [--device D] [--peer]
//                        [--mark K ACTION]...
//
// It runs N launches (default 4) of one kernel, bump(unsigned* x, unsigned n): x[i] += i + 1 and,
// on thread 0, one atomic increment of a module-scope launch counter. bump is not idempotent, so
// the result is right only if a replaying tool restored memory between passes. With --sleep-ms
// every launch takes at least MS milliseconds (thread 0 sleeps). With --die the process waits for
// launch K to complete, prints "cli-test-app: dying by <sig>" and dies by the signal (a real
// invalid write for segv, abort() for abort, raise(SIGTERM) for term, raise(SIGKILL) for kill,
// which no handler sees). Otherwise it checks the result, prints "cli-test-app: OK" (or what
// differed) and exits with --exit-code (default 0), or 1 when the check failed. With
// --untracked-from K, memory that replay cannot track is allocated before launch K and freed after
// the last one, so launches K..N are declined (UNTRACKED_MEMORY). For range replay: --two-kernels
// makes every even-numbered launch (2, 4, ...) mark(y, n) instead, y[i] += 2i + 1 on a buffer of
// its own; --sync-every S synchronizes the stream after every S launches (a range stays open
// across it: the host observes no memory); --read-every S copies one value of x back to the host
// after every S launches, as a program reading a result back does (each copy closes a range);
// --memset-every S sets a buffer of its own, w, to the launch's number after every S launches
// with an asynchronous memset on the app's stream (inside a range it joins the range), and the
// check at the end wants w as the last memset left it;
// --profiler A B calls the profiler-start marker before launch A and the
// profiler-stop marker after launch B; --nvtx NAME A B pushes an NVTX range NAME before launch A
// and pops it after launch B. With --hang-after K it ignores SIGTERM and SIGINT after launch K and
// sleeps for ever (an application that will not stop). With --stamp every launch is followed by
// stamp(z), which writes a number that grows with every execution (as a kernel reading a clock
// would): replayed, its passes leave different memory (what --check-divergence finds). With
// --device D everything runs on host device D (KREPLAY_HOST_DEVICES must be more than D), as a
// rank of a job runs on the GPU of its local rank. With --peer, bump's buffer x is on the next
// device (D + 1, with KREPLAY_HOST_DEVICES > D + 1): every bump reads and writes peer memory.
// --mark K ACTION (repeatable, in order) makes a marker call before launch K (K = N + 1: after the
// last): push:NAME / pop (NVTX push/pop, default domain), push:D@NAME / pop:D (domain D),
// start:NAME / end:NAME (NVTX start/end; start:D@NAME for domain D), pstart / pstop (profiler
// start/stop), and thread-push:NAME / thread-start:NAME (the same from another thread, which
// then exits: its push/pop stack is its own, a start/end range is the process's), and
// thread-launch (one more launch of bump, into a buffer of its own, from another thread on the
// app's stream: a dispatch of its own before launch K).
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backends/host/hostrt.hpp"

namespace hostrt = kreplay::hostrt;

namespace {

uint32_t* g_launch_count = nullptr;
uint32_t g_sleep_ms = 0;

// bump(unsigned* x, unsigned n): x[i] += i + 1.
void bump(hostrt::ThreadContext& t) {
  auto* x = t.arg<uint32_t*>(0);
  const auto n = t.arg<uint32_t>(1);
  const uint64_t i = t.global_thread_id();
  if (i < n) {
    t.store(&x[i], t.load(&x[i]) + static_cast<uint32_t>(i + 1));
    t.count_ops(1);
  }
  if (i == 0) {
    t.atomic_add(g_launch_count, 1u);
    if (g_sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(g_sleep_ms));
  }
}

// stamp(unsigned* z): z[0] = the number of stamp executions so far (a host-side count that no
// restore rewinds).
uint32_t g_stamps = 0;
void stamp(hostrt::ThreadContext& t) {
  auto* z = t.arg<uint32_t*>(0);
  if (t.global_thread_id() == 0) t.store(&z[0], ++g_stamps);
}

// mark(unsigned* y, unsigned n): y[i] += 2i + 1.
void mark(hostrt::ThreadContext& t) {
  auto* y = t.arg<uint32_t*>(0);
  const auto n = t.arg<uint32_t>(1);
  const uint64_t i = t.global_thread_id();
  if (i < n) {
    t.store(&y[i], t.load(&y[i]) + static_cast<uint32_t>(2 * i + 1));
    t.count_ops(2);
  }
  if (i == 0) t.atomic_add(g_launch_count, 1u);
}

void check(const kreplay::Status& s, const char* what) {
  if (!s.ok()) {
    std::printf("cli-test-app: FAILED: %s: %s\n", what, s.message().c_str());
    std::exit(1);
  }
}
template <typename T>
T check(kreplay::Result<T> r, const char* what) {
  check(r.ok() ? kreplay::Status::Ok() : r.status(), what);
  return std::move(r).value();
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "cli-test-app: %s\nusage: kreplay-cli-test-app [--launches N] [--sleep-ms MS] "
               "[--exit-code C] [--die term|segv|abort|kill --after K] [--untracked-from K] "
               "[--two-kernels] [--sync-every S] [--read-every S] [--read-async-every S] [--memset-every S] [--profiler A "
               "B] [--nvtx NAME A "
               "B] [--hang-after K] "
               "[--stamp] [--device D] [--peer] [--mark K ACTION]... [--exit-with-launch]\n",
               why);
  std::exit(64);
}

// --mark ACTION: see the top of the file.
std::map<std::string, uint64_t> g_started;  // start:NAME -> id
hostrt::Kernel g_bump = 0;                  // for thread-launch
hostrt::Stream g_stream = 0;
uint32_t* g_thread_buffer = nullptr;
uint32_t g_thread_launches = 0;  // bump's module-scope launch count counts them too

void mark_action(const std::string& action) {
  auto arg = [&](size_t prefix) { return action.substr(prefix); };
  auto split_domain = [](const std::string& s) {
    auto at = s.find('@');
    return at == std::string::npos ? std::make_pair(std::string(), s)
                                   : std::make_pair(s.substr(0, at), s.substr(at + 1));
  };
  if (action.rfind("push:", 0) == 0) {
    auto [domain, name] = split_domain(arg(5));
    hostrt::nvtx_domain_range_push(domain.c_str(), name.c_str());
  } else if (action == "pop") {
    hostrt::nvtx_range_pop();
  } else if (action.rfind("pop:", 0) == 0) {
    hostrt::nvtx_domain_range_pop(arg(4).c_str());
  } else if (action.rfind("start:", 0) == 0) {
    auto [domain, name] = split_domain(arg(6));
    g_started[arg(6)] = hostrt::nvtx_range_start(name.c_str(), domain.c_str());
  } else if (action.rfind("end:", 0) == 0) {
    hostrt::nvtx_range_end(g_started[arg(4)]);
  } else if (action == "pstart") {
    hostrt::profiler_start();
  } else if (action == "pstop") {
    hostrt::profiler_stop();
  } else if (action == "thread-launch") {
    std::thread([] {
      if (!hostrt::launch_args(g_bump, {1}, {32}, g_stream, g_thread_buffer, 32u).ok()) {
        std::fprintf(stderr, "cli-test-app: the other thread's launch failed\n");
        std::exit(1);
      }
    }).join();
    ++g_thread_launches;
  } else if (action.rfind("thread-", 0) == 0) {
    std::thread([a = arg(7)] { mark_action(a); }).join();
  } else {
    std::fprintf(stderr, "cli-test-app: unknown --mark action %s\n", action.c_str());
    std::exit(2);
  }
}

uint32_t number(int argc, char** argv, int* i) {
  if (*i + 1 >= argc) usage("an option needs a value");
  char* end = nullptr;
  unsigned long v = std::strtoul(argv[++*i], &end, 10);
  if (end == argv[*i] || *end != '\0') usage("not a number");
  return static_cast<uint32_t>(v);
}

// A real SIGSEGV is the point here: in the sanitizer build (KREPLAY_SANITIZE) UBSan would stop
// the store to address 0 first and exit 1, so this function is not instrumented for it.
[[noreturn]] __attribute__((no_sanitize("undefined"))) void die(const std::string& how) {
  std::printf("cli-test-app: dying by %s\n", how.c_str());
  std::fflush(stdout);
  if (how == "segv") {
    volatile uintptr_t address = 0;  // volatile: a real store to address 0, not a trap the
    *reinterpret_cast<volatile int*>(address) = 1;  // NOLINT   compiler derived from UB
  } else if (how == "abort") {
    std::abort();
  } else if (how == "kill") {
    std::raise(SIGKILL);
  } else {
    std::raise(SIGTERM);
  }
  std::_Exit(99);  // not reached
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t launches = 4, exit_code = 0, after = 0, untracked_from = 0, sync_every = 0,
           read_every = 0, memset_every = 0, read_async_every = 0;
  uint32_t hang_after = 0, device = 0;
  uint32_t profiler_from = 0, profiler_to = 0, nvtx_from = 0, nvtx_to = 0;
  bool two_kernels = false, stamps = false, peer = false, exit_open = false;
  std::string die_by, nvtx_name;
  std::vector<std::pair<uint32_t, std::string>> marker_calls;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--launches") {
      launches = number(argc, argv, &i);
    } else if (a == "--sleep-ms") {
      g_sleep_ms = number(argc, argv, &i);
    } else if (a == "--exit-code") {
      exit_code = number(argc, argv, &i);
    } else if (a == "--untracked-from") {
      untracked_from = number(argc, argv, &i);
    } else if (a == "--stamp") {
      stamps = true;
    } else if (a == "--two-kernels") {
      two_kernels = true;
    } else if (a == "--sync-every") {
      sync_every = number(argc, argv, &i);
    } else if (a == "--read-every") {
      read_every = number(argc, argv, &i);
    } else if (a == "--read-async-every") {
      read_async_every = number(argc, argv, &i);
    } else if (a == "--memset-every") {
      memset_every = number(argc, argv, &i);
    } else if (a == "--profiler") {
      profiler_from = number(argc, argv, &i);
      profiler_to = number(argc, argv, &i);
    } else if (a == "--nvtx") {
      if (i + 1 >= argc) usage("--nvtx needs NAME A B");
      nvtx_name = argv[++i];
      nvtx_from = number(argc, argv, &i);
      nvtx_to = number(argc, argv, &i);
    } else if (a == "--mark") {
      uint32_t at = number(argc, argv, &i);
      if (i + 1 >= argc) usage("--mark needs K ACTION");
      marker_calls.emplace_back(at, argv[++i]);
    } else if (a == "--exit-with-launch") {
      exit_open = true;
    } else if (a == "--peer") {
      peer = true;
    } else if (a == "--device") {
      device = number(argc, argv, &i);
    } else if (a == "--hang-after") {
      hang_after = number(argc, argv, &i);
    } else if (a == "--after") {
      after = number(argc, argv, &i);
    } else if (a == "--die") {
      if (i + 1 >= argc) usage("--die needs term, segv, abort or kill");
      die_by = argv[++i];
      if (die_by != "term" && die_by != "segv" && die_by != "abort" && die_by != "kill")
        usage("unknown --die");
    } else {
      usage("unknown option");
    }
  }

  constexpr uint32_t kN = 512;
  constexpr uint32_t kBlock = 128;
  hostrt::ModuleDesc desc;
  desc.name = "cli_test_module";
  desc.kernels = {
      {"_Z4bumpPjj", bump, {8, 4}}, {"_Z4markPjj", mark, {8, 4}}, {"_Z5stampPj", stamp, {8}}};
  desc.globals = {{"launch_count", sizeof(uint32_t), {}}};
  const hostrt::Module module =
      check(hostrt::load_module(desc, static_cast<int>(device)), "load_module");
  const hostrt::Kernel k_bump = check(hostrt::get_kernel(module, "_Z4bumpPjj"), "bump");
  const hostrt::Kernel k_mark = check(hostrt::get_kernel(module, "_Z4markPjj"), "mark");
  const hostrt::Kernel k_stamp = check(hostrt::get_kernel(module, "_Z5stampPj"), "stamp");
  g_launch_count =
      static_cast<uint32_t*>(check(hostrt::get_global(module, "launch_count"), "global"));
  const int x_device = static_cast<int>(device + (peer ? 1 : 0));
  auto* x =
      static_cast<uint32_t*>(check(hostrt::malloc(kN * sizeof(uint32_t), x_device), "malloc x"));
  check(hostrt::memset(x, 0, kN * sizeof(uint32_t)), "clear x");
  auto* y = static_cast<uint32_t*>(
      check(hostrt::malloc(kN * sizeof(uint32_t), static_cast<int>(device)), "malloc y"));
  check(hostrt::memset(y, 0, kN * sizeof(uint32_t)), "clear y");
  auto* z = static_cast<uint32_t*>(
      check(hostrt::malloc(sizeof(uint32_t), static_cast<int>(device)), "malloc z"));
  const hostrt::Stream stream = check(hostrt::stream_create(static_cast<int>(device)), "stream");
  g_bump = k_bump;
  g_stream = stream;
  g_thread_buffer = static_cast<uint32_t*>(
      check(hostrt::malloc(32 * sizeof(uint32_t), static_cast<int>(device)), "malloc t"));
  // --memset-every K: after every K-th launch, w's bytes are set to the launch's number (an
  // asynchronous memset on the app's stream: inside a range it joins the range).
  auto* w = static_cast<uint8_t*>(check(hostrt::malloc(kN, static_cast<int>(device)), "malloc w"));
  uint8_t w_expected = 0;
  check(hostrt::memset(w, 0, kN), "clear w");

  int read_failures = 0;
  std::printf("cli-test-app: %u launches of bump\n", launches);
  std::fflush(stdout);
  void* untracked = nullptr;
  for (uint32_t l = 1; l <= launches; ++l) {
    if (l == untracked_from) {
      check(hostrt::stream_synchronize(stream), "synchronize");
      untracked = check(hostrt::malloc_untracked(4096), "malloc_untracked");
    }
    for (const auto& [at, action] : marker_calls) {
      if (at == l) mark_action(action);
    }
    if (l == profiler_from) hostrt::profiler_start();
    if (l == nvtx_from) hostrt::nvtx_range_push(nvtx_name.c_str());
    if (two_kernels && l % 2 == 0) {
      check(hostrt::launch_args(k_mark, {kN / kBlock}, {kBlock}, stream, y, kN), "launch mark");
    } else {
      check(hostrt::launch_args(k_bump, {kN / kBlock}, {kBlock}, stream, x, kN), "launch bump");
    }
    if (stamps) check(hostrt::launch_args(k_stamp, {1}, {32}, stream, z), "launch stamp");
    if (l == nvtx_to) hostrt::nvtx_range_pop();
    if (l == profiler_to) hostrt::profiler_stop();
    if (memset_every != 0 && l % memset_every == 0) {
      w_expected = static_cast<uint8_t>(l);
      check(hostrt::memset_async(w, w_expected, kN, stream), "memset w");
    }
    if (sync_every != 0 && l % sync_every == 0) {
      check(hostrt::stream_synchronize(stream), "synchronize");
    }
    if (read_every != 0 && l % read_every == 0) {
      uint32_t first = 0;
      check(hostrt::memcpy(&first, x, sizeof(first)), "read back x[0]");
    }
    // --read-async-every S: x[0] read back on the app's own stream and checked (a range keeps
    // going through it with KREPLAY_RANGE_HOST_READS=join).
    if (read_async_every != 0 && l % read_async_every == 0) {
      uint32_t first = 0;
      check(hostrt::memcpy_async(&first, x, sizeof(first), stream), "read x[0] on the stream");
      check(hostrt::stream_synchronize(stream), "synchronize");
      const uint32_t bumps_so_far = two_kernels ? (l + 1) / 2 : l;
      if (marker_calls.empty() && first != bumps_so_far) {
        std::printf("cli-test-app: x[0] read after launch %u = %u, expected %u\n", l, first,
                    bumps_so_far);
        ++read_failures;
      }
    }
    if (l == hang_after) {
      // An application that will not stop: it ignores the signals that ask it to (set after the
      // tool installed its handlers, which then pass the signal on to SIG_IGN) and sleeps.
      check(hostrt::stream_synchronize(stream), "synchronize");
      std::signal(SIGTERM, SIG_IGN);
      std::signal(SIGINT, SIG_IGN);
      std::printf("cli-test-app: hanging\n");
      std::fflush(stdout);
      for (;;) pause();
    }
    if (!die_by.empty() && l == after) {
      check(hostrt::stream_synchronize(stream), "synchronize");
      die(die_by);
    }
  }
  for (const auto& [at, action] : marker_calls) {
    if (at == launches + 1) mark_action(action);
  }
  check(hostrt::stream_synchronize(stream), "synchronize");
  if (untracked != nullptr) check(hostrt::free(untracked), "free untracked");

  std::vector<uint32_t> got(kN), got_y(kN);
  std::vector<uint8_t> got_w(kN);
  check(hostrt::memcpy(got_w.data(), w, kN), "read w");
  uint32_t count = 0;
  check(hostrt::memcpy(got.data(), x, kN * sizeof(uint32_t)), "read x");
  check(hostrt::memcpy(got_y.data(), y, kN * sizeof(uint32_t)), "read y");
  const uint32_t marks = two_kernels ? launches / 2 : 0;
  const uint32_t bumps = launches - marks;
  check(hostrt::memcpy(&count, g_launch_count, sizeof(count)), "read launch_count");
  int failures = read_failures;
  for (uint32_t i = 0; i < kN; ++i) {
    if (got_w[i] != w_expected) {
      std::printf("cli-test-app: w[%u] = %u, expected %u\n", i, got_w[i], w_expected);
      ++failures;
      break;
    }
    if (got[i] != bumps * (i + 1)) {
      std::printf("cli-test-app: x[%u] = %u, expected %u\n", i, got[i], bumps * (i + 1));
      ++failures;
      break;
    }
    if (got_y[i] != marks * (2 * i + 1)) {
      std::printf("cli-test-app: y[%u] = %u, expected %u\n", i, got_y[i], marks * (2 * i + 1));
      ++failures;
      break;
    }
  }
  if (count != launches + g_thread_launches) {
    std::printf("cli-test-app: launch_count = %u, expected %u\n", count,
                launches + g_thread_launches);
    ++failures;
  }
  if (exit_open) {
    // --exit-with-launch: one more launch, not waited for, and the process exits with its range
    // open (the tool closes it in an exit handler, after the main thread's thread_locals died).
    check(hostrt::launch_args(k_bump, {kN / kBlock}, {kBlock}, stream, x, kN), "launch bump");
    std::printf("cli-test-app: %s\n", failures == 0 ? "OK" : "FAILED");
    std::fflush(stdout);
    return failures == 0 ? static_cast<int>(exit_code) : 1;
  }
  check(hostrt::stream_destroy(stream), "destroy stream");
  check(hostrt::free(x), "free x");
  check(hostrt::free(y), "free y");
  check(hostrt::free(z), "free z");
  if (failures != 0) {
    std::printf("cli-test-app: FAILED\n");
    return 1;
  }
  std::printf("cli-test-app: OK\n");
  std::fflush(stdout);
  return static_cast<int>(exit_code);
}
