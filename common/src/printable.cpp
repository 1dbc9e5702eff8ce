#include "sa/printable.hpp"

#include <fmt/core.h>

namespace sa {

size_t utf8_sequence(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + len > s.size() || byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return len;
}

namespace {
bool continues(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }
}  // namespace

size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += !continues(c);
  return n;
}

size_t utf8_offset(std::string_view s, size_t k) {
  size_t seen = 0;
  for (size_t i = 0; i < s.size(); ++i)
    if (!continues(s[i]) && seen++ == k) return i;
  return s.size();
}

bool control_at(std::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  return c < 0x20 || c == 0x7F ||
         (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9F &&
          static_cast<unsigned char>(s[i + 1]) >= 0x80);
}

std::string printable(std::string_view s, size_t max_bytes) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (out.size() >= max_bytes) {
      out += "...";
      break;
    }
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (control_at(s, i)) {
      if (c == '\n') out += "\\n";
      else if (c == '\t') out += "\\t";
      else if (c == '\r') out += "\\r";
      else if (c == 0xC2) out += fmt::format("\\u{:04x}", static_cast<unsigned char>(s[i + 1]));
      else out += fmt::format("\\x{:02x}", c);
      i += c == 0xC2 ? 2 : 1;
      continue;
    }
    const size_t len = utf8_sequence(s, i);
    // A byte-order mark (U+FEFF) prints as nothing at all: shown by name.
    if (len == 3 && s.compare(i, 3, "\xEF\xBB\xBF") == 0) {
      out += "\\ufeff";
      i += 3;
      continue;
    }
    if (len == 0) {
      out += fmt::format("\\x{:02x}", c);
      ++i;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

}  // namespace sa
