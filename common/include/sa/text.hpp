// Words to token ids. The book's tokenizer is deliberately the simplest one
// that shows the idea: lower-case words split on white space, and a
// vocabulary numbered in order of first appearance, so the two "the"s of
// "the cat sat on the mat" share id 0 (and therefore an embedding row).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sa {

// The text in lower case: how the book compares words ("The" and "the",
// "Été" and "été" are one token). UTF-8 text is lower-cased letter by letter
// with Unicode's simple mapping (glibc's C.UTF-8 tables: É -> é, Σ -> σ,
// Д -> д); bytes that are not valid UTF-8 are left as they are. Throws
// UsageError for a non-ASCII capital on a system without C.UTF-8, rather
// than keep it capitalised while --help says words are lower-cased.
std::string lower_case(std::string_view text);

// The longest word a text may hold, in characters: the chapters print their
// matrices with the words as row and column labels, and the figures size
// their margins from them (a word of 1,000 letters printed lines of 3,000
// characters, then asked cairo for a canvas larger than it draws: exit 1
// after every step had run, or chapter 7's after its training).
inline constexpr std::size_t kMaxWordChars = 64;

// Lower-cases and splits on white space; throws UsageError when the text has
// no words, or a word of more than kMaxWordChars characters.
std::vector<std::string> tokenize(std::string_view text);

// The longest --text a chapter program takes: every step prints (token,
// token) matrices, so output grows with the square of the length (1,000
// words printed 65 MB).
inline constexpr std::size_t kMaxTextTokens = 64;

// A --text as a reader's shell or editor hands it over: without a
// byte-order mark in front; UsageError, naming the byte, for bytes that are
// not UTF-8 and for control characters other than the white space between
// words (they would print raw, or make tokens no one can see).
std::string_view checked_text(std::string_view text);

// tokenize(checked_text(text)) for a chapter's --text: also refuses more
// than kMaxTextTokens words, with one line, before anything is allocated or
// printed.
std::vector<std::string> tokenize_text(std::string_view text);

class Vocabulary {
 public:
  Vocabulary() = default;
  // First appearance order. A hash index finds each word, so a corpus of
  // 10,000 sentences takes milliseconds (comparing every word with every
  // word took minutes).
  explicit Vocabulary(const std::vector<std::string>& tokens);

  int64_t size() const { return int64_t(words_.size()); }
  const std::string& word(int64_t id) const { return words_.at(size_t(id)); }
  // Throws UsageError naming the word when it is not in the vocabulary.
  int64_t id(const std::string& word) const;
  std::vector<int64_t> ids(const std::vector<std::string>& tokens) const;

 private:
  std::vector<std::string> words_;
  std::unordered_map<std::string, int64_t> index_;  // word -> id
};

}  // namespace sa
