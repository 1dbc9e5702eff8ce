// The book's running example, built the way chapter 1 builds it, for the
// chapters that start where chapter 1 ends. Header-only on purpose: it calls
// chapter 1's functions, so each program gets the track it links (your
// exercises or the reference).
//
// The draws follow a PyTorch twin exactly: torch.manual_seed(seed);
// nn.Embedding(vocab, d_model); then the projections (three nn.Linear(d_model,
// d_k) here, or chapter 4's four for multi-head attention).
#pragma once

#include "01-qkv-projection/qkv.hpp"
#include "sa/nn.hpp"
#include "sa/rng.hpp"
#include "sa/text.hpp"

#include <string>
#include <vector>

namespace sa {

// Tokens -> ids -> embeddings + positional encoding.
struct EmbeddedText {
  std::vector<std::string> tokens;
  Vocabulary vocab;
  std::vector<int64_t> ids;
  Matrix table;  // (vocab, d_model), nn.Embedding's weight
  Matrix X;      // (seq_len, d_model) = table[ids] + PE
  int64_t seq_len() const { return int64_t(tokens.size()); }
};

inline EmbeddedText embed_text(Generator& gen, const std::vector<std::string>& tokens, int64_t d_model) {
  EmbeddedText e;
  e.tokens = tokens;
  e.vocab = Vocabulary(tokens);
  e.ids = e.vocab.ids(tokens);
  e.table = make_embedding(gen, e.vocab.size(), d_model);
  e.X = embed(e.table, e.ids) + positional_encoding(e.seq_len(), d_model);
  return e;
}

// ...then Q, K and V through three nn.Linear(d_model, d_k), with biases.
struct RunningExample {
  EmbeddedText text;
  Linear W_q, W_k, W_v;
  QKV qkv;
};

inline RunningExample make_running_example(Generator& gen, const std::vector<std::string>& tokens, int64_t d_model,
                                           int64_t d_k) {
  RunningExample r;
  r.text = embed_text(gen, tokens, d_model);
  // One statement per layer: the order of the draws is PyTorch's order.
  r.W_q = make_linear(gen, d_model, d_k);
  r.W_k = make_linear(gen, d_model, d_k);
  r.W_v = make_linear(gen, d_model, d_k);
  r.qkv = project_qkv(r.text.X, r.W_q, r.W_k, r.W_v);
  return r;
}

}  // namespace sa
