// Chapter 1, steps 3 to 5: the text split into tokens and numbered, an
// embedding vector looked up for every token, and the sinusoidal positional
// encoding added.
#include "01-qkv-projection/steps.hpp"

#include "sa/nn.hpp"
#include "sa/print.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <string>
#include <vector>

namespace sa::ch1 {

namespace {

// What step 3 can say about this text's repeated words: computed from the
// input, since the default sentence's two "the"s are not every sentence's.
void say_about_repeats(const Vocabulary& vocab, const std::vector<std::string>& tokens,
                       const std::vector<int64_t>& ids) {
  std::vector<int64_t> count(size_t(vocab.size()), 0);
  for (int64_t id : ids) ++count[size_t(id)];
  std::string repeated;
  int64_t kinds = 0;
  for (int64_t id = 0; id < vocab.size(); ++id)
    if (count[size_t(id)] > 1) {
      repeated += fmt::format("{}'{}' ({} times)", kinds++ ? ", " : "", vocab.word(id), count[size_t(id)]);
    }
  if (tokens.size() == 1) {
    say("One word, one id. A repeated word would get the same id each time, and nothing so far could tell its "
        "occurrences apart.");
  } else if (kinds == 0) {
    say(fmt::format("Every word of this text appears once, so the {} ids all differ. A repeated word would get "
                    "the same id each time, and nothing so far could tell its occurrences apart.",
                    tokens.size()));
  } else {
    say(fmt::format("Repeated: {}. A repeated word gets the same id every time, so nothing so far tells its "
                    "occurrences apart.",
                    repeated));
  }
}

}  // namespace

TokenIds number_tokens(const std::vector<std::string>& tokens) {
  const Vocabulary vocab(tokens);
  const auto ids = vocab.ids(tokens);
  const int64_t seq_len = int64_t(tokens.size());
  fmt::print("  tokens      {}\n", tokens);
  std::string vocab_line;
  for (int64_t i = 0; i < vocab.size(); ++i) vocab_line += fmt::format("{}{}={}", i ? "  " : "", vocab.word(i), i);
  fmt::print("  vocabulary  {}   ({} word{}, numbered by first appearance)\n", vocab_line, vocab.size(),
             vocab.size() == 1 ? "" : "s");
  print_shape("token_ids", {1, seq_len}, "(batch, seq_len)");
  fmt::print("    [{}]\n", ids);
  say_about_repeats(vocab, tokens, ids);
  return {tokens, vocab, ids, seq_len};
}

Matrix look_up_embeddings(Generator& gen, const Options& o, const TokenIds& text) {
  const auto& [tokens, vocab, ids, seq_len] = text;
  const Matrix table = make_embedding(gen, vocab.size(), o.d_model);
  print_tensor("embedding table", table, {}, kWide);
  say(fmt::format("One row of {} per vocabulary word, drawn from N(0, 1) as nn.Embedding({}, {}) "
                  "does with the same seed.",
                  count_of(o.d_model, "number"), vocab.size(), o.d_model));
  const Matrix E = embed(table, ids);
  print_tensor("E = table[token_ids]", E, {1, seq_len, o.d_model}, kWide);
  for (int64_t i = 0; i < seq_len; ++i)
    for (int64_t j = i + 1; j < seq_len; ++j)
      if (ids[size_t(i)] == ids[size_t(j)])
        fmt::print("  rows {} and {} ('{}') are identical: {}\n", i, j, tokens[size_t(i)],
                   E.row(i) == E.row(j) ? "yes" : "no");
  return E;
}

Positioned add_positional_encoding(const Options& o, const TokenIds& text, const Matrix& E) {
  const auto& [tokens, vocab, ids, seq_len] = text;
  fmt::print("  PE[pos, 2i]   = sin(pos / 10000^(2i / d_model))\n"
             "  PE[pos, 2i+1] = cos(pos / 10000^(2i / d_model))\n");
  const Matrix PE = positional_encoding(seq_len, o.d_model);
  print_tensor("PE", PE, {seq_len, o.d_model}, kWide);
  const Matrix X = E + PE;
  print_tensor("X = E + PE", X, {1, seq_len, o.d_model}, kWide);
  for (int64_t i = 0; i < seq_len; ++i)
    for (int64_t j = i + 1; j < seq_len; ++j)
      if (ids[size_t(i)] == ids[size_t(j)])
        fmt::print("  rows {} and {} ('{}') now differ: largest |X[{}] - X[{}]| = {:.4f}\n", i, j,
                   tokens[size_t(i)], i, j, (X.row(i) - X.row(j)).cwiseAbs().maxCoeff());
  return {PE, X};
}

}  // namespace sa::ch1
