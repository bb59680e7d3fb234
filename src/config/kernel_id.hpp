// --kernel-id: Nsight Compute's "context:stream:name:invocation" launch identifier.
//
//   context     the device index the results show (devices.device_index; kreplay profiles one
//               context per device); empty: any
//   stream      the stream as the results show it (dispatches.stream_id); empty: any
//   name        the kernel name as --kernel-name-base says (exact), or "regex:EXPR" (partial
//               match); may contain ':' ("ns::gemm"); empty: any
//   invocation  the N-th launch (from 1) of that kernel on that context and stream; empty: every
//
// e.g. "::gemm:3", "0::regex:^sgemm:", ":140213:scale_add:". Each of the three ':' must be there.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.hpp"

namespace re2 {
class RE2;
}

namespace kreplay::config {

/// What -k and --kernel-id compare a kernel's names with (--kernel-name-base).
enum class KernelNameBase {
  kFunction,   ///< the function name in its forms (with and without templates and scope); the full
               ///< demangled and mangled names are accepted too (default)
  kDemangled,  ///< the full demangled name, parameters included
  kMangled,    ///< the mangled name as in the binary
};
/// "function" (or ""), "demangled", "mangled".
std::optional<KernelNameBase> parse_kernel_name_base(std::string_view text);

/// The names of a kernel that a filter with @p base compares (kernel_name_forms for function).
std::vector<std::string> kernel_names_for_base(KernelNameBase base, std::string_view demangled,
                                               std::string_view mangled);

class KernelId {
 public:
  /// Errors: one line naming the part that is wrong, with the form and an example.
  static Result<KernelId> Parse(std::string_view text);

  std::optional<uint64_t> context, stream, invocation;
  std::string name;                 ///< exact name; "" with no regex: any
  std::shared_ptr<re2::RE2> regex;  ///< "regex:EXPR"
  std::string text;                 ///< as given

  /// Does one of @p names (kernel_names_for_base) match the name part?
  bool name_matches(const std::vector<std::string>& names) const;
  bool any_name() const { return name.empty() && !regex; }
};

}  // namespace kreplay::config
