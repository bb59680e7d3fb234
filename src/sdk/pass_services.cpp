#include "sdk/pass_services.hpp"

#include <fmt/format.h>

#include <exception>

#include "common/logging.hpp"
#include "sdk/runtime.hpp"

namespace kreplay::sdk {
namespace {

const char* agent_kind(kreplay_agent_type_t t) {
  switch (t) {
    case KREPLAY_AGENT_TYPE_HOST_DEVICE:
      return "the host device";
    case KREPLAY_AGENT_TYPE_CUDA_GPU:
      return "CUDA devices";
    default:
      return "this device";
  }
}

// The service's name for messages: "PC sampling", "SASS metrics", "PM sampling".
std::string title(kreplay_pass_service_kind_t kind) {
  switch (kind) {
    case KREPLAY_PASS_SERVICE_PC_SAMPLING:
      return "PC sampling";
    case KREPLAY_PASS_SERVICE_SASS_METRICS:
      return "SASS metrics";
    case KREPLAY_PASS_SERVICE_PM_SAMPLING:
      return "PM sampling";
    default: {
      const char* n = kreplay_get_pass_service_name(kind);
      return n ? n : "this service";
    }
  }
}

// A pass whose service did not start or could not be read: the first pass of each service and
// reason is a warning, the others with the same reason go to the debug log (a run of thousands
// of launches would repeat one line per launch; each pass's status is in its records, and the
// command's summary counts them).
void say_pass_lost(const replay::DispatchState& st, const std::string& service, const char* what,
                   const std::string& why) {
  const std::string line = fmt::format("dispatch {} pass {}: {} {}: {}", st.info.dispatch_id,
                                       st.pass, service, what, why);
  if (log::first_time(fmt::format("pass-service-lost {} {} {}", service, what, why))) {
    KR_WARN("{} (said once for this reason)", line);
  } else {
    KR_DEBUG("{}", line);
  }
}

template <typename Fn>
void guarded(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    KR_ERROR("a tool's per-pass service callback threw: {}", e.what());
  } catch (...) {
    KR_ERROR("a tool's per-pass service callback threw an unknown exception");
  }
}

}  // namespace

Status configure_pass_service(Runtime& rt, uint64_t context, kreplay_pass_service_kind_t kind,
                              device::ServiceSettings settings, PassServiceSub callbacks) {
  RETURN_IF_ERROR(rt.registry().check_configurable(context));
  if (callbacks.callback == nullptr)
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "the record callback is NULL");
  bool first = true;
  device::ServiceSettings checked;
  for (size_t i = 0; i < rt.agent_count(); ++i) {
    const AgentEntry* a = rt.agent_by_index(i);
    if (a == nullptr || a->device == nullptr) continue;
    device::PassService* svc = a->device->service(kind);
    if (svc == nullptr) {
      return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE,
                   fmt::format("{} is not available on {} in this build", title(kind),
                               agent_kind(a->desc.type)));
    }
    device::ServiceSettings mine = settings;
    RETURN_IF_ERROR(svc->configure(mine));
    if (first) checked = std::move(mine);
    first = false;
  }
  if (first) checked = std::move(settings);  // no agent yet: nothing to check against
  callbacks.settings = std::move(checked);
  return rt.registry().configure_pass_service(context, kind, std::move(callbacks));
}

void prepare_pass_services(Runtime& rt, replay::DispatchState& st) {
  if (st.launch == nullptr) return;
  const AgentEntry* agent = rt.agent(st.info.agent_id.handle);
  if (agent == nullptr || agent->device == nullptr) return;
  for (int k = KREPLAY_PASS_SERVICE_NONE + 1; k < KREPLAY_PASS_SERVICE_LAST; ++k) {
    auto kind = static_cast<kreplay_pass_service_kind_t>(k);
    for (const auto& c : rt.registry().contexts()) {
      if (!c->services[k].configured() || !c->active.load(std::memory_order_acquire)) continue;
      if (device::PassService* svc = agent->device->service(kind)) {
        svc->prepare(*st.launch, c->services[k].settings);
      }
      break;  // the first active context's settings, as PassServiceRun::begin uses
    }
  }
}

void PassServiceRun::clear() {
  kinds_.clear();
}

void PassServiceRun::gather(Context& c, const replay::DispatchState& st) {
  for (int k = KREPLAY_PASS_SERVICE_NONE + 1; k < KREPLAY_PASS_SERVICE_LAST; ++k) {
    const PassServiceSub& sub = c.services[k];
    if (!sub.configured()) continue;
    auto kind = static_cast<kreplay_pass_service_kind_t>(k);
    if (sub.dispatch_callback != nullptr) {
      kreplay_pass_service_data_t data{};
      data.size = sizeof(data);
      data.kind = kind;
      data.dispatch_info = st.info;
      data.correlation_id = st.correlation;
      data.replay_pass = st.pass;
      data.status_message = "";
      int want = 1;
      guarded([&] { want = sub.dispatch_callback(&data, sub.dispatch_args); });
      if (want == 0) continue;
    }
    KindRun* run = nullptr;
    for (auto& r : kinds_) {
      if (r.kind == kind) run = &r;
    }
    if (run == nullptr) {
      kinds_.push_back({});
      run = &kinds_.back();
      run->kind = kind;
    }
    run->contexts.push_back(&c);
  }
}

std::vector<std::string> PassServiceRun::names() const {
  std::vector<std::string> out;
  for (const auto& r : kinds_) out.push_back(kreplay_get_pass_service_name(r.kind));
  return out;
}

void PassServiceRun::refuse(const Status& why) {
  for (auto& r : kinds_) r.status = why;
}

bool PassServiceRun::begin(Runtime& rt, replay::DispatchState& st) {
  bool any = false;
  const AgentEntry* agent = rt.agent(st.info.agent_id.handle);
  for (auto& r : kinds_) {
    if (!r.status.ok()) continue;
    r.backend = agent && agent->device ? agent->device->service(r.kind) : nullptr;
    if (r.backend == nullptr) {
      r.status = Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE,
                       fmt::format("{} is not available on this device", title(r.kind)));
      continue;
    }
    // The contexts of one kind share its settings only if they agree; the first one's are used.
    r.status = r.backend->begin_pass(*st.launch, r.contexts.front()->services[r.kind].settings);
    r.begun = r.status.ok();
    any |= r.begun;
    if (!r.begun) {
      say_pass_lost(st, title(r.kind), "not collected", r.status.message());
    }
  }
  return any;
}

void PassServiceRun::end(replay::DispatchState& st) {
  for (auto& r : kinds_) {
    if (!r.begun || r.ended) continue;
    r.ended = true;
    if (Status e = r.backend->end_pass(*st.launch); !e.ok()) r.status = e;
  }
}

void PassServiceRun::finish(Runtime& rt, replay::DispatchState& st) {
  (void)rt;
  const bool completed = st.timing.end_ns != 0;
  for (auto& r : kinds_) {
    std::vector<device::ServiceSample> samples;
    if (r.begun) {
      Status e = r.ended ? r.status : r.backend->end_pass(*st.launch);
      auto flushed = r.backend->flush(*st.launch);
      if (!e.ok()) {
        r.status = e;
      } else if (!flushed.ok()) {
        r.status = flushed.status();
      } else if (completed) {
        samples = std::move(flushed).value();
      }
      if (!r.status.ok()) {
        say_pass_lost(st, title(r.kind), "could not be read", r.status.message());
      }
    }
    records_.clear();
    for (const auto& s : samples) {
      kreplay_pass_service_record_t rec{};
      rec.size = sizeof(rec);
      rec.kind = r.kind;
      rec.dispatch_id = st.info.dispatch_id;
      rec.replay_pass = st.pass;
      rec.agent_id = st.info.agent_id;
      rec.kernel_id = st.info.kernel_id;
      rec.function = s.function.c_str();
      rec.pc_offset = s.pc_offset;
      rec.instruction = s.instruction.c_str();
      rec.source_file = s.source_file.c_str();
      rec.source_line = s.source_line;
      rec.name = s.name.c_str();
      rec.timestamp = s.time_ns != 0 ? st.timing.start_ns + s.time_ns : 0;
      rec.value = s.value;
      records_.push_back(rec);
    }
    kreplay_pass_service_data_t data{};
    data.size = sizeof(data);
    data.kind = r.kind;
    data.dispatch_info = st.info;
    data.correlation_id = st.correlation;
    data.replay_pass = st.pass;
    data.start_timestamp = st.timing.start_ns;
    data.end_timestamp = st.timing.end_ns;
    data.status =
        r.status.ok()
            ? KREPLAY_STATUS_SUCCESS
            : (r.status.code() != KREPLAY_STATUS_SUCCESS ? r.status.code() : KREPLAY_STATUS_ERROR);
    data.status_message = r.status.ok() ? "" : r.status.message().c_str();
    if (r.status.ok() && !completed) continue;  // nothing ran: nothing to say
    for (Context* c : r.contexts) {
      const auto& sub = c->services[r.kind];
      guarded([&] { sub.callback(&data, records_.data(), records_.size(), sub.args); });
    }
  }
  kinds_.clear();
}

}  // namespace kreplay::sdk
