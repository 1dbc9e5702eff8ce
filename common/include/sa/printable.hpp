// Strings from files and the command line, made safe to show: a message
// that quotes a file name, a token or a line of a reader's file shows it
// with every control character escaped and every byte that is not UTF-8
// spelled out, so that nothing stored reaches the terminal raw.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sa {

// The length of the UTF-8 sequence that starts at s[i] (1 for ASCII), or 0
// when the bytes there are not UTF-8: a stray continuation byte, a sequence
// cut short, an overlong form, a surrogate, or a code point above U+10FFFF.
std::size_t utf8_sequence(std::string_view s, std::size_t i);

// Characters of a UTF-8 string: its bytes that do not continue a sequence
// (10xxxxxx). What a word's or a label's length is counted in.
std::size_t utf8_length(std::string_view s);
// The byte offset of character k of s (counted as utf8_length counts), or
// s.size() when s has k characters or fewer.
std::size_t utf8_offset(std::string_view s, std::size_t k);

// A control character at s[i]: C0 (below 0x20), DEL, or C1 (U+0080 to
// U+009F, in UTF-8 0xC2 0x80 to 0xC2 0x9F).
bool control_at(std::string_view s, std::size_t i);

// A string from a file or the command line as a message may show it:
// control characters (C0, DEL, C1) become escapes (\n, \t, \r, \x1b,
// \u009b), a byte-order mark, invisible, becomes \ufeff, and bytes that are
// not UTF-8 become \xff, so that no stored string moves the cursor, changes
// colours or hides text on the reader's terminal. Other characters, backslashes included, are kept. Longer than
// `max_bytes`, it is cut there and "..." says so.
std::string printable(std::string_view s, std::size_t max_bytes = std::string::npos);

}  // namespace sa
