#include "output/text.hpp"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace kreplay::output {

std::string csv_field(std::string_view text) {
  bool quote = !text.empty() && (text.front() == ' ' || text.back() == ' ');
  for (char c : text) {
    if (c == ',' || c == '"' || c == '\n' || c == '\r') {
      quote = true;
      break;
    }
  }
  if (!quote) return std::string(text);
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string json_string(std::string_view text) {
  bool plain = true;
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x80 || c == '"' || c == '\\') {
      plain = false;
      break;
    }
  }
  if (plain) {
    std::string out;
    out.reserve(text.size() + 2);
    out += '"';
    out += text;
    out += '"';
    return out;
  }
  try {
    return nlohmann::json(std::string(text))
        .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (...) {
    return "\"\"";  // only bad_alloc can get here
  }
}

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

JsonObject& JsonObject::raw(std::string_view key, std::string_view json) {
  if (text_.size() > 1) text_ += ',';
  text_ += json_string(key);
  text_ += ':';
  text_ += json;
  return *this;
}

std::string format_us(uint64_t ns) {
  return fmt::format("{}.{:03}", ns / 1000, ns % 1000);
}

std::string format_double(double value) {
  return fmt::format("{}", value);
}

std::string format_count(double value) {
  if (!std::isfinite(value) || std::fabs(value) >= 1e15) return fmt::format("{:.4g}", value);
  if (value != 0.0 && std::fabs(value) < 0.001) return fmt::format("{:.3e}", value);
  std::string text = fmt::format("{:.3f}", value);
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  if (text == "-0") text = "0";
  return text;
}

std::string format_duration(double ns) {
  if (!std::isfinite(ns)) return fmt::format("{}", ns);
  double a = std::fabs(ns);
  if (a < 1e3) return fmt::format("{:.0f} ns", ns);
  if (a < 1e6) return fmt::format("{:.3f} us", ns / 1e3);
  if (a < 1e9) return fmt::format("{:.3f} ms", ns / 1e6);
  return fmt::format("{:.3f} s", ns / 1e9);
}

std::string truncate_name(std::string_view name, size_t max) {
  if (name.size() <= max) return std::string(name);
  if (max <= 3) return std::string(name.substr(0, max));
  size_t keep = max - 3;
  // Do not cut a UTF-8 sequence in the middle.
  while (keep > 0 && (static_cast<unsigned char>(name[keep]) & 0xC0) == 0x80) --keep;
  return std::string(name.substr(0, keep)) + "...";
}

std::string KernelNames::operator()(uint64_t kernel_id) const {
  auto it = names_.find(kernel_id);
  return it != names_.end() ? it->second : fmt::format("kernel {}", kernel_id);
}

std::string display_name(const KernelRecord& kernel) {
  if (!kernel.demangled_name.empty()) return kernel.demangled_name;
  if (!kernel.mangled_name.empty()) return kernel.mangled_name;
  return fmt::format("kernel {}", kernel.kernel_id);
}

}  // namespace kreplay::output
