// Generation with chapter 7's TinyTransformer, two ways:
//   - from scratch: every new token runs the whole forward over the whole
//     text again (chapter 7's forward, causal mask), and reads the last row;
//   - with a key/value cache: every new token runs the model on its own row
//     only, appending its keys and values to one KVCache per layer and head
//     and attending over them with kv_attend.
// With a causal mask the rows before the new token never change, so both
// give the same logits and the same tokens; the cache only skips the work.
#pragma once

#include "07-training/model.hpp"
#include "08-efficient-attention/efficient.hpp"

#include <fmt/core.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace sa {

// The model's caches: one per block and head, each (capacity, d_k).
class CachedDecoder {
 public:
  CachedDecoder(const TinyTransformer& model, int64_t capacity) : model_(model) {
    const ModelConfig& c = model.config();
    if (!c.causal) throw std::invalid_argument("CachedDecoder: a key/value cache needs a causal model");
    // step() adds the learned position row itself (p.pos): a sinusoidal or
    // RoPE model has none.
    if (c.position != PositionEncoding::learned)
      throw std::invalid_argument(fmt::format("CachedDecoder: only a model with a learned position table, not {}",
                                              position_name(c.position)));
    if (capacity > c.max_seq)
      throw std::invalid_argument(
          fmt::format("CachedDecoder: {} tokens, but the model knows {} positions", capacity, c.max_seq));
    caches_.assign(size_t(c.n_layers * c.n_heads), KVCache(capacity, c.d_k(), c.d_k()));
  }

  int64_t size() const { return caches_.front().size; }

  // The logits (1, vocab) after token `id` at the next position: one row
  // through every block, attending over the cache.
  RowVector step(int64_t id) {
    const ModelConfig& c = model_.config();
    const Params& p = model_.params;
    const int64_t pos = size(), d = c.d_model, d_k = c.d_k();
    if (id < 0 || id >= c.vocab) throw std::out_of_range(fmt::format("CachedDecoder: token id {} outside [0, {})", id, c.vocab));
    Matrix x = p.tok.row(id) + p.pos.row(pos);  // (1, d), as embedding_forward
    Matrix a(1, d), qkv(1, 3 * d), att(1, d), x_mid(1, d), m(1, d), h(1, c.d_ff), g(1, c.d_ff), x_out(1, d);
    LayerNormCache ln(1, d);
    for (int64_t l = 0; l < c.n_layers; ++l) {
      const BlockParams& b = p.blocks[size_t(l)];
      layernorm_forward(x, b.ln1, a, ln);
      linear_forward(a, b.qkv, qkv);
      for (int64_t head = 0; head < c.n_heads; ++head) {
        // QKV's columns are [Q | K | V], each split into heads of d_k.
        KVCache& cache = caches_[size_t(l * c.n_heads + head)];
        kv_append(cache, qkv.block(0, d + head * d_k, 1, d_k), qkv.block(0, 2 * d + head * d_k, 1, d_k));
        att.block(0, head * d_k, 1, d_k) = kv_attend(cache, qkv.block(0, head * d_k, 1, d_k));
      }
      linear_forward(att, b.W_o, x_mid);
      x_mid += x;
      layernorm_forward(x_mid, b.ln2, m, ln);
      linear_forward(m, b.fc1, h);
      gelu_forward(h, g);
      linear_forward(g, b.fc2, x_out);
      x = x_out + x_mid;
    }
    Matrix y(1, d), logits(1, c.vocab);
    layernorm_forward(x, p.ln_f, y, ln);
    linear_forward(y, p.head, logits);
    return logits;
  }

 private:
  const TinyTransformer& model_;
  std::vector<KVCache> caches_;
};

inline int64_t argmax(const RowVector& v) {
  Eigen::Index i = 0;
  v.maxCoeff(&i);
  return int64_t(i);
}

// Greedy generation: `prompt` then `new_tokens` more, each the most likely
// next token. Returns every token (prompt included).
inline std::vector<int64_t> generate_from_scratch(TinyTransformer& model, std::vector<int64_t> tokens,
                                                  int64_t new_tokens) {
  for (int64_t t = 0; t < new_tokens; ++t) {
    const Matrix& logits = model.forward(tokens, 1);
    tokens.push_back(argmax(logits.row(logits.rows() - 1)));
    model.forget_workspaces();  // the next step has another length
  }
  return tokens;
}

inline std::vector<int64_t> generate_with_cache(const TinyTransformer& model, std::vector<int64_t> tokens,
                                                int64_t new_tokens) {
  if (new_tokens == 0) return tokens;
  // The last new token is only read off the logits, never fed back in.
  CachedDecoder decoder(model, int64_t(tokens.size()) + new_tokens - 1);
  RowVector logits;
  for (int64_t id : tokens) logits = decoder.step(id);  // the prompt fills the cache
  for (int64_t t = 0; t < new_tokens; ++t) {
    tokens.push_back(argmax(logits));
    if (t + 1 < new_tokens) logits = decoder.step(tokens.back());
  }
  return tokens;
}

}  // namespace sa
