// Header-only C++ helpers over the C API: names of enums and statuses as std::string_view.
#pragma once

#include <string_view>

#include "kreplay/kreplay.h"

namespace kreplay::cxx {

inline std::string_view name(kreplay_status_t s) {
  const char* n = kreplay_get_status_name(s);
  return n ? n : "KREPLAY_STATUS_UNKNOWN";
}

inline std::string_view name(kreplay_replay_outcome_t o) {
  const char* n = kreplay_get_replay_outcome_name(o);
  return n ? n : "unknown";
}

inline std::string_view name(kreplay_decline_reason_t r) {
  const char* n = kreplay_get_decline_reason_name(r);
  return n ? n : "unknown";
}

inline std::string_view name(kreplay_callback_tracing_kind_t k) {
  const char* n = nullptr;
  return kreplay_query_callback_tracing_kind_name(k, &n) == KREPLAY_STATUS_SUCCESS ? n : "unknown";
}

inline std::string_view operation_name(kreplay_callback_tracing_kind_t k, uint32_t op) {
  const char* n = nullptr;
  return kreplay_query_callback_tracing_kind_operation_name(k, op, &n) == KREPLAY_STATUS_SUCCESS
             ? n
             : "unknown";
}

}  // namespace kreplay::cxx
