#include "backends/host/services/host_service.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "backends/host/host_device.hpp"
#include "common/env.hpp"
#include "common/util.hpp"

namespace kreplay::hostrt {

void HostPassService::prepare(device::Launch& launch, const device::ServiceSettings& settings) {
  (void)launch;
  (void)settings;
  prepared_.store(true);
}

Status HostPassService::begin_pass(device::Launch& launch,
                                   const device::ServiceSettings& settings) {
  auto* work = dynamic_cast<HostWork*>(&launch);
  if (work == nullptr) return Error(KREPLAY_STATUS_ERROR_INTERNAL, "not a host launch");
  if (work->probe_next)
    return Error(KREPLAY_STATUS_ERROR_SERVICE_CONFLICT, "another service is armed on this pass");
  work->probe_next =
      std::make_shared<Probe>(period_log2(settings), pm_interval(settings), settings);
  work->probe_armed = work->probe_next.get();
  return Status::Ok();
}

Status HostPassService::end_pass(device::Launch& launch) {
  auto* work = dynamic_cast<HostWork*>(&launch);
  if (work == nullptr) return Error(KREPLAY_STATUS_ERROR_INTERNAL, "not a host launch");
  work->probe_next.reset();  // not consumed: the submission did not happen
  return Status::Ok();
}

Result<std::vector<device::ServiceSample>> HostPassService::flush(device::Launch& launch) {
  auto* work = dynamic_cast<HostWork*>(&launch);
  if (work == nullptr) return Error(KREPLAY_STATUS_ERROR_INTERNAL, "not a host launch");
  const Probe* armed = work->probe_armed;
  work->probe_armed = nullptr;
  // KREPLAY_HOST_FAIL_SERVICE_PASSES=<service name>: every pass of that service is lost when read,
  // as a GPU's service can lose passes, so that what the SDK and the command say of lost passes
  // is tested without one.
  static const std::string lose = env::get("KREPLAY_HOST_FAIL_SERVICE_PASSES").value_or("");
  if (const char* name = device::pass_service_name(kind()); !lose.empty() && name && lose == name) {
    return Error(
        KREPLAY_STATUS_ERROR_NOT_AVAILABLE,
        fmt::format("the host device lost this pass (KREPLAY_HOST_FAIL_SERVICE_PASSES={})", lose));
  }
  if (needs_prepare() && !prepared_.load()) return std::vector<device::ServiceSample>{};
  // Only the submission this pass armed counts (an earlier pass's record may still be `last`).
  if (armed == nullptr || !work->last || work->last->probe.get() != armed || !work->last->wait(0))
    return std::vector<device::ServiceSample>{};
  return samples(*work->last->probe, work->info().mangled_name);
}

Status HostPassService::check_metrics(const std::vector<std::string>& names,
                                      const char* service) const {
  std::vector<std::string> known;
  for (const auto& m : metrics()) known.push_back(m.name);
  for (const auto& n : names) {
    if (std::find(known.begin(), known.end(), n) != known.end()) continue;
    auto close = suggest(n, known);
    return Error(KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND,
                 close.empty() ? fmt::format("unknown {} metric '{}' on the host device; the host "
                                             "device has {}",
                                             service, n, fmt::join(known, ", "))
                               : fmt::format("unknown {} metric '{}' on the host device; did you "
                                             "mean {}?",
                                             service, n, join_or(close)));
  }
  return Status::Ok();
}

device::ServiceSample HostPassService::at_site(const ProbeSite& site, const std::string& function) {
  device::ServiceSample s;
  s.function = function;
  s.pc_offset = site.pc_offset;
  s.instruction = Probe::mnemonic(site);
  s.source_file = site.file;
  s.source_line = site.line;
  return s;
}

}  // namespace kreplay::hostrt
