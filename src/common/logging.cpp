#include "common/logging.hpp"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

#include "common/env.hpp"

namespace kreplay::log {
namespace {

std::atomic<int>& level_storage() {
  static std::atomic<int> value = [] {
    Level parsed = Level::kWarning;
    auto text = env::get("KREPLAY_LOG_LEVEL");
    if (text && !parse_level(*text, &parsed)) {
      std::fprintf(stderr,
                   "==KREPLAY== warning: KREPLAY_LOG_LEVEL='%s' is not a level; use error, "
                   "warning, info, debug or trace\n",
                   text->c_str());
      parsed = Level::kWarning;
    }
    return static_cast<int>(parsed);
  }();
  return value;
}

std::atomic<void (*)()> g_before_line{nullptr};

}  // namespace

void set_before_line(void (*hook)()) { g_before_line.store(hook); }

Level level() { return static_cast<Level>(level_storage().load(std::memory_order_relaxed)); }

void set_level(Level l) { level_storage().store(static_cast<int>(l), std::memory_order_relaxed); }

bool parse_level(std::string_view text, Level* out) {
  struct Name {
    std::string_view name;
    Level level;
  };
  static constexpr Name kNames[] = {
      {"quiet", Level::kQuiet},   {"-1", Level::kQuiet},     {"error", Level::kError},
      {"0", Level::kError},       {"warning", Level::kWarning}, {"warn", Level::kWarning},
      {"1", Level::kWarning},     {"info", Level::kInfo},    {"2", Level::kInfo},
      {"debug", Level::kDebug},   {"3", Level::kDebug},      {"trace", Level::kTrace},
      {"4", Level::kTrace},
  };
  for (const auto& n : kNames) {
    if (n.name == text) {
      *out = n.level;
      return true;
    }
  }
  return false;
}

void write(Level at, std::string_view message) {
  const char* tag = "";
  switch (at) {
    case Level::kError: tag = "error: "; break;
    case Level::kWarning: tag = "warning: "; break;
    case Level::kDebug: tag = "debug: "; break;
    case Level::kTrace: tag = "trace: "; break;
    default: break;
  }
  std::string line = fmt::format("==KREPLAY== {}{}\n", tag, message);
  if (auto hook = g_before_line.load()) hook();
  std::fwrite(line.data(), 1, line.size(), stderr);
}

bool first_time(std::string_view key) {
  static std::mutex mu;
  static std::set<std::string, std::less<>> seen;
  std::lock_guard lock(mu);
  return seen.emplace(key).second;
}

}  // namespace kreplay::log
