// A fixed, realistic record sequence shared by the output tests, and helpers to play it.
//
// Two H200s. Agent 1 runs streams 7 and 13, agent 2 stream 21. Kernels: vecAdd (a plain name with
// commas), a template whose demangled name holds commas, quotes and angle brackets, and initKernel.
//   dispatch 1  vecAdd   agent 1 stream 7   replayed, 3 passes; sm__cycles_elapsed.sum collected
//               on every pass (1000, 1010, 1020: the views must show 1000); snapshot + 2 restores
//   dispatch 2  template agent 1 stream 13  declined (snapshot_too_large), runs once, 1 counter
//   dispatch 3  vecAdd   agent 1 stream 13  not_requested, one pass, no counters
//   dispatch 4  init     agent 2 stream 21  replayed, 2 passes; pass 1 collects a counter that is
//               not in RunInfo::counter_names (l1tex__t_bytes.sum); a write-set snapshot (dispatch
//               1's is full)
// plus allocations and frees on both devices. No wall-clock time anywhere: output is
// deterministic.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "output/records.hpp"
#include "output/writer.hpp"

namespace kreplay::output::testing {

inline constexpr const char* kTemplateName =
    "void fused_kernel<Epilogue<\"bias,relu\", 2>, float, 128>(Params<float, 2> const&, int*)";

inline RunInfo fixture_run(uint32_t app_pass = 0) {
  RunInfo run;
  run.kreplay_version = "0.1.0";
  run.command = {"./app", "--size", "1024", "--name", "a \"quoted\", arg"};
  run.hostname = "node01";
  run.pid = 4242;
  run.start_ns = 1000000000;
  run.start_unix_ns = 1700000000000000000;
  run.replay_mode = app_pass > 0 ? "application" : "kernel";
  run.app_pass = app_pass;
  run.app_pass_count = app_pass > 0 ? 2 : 0;
  run.counter_names = {"sm__cycles_elapsed.sum", "dram__bytes_read.sum", "smsp__inst_executed.sum"};
  run.environment = {{"CUDA_VISIBLE_DEVICES", "0,1"}, {"KREPLAY_LOG_LEVEL", "info"}};
  run.options = {{"output_format", "sqlite,csv,json,perfetto"},
                 {"pmc", "sm__cycles_elapsed.sum dram__bytes_read.sum"}};
  run.rank = 3;  // local_rank left unknown: both a value and a NULL are in the goldens
  return run;
}

inline RunSummary fixture_summary() {
  RunSummary s;
  s.end_ns = 1000900000;
  s.exit_code = 0;
  s.launches = 5;
  s.replayed = 2;
  s.declined = 1;
  s.not_selected = 1;
  s.passes = 7;
  s.declined_by_reason = {{"snapshot_too_large", 1}};
  s.counter_passes_lost = 1;
  s.devices_used = {0, 1};
  s.snapshot_device_peak_bytes = 8388864;  // dispatch 1's full snapshot
  s.snapshot_host_peak_bytes = 1048576;    // dispatch 4's, in pinned host memory
  s.snapshot_storage_releases = 1;
  return s;
}

/// Feed the fixture to @p w (begin .. flush, then finish unless @p finish is false). Like the
/// tool, it goes on after an error and returns the first one.
inline Status play_fixture(Writer& w, bool finish = true) {
  Status first;
  auto keep = [&first](Status s) {
    if (first.ok() && !s.ok()) first = std::move(s);
  };
  keep(w.begin(fixture_run()));
  for (uint64_t agent : {1, 2}) {
    DeviceRecord d;
    d.agent_id = agent;
    d.type = "cuda";
    d.device_index = static_cast<uint32_t>(agent - 1);
    d.name = "NVIDIA H200";
    d.chip = "GH100";
    d.uuid = agent == 1 ? "GPU-0a1b2c3d-0000-1111-2222-333344445555"
                        : "GPU-9f8e7d6c-0000-1111-2222-333344445555";
    d.memory_bytes = 150754820096ull;
    d.multiprocessor_count = 132;
    d.cc_major = 9;
    d.cc_minor = 0;
    keep(w.device(d));
  }
  auto alloc = [&](uint64_t agent, const char* op, const char* kind, uint64_t address,
                   uint64_t size, uint64_t ts) {
    AllocationRecord a;
    a.agent_id = agent;
    a.operation = op;
    a.kind = kind;
    a.address = address;
    a.size = size;
    a.timestamp_ns = ts;
    return w.allocation(a);
  };
  keep(alloc(1, "alloc", "device", 0x7f0000000000ull, 4194304, 1000001000));
  keep(alloc(1, "alloc", "device", 0x7f0000400000ull, 4194304, 1000002000));
  keep(alloc(1, "alloc", "module_global", 0x7f1000000000ull, 256, 1000003000));
  keep(alloc(2, "alloc", "pool", 0x7e0000000000ull, 1048576, 1000004000));

  auto kernel = [&](uint64_t id, uint64_t agent, const char* mangled, const char* demangled) {
    KernelRecord k;
    k.kernel_id = id;
    k.agent_id = agent;
    k.code_object_id = 77;
    k.mangled_name = mangled;
    k.demangled_name = demangled;
    return w.kernel(k);
  };
  auto counter = [&](uint64_t dispatch, uint64_t pass, uint64_t agent, uint64_t kernel_id,
                     const char* name, double value) {
    CounterRecord c;
    c.dispatch_id = dispatch;
    c.replay_pass = pass;
    c.agent_id = agent;
    c.kernel_id = kernel_id;
    c.name = name;
    c.value = value;
    return w.counter(c);
  };
  auto pass = [&](uint64_t dispatch, uint64_t replay_pass, uint64_t agent, uint64_t stream,
                  uint64_t start, uint64_t end, const char* counter_status = "ok") {
    PassRecord p;
    p.dispatch_id = dispatch;
    p.replay_pass = replay_pass;
    p.agent_id = agent;
    p.stream_id = stream;
    p.start_ns = start;
    p.end_ns = end;
    p.counter_status = counter_status;
    return w.pass(p);
  };
  auto phase = [&](uint64_t dispatch, uint64_t agent, uint64_t stream, const char* what,
                   uint64_t after, uint64_t start, uint64_t end, uint64_t bytes) {
    ReplayPhaseRecord r;
    r.dispatch_id = dispatch;
    r.agent_id = agent;
    r.stream_id = stream;
    r.phase = what;
    r.after_pass = after;
    r.start_ns = start;
    r.end_ns = end;
    r.bytes = bytes;
    return w.replay_phase(r);
  };
  auto base_dispatch = [](uint64_t id, uint64_t agent, uint64_t stream, uint64_t kernel_id) {
    DispatchRecord d;
    d.dispatch_id = id;
    d.agent_id = agent;
    d.stream_id = stream;
    d.kernel_id = kernel_id;
    d.correlation_id = 100 + id;
    d.thread_id = 4243;
    return d;
  };

  // Dispatch 1: vecAdd, replayed with 3 passes.
  keep(kernel(1, 1, "_Z6vecAddPKfS0_Pfi", "vecAdd(float const*, float const*, float*, int)"));
  keep(phase(1, 1, 7, "snapshot", 0, 1000010000, 1000012000, 8388864));
  keep(counter(1, 0, 1, 1, "sm__cycles_elapsed.sum", 1000));
  keep(counter(1, 0, 1, 1, "dram__bytes_read.sum", 4096.5));
  keep(pass(1, 0, 1, 7, 1000013000, 1000014500));
  keep(phase(1, 1, 7, "restore", 0, 1000015000, 1000016000, 4194304));
  keep(counter(1, 1, 1, 1, "sm__cycles_elapsed.sum", 1010));
  keep(counter(1, 1, 1, 1, "smsp__inst_executed.sum", 5000));
  keep(pass(1, 1, 1, 7, 1000016500, 1000018100));
  keep(phase(1, 1, 7, "restore", 1, 1000018500, 1000019500, 4194304));
  keep(counter(1, 2, 1, 1, "sm__cycles_elapsed.sum", 1020));
  keep(pass(1, 2, 1, 7, 1000020000, 1000021400));
  DispatchRecord d1 = base_dispatch(1, 1, 7, 1);
  d1.grid = {4096, 1, 1};
  d1.block = {256, 1, 1};
  d1.registers = 16;
  d1.outcome = "replayed";
  d1.passes_requested = 3;
  d1.passes_executed = 3;
  d1.bytes_snapshotted = 8388864;
  d1.bytes_restored = 8388608;
  d1.snapshot_ns = 2000;
  d1.restore_ns = 2000;
  d1.start_ns = 1000013000;
  d1.end_ns = 1000021400;
  d1.divergence_checked = true;  // --check-divergence: pass 2 left other memory than pass 0
  d1.diverged_passes = 1;
  d1.bytes_changed = 4194304;  // its own pass changed one of the two buffers
  d1.snapshot_mode = "full";
  keep(w.dispatch(d1));

  // Dispatch 2: the template kernel, declined: runs once.
  keep(kernel(2, 1, "_Z12fused_kernelI8EpilogueILA10_c0EELi2EEfLi128EEvRK6ParamsIfLi2EEPi",
              kTemplateName));
  keep(counter(2, 0, 1, 2, "sm__cycles_elapsed.sum", 250000));
  keep(pass(2, 0, 1, 13, 1000030000, 1000130000));
  DispatchRecord d2 = base_dispatch(2, 1, 13, 2);
  d2.grid = {132, 2, 1};
  d2.block = {128, 1, 1};
  d2.cluster = {2, 1, 1};
  d2.dynamic_shared_bytes = 49152;
  d2.static_shared_bytes = 1024;
  d2.registers = 168;
  d2.outcome = "declined";
  d2.reason = "snapshot_too_large";
  d2.passes_requested = 3;
  d2.passes_executed = 1;
  d2.start_ns = 1000030000;
  d2.end_ns = 1000130000;
  keep(w.dispatch(d2));

  // Dispatch 3: vecAdd again, not requested: runs once, no counters.
  keep(pass(3, 0, 1, 13, 1000140000, 1000141200));
  DispatchRecord d3 = base_dispatch(3, 1, 13, 1);
  d3.grid = {8192, 1, 1};
  d3.block = {256, 1, 1};
  d3.registers = 16;
  d3.outcome = "not_requested";
  d3.passes_requested = 1;
  d3.passes_executed = 1;
  d3.start_ns = 1000140000;
  d3.end_ns = 1000141200;
  keep(w.dispatch(d3));

  // Dispatch 4: initKernel on agent 2, replayed with 2 passes.
  keep(kernel(3, 2, "_Z10initKernelPfm", "initKernel(float*, unsigned long)"));
  keep(phase(4, 2, 21, "snapshot", 0, 1000200000, 1000200800, 1048576));
  keep(counter(4, 0, 2, 3, "sm__cycles_elapsed.sum", 300));
  keep(counter(4, 0, 2, 3, "dram__bytes_read.sum", 1024));
  keep(pass(4, 0, 2, 21, 1000201000, 1000201700));
  keep(phase(4, 2, 21, "restore", 0, 1000201800, 1000202300, 1048576));
  keep(counter(4, 1, 2, 3, "smsp__inst_executed.sum", 700));
  keep(counter(4, 1, 2, 3, "l1tex__t_bytes.sum", 65536));
  keep(pass(4, 1, 2, 21, 1000202500, 1000203300, "lost"));
  DispatchRecord d4 = base_dispatch(4, 2, 21, 3);
  d4.graph_id = 3;  // a kernel node of a CUDA graph, run node by node
  d4.graph_node = 1;
  d4.grid = {1024, 1, 1};
  d4.block = {1024, 1, 1};
  d4.registers = 8;
  d4.outcome = "replayed";
  d4.passes_requested = 2;
  d4.passes_executed = 2;
  d4.bytes_snapshotted = 1048576;
  d4.bytes_restored = 1048576;
  d4.snapshot_ns = 800;
  d4.restore_ns = 500;
  d4.start_ns = 1000201000;
  d4.end_ns = 1000203300;
  d4.divergence_checked = true;
  d4.bytes_changed = 1048576;  // a write-bounded snapshot: it saved what it wrote
  d4.snapshot_mode = "write_set";
  keep(w.dispatch(d4));

  keep(alloc(1, "free", "device", 0x7f0000400000ull, 4194304, 1000300000));
  keep(alloc(2, "free", "pool", 0x7e0000000000ull, 0, 1000301000));
  keep(w.flush());
  if (finish) keep(w.finish(fixture_summary()));
  return first;
}

/// One kernel "k()", two replayed dispatches of 3 passes, counters spread over passes (only
/// those in @p names are sent; they are also RunInfo::counter_names):
///   A: dispatch 1 passes 2 then 1 (arrival order!) = 12, 11; dispatch 2 passes 1, 2 = 111, 112
///   B: pass 2 only = 22 / 122;  C: passes 0, 1 = 5, 6 / 105, 106
/// Pass p of dispatch id runs [1000*id + 100*p, +10+p]. Ends with finish().
inline Status play_repeated(Writer& w, uint32_t app_pass = 0,
                            std::vector<std::string> names = {"A", "B", "C"}) {
  RunInfo run = fixture_run(app_pass);
  run.counter_names = names;
  RETURN_IF_ERROR(w.begin(run));
  KernelRecord k;
  k.kernel_id = 9;
  k.agent_id = 1;
  k.mangled_name = "_Z1kv";
  k.demangled_name = "k()";
  RETURN_IF_ERROR(w.kernel(k));
  auto counter = [&](uint64_t dispatch, uint64_t pass, const std::string& name, double value) {
    CounterRecord c;
    c.dispatch_id = dispatch;
    c.replay_pass = pass;
    c.agent_id = 1;
    c.kernel_id = 9;
    c.name = name;
    c.value = value;
    c.app_pass = app_pass;
    return w.counter(c);
  };
  auto has = [&](const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  for (uint64_t id : {1, 2}) {
    double base = id == 1 ? 0 : 100;
    for (uint64_t p = 0; p < 3; ++p) {
      // Dispatch 1 delivers pass 2's A before pass 1's: the pick is by pass, not by arrival.
      if (id == 1 && p == 1) {
        if (has("A")) RETURN_IF_ERROR(counter(id, 2, "A", base + 12));
        if (has("A")) RETURN_IF_ERROR(counter(id, 1, "A", base + 11));
      }
      if (id == 2 && p >= 1 && has("A")) RETURN_IF_ERROR(counter(id, p, "A", base + 10 + p));
      if (p == 2 && has("B")) RETURN_IF_ERROR(counter(id, p, "B", base + 22));
      if (p <= 1 && has("C")) RETURN_IF_ERROR(counter(id, p, "C", base + 5 + p));
      PassRecord pr;
      pr.dispatch_id = id;
      pr.replay_pass = p;
      pr.agent_id = 1;
      pr.stream_id = 3;
      pr.start_ns = 1000 * id + 100 * p;
      pr.end_ns = pr.start_ns + 10 + p;
      pr.app_pass = app_pass;
      RETURN_IF_ERROR(w.pass(pr));
    }
    DispatchRecord d;
    d.dispatch_id = id;
    d.agent_id = 1;
    d.stream_id = 3;
    d.kernel_id = 9;
    d.outcome = "replayed";
    d.passes_requested = 3;
    d.passes_executed = 3;
    d.start_ns = 1000 * id;
    d.end_ns = 1000 * id + 212;
    d.app_pass = app_pass;
    RETURN_IF_ERROR(w.dispatch(d));
  }
  return w.finish(fixture_summary());
}

}  // namespace kreplay::output::testing
