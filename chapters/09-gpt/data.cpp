// Chapter 9's text: reading the King James Bible from Debian's `bible`,
// stripping the references, and the files of build/data/ (data.hpp).
#include "09-gpt/data.hpp"

#include "07-training/checkpoint.hpp"

#include "sa/cli.hpp"
#include "sa/paths.hpp"
#include "sa/print.hpp"
#include "sa/printable.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

namespace sa::ch9 {

namespace fs = std::filesystem;

// ---- UTF-8 ------------------------------------------------------------------

std::vector<char32_t> utf8_chars(std::string_view who, std::string_view text) {
  std::vector<char32_t> out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto b0 = static_cast<unsigned char>(text[i]);
    // The length a lead byte announces, and the smallest code point that
    // length may hold (a shorter form is overlong: the same character
    // written two ways would be two tokens).
    int len = 0;
    char32_t c = 0, min = 0;
    if (b0 < 0x80) len = 1, c = b0;
    else if ((b0 & 0xE0) == 0xC0) len = 2, c = b0 & 0x1F, min = 0x80;
    else if ((b0 & 0xF0) == 0xE0) len = 3, c = b0 & 0x0F, min = 0x800;
    else if ((b0 & 0xF8) == 0xF0) len = 4, c = b0 & 0x07, min = 0x10000;
    auto bad = [&] {
      return std::invalid_argument(
          fmt::format("{}: byte 0x{:02x} at offset {} is not UTF-8", who, static_cast<unsigned char>(text[i]), i));
    };
    if (len == 0 || i + size_t(len) > text.size()) throw bad();
    for (int k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(text[i + size_t(k)]);
      if ((b & 0xC0) != 0x80) throw bad();
      c = (c << 6) | (b & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) throw bad();
    out.push_back(c);
    i += size_t(len);
  }
  return out;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += char(c);
  } else if (c < 0x800) {
    out += char(0xC0 | (c >> 6));
    out += char(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += char(0xE0 | (c >> 12));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  } else {
    out += char(0xF0 | (c >> 18));
    out += char(0x80 | ((c >> 12) & 0x3F));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  }
}

std::string char_name(char32_t c) {
  if (c == '\n') return "'\\n'";
  if (c == '\t') return "'\\t'";
  if (c == '\r') return "'\\r'";
  if (c < 0x20 || (c >= 0x7F && c < 0xA0)) return fmt::format("U+{:04X}", uint32_t(c));  // a control character prints nothing
  std::string s = "'";
  append_utf8(s, c);
  s += "'";
  if (c >= 0x80) s += fmt::format(" (U+{:04X})", uint32_t(c));
  return s;
}

// ---- The text -----------------------------------------------------------------

std::string_view strip_reference(std::string_view line, int64_t line_number) {
  size_t i = 0;
  auto is_digit = [&](size_t k) { return k < line.size() && line[k] >= '0' && line[k] <= '9'; };
  auto is_letter = [&](size_t k) {
    return k < line.size() && ((line[k] >= 'A' && line[k] <= 'Z') || (line[k] >= 'a' && line[k] <= 'z'));
  };
  if (i < line.size() && line[i] >= '1' && line[i] <= '3') ++i;  // 1Sm, 2Ki, 3Jn
  const size_t book = i;
  while (is_letter(i)) ++i;
  const size_t chapter = i;
  while (is_digit(i)) ++i;
  bool ok = i > chapter && chapter > book && i < line.size() && line[i] == ':';
  if (ok) {
    const size_t verse = ++i;
    while (is_digit(i)) ++i;
    ok = i > verse && i < line.size() && line[i] == ' ';
  }
  if (!ok) {
    const std::string_view shown = line.substr(0, 40);
    throw std::invalid_argument(fmt::format("line {} does not start with a verse reference like 'Ge1:1 ': '{}{}'",
                                            line_number, shown, line.size() > 40 ? "..." : ""));
  }
  return line.substr(i + 1);
}

int64_t split_point(int64_t n) { return int64_t(double(n) * kTrainFraction); }

namespace {

// At most kTextBytes + 1 bytes: every file here is kjv.txt or a part of it,
// and one that grows while it is read is still read no further than that.
std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(fmt::format("cannot read {}", shown_path(path.string())));
  std::string bytes(size_t(kTextBytes) + 1, '\0');
  in.read(bytes.data(), std::streamsize(bytes.size()));
  if (in.bad()) throw UsageError(fmt::format("cannot read {}", shown_path(path.string())));
  bytes.resize(size_t(in.gcount()));
  return bytes;
}

// Written as the checkpoints are (chapter 7's save_file_atomically): to a
// temporary file, then renamed, so a run killed while writing leaves the old
// file or none, never half of one, and a later run removes what it left.
void write_file(const fs::path& path, std::string_view bytes) {
  try {
    save_file_atomically(path.string(), {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  }
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && ::access((fs::path(dir) / program).c_str(), X_OK) == 0) return true;
  return false;
}

const char* kInstall = "install Debian's bible-kjv and bible-kjv-text (./book setup does)";

// The verses as `bible` prints them, references stripped.
std::string text_from_bible() {
  if (!on_path("bible")) throw UsageError(fmt::format("the program 'bible' is not installed: {}", kInstall));
  if (!fs::exists(kBibleData))
    throw UsageError(fmt::format("the text of the Bible ({}) is missing: {}", kBibleData, kInstall));
  // -f: one verse a line whatever the terminal's width (without it, lines
  // are wrapped at $COLUMNS and chapters get headings).
  FILE* pipe = ::popen((std::string(kBibleCommand) + " 2>/dev/null").c_str(), "r");
  if (!pipe) throw UsageError(fmt::format("cannot run {}", kBibleCommand));
  std::string raw;
  char buffer[65536];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) raw.append(buffer, n);
  const int status = ::pclose(pipe);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw UsageError(fmt::format("{} failed (exit status {}): {}", kBibleCommand,
                                 WIFEXITED(status) ? WEXITSTATUS(status) : -1, kInstall));
  std::string text;
  text.reserve(raw.size());
  int64_t verses = 0;
  size_t start = 0;
  try {
    while (start < raw.size()) {
      size_t end = raw.find('\n', start);
      if (end == std::string::npos) end = raw.size();
      text += strip_reference(std::string_view(raw).substr(start, end - start), verses + 1);
      text += '\n';
      ++verses;
      start = end + 1;
    }
  } catch (const std::invalid_argument& e) {
    throw UsageError(fmt::format("{} printed something else than verses: {}", kBibleCommand, e.what()));
  }
  if (verses != kVerses)
    throw UsageError(
        fmt::format("{} printed {} verses, expected {}: is bible-kjv-text damaged?", kBibleCommand, verses, kVerses));
  return text;
}

// kjv.txt is what every number of the chapter comes from: refuse any other.
void require_expected(const std::string& text, const std::string& what, const std::string& fix) {
  if (int64_t(text.size()) != kTextBytes)
    throw UsageError(fmt::format("{} has {} bytes, expected {}: {}", what, text.size(), kTextBytes, fix));
  const std::string sha = sha256_hex(text);
  if (sha != kTextSha256)
    throw UsageError(fmt::format("{} has SHA-256 {}, expected {}: {}", what, sha.substr(0, 16) + "...",
                                 std::string(kTextSha256).substr(0, 16) + "...", fix));
}

}  // namespace

Text load_text(const std::string& dir) {
  Text t;
  t.dir = dir;
  const fs::path all = fs::path(dir) / "kjv.txt", train = fs::path(dir) / "train.txt", val = fs::path(dir) / "val.txt";
  // (a kjv.txt the system cannot look at, a loop of symbolic links, is said
  // so: it was an exception, exit 1)
  std::error_code looked;
  const bool exists = fs::exists(all, looked);
  if (looked) throw UsageError(fmt::format("{}: {}", shown_path(all.string()), looked.message()));
  if (exists) {
    if (!fs::is_regular_file(all, looked))
      throw UsageError(fmt::format("{} is not a regular file", shown_path(all.string())));
    const std::string damaged =
        "it is damaged (delete it, and the next run prepares it again from the bible-kjv packages)";
    // Its size first, from the file system: a file of another size is
    // refused unread (a kjv.txt of 20 GB was read whole, until the memory
    // ran out).
    std::error_code ec;
    const std::uintmax_t size = fs::file_size(all, ec);
    if (!ec && size != std::uintmax_t(kTextBytes))
      throw UsageError(fmt::format("{} has {} bytes, expected {}: {}", shown_path(all.string()), size, kTextBytes,
                                   damaged));
    t.all = read_file(all);
    require_expected(t.all, shown_path(all.string()), damaged);
  } else {
    t.all = text_from_bible();
    require_expected(t.all, std::string("the text ") + kBibleCommand + " printed",
                     "these are not the verses of bible-kjv-text 4.38 the chapter was written with");
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw UsageError(fmt::format("cannot create the folder {}: {}", shown_path(dir), ec.message()));
    write_file(all, t.all);
    t.prepared_now = true;
  }
  const auto n = int64_t(t.all.size());
  t.train = t.all.substr(0, size_t(split_point(n)));
  t.val = t.all.substr(size_t(split_point(n)));
  // The split files are for reading and for other programs (a PyTorch twin
  // reads the same bytes); kjv.txt is the one checked, and they follow it.
  for (const auto& [path, part] : {std::pair{train, &t.train}, std::pair{val, &t.val}}) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec) || fs::file_size(path, ec) != part->size() || read_file(path) != *part) {
      write_file(path, *part);
      if (!t.prepared_now) t.rewritten.push_back(path.filename().string());
    }
  }
  return t;
}

std::string generated_lines(const std::string& text) {
  // Spaces at the very end would print as nothing (a single character drawn
  // as a space would look like no character): they are shown as ␣, as in
  // step 12's figure.
  const size_t last = text.find_last_not_of(' ');
  const size_t kept = last == std::string::npos ? 0 : last + 1;
  std::string shown = text.substr(0, kept);
  for (size_t i = kept; i < text.size(); ++i) shown += "␣";
  std::string lines;
  size_t begin = 0;
  while (begin <= shown.size()) {
    const size_t end = std::min(shown.find('\n', begin), shown.size());
    lines += "  | " + shown.substr(begin, end - begin) + "\n";
    begin = end + 1;
  }
  return lines;
}

void print_generated(const std::string& text) { fmt::print("{}", generated_lines(text)); }

std::string quoted_prompt(const std::string& prompt, size_t characters) {
  // (Measured after escaping: a control character shows as several.)
  const std::string whole = printable(prompt);
  if (whole.size() <= kQuotedPrompt) return "\"" + whole + "\"";
  return fmt::format("\"{}\" ({})", printable(prompt, kQuotedPrompt), count_of(int64_t(characters), "character"));
}

std::string text_after_prompt(const std::string& text, size_t prompt_characters) {
  if (prompt_characters <= kKeptPrompt) return text;
  return "..." + text.substr(utf8_offset(text, prompt_characters - kKeptPrompt));
}

}  // namespace sa::ch9
