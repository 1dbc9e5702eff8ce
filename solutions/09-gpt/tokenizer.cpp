// Reference solutions of chapter 9: the character tokenizer.
#include "09-gpt/data.hpp"
#include "09-gpt/gpt.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

namespace sa {

CharVocab build_vocab(std::string_view text) {
  if (text.empty()) throw std::invalid_argument("build_vocab: the text is empty; a vocabulary needs characters");
  CharVocab vocab;
  vocab.chars = ch9::utf8_chars("build_vocab", text);
  // sorted(set(text)): sort, then keep the first of each run of equals.
  std::sort(vocab.chars.begin(), vocab.chars.end());
  vocab.chars.erase(std::unique(vocab.chars.begin(), vocab.chars.end()), vocab.chars.end());
  return vocab;
}

std::vector<int64_t> encode(const CharVocab& vocab, std::string_view text) {
  if (text.empty()) throw std::invalid_argument("encode: the text is empty; the model needs at least one character");
  const std::vector<char32_t> chars = ch9::utf8_chars("encode", text);
  std::vector<int64_t> ids;
  ids.reserve(chars.size());
  for (size_t i = 0; i < chars.size(); ++i) {
    // The vocabulary is sorted, so a binary search finds a character's id.
    const auto it = std::lower_bound(vocab.chars.begin(), vocab.chars.end(), chars[i]);
    if (it == vocab.chars.end() || *it != chars[i])
      throw std::invalid_argument(fmt::format("encode: character {} at position {} is not in the vocabulary of {} characters",
                                              ch9::char_name(chars[i]), i, vocab.size()));
    ids.push_back(int64_t(it - vocab.chars.begin()));
  }
  return ids;
}

std::string decode(const CharVocab& vocab, const std::vector<int64_t>& ids) {
  std::string text;
  text.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab.size())
      throw std::out_of_range(
          fmt::format("decode: id {} at position {} is outside the vocabulary [0, {})", ids[i], i, vocab.size()));
    ch9::append_utf8(text, vocab.chars[size_t(ids[i])]);
  }
  return text;
}

}  // namespace sa
