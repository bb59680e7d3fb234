// Text helpers for messages: user text is shown printable and bounded, so every error stays one
// line whatever the user (or a fuzzer) typed.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>

namespace kreplay::config {

/// @p text with every non-printable byte shown as '?', cut to @p max bytes with "..." appended.
inline std::string printable(std::string_view text, size_t max = 80) {
  std::string out;
  out.reserve(std::min(text.size(), max) + 3);
  for (char c : text.substr(0, max)) {
    out.push_back(std::isprint(static_cast<unsigned char>(c)) ? c : '?');
  }
  if (text.size() > max) out += "...";
  return out;
}

/// True when @p text is well-formed UTF-8 (no overlong forms, surrogates or code points past
/// U+10FFFF). Everything kreplay passes to the tool travels as JSON, which must be UTF-8.
inline bool valid_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    size_t extra = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      extra = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      extra = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      extra = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + extra >= text.size()) return false;  // truncated sequence
    for (size_t k = 1; k <= extra; ++k) {
      unsigned char d = static_cast<unsigned char>(text[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += extra + 1;
  }
  return true;
}

}  // namespace kreplay::config
