// NVTX selection (--nvtx-include / --nvtx-exclude), with Nsight Compute's expression syntax, and
// the NVTX state it is evaluated against.
//
// An expression names push/pop ranges (per thread) or start/end ranges (per process) of one NVTX
// domain:
//
//   push/pop   "A/"        range A is on the thread's stack
//              "A/B/"      B pushed directly inside A ("A/B" too: a '/' makes it push/pop)
//              "A/*/B"     B inside A, any number of ranges (0+) between; "A/+/B": 1 or more
//              "[A/"       A at the bottom of the stack; "A]": A at the top (the innermost)
//              "[A/B]"     exactly the stack A, B
//   start/end  "A"         a start/end range A is open (nvtxRangeStart .. nvtxRangeEnd)
//              "A,B"       both are open
//   domains    "D@A/"      the ranges of domain D; without "D@", NVTX's default domain
//   regex      "regex:..." every name of the expression is an RE2 pattern (partial match);
//              "A/regex:B.*/", "regex:D.*@A/": one name only
//   escapes    "\/", "\@", "\,", "\[", "\]" stand for the character itself
//
// A launch is selected when some include matches (or none is given) and no exclude matches.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.hpp"

namespace kreplay::config {

/// The NVTX state one launch sees: the launching thread's push/pop stacks and the process's open
/// start/end ranges, each per domain ("" is NVTX's default domain).
struct NvtxView {
  using Stacks = std::map<std::string, std::vector<std::string>, std::less<>>;  ///< bottom first
  const Stacks* stacks = nullptr;     ///< the thread's; nullptr: none pushed
  const Stacks* start_end = nullptr;  ///< the process's open start/end ranges (names, any order)
};

/// One parsed expression.
class NvtxExpression {
 public:
  /// Parse @p text; @p option ("--nvtx-include") names it in errors, which are one line each.
  static Result<NvtxExpression> Parse(std::string_view text, std::string_view option);
  NvtxExpression(NvtxExpression&&) noexcept;
  NvtxExpression& operator=(NvtxExpression&&) noexcept;
  ~NvtxExpression();

  bool matches(const NvtxView& view) const;
  bool push_pop() const;
  const std::string& text() const;

 private:
  struct Impl;
  explicit NvtxExpression(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// The includes and excludes together.
class NvtxFilter {
 public:
  static Result<NvtxFilter> Create(const std::vector<std::string>& include,
                                   const std::vector<std::string>& exclude);
  /// No expression at all: every launch passes.
  bool empty() const { return include_.empty() && exclude_.empty(); }
  bool selects(const NvtxView& view) const;

 private:
  std::vector<NvtxExpression> include_, exclude_;
};

/// Check expressions without keeping them (the command does this before the application runs).
Status validate_nvtx_expressions(const std::vector<std::string>& include,
                                 const std::vector<std::string>& exclude);

/// The NVTX state of a process, fed by the markers the application makes (kreplay/markers.h).
/// Push/pop stacks are kept per thread (by the thread id the caller passes), start/end ranges per
/// process. Thread-safe.
class NvtxState {
 public:
  void push(uint64_t thread, std::string_view domain, std::string_view name);
  /// A pop with nothing pushed is ignored, as NVTX does.
  void pop(uint64_t thread, std::string_view domain);
  void start(uint64_t id, std::string_view domain, std::string_view name);
  /// An unknown id is ignored.
  void end(uint64_t id);
  /// @p filter's verdict for a launch on @p thread now.
  bool selects(const NvtxFilter& filter, uint64_t thread) const;
  /// "step > fwd" style text of @p thread's default-domain stack (for messages); "" when empty.
  std::string describe(uint64_t thread) const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, NvtxView::Stacks> threads_;
  NvtxView::Stacks open_;  ///< domain -> open start/end range names
  struct Open {
    std::string domain, name;
  };
  std::unordered_map<uint64_t, Open> by_id_;
};

}  // namespace kreplay::config
