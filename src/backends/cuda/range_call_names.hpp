// What a CUDA driver call made between launches does to an open range, by the call's name (as
// CUPTI's callbacks give it): range_calls.cpp asks at the API entry of every call that is not a
// launch. Pure string logic, tested on the host (range_call_names_test.cpp).
#pragma once

#include "kreplay/range_replay.h"

namespace kreplay::cuda::range_calls {

/// NONE: the call cannot observe or change device memory (queries of handles and attributes,
/// event recording, context switches); otherwise why the range closes before it.
kreplay_range_close_reason_t range_close_reason(const char* name);
/// A plain synchronization or query: the host learns that work finished and observes no memory
/// (Engine::range_sync decides whether the open range stays open).
bool is_plain_sync(const char* name);

}  // namespace kreplay::cuda::range_calls
