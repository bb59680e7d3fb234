// A shared object that writes every output format: proves the writers (with static SQLite and
// zlib) link into and run from a dlopen()ed library like the injected tool. Used by
// shared_object_test.cpp only.
#include "output/writer.hpp"

extern "C" __attribute__((visibility("default"))) int kreplay_output_module_check(
    const char* directory) {
  using namespace kreplay::output;
  OutputConfig config;
  config.directory = directory;
  config.file_stem = "module";
  config.formats = {"sqlite", "csv", "json", "perfetto"};
  config.gzip_trace = true;
  auto writer = make_writer(config);
  if (!writer.ok()) return 1;
  RunInfo run;
  run.counter_names = {"c"};
  if (!(*writer)->begin(run).ok()) return 2;
  CounterRecord counter;
  counter.dispatch_id = 1;
  counter.name = "c";
  counter.value = 42;
  PassRecord pass;
  pass.dispatch_id = 1;
  pass.end_ns = 10;
  DispatchRecord dispatch;
  dispatch.dispatch_id = 1;
  dispatch.outcome = "not_requested";
  dispatch.passes_executed = 1;
  dispatch.end_ns = 10;
  if (!(*writer)->counter(counter).ok() || !(*writer)->pass(pass).ok() ||
      !(*writer)->dispatch(dispatch).ok()) {
    return 3;
  }
  return (*writer)->finish(RunSummary{}).ok() ? 0 : 4;
}
