// Words to token ids. The book's tokenizer is deliberately the simplest one
// that shows the idea: lower-case words split on white space, and a
// vocabulary numbered in order of first appearance, so the two "the"s of
// "the cat sat on the mat" share id 0 (and therefore an embedding row).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sa {

// Lower-cases and splits on white space; throws UsageError when the text has
// no words.
std::vector<std::string> tokenize(std::string_view text);

class Vocabulary {
 public:
  Vocabulary() = default;
  explicit Vocabulary(const std::vector<std::string>& tokens);  // first appearance order

  int64_t size() const { return int64_t(words_.size()); }
  const std::string& word(int64_t id) const { return words_.at(size_t(id)); }
  // Throws UsageError naming the word when it is not in the vocabulary.
  int64_t id(const std::string& word) const;
  std::vector<int64_t> ids(const std::vector<std::string>& tokens) const;

 private:
  std::vector<std::string> words_;
};

}  // namespace sa
