#include "common/env.hpp"

#include <cctype>
#include <charconv>
#include <cstdlib>

#include "common/logging.hpp"

namespace kreplay::env {

std::optional<std::string> get(const char* name) {
  const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read-only use
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

int64_t get_int(const char* name, int64_t fallback) {
  auto text = get(name);
  if (!text || text->empty()) return fallback;
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || ptr != text->data() + text->size()) {
    KR_WARN_ONCE(name, "{}='{}' is not an integer; using {}", name, *text, fallback);
    return fallback;
  }
  return value;
}

std::optional<bool> parse_bool(std::string_view text) {
  std::string v;
  for (char c : text) v.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return false;
  return std::nullopt;
}

bool get_bool(const char* name, bool fallback) {
  auto text = get(name);
  if (!text || text->empty()) return fallback;
  if (std::optional<bool> b = parse_bool(*text)) return *b;
  KR_WARN_ONCE(name, "{}='{}' is not a boolean; using {}", name, *text, fallback ? 1 : 0);
  return fallback;
}

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(sep, start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) out.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool parse_bytes(std::string_view text, uint64_t* out) {
  if (text.empty()) return false;
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc()) return false;
  std::string_view rest(ptr, text.data() + text.size() - ptr);
  uint64_t mult = 1;
  if (rest == "" || rest == "B") {
    mult = 1;
  } else if (rest == "K" || rest == "KiB" || rest == "k") {
    mult = 1ull << 10;
  } else if (rest == "M" || rest == "MiB") {
    mult = 1ull << 20;
  } else if (rest == "G" || rest == "GiB") {
    mult = 1ull << 30;
  } else if (rest == "T" || rest == "TiB") {
    mult = 1ull << 40;
  } else {
    return false;
  }
  *out = value * mult;
  return true;
}

}  // namespace kreplay::env
