// --list-sets and --list-sections: the catalog as text (stdout).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "report/sections.hpp"

namespace kreplay::report {

/// Passes a list of counters takes on the chip asked about (--chip), nullopt when unknown.
using PassCounter = std::function<std::optional<size_t>(const std::vector<std::string>&)>;

/// One line per set: name, sections, counters (and passes on @p chip when @p passes gives them).
std::string list_sets(const Catalog& catalog, const std::string& chip, const PassCounter& passes);

/// Per section: name, title, sets, counters (passes), description, metrics, derived values and
/// rules.
std::string list_sections(const Catalog& catalog, const std::string& chip,
                          const PassCounter& passes);

}  // namespace kreplay::report
