#include "sa/text.hpp"

#include "sa/cli.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <sstream>

namespace sa {

std::string lower_case(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return lower;
}

std::vector<std::string> tokenize(std::string_view text) {
  std::istringstream in(lower_case(text));
  std::vector<std::string> tokens;
  for (std::string w; in >> w;) tokens.push_back(w);
  if (tokens.empty()) throw UsageError("the text has no tokens: give at least one word");
  return tokens;
}

std::vector<std::string> tokenize_text(std::string_view text) {
  std::vector<std::string> tokens = tokenize(text);
  if (tokens.size() > kMaxTextTokens)
    throw UsageError(fmt::format("--text has {} words; at most {} (every step prints a matrix per pair of words)",
                                 tokens.size(), kMaxTextTokens));
  return tokens;
}

Vocabulary::Vocabulary(const std::vector<std::string>& tokens) {
  for (const auto& t : tokens)
    if (std::find(words_.begin(), words_.end(), t) == words_.end()) words_.push_back(t);
}

int64_t Vocabulary::id(const std::string& word) const {
  auto it = std::find(words_.begin(), words_.end(), word);
  if (it == words_.end()) throw UsageError("unknown token '" + word + "': it is not in the vocabulary");
  return int64_t(it - words_.begin());
}

std::vector<int64_t> Vocabulary::ids(const std::vector<std::string>& tokens) const {
  std::vector<int64_t> out;
  out.reserve(tokens.size());
  for (const auto& t : tokens) out.push_back(id(t));
  return out;
}

}  // namespace sa
