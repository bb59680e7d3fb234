// Environment access. Reads only; kreplay never changes the application's environment.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kreplay::env {

/// Value of @p name, or nullopt when unset.
std::optional<std::string> get(const char* name);

/// Integer value of @p name; @p fallback when unset. A malformed value warns once and falls back.
int64_t get_int(const char* name, int64_t fallback);

/// Boolean (1/0, true/false, yes/no, on/off); @p fallback when unset or malformed.
bool get_bool(const char* name, bool fallback);
/// @p text as get_bool reads it (1/0, true/false, yes/no, on/off, any case), or nullopt.
std::optional<bool> parse_bool(std::string_view text);

/// Split @p text on @p sep, dropping empty parts.
std::vector<std::string> split(std::string_view text, char sep);

/// Parse a byte size: "123", "64K", "512M", "16G" (binary units). Returns false when malformed.
bool parse_bytes(std::string_view text, uint64_t* out);

}  // namespace kreplay::env
