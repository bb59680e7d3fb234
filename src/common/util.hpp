// Small utilities shared by every subsystem: time, thread ids, names, suggestions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kreplay {

/// Monotonic nanoseconds (CLOCK_MONOTONIC); the SDK's timestamp domain.
uint64_t now_ns();

/// OS thread id of the caller.
uint64_t thread_id();

/// Demangle an Itanium C++ name; returns the input unchanged when it is not mangled.
std::string demangle(std::string_view mangled);

/// Levenshtein distance (for "did you mean" suggestions).
size_t edit_distance(std::string_view a, std::string_view b);

/// Up to @p max names from @p candidates close to @p wanted, closest first: those within an edit
/// distance of a third of the name, and those that contain @p wanted or are contained in it.
std::vector<std::string> suggest(std::string_view wanted, const std::vector<std::string>& candidates,
                                 size_t max = 3);

/// "a, b or c".
std::string join_or(const std::vector<std::string>& items);

/// Human-readable bytes ("1.5 GiB").
std::string format_bytes(uint64_t bytes);

/// Whether a shared library whose path contains @p name is loaded in this process.
bool process_has_library(std::string_view name);

}  // namespace kreplay
