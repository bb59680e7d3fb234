// Kernel selection: which logical launches the tool profiles.
//
// The filters come from FilterOptions (tool_config.hpp) and are applied as a pipeline, each stage
// seeing only the launches the previous one passed:
//
//   0. markers:    --profile-from-start off (between cudaProfilerStart and Stop) and
//                  --nvtx-include / --nvtx-exclude: the caller decides them from the markers it
//                  saw (nvtx_filter.hpp) and passes the verdict in Launch::markers;
//   1. names:      --kernel-include-regex (RE2 partial match on the demangled name), then
//                  --kernel-exclude-regex (same, a match rejects), then -k/--kernel-name
//                  (exact, or "regex:EXPR"), then --kernel-id (kernel_id.hpp; its invocation is
//                  counted per context, stream and kernel over every launch that reached it);
//                  -k and --kernel-id compare the names --kernel-name-base chooses;
//   2. iterations: --kernel-iteration-range, counted per kernel over the launches that passed 1;
//   3. window:     --launch-skip N / --launch-count M, counted over the launches that passed 1
//                  and 2 (ncu semantics: skip N, then profile the next M).
//
// A name that passes stage 1 is cached per kernel, so each regex runs once per kernel, not once
// per launch (kernel names can be hundreds of KiB long).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.hpp"
#include "config/kernel_id.hpp"
#include "config/tool_config.hpp"

namespace kreplay::config {

/// A parsed --kernel-iteration-range: 1-based, inclusive launch numbers of one kernel.
///
/// Grammar (blanks allowed anywhere between tokens):
///   range := "" | item | list          item := N | N "-" M          list := "[" elem ("," elem)*
///   "]" elem  := item | list
/// so "3", "2-4", "[1-3, 5]" and "[1, 2, [5-8]]" are ranges; N >= 1 and N <= M.
class IterationRange {
 public:
  /// Parse @p text. An empty (or all-blank) text means every iteration.
  /// @retval KREPLAY_STATUS_ERROR_INVALID_ARGUMENT with one line naming the offending text, the
  ///         position, and an example of the grammar
  static Result<IterationRange> Parse(std::string_view text);

  /// True when the range places no restriction.
  bool all() const { return all_; }
  /// True when @p iteration (1-based) is in the range.
  bool contains(uint64_t iteration) const;
  /// Sorted, merged, inclusive intervals (empty when all()).
  const std::vector<std::pair<uint64_t, uint64_t>>& intervals() const { return intervals_; }
  /// Canonical text, e.g. "[1-3, 5]"; "" when all().
  std::string to_string() const;

 private:
  bool all_ = true;
  std::vector<std::pair<uint64_t, uint64_t>> intervals_;
};

/// What happened to the launches a KernelFilter saw. selected + not_selected = launches seen; the
/// not_selected launches are broken down by the stage that rejected them.
struct FilterStats {
  uint64_t selected = 0;
  uint64_t not_selected = 0;
  uint64_t rejected_by_name = 0;         ///< include / exclude / -k
  uint64_t rejected_by_include = 0;      ///< of rejected_by_name: --kernel-include-regex
  uint64_t rejected_by_exclude = 0;      ///< of rejected_by_name: --kernel-exclude-regex
  uint64_t rejected_by_kernel_name = 0;  ///< of rejected_by_name: -k
  uint64_t rejected_by_kernel_id = 0;    ///< of rejected_by_name: --kernel-id
  uint64_t rejected_by_profiler = 0;     ///< --profile-from-start off: outside start/stop
  uint64_t rejected_by_nvtx = 0;         ///< --nvtx-include / --nvtx-exclude
  uint64_t rejected_by_iteration = 0;    ///< --kernel-iteration-range
  uint64_t rejected_by_window = 0;       ///< --launch-skip / --launch-count
  uint64_t kernels_seen = 0;             ///< distinct kernels (by mangled name)
};

/// The runtime kernel filter of the injected tool.
///
/// Threading: select() and the const members may be called from any thread concurrently.
/// select() must be called exactly once per logical launch (at CONFIG, never per replay pass),
/// because it advances the iteration and launch counters.
class KernelFilter {
 public:
  /// Stage 0's verdict, decided by the caller from the markers (see the top of this file).
  enum class Markers { kSelected, kProfilerStopped, kNvtx };
  /// One logical launch.
  struct Launch {
    std::string_view demangled, mangled;
    uint64_t context = 0;  ///< --kernel-id's context: the device index
    uint64_t stream = 0;   ///< --kernel-id's stream: the stream id the results show
    Markers markers = Markers::kSelected;
  };

  /// Compile @p options. Errors (one line each): a bad regex (with RE2's message), a bad
  /// iteration range (see IterationRange::Parse), an empty "regex:" name.
  static Result<KernelFilter> Create(const FilterOptions& options);

  KernelFilter(KernelFilter&&) noexcept;
  KernelFilter& operator=(KernelFilter&&) noexcept;
  KernelFilter(const KernelFilter&) = delete;
  KernelFilter& operator=(const KernelFilter&) = delete;
  ~KernelFilter();

  /// Decide one logical launch of the kernel named @p demangled / @p mangled. Either name may be
  /// empty (a missing demangled name is derived from the mangled one). Advances the counters.
  bool select(std::string_view demangled, std::string_view mangled);
  bool select(const Launch& launch);

  /// Stage 1 only, without touching any counter.
  bool matches_name(std::string_view demangled, std::string_view mangled) const;

  /// True when every launch is selected (no filter set): the tool may skip the call.
  bool selects_everything() const;
  /// True when stage 0 has work: --profile-from-start off or an NVTX expression.
  bool uses_markers() const;

  /// True once --launch-count launches have been selected: no later launch will be.
  bool exhausted() const;

  FilterStats stats() const;

  /// For the exit: when the filter saw launches and selected none of them, one line (no tag)
  /// naming the options that rejected them, the launches and distinct kernels seen, and, when the
  /// name stage rejected every launch because of -k or --kernel-include-regex, the closest
  /// kernel names seen (closest_kernel_names), e.g. "-k nosuchkernel selected none of 10
  /// launches of 2 kernels; the closest kernel names: scale_add, sum_reduce". "" otherwise.
  std::string nothing_selected_line() const;

 private:
  struct Impl;
  explicit KernelFilter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Check one RE2 pattern; the error names @p option (e.g. "kernel_include_regex").
Status check_kernel_regex(std::string_view pattern, std::string_view option);

/// Check @p options without keeping the compiled filter (the command does this at plan time).
Status validate_filter_options(const FilterOptions& options);

/// The function name of a demangled kernel name: the return type and the parameter list removed,
/// e.g. "void ns::gemm<float>(float*, int)" -> "ns::gemm<float>".
std::string_view kernel_function_name(std::string_view demangled);

/// The names -k NAME is compared with, exactly: the mangled name, the demangled name, the
/// function name, the function name without template arguments ("ns::gemm"), and that without
/// its scope ("gemm"). Duplicates removed; empty names left out.
std::vector<std::string> kernel_name_forms(std::string_view demangled, std::string_view mangled);

/// Up to @p max kernel names nearest to @p wanted by edit distance (common/util.hpp), however far:
/// each kernel is the list of its names (the demangled forms -k compares, see kernel_name_forms)
/// and offers the one nearest to @p wanted (ties: the shorter, then the first). Nearest first,
/// ties by name; a name offered twice is listed once.
std::vector<std::string> closest_kernel_names(std::string_view wanted,
                                              const std::vector<std::vector<std::string>>& kernels,
                                              size_t max = 3);

}  // namespace kreplay::config
