#include "sa/text.hpp"

#include "sa/cli.hpp"
#include "sa/printable.hpp"

#include <fmt/core.h>

#include <locale.h>
#include <wctype.h>

#include <cctype>
#include <sstream>

namespace sa {

namespace {

// One UTF-8 sequence at text[i]: its code point and length, or length 0
// when the bytes there are not valid UTF-8 (overlong, a surrogate, past
// U+10FFFF, cut short).
struct Decoded {
  char32_t cp = 0;
  std::size_t len = 0;
};
Decoded decode_utf8(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b = byte(i);
  const std::size_t len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xe ? 3 : (b >> 3) == 0x1e ? 4 : 0;
  if (len == 0 || i + len > text.size()) return {};
  char32_t cp = len == 1 ? b : len == 2 ? (b & 0x1f) : len == 3 ? (b & 0x0f) : (b & 0x07);
  for (std::size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return {};
    cp = (cp << 6) | (byte(i + k) & 0x3f);
  }
  static constexpr char32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kSmallest[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return {};
  return {cp, len};
}

void encode_utf8(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xc0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += char(0xe0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3f));
    out += char(0x80 | (cp & 0x3f));
  } else {
    out += char(0xf0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3f));
    out += char(0x80 | ((cp >> 6) & 0x3f));
    out += char(0x80 | (cp & 0x3f));
  }
}

// glibc's C.UTF-8 (Debian 12, Ubuntu 22.04 and later) carries Unicode's
// case tables whatever the reader's own locale is; null when it is missing.
locale_t unicode_ctype() {
  static const locale_t loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", locale_t(nullptr));
  return loc;
}

}  // namespace

std::string lower_case(std::string_view text) {
  std::string lower;
  lower.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const unsigned char b = static_cast<unsigned char>(text[i]);
    if (b < 0x80) {  // ASCII: no table needed
      lower += char(std::tolower(b));
      ++i;
      continue;
    }
    const Decoded d = decode_utf8(text, i);
    if (d.len == 0) {  // not UTF-8: left as it is (a corpus is checked before it gets here)
      lower += char(b);
      ++i;
      continue;
    }
    char32_t cp = d.cp;
    if (const locale_t loc = unicode_ctype()) {
      cp = char32_t(towlower_l(wint_t(cp), loc));
    } else {
      throw UsageError(fmt::format("'{}' is not ASCII, and this system has no C.UTF-8 locale to lower-case it "
                                   "with: write the text in lower case ASCII",
                                   text.substr(i, d.len)));
    }
    encode_utf8(cp, lower);
    i += d.len;
  }
  return lower;
}

std::vector<std::string> tokenize(std::string_view text) {
  std::istringstream in(lower_case(text));
  std::vector<std::string> tokens;
  for (std::string w; in >> w;) {
    const std::size_t chars = utf8_length(w);
    if (chars > kMaxWordChars)
      throw UsageError(fmt::format("the word '{}' has {} characters; at most {} (words label the rows and columns of "
                                   "every matrix and figure)",
                                   printable(w, 24), chars, kMaxWordChars));
    tokens.push_back(w);
  }
  if (tokens.empty()) throw UsageError("the text has no tokens: give at least one word");
  return tokens;
}

std::string_view checked_text(std::string_view text) {
  // A byte-order mark in front (some editors save one) is dropped. (byte
  // positions count from the text as given, mark included)
  const std::size_t mark = text.starts_with("\xEF\xBB\xBF") ? 3 : 0;
  text.remove_prefix(mark);
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence(text, i);
    if (n == 0)
      throw UsageError(fmt::format("--text: byte {} (0x{:02x}) is not UTF-8; give the text in UTF-8", mark + i,
                                   static_cast<unsigned char>(text[i])));
    if (control_at(text, i) && std::string_view(" \t\n\r\v\f").find(text[i]) == std::string_view::npos)
      throw UsageError(fmt::format("--text: control character {} at byte {}; words are separated by spaces, tabs "
                                   "or line ends",
                                   printable(text.substr(i, n)), mark + i));
    i += n;
  }
  return text;
}

std::vector<std::string> tokenize_text(std::string_view text) {
  std::vector<std::string> tokens = tokenize(checked_text(text));
  if (tokens.size() > kMaxTextTokens)
    throw UsageError(fmt::format("--text has {} words; at most {} (every step prints a matrix per pair of words)",
                                 tokens.size(), kMaxTextTokens));
  return tokens;
}

Vocabulary::Vocabulary(const std::vector<std::string>& tokens) {
  for (const auto& t : tokens)
    if (index_.emplace(t, int64_t(words_.size())).second) words_.push_back(t);
}

int64_t Vocabulary::id(const std::string& word) const {
  const auto it = index_.find(word);
  if (it == index_.end()) throw UsageError("unknown token '" + word + "': it is not in the vocabulary");
  return it->second;
}

std::vector<int64_t> Vocabulary::ids(const std::vector<std::string>& tokens) const {
  std::vector<int64_t> out;
  out.reserve(tokens.size());
  for (const auto& t : tokens) out.push_back(id(t));
  return out;
}

}  // namespace sa
