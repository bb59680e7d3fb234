// ToolService: one thing a pass of the profiler tool collects, behind one interface (configure,
// pass begin, pass end, flush). The tool keeps a list of them: counters (the counting context),
// a timing pass (no context of its own: every other service is off), PC sampling, SASS metrics
// and PM sampling (one file each). At PASS ENTER every service switches its own context on for a
// pass of its kind and off for the others, so the tool never asks which service a pass runs, and
// a new service is a new file and one line in make_services().
#pragma once

#include <memory>
#include <vector>

#include "common/status.hpp"
#include "config/tool_config.hpp"
#include "kreplay/kreplay.h"
#include "tool/pass_plan.hpp"

namespace kreplay::tool {

/// What a service may ask of the tool.
class ServiceHost {
 public:
  virtual ~ServiceHost() = default;
  /// The planned pass @p pass of the dispatch runs (a single run runs pass 0's), or nullptr when
  /// the dispatch is not selected.
  virtual const PlannedPass* pass_of(const kreplay_kernel_dispatch_info_t& info, uint64_t pass) = 0;
  /// One pass's records of a per-pass service (none, with data.status set, when it was refused).
  virtual void on_samples(config::PassKind kind, const kreplay_pass_service_data_t& data,
                          const kreplay_pass_service_record_t* records, size_t count) = 0;
};

class ToolService {
 public:
  explicit ToolService(config::PassKind kind) : kind_(kind) {}
  virtual ~ToolService() = default;
  config::PassKind kind() const { return kind_; }
  /// During initialize: configure the SDK service on a context of its own and start it. The
  /// error is one line (the SDK's message: an unknown metric, "not available on CUDA devices").
  virtual Status configure(const config::ToolConfig& config, ServiceHost& host) = 0;
  /// PASS ENTER of a replay loop (kernel or range): on for a pass of this kind, off otherwise.
  void pass_begin(const PlannedPass& pass, kreplay_kernel_replay_context_cb_t start,
                  kreplay_kernel_replay_context_cb_t stop) const {
    if (ctx_.handle == 0) return;
    if (pass.kind == kind_) {
      start(ctx_);
    } else {
      stop(ctx_);
    }
  }
  /// PASS EXIT.
  virtual void pass_end() {}
  /// At exit: anything held back.
  virtual void flush() {}

 protected:
  kreplay_context_id_t ctx_{};

 private:
  config::PassKind kind_;
};

/// A context the tool configured itself (the counting context), switched like any service.
std::unique_ptr<ToolService> make_context_service(config::PassKind kind, kreplay_context_id_t ctx);

std::unique_ptr<ToolService> make_pc_sampling_service();
std::unique_ptr<ToolService> make_sass_metrics_service();
std::unique_ptr<ToolService> make_pm_sampling_service();

/// The services that @p config's passes ask for, one per kind (counters excepted: the tool
/// configures the counting context with its own callbacks and wraps it). Not configured yet.
std::vector<std::unique_ptr<ToolService>> make_services(const config::ToolConfig& config);

}  // namespace kreplay::tool
