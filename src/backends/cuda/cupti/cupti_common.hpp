// Internal helpers shared by the CUPTI wrappers: parameter structs, CUPTI result -> Status, and
// the lock that serializes calls into CUPTI's host API. Included only by .cpp files of this folder
// (it pulls in cupti_result.h); the public headers of the folder do not include any cupti*.h.
#pragma once

#include <cupti_result.h>

#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>

#include "common/status.hpp"

namespace kreplay::cupti {

/// A zeroed CUPTI parameter struct with structSize set and pPriv = NULL, as CUPTI asks of every
/// params struct. Use through KR_CUPTI_PARAMS(Type), which passes Type##_STRUCT_SIZE.
template <typename T>
T make_params(size_t struct_size) {
  T params{};
  params.structSize = struct_size;
  params.pPriv = nullptr;
  return params;
}

#define KR_CUPTI_PARAMS(Type) ::kreplay::cupti::make_params<Type>(Type##_STRUCT_SIZE)

/// cuptiGetResultString of @p result ("CUPTI_ERROR_INVALID_PARAMETER"), or the number.
std::string result_name(CUptiResult result);

/// What @p result means for a user, for the results that have a known cause and remedy
/// (privileges, another profiler holding CUPTI, vGPU, confidential compute, MIG, ...); empty for
/// the others.
std::string explain(CUptiResult result);

/// kreplay status code for a CUPTI result: COUNTER_NOT_FOUND for a bad metric name,
/// OUT_OF_RESOURCES for memory, NOT_AVAILABLE for "this device/configuration cannot be
/// profiled" (privileges, other subscriber, vGPU, MIG, ...), ERROR for everything else.
kreplay_status_t status_code(CUptiResult result);

/// Status for a failed CUPTI call: "<call> failed: CUPTI_ERROR_X (<cuptiGetErrorMessage>)[: why]".
/// OK when @p result is CUPTI_SUCCESS.
Status cupti_status(CUptiResult result, std::string_view call);

/// The process-wide lock around every call into CUPTI's profiler host API. CUPTI does not
/// document that API as thread-safe, and the calls are short (microseconds to tens of
/// milliseconds), so kreplay serializes them all. Never held while calling anything that could
/// take another kreplay lock.
std::mutex& host_api_mutex();

/// cuptiProfilerInitialize, once per process (it loads the profiler libraries and hooks the
/// driver; calling it again is harmless but not free). Shared by the range profiler and the
/// legacy profiler API.
Status profiler_initialize();

}  // namespace kreplay::cupti

/// Run a CUPTI call and return a Status from the enclosing function when it fails.
#define KR_CUPTI_RETURN_IF_ERROR(call)                                \
  do {                                                                \
    CUptiResult kr_cupti_result_ = (call);                            \
    if (kr_cupti_result_ != CUPTI_SUCCESS)                            \
      return ::kreplay::cupti::cupti_status(kr_cupti_result_, #call); \
  } while (0)
