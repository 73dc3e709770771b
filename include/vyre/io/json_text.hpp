// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::io::append_json_string`: any bytes as one JSON string that every strict parser
//! accepts. Quotes, backslashes and control characters are escaped; well-formed UTF-8 (RFC
//! 3629: no overlong forms, no surrogates, nothing past U+10FFFF) is kept, and every byte that
//! is not part of it becomes U+FFFD. Host code, no allocation but `out`'s growth.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace vyre::io {

//! Length of the well-formed UTF-8 sequence at `text[i]` (a lead byte >= 0x80), or 0.
inline std::size_t utf8_sequence_length(std::string_view text, std::size_t i) noexcept {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char c = at(0);
  std::size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range (RFC 3629, table 3-7)
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong below U+0800
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;  // overlong below U+10000
    if (c == 0xF4) hi = 0x8F;  // past U+10FFFF
  } else {
    return 0;
  }
  if (i + len > text.size() || at(1) < lo || at(1) > hi) return 0;
  for (std::size_t k = 2; k < len; ++k)
    if ((at(k) & 0xC0) != 0x80) return 0;
  return len;
}

//! Appends `text` to `out` as a quoted JSON string.
inline void append_json_string(std::string& out, std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '"';
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x20) {
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 15];
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else if (const std::size_t len = utf8_sequence_length(text, i); len != 0) {
      out.append(text.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    }
  }
  out += '"';
}

//! `text` as a quoted JSON string.
inline std::string json_string(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  append_json_string(out, text);
  return out;
}

}  // namespace vyre::io
