// Chapter 9 exercises: the character tokenizer. Write each function, then
// run `./book check 9`. The declarations and what each must do are in
// chapters/09-gpt/gpt.hpp. Delete the SA_TODO line of a function once you
// have written it.
#include "09-gpt/data.hpp"
#include "09-gpt/gpt.hpp"

#include "sa/exercise.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

namespace sa {

CharVocab build_vocab(std::string_view text) {
  // TODO: every character of the text once, sorted by code point; refuse an
  // empty text. ch9::utf8_chars (data.hpp) turns the bytes into characters.
  SA_TODO("build_vocab",
          "a character is a code point, not a byte: é is one entry of the vocabulary "
          "(more: ./book hint 9 build_vocab)");
}

std::vector<int64_t> encode(const CharVocab& vocab, std::string_view text) {
  // TODO: the id of each character of the text (its index in vocab.chars);
  // refuse an empty text and name any character the vocabulary lacks, with
  // its position (ch9::char_name writes a character for a message).
  SA_TODO("encode",
          "a character the vocabulary lacks is refused, never given a neighbour's id "
          "(more: ./book hint 9 encode)");
}

std::string decode(const CharVocab& vocab, const std::vector<int64_t>& ids) {
  // TODO: the characters of the ids, one after another, as UTF-8; refuse an
  // id outside the vocabulary.
  SA_TODO("decode",
          "ch9::append_utf8 writes one character "
          "(more: ./book hint 9 decode)");
}

}  // namespace sa
