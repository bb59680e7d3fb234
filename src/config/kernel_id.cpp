#include "config/kernel_id.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "common/util.hpp"
#include "config/filter.hpp"
#include "config/regex.hpp"
#include "config/text.hpp"

namespace kreplay::config {
namespace {
constexpr std::string_view kRegex = "regex:";
}

std::optional<KernelNameBase> parse_kernel_name_base(std::string_view text) {
  if (text.empty() || text == "function") return KernelNameBase::kFunction;
  if (text == "demangled") return KernelNameBase::kDemangled;
  if (text == "mangled") return KernelNameBase::kMangled;
  return std::nullopt;
}

std::vector<std::string> kernel_names_for_base(KernelNameBase base, std::string_view demangled,
                                               std::string_view mangled) {
  switch (base) {
    case KernelNameBase::kDemangled:
      return {demangled.empty() ? demangle(mangled) : std::string(demangled)};
    case KernelNameBase::kMangled:
      return {std::string(mangled.empty() ? demangled : mangled)};
    case KernelNameBase::kFunction:
      break;
  }
  return kernel_name_forms(demangled, mangled);
}

Result<KernelId> KernelId::Parse(std::string_view text) {
  auto fail = [&](std::string_view what) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                 fmt::format("--kernel-id \"{}\": {}; write context:stream:name:invocation, each "
                             "part optional, e.g. \"::gemm:3\" (the third gemm launch), "
                             "\"0::regex:^sgemm:\" or \":140213:scale_add:\"",
                             printable(text, 120), what));
  };
  KernelId id;
  id.text = std::string(text);
  auto number = [&](std::string_view part, std::string_view what,
                    std::optional<uint64_t>* out) -> std::string {
    if (part.empty()) return {};
    uint64_t v = 0;
    auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (ec != std::errc() || ptr != part.data() + part.size())
      return fmt::format("the {} \"{}\" is not a number", what, printable(part, 40));
    *out = v;
    return {};
  };
  size_t c1 = text.find(':');
  size_t c2 = c1 == std::string_view::npos ? c1 : text.find(':', c1 + 1);
  size_t c3 = text.rfind(':');
  if (c2 == std::string_view::npos || c3 == std::string_view::npos || c3 <= c2)
    return fail("it needs all three ':' (leave a part empty for any)");
  if (auto e = number(text.substr(0, c1), "context", &id.context); !e.empty()) return fail(e);
  if (auto e = number(text.substr(c1 + 1, c2 - c1 - 1), "stream", &id.stream); !e.empty())
    return fail(e);
  if (auto e = number(text.substr(c3 + 1), "invocation", &id.invocation); !e.empty())
    return fail(e);
  if (id.invocation && *id.invocation == 0) return fail("invocations count from 1");
  std::string_view name = text.substr(c2 + 1, c3 - c2 - 1);
  if (name.starts_with(kRegex)) {
    std::string_view expr = name.substr(kRegex.size());
    if (expr.empty()) return fail("\"regex:\" has no expression");
    std::string error;
    id.regex = compile_regex(expr, &error);
    if (!id.regex) {
      return fail(fmt::format("\"{}\" is not a valid regular expression ({})", printable(expr, 80),
                              printable(error, 80)));
    }
  } else {
    id.name = std::string(name);
  }
  return id;
}

bool KernelId::name_matches(const std::vector<std::string>& names) const {
  if (any_name()) return true;
  return std::any_of(names.begin(), names.end(), [&](const std::string& n) {
    return regex ? partial_match(*regex, n) : n == name;
  });
}

}  // namespace kreplay::config
