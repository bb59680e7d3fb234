// Text helpers shared by the writers: CSV and JSON quoting, timestamps, numbers, names.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>

#include "output/records.hpp"

namespace kreplay::output {

/// One CSV field (RFC 4180): quoted, with quotes doubled, when it holds a comma, a quote, CR or
/// LF, or starts or ends with a space; otherwise as is.
std::string csv_field(std::string_view text);

/// A JSON string literal, quotes included. Invalid UTF-8 is replaced by U+FFFD.
std::string json_string(std::string_view text);

/// A JSON number for @p value, as nlohmann writes it: integral values keep ".0", NaN and
/// infinities are null.
std::string json_number(double value);

/// Builds the text of one JSON object field by field, in order, without a DOM (records are
/// written at the rate they arrive).
class JsonObject {
 public:
  template <typename T>
  requires std::is_integral_v<T> JsonObject& field(std::string_view key, T value) {
    return raw(key, std::to_string(value));
  }
  JsonObject& field(std::string_view key, double value) { return raw(key, json_number(value)); }
  JsonObject& field(std::string_view key, std::string_view value) {
    return raw(key, json_string(value));
  }
  JsonObject& field(std::string_view key, const std::string& value) {
    return raw(key, json_string(value));
  }
  JsonObject& field(std::string_view key, const char* value) {
    return raw(key, json_string(value));
  }
  /// @p json is already JSON text (an object, array, number...).
  JsonObject& raw(std::string_view key, std::string_view json);
  bool empty() const { return text_.size() == 1; }
  std::string done() { return std::move(text_) + "}"; }

 private:
  std::string text_ = "{";
};

/// Nanoseconds as microseconds with exactly three decimals ("1234.567"), for Chrome traces.
std::string format_us(uint64_t ns);

/// Shortest text that reads back as the same double ("1000", "0.1", "1e+20", "nan", "inf").
std::string format_double(double value);

/// A human count with at most three decimals, trailing zeros removed ("1234.5", "7").
std::string format_count(double value);

/// A human duration: "850 ns", "12.345 us", "1.234 ms", "2.500 s".
std::string format_duration(double ns);

/// @p name cut to at most @p max characters, ending in "..." when it was cut.
std::string truncate_name(std::string_view name, size_t max);

/// The name to show for a kernel: demangled, else mangled, else "kernel <id>".
std::string display_name(const KernelRecord& kernel);

/// Display names of the kernels a writer has seen, by kernel id.
class KernelNames {
 public:
  void add(const KernelRecord& kernel) { names_[kernel.kernel_id] = display_name(kernel); }
  /// The kernel's display name, or "kernel <id>" for one whose record never came.
  std::string operator()(uint64_t kernel_id) const;

 private:
  std::map<uint64_t, std::string> names_;
};

}  // namespace kreplay::output
