// RE2 as kreplay's options use it (-k regex:, --kernel-include-regex, --kernel-id, NVTX
// expressions): compiled without RE2 logging to stderr, its reason kept for the option's own
// one-line error, and matched anywhere in the text.
#pragma once

#include <re2/re2.h>

#include <memory>
#include <string>
#include <string_view>

namespace kreplay::config {

/// @p pattern compiled, or nullptr with RE2's reason in @p error.
inline std::unique_ptr<RE2> compile_regex(std::string_view pattern, std::string* error) {
  RE2::Options options;
  options.set_log_errors(false);
  auto re = std::make_unique<RE2>(re2::StringPiece(pattern.data(), pattern.size()), options);
  if (!re->ok()) {
    *error = re->error();
    return nullptr;
  }
  return re;
}

/// Whether @p re matches somewhere in @p text.
inline bool partial_match(const RE2& re, std::string_view text) {
  return RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), re);
}

}  // namespace kreplay::config
