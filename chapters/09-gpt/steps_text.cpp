// Chapter 9, steps 1 to 3: the text, its vocabulary, and a verse encoded
// and decoded.
#include "09-gpt/steps.hpp"

#include "sa/paths.hpp"
#include "sa/print.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace sa::ch9 {

namespace {

// The first `n` characters of s, with its newlines shown as \n.
std::string shown(std::string_view s, size_t n) {
  std::string out;
  for (char c : s.substr(0, n)) out += c == '\n' ? std::string("\\n") : std::string(1, c);
  return out;
}

int64_t count_lines(std::string_view s) { return int64_t(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

void text_demo(const Text& t) {
  say("The text is the King James Version of the Bible (1611), from Debian's packages bible-kjv and "
      "bible-kjv-text (Debian 12's version 4.38 and Debian 13's 4.39 print the same text; its SHA-256 below says it "
      "is that text). The packages keep it compressed in a format of their own; their program prints it, "
      "offline, one verse a line after its reference. The preparation keeps the prose and drops the reference, "
      "then splits the characters by position: the first 90% to train on, the last 10% to validate.");
  fmt::print("  made by:    {}, each line's reference ('Ge1:1 ') stripped\n", kBibleCommand);
  fmt::print("  this run:   {}\n", t.prepared_now ? "prepared it now" : "read the file prepared earlier, checked");
  for (const std::string& file : t.rewritten)
    fmt::print("              {} written again from kjv.txt (it was missing or differed)\n", file);
  fmt::print("  {}:  {} bytes, {} verses, one a line\n", shown_path(t.dir + "/kjv.txt"), t.all.size(),
             count_lines(t.all));
  fmt::print("  SHA-256:    {}\n", sha256_hex(t.all));
  fmt::print("  train.txt:  {} bytes, the first 90%: {} whole verses and the start of the next\n", t.train.size(),
             count_lines(t.train));
  fmt::print("  val.txt:    {} bytes, the rest (Acts 21:40 to the end of Revelation)\n", t.val.size());
  fmt::print("  the first line:  \"{}\"\n", shown(t.all, t.all.find('\n')));
  const size_t cut = t.train.size();
  fmt::print("  around the split: \"...{}|{}...\"\n", shown(std::string_view(t.all).substr(cut - 30), 30),
             shown(std::string_view(t.all).substr(cut), 30));
  say("The split falls inside a verse, as nanoGPT's does: the model never sees the validation text, and it has "
      "no reason to care where a verse ends.");
}

CharVocab vocabulary_demo(const Text& text) {
  const CharVocab vocab = build_vocab(text.train);
  if (vocab.size() != kVocabSize)  // fixed by the text's SHA-256
    throw std::logic_error(fmt::format("the training text has {} characters, expected {}", vocab.size(), kVocabSize));
  say("A character-level model reads one character at a time: its vocabulary is every character of the "
      "training text once, sorted (build_vocab). Token id i is the i-th of them.");
  std::string listed;
  for (char32_t c : vocab.chars) listed += c == '\n' ? std::string("\\n") : std::string(1, char(c));
  fmt::print("  vocab_size {}: {}\n", vocab.size(), listed);
  // Counts of each character in the training text, for the rarest.
  std::map<char, int64_t> counts;
  for (char c : text.train) ++counts[c];
  std::vector<std::pair<int64_t, char>> by_count;
  for (const auto& [c, n] : counts) by_count.emplace_back(n, c);
  std::sort(by_count.begin(), by_count.end());
  std::string rare;
  for (size_t i = 0; i < 4; ++i) rare += fmt::format("{}'{}' {}", i ? ", " : "", by_count[i].second, by_count[i].first);
  fmt::print("  the rarest: {}; there is no 'X' in the text\n", rare);
  const CharVocab val_vocab = build_vocab(text.val);
  bool inside = true;
  for (char32_t c : val_vocab.chars) inside = inside && std::binary_search(vocab.chars.begin(), vocab.chars.end(), c);
  fmt::print("  the validation text uses {} of them{}\n", val_vocab.size(),
             inside ? ", and no character outside them" : ", AND CHARACTERS OUTSIDE THEM");
  say(fmt::format("A model that knows nothing spreads its probability evenly over the {} characters: its loss is "
                  "ln({}) = {:.4f} nats per character. Training must bring it below that.",
                  vocab.size(), vocab.size(), std::log(double(vocab.size()))));
  return vocab;
}

void encoding_demo(const CharVocab& vocab) {
  const std::string verse = "In the beginning God created the heaven and the earth.";
  const std::vector<int64_t> ids = encode(vocab, verse);
  say("encode turns a text into ids, decode turns ids back into the text. Genesis 1:1:");
  fmt::print("  text:  \"{}\"  ({} characters)\n", verse, verse.size());
  std::string first;
  for (size_t i = 0; i < 12; ++i) first += fmt::format("{}{}", i ? ", " : "", ids[i]);
  fmt::print("  ids:   [{}, ...]  ({} ids)\n", first, ids.size());
  const std::string back = decode(vocab, ids);
  fmt::print("  decode(encode(text)) == text: {}\n", back == verse ? "yes" : "NO");
  say("A text with a character the model never saw has no ids: encode refuses it, naming the character and "
      "where it is, rather than guess.");
  for (const std::string bad : {"Xerxes", "naïve", ""}) {
    try {
      encode(vocab, bad);
      fmt::print("  \"{}\": ACCEPTED\n", bad);
    } catch (const std::invalid_argument& e) {
      fmt::print("  \"{}\": {}\n", bad, e.what());
    }
  }
}

}  // namespace sa::ch9
