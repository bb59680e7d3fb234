// Invariants every fuzz target checks on the parsers' results.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/status.hpp"

namespace kreplay::cli::fuzz {

// An error is one non-empty line (CONVENTIONS: one line naming the problem and the fix).
inline void check_error_message(const Status& status) {
  const std::string& m = status.message();
  if (m.empty() || m.find('\n') != std::string::npos || m.find('\r') != std::string::npos) {
    std::fprintf(stderr, "bad error message: [%s]\n", m.c_str());
    std::abort();
  }
}

inline void check(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "fuzz invariant failed: %s\n", what);
    std::abort();
  }
}

}  // namespace kreplay::cli::fuzz
