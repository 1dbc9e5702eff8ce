// Chapter 9's text: the King James Bible from Debian's bible-kjv packages,
// prepared once into build/data/ and checked every time it is read.
//
// The packages keep the text compressed in their own format
// (/usr/lib/bible.data); their `bible` program is the reliable way to read
// it, offline:  bible -f "Gen1:1-Rev22:21"  prints every verse on one line,
// "Ge1:1 In the beginning God created the heaven and the earth." The
// preparation keeps the prose and drops the reference before it, then
// splits the characters 90/10 by position: the first 90% to train on, the
// rest (from Acts 21:40 on) to measure on text the model never saw, as
// nanoGPT's shakespeare_char/prepare.py splits its text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sa::ch9 {

// ---- UTF-8 ----------------------------------------------------------------
// The code points of `text`. Bytes that are not UTF-8 (a stray byte, an
// overlong or truncated sequence, a surrogate) are refused with
// std::invalid_argument naming `who`, the byte and its offset.
std::vector<char32_t> utf8_chars(std::string_view who, std::string_view text);
// Appends the UTF-8 bytes of c to out.
void append_utf8(std::string& out, char32_t c);
// A character as a message names it: 'a', '\n', ' ', 'é' (U+00E9).
std::string char_name(char32_t c);

// ---- SHA-256 (FIPS 180-4) ---------------------------------------------------
// The digest of `bytes` as 64 lower-case hex digits, as sha256sum prints it.
std::string sha256_hex(std::string_view bytes);

// ---- The text ----------------------------------------------------------------
// What the book was written with: Debian's bible-kjv-text 4.38, read with
// the command below, the references stripped. A prepared text whose SHA-256
// differs is refused: every number the chapter prints comes from this text.
inline constexpr const char* kBibleCommand = "bible -f \"Gen1:1-Rev22:21\"";
inline constexpr const char* kBibleData = "/usr/lib/bible.data";
inline constexpr int64_t kVerses = 31102;
inline constexpr int64_t kTextBytes = 4137850;
inline constexpr const char* kTextSha256 = "b5c4940bcfeee072c0935b5200d0f9d88a00a0199cb0961d16133458fcdfae5d";
// Characters of the training part: int(0.9 n), nanoGPT's split.
inline constexpr double kTrainFraction = 0.9;

// The reference before a verse ("Ge1:1 ", "1Sm3:10 ", "SSol2:1 "): a book
// (an optional 1 to 3, then letters), chapter:verse, one space. Returns the
// prose after it; a line that does not start so is refused with
// std::invalid_argument naming the line.
std::string_view strip_reference(std::string_view line, int64_t line_number);

struct Text {
  std::string all, train, val;  // kjv.txt and its two parts, one verse a line
  std::string dir;              // the folder the files are in
  bool prepared_now = false;    // kjv.txt was made by this run (else read and checked)
  std::vector<std::string> rewritten;  // split files written again by this run (missing, or not kjv.txt's parts)
};

// The text in `dir` (kjv.txt, train.txt, val.txt). When kjv.txt is missing
// it is prepared from the `bible` command first; the split files are
// written again whenever they are missing or differ from the split of
// kjv.txt. Refused with UsageError, one line saying what to do: the
// packages missing, the command failing, its output not the expected
// verses, or kjv.txt of another size or SHA-256 (damaged: delete it to
// prepare it again).
Text load_text(const std::string& dir);

// The split at int(0.9 n) characters (the text is ASCII, so bytes are
// characters).
int64_t split_point(int64_t n);

// Generated text, one "  | " line per line of it, spaces at its very end
// shown as ␣; print_generated writes it on stdout (the program's step 11,
// and ./book generate).
std::string generated_lines(const std::string& text);
void print_generated(const std::string& text);

// A long prompt is not echoed whole: a message quotes its first
// kQuotedPrompt bytes, a generated text keeps its last kKeptPrompt
// characters (more than a default model's 64 positions: what the first
// drawn character reads, and some of what came before).
constexpr size_t kQuotedPrompt = 60;
constexpr size_t kKeptPrompt = 120;

// `prompt` quoted for a message: "And God said", or for a longer one
// "And God said, Let there be light: and there was light. And ..." (3300
// characters).
std::string quoted_prompt(const std::string& prompt, size_t characters);

// `text` (UTF-8), a prompt of `prompt_characters` characters and what was
// drawn after it, as printed: a prompt longer than kKeptPrompt characters
// shows as "..." and its last kKeptPrompt.
std::string text_after_prompt(const std::string& text, size_t prompt_characters);

}  // namespace sa::ch9
