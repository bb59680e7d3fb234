// The logging facade. Every line kreplay prints starts with "==KREPLAY==" (CONVENTIONS.md §11)
// and goes to stderr. The level comes from KREPLAY_LOG_LEVEL (error|warning|info|debug|trace, or
// 0-4), read once; "quiet" (or -1) silences all but errors.
//
// Thread-safe: each line is written with one fwrite.
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <string>
#include <string_view>

namespace kreplay::log {

enum class Level : int { kQuiet = -1, kError = 0, kWarning = 1, kInfo = 2, kDebug = 3, kTrace = 4 };

/// Current level (from the environment on first use).
Level level();
/// Override the level (tests, CLI).
void set_level(Level level);
/// Parse "warning", "2", ... ; returns false when the text names no level.
bool parse_level(std::string_view text, Level* out);

/// Write one tagged line if @p at is enabled.
void write(Level at, std::string_view message);

/// Whether a line at @p at prints. Errors always do: quiet (-q) silences all but errors.
inline bool enabled(Level at) {
  return static_cast<int>(at) <= static_cast<int>(Level::kError) ||
         static_cast<int>(at) <= static_cast<int>(level());
}

/// Called before every line write() prints (nullptr: none). The terminal progress line
/// (tool/progress.hpp) uses it to take itself off the screen before a message goes out.
void set_before_line(void (*hook)());

/// Warn once per process for each distinct @p key.
bool first_time(std::string_view key);

}  // namespace kreplay::log

#define KR_LOG(lvl, ...)                                                             \
  do {                                                                               \
    if (::kreplay::log::enabled(::kreplay::log::Level::lvl))                         \
      ::kreplay::log::write(::kreplay::log::Level::lvl, ::fmt::format(__VA_ARGS__)); \
  } while (0)

/// A plain status line (progress, tallies): shown unless quiet, with no severity tag.
#define KR_NOTICE(...)                                                                  \
  do {                                                                                  \
    if (::kreplay::log::enabled(::kreplay::log::Level::kWarning))                      \
      ::kreplay::log::write(::kreplay::log::Level::kInfo, ::fmt::format(__VA_ARGS__)); \
  } while (0)

#define KR_ERROR(...) KR_LOG(kError, __VA_ARGS__)
#define KR_WARN(...) KR_LOG(kWarning, __VA_ARGS__)
#define KR_INFO(...) KR_LOG(kInfo, __VA_ARGS__)
#define KR_DEBUG(...) KR_LOG(kDebug, __VA_ARGS__)
#define KR_TRACE(...) KR_LOG(kTrace, __VA_ARGS__)
#define KR_WARN_ONCE(key, ...) \
  do {                                                \
    if (::kreplay::log::first_time(key)) KR_WARN(__VA_ARGS__); \
  } while (0)
