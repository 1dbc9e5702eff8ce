// Chapter 7: the tiny transformer of the reversal task, assembled from the
// layers of training.hpp, and the Adam optimizer over all its parameters.
//
//   ids ─ token + position embedding ─ x     (or RoPE: no table, Q and K rotated in each block)
//   n_layers pre-norm blocks:
//     x = x + W_o · attention(LayerNorm1(x) [W_q | W_k | W_v])   (n_heads; causal by default)
//     x = x + W2 · GELU(W1 · LayerNorm2(x) + b1) + b2            (d_ff = 4 d_model)
//   final LayerNorm ─ linear head ─ logits over the vocabulary
//
// The parameters are drawn from sa::Generator in the order the PyTorch twin
// (tests/reference/ch07_training.py, the source material's reversal model) creates them, so
// one seed gives the same initial weights in both.
//
// Header-only because both tracks use it: the chapter program links either
// the solutions or your exercises, and this plumbing is neither.
#pragma once

#include "01-qkv-projection/qkv.hpp"
#include "05-causal-mask/mask.hpp"
#include "07-training/rope.hpp"
#include "07-training/training.hpp"

#include "sa/nn.hpp"
#include "sa/rng.hpp"
#include "sa/tensor.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace sa {

// How the model learns where a token is (step "Three ways to say where a
// token is"):
//   learned     a trained row per position added to the token's embedding
//               (GPT-2, the source material's model; the default);
//   sinusoidal  chapter 1's fixed sines and cosines added instead: nothing
//               learned, nothing drawn (the original Transformer);
//   rope        no table: Q and K are rotated by their position in every
//               block (rope.hpp; LLaMA, GPT-NeoX).
enum class PositionEncoding { learned, sinusoidal, rope };

inline const char* position_name(PositionEncoding e) {
  switch (e) {
    case PositionEncoding::learned: return "learned";
    case PositionEncoding::sinusoidal: return "sinusoidal";
    case PositionEncoding::rope: return "rope";
  }
  return "?";
}

struct ModelConfig {
  int64_t vocab = 16;
  int64_t max_seq = 13;  // rows of the position table: the seed's max_seq_len = 2 * 6 + 1
  int64_t d_model = 32;
  int64_t n_heads = 4;
  int64_t n_layers = 2;
  int64_t d_ff = 128;    // 4 * d_model
  // true: chapter 5's causal mask, query i sees keys 0..i (a language
  // model, and the reversal task). false: every query sees every key
  // (bidirectional, like an encoder); with a next-token loss that lets
  // position i read its own target at i + 1 (task 2 shows what happens).
  bool causal = true;
  // With causal: 0 = every earlier key; w > 0 = only the last w keys,
  // i - w + 1 .. i (local attention, chapter 8 compares it on the reversal
  // task). Checkpoints always hold 0.
  int64_t window = 0;
  // Only learned has a position table among the parameters (and only a
  // learned model can be saved as a checkpoint); max_seq still bounds the
  // sequence length of all three.
  PositionEncoding position = PositionEncoding::learned;

  int64_t d_k() const { return d_model / n_heads; }
  void validate() const {
    if (vocab < 1 || max_seq < 1 || d_model < 1 || n_heads < 1 || n_layers < 1 || d_ff < 1)
      throw std::invalid_argument("ModelConfig: every size must be at least 1");
    if (window < 0 || (window > 0 && !causal))
      throw std::invalid_argument("ModelConfig: a window needs a causal model and must be at least 1 (0: none)");
    if (d_model % n_heads != 0)
      throw std::invalid_argument(
          fmt::format("d_model {} is not divisible by {} heads: every head gets d_model / n_heads columns", d_model,
                      n_heads));
    if (position == PositionEncoding::rope && d_k() % 2 != 0)
      throw std::invalid_argument(
          fmt::format("ModelConfig: RoPE rotates pairs of features, but d_k = {} / {} = {} is odd", d_model, n_heads,
                      d_k()));
  }
};

struct BlockParams {
  LayerNorm ln1;
  Linear qkv;  // W (d, 3d) = [W_q | W_k | W_v], no bias (the seed's attention has none)
  Linear W_o;  // (d, d), no bias
  LayerNorm ln2;
  Linear fc1;  // (d, d_ff), with bias
  Linear fc2;  // (d_ff, d), with bias
};

struct Params {
  Matrix tok;  // (vocab, d)   nn.Embedding
  Matrix pos;  // (max_seq, d) nn.Embedding, a learned row per position; empty (0, 0) unless learned
  std::vector<BlockParams> blocks;
  LayerNorm ln_f;
  Linear head;  // (d, vocab), with bias
};

// Every parameter tensor, with its name, in the order PyTorch's
// model.parameters() lists the twin's (W_q, W_k, W_v travel together as
// qkv.W). f(name, span) may read or write the values.
template <class ParamsT, class F>
void for_each_tensor(ParamsT& p, F&& f) {
  auto visit = [&](const std::string& name, auto& m) { f(name, std::span(m.data(), size_t(m.size()))); };
  auto visit_linear = [&](const std::string& name, auto& layer) {
    visit(name + ".W", layer.W);
    if (layer.b) visit(name + ".b", *layer.b);
  };
  auto visit_norm = [&](const std::string& name, auto& ln) {
    visit(name + ".gamma", ln.gamma);
    visit(name + ".beta", ln.beta);
  };
  visit("tok", p.tok);
  if (p.pos.size() != 0) visit("pos", p.pos);  // sinusoidal and RoPE models have no table
  for (size_t l = 0; l < p.blocks.size(); ++l) {
    auto& blk = p.blocks[l];
    const std::string prefix = fmt::format("blocks.{}.", l);
    visit_linear(prefix + "qkv", blk.qkv);
    visit_linear(prefix + "W_o", blk.W_o);
    visit_norm(prefix + "ln1", blk.ln1);
    visit_norm(prefix + "ln2", blk.ln2);
    visit_linear(prefix + "fc1", blk.fc1);
    visit_linear(prefix + "fc2", blk.fc2);
  }
  visit_norm("ln_f", p.ln_f);
  visit_linear("head", p.head);
}

// The shape of every tensor, in for_each_tensor's order, in the book's
// layout: a Linear's W is (d_in, d_out), a bias or LayerNorm vector (d,).
inline std::vector<Shape> tensor_shapes(const Params& p) {
  std::vector<Shape> shapes;
  auto add = [&](const auto& m) {
    shapes.push_back(m.rows() == 1 ? Shape{m.cols()} : Shape{m.rows(), m.cols()});
  };
  auto add_linear = [&](const Linear& l) {
    add(l.W);
    if (l.b) add(*l.b);
  };
  add(p.tok);
  if (p.pos.size() != 0) add(p.pos);
  for (const BlockParams& b : p.blocks) {
    add_linear(b.qkv);
    add_linear(b.W_o);
    add(b.ln1.gamma);
    add(b.ln1.beta);
    add(b.ln2.gamma);
    add(b.ln2.beta);
    add_linear(b.fc1);
    add_linear(b.fc2);
  }
  add(p.ln_f.gamma);
  add(p.ln_f.beta);
  add_linear(p.head);
  return shapes;
}

inline int64_t parameter_count(const Params& p) {
  int64_t n = 0;
  for_each_tensor(p, [&](const std::string&, std::span<const float> t) { n += int64_t(t.size()); });
  return n;
}

// Same shapes, all zeros: gradients and Adam's moments.
inline Params zeros_like(const Params& p) {
  Params z = p;
  for_each_tensor(z, [](const std::string&, std::span<float> t) { std::fill(t.begin(), t.end(), 0.0f); });
  return z;
}

// The seed's attention draws W_q, W_k, W_v as torch.randn(d_model, n_heads,
// d_k) * 0.02 and W_o as torch.randn(n_heads, d_k, d_model) * 0.02: as
// contiguous memory those are (d, d) matrices whose column (or row) h d_k + j
// belongs to head h, exactly the layout attention_forward reads.
inline Matrix attention_weight(Generator& gen, int64_t d_model) {
  Matrix W = gen.randn(d_model, d_model);
  W *= 0.02f;  // float32 times 0.02f, as PyTorch multiplies a float tensor by a Python float
  return W;
}

// The draws happen in the twin's __init__ order: token table, position
// table (a learned model only: the others have none), then per block W_q,
// W_k, W_v, W_o (LayerNorms draw nothing), the two feed-forward Linears, and
// finally the head.
inline Params init_params(Generator& gen, const ModelConfig& cfg) {
  cfg.validate();
  const int64_t d = cfg.d_model;
  Params p;
  p.tok = make_embedding(gen, cfg.vocab, d);
  if (cfg.position == PositionEncoding::learned) p.pos = make_embedding(gen, cfg.max_seq, d);
  for (int64_t l = 0; l < cfg.n_layers; ++l) {
    BlockParams blk;
    blk.qkv.W.resize(d, 3 * d);
    for (int64_t part = 0; part < 3; ++part) blk.qkv.W.middleCols(part * d, d) = attention_weight(gen, d);
    blk.W_o.W = attention_weight(gen, d);
    blk.ln1 = make_layernorm(d);
    blk.ln2 = make_layernorm(d);
    blk.fc1 = make_linear(gen, d, cfg.d_ff);
    blk.fc2 = make_linear(gen, cfg.d_ff, d);
    p.blocks.push_back(std::move(blk));
  }
  p.ln_f = make_layernorm(d);
  p.head = make_linear(gen, d, cfg.vocab);
  return p;
}

// Rows [first, seq) of every sequence of a (batch * seq, cols) matrix,
// packed into (batch * (seq - first), cols), and back.
inline void gather_rows(const Matrix& src, int64_t seq, int64_t first, Matrix& dst) {
  const int64_t kept = seq - first, batch = src.rows() / seq;
  for (int64_t b = 0; b < batch; ++b) dst.middleRows(b * kept, kept) = src.middleRows(b * seq + first, kept);
}
inline void add_scattered_rows(const Matrix& src, int64_t seq, int64_t first, Matrix& dst) {
  const int64_t kept = seq - first, batch = dst.rows() / seq;
  for (int64_t b = 0; b < batch; ++b) dst.middleRows(b * seq + first, kept) += src.middleRows(b * kept, kept);
}

// What the forward keeps for the backward, for one block. `rows` is
// batch * seq, except after the attention of the last block (see Workspace).
struct BlockCache {
  LayerNormCache ln1;
  Matrix a;          // LayerNorm1(x), (batch * seq, d)
  Matrix qkv;        // a [W_q | W_k | W_v], (batch * seq, 3d)
  Matrix scores, P;  // (batch * n_heads * seq, seq); scores is only a work buffer
  AttentionDropout dropout;  // training only: its p, and P_drop and keep when p > 0
  Matrix att;        // attention output, heads side by side, (batch * seq, d)
  Matrix att_kept;   // last block only: the rows of att that are kept, (rows, d)
  Matrix x_kept;     // last block only: the same rows of the block's input, (rows, d)
  Matrix x_mid;      // x + att W_o, (rows, d)
  LayerNormCache ln2;
  Matrix m;          // LayerNorm2(x_mid), (rows, d)
  Matrix h, g;       // h = m W1 + b1 and g = GELU(h), (rows, d_ff)
  Matrix Phi;        // Φ(h), GELU's cache for its backward, (rows, d_ff)
  Matrix x_out;      // x_mid + g W2 + b2, (rows, d)
};

// Gradients of the activations for one row count, reused block after block.
struct ActivationGrads {
  Matrix d_x;    // the residual stream
  Matrix d_ln, d_m, d_att;
  Matrix d_h, d_g;
  ActivationGrads(int64_t rows, const ModelConfig& cfg)
      : d_x(rows, cfg.d_model), d_ln(rows, cfg.d_model), d_m(rows, cfg.d_model), d_att(rows, cfg.d_model),
        d_h(rows, cfg.d_ff), d_g(rows, cfg.d_ff) {}
};

// Every buffer of a forward and backward for one (batch, seq, first),
// allocated once: a training step then writes into them and allocates
// nothing of its own. (Counted: 8 heap allocations a step remain, none of
// them ours: the 4 matrices returned by chapter 3's softmax_rows and
// softmax_backward, reused as they are, and 4 packing buffers Eigen takes
// for its largest products.)
//
// `first`: only positions first .. seq-1 of each sequence get logits. Every
// block needs all positions up to its attention (a later query reads every
// earlier key and value), but after the last block's attention a position
// only reaches its own logits. So the rest of the last block, the final
// LayerNorm and the head run on batch * (seq - first) rows. Training uses
// first = the first position that has a target (the reversed half: half
// the rows), which saves about an eighth of a step and changes no number
// that reaches the loss.
struct Workspace {
  int64_t batch = 0, seq = 0, first = 0;
  Mask mask;  // chapter 5's causal mask, or all true when the model is bidirectional, (seq, seq)
  std::vector<int64_t> ids;
  Matrix x0;  // embeddings, (batch * seq, d)
  std::vector<BlockCache> blocks;
  LayerNormCache ln_f;
  Matrix y;       // final LayerNorm, (kept rows, d)
  Matrix logits;  // (kept rows, vocab)
  Matrix probs;   // cross-entropy's cache
  std::vector<int64_t> targets;  // of the kept rows
  Matrix d_logits;
  Matrix d_qkv;                 // (batch * seq, 3d)
  Matrix d_P;                   // attention_backward's work buffer, like P
  ActivationGrads all, kept;    // batch * seq rows, and the kept rows

  int64_t rows() const { return batch * seq; }
  int64_t kept_rows() const { return batch * (seq - first); }

  Workspace(const ModelConfig& cfg, int64_t batch_, int64_t seq_, int64_t first_)
      : batch(batch_), seq(seq_), first(first_), all(batch_ * seq_, cfg), kept(batch_ * (seq_ - first_), cfg) {
    const int64_t d = cfg.d_model, weights_rows = batch * cfg.n_heads * seq;
    mask = cfg.causal ? causal_mask(seq) : Mask::Constant(seq, seq, true);
    for (int64_t i = 0; cfg.window > 0 && i < seq; ++i)  // local attention: hide keys before i - window + 1
      mask.row(i).head(std::max<int64_t>(0, i - cfg.window + 1)).setConstant(false);
    ids.reserve(size_t(rows()));
    x0.resize(rows(), d);
    for (int64_t l = 0; l < cfg.n_layers; ++l) {
      const bool last = l == cfg.n_layers - 1;
      const int64_t r = last ? kept_rows() : rows();
      BlockCache c;
      c.ln1 = LayerNormCache(rows(), d);
      c.a.resize(rows(), d);
      c.qkv.resize(rows(), 3 * d);
      c.scores.resize(weights_rows, seq);
      c.P.resize(weights_rows, seq);
      c.att.resize(rows(), d);
      if (last) {
        c.att_kept.resize(r, d);
        c.x_kept.resize(r, d);
      }
      c.x_mid.resize(r, d);
      c.ln2 = LayerNormCache(r, d);
      c.m.resize(r, d);
      c.h.resize(r, cfg.d_ff);
      c.g.resize(r, cfg.d_ff);
      c.Phi.resize(r, cfg.d_ff);
      c.x_out.resize(r, d);
      blocks.push_back(std::move(c));
    }
    ln_f = LayerNormCache(kept_rows(), d);
    y.resize(kept_rows(), d);
    logits.resize(kept_rows(), cfg.vocab);
    probs.resize(kept_rows(), cfg.vocab);
    targets.reserve(size_t(kept_rows()));
    d_logits.resize(kept_rows(), cfg.vocab);
    d_qkv.resize(rows(), 3 * d);
    d_P.resize(weights_rows, seq);
  }
};

// Attention dropout in a training step: probability p (0: off), drawn
// from gen, which training shares with the batch order as PyTorch's global
// generator is shared.
struct DropoutSetting {
  double p = 0;
  Generator* gen = nullptr;
};

class TinyTransformer {
 public:
  TinyTransformer(const ModelConfig& cfg, Generator& gen)
      : params(init_params(gen, cfg)), grads(zeros_like(params)), cfg_(cfg) {
    // Without a learned table the embedding adds fixed rows instead:
    // chapter 1's sinusoids, or zeros for RoPE (its positions enter in the
    // attention, not here).
    if (cfg.position == PositionEncoding::sinusoidal) fixed_pos_ = positional_encoding(cfg.max_seq, cfg.d_model);
    if (cfg.position == PositionEncoding::rope) fixed_pos_ = Matrix::Zero(cfg.max_seq, cfg.d_model);
    d_fixed_pos_.resize(fixed_pos_.rows(), fixed_pos_.cols());
  }

  const ModelConfig& config() const { return cfg_; }

  // Logits (batch * seq, vocab) of every position of `batch` sequences of
  // ids.size() / batch tokens each. Keeps every cache for backward().
  // Evaluation: no dropout.
  const Matrix& forward(const std::vector<int64_t>& ids, int64_t batch) { return run_forward(ids, batch, 0, {}); }

  // After forward(): the mean cross-entropy of its logits against one
  // target per position; rows whose target is kIgnore do not count.
  float loss(const std::vector<int64_t>& targets) {
    Workspace& w = current();
    if (w.first != 0) throw std::logic_error("loss: the last forward was forward_loss(); it has its loss already");
    w.targets.assign(targets.begin(), targets.end());
    return cross_entropy_forward(w.logits, w.targets, w.probs);
  }

  // The training forward: forward and loss in one, computing only what the
  // loss needs (positions before the first one with a target skip the end
  // of the last block, see Workspace). Same loss and gradients as
  // forward() + loss().
  // `dropout`: chapter 6's attention dropout, in every block, drawn from
  // dropout.gen (PyTorch's model.train() with dropout on the weights). Only
  // this training forward drops: forward() is evaluation and never does,
  // so a model is evaluated with dropout off without anyone switching it.
  float forward_loss(const std::vector<int64_t>& ids, int64_t batch, const std::vector<int64_t>& targets,
                     const DropoutSetting& dropout = {}) {
    if (targets.size() != ids.size())
      throw std::invalid_argument(fmt::format("forward_loss: {} targets for {} ids", targets.size(), ids.size()));
    if (batch < 1 || ids.empty() || int64_t(ids.size()) % batch != 0)
      throw std::invalid_argument(fmt::format("forward_loss: {} ids do not make {} sequences", ids.size(), batch));
    const int64_t seq = int64_t(ids.size()) / batch;
    int64_t first = seq;
    for (size_t r = 0; r < targets.size(); ++r)
      if (targets[r] != kIgnore) first = std::min(first, int64_t(r % size_t(seq)));
    if (first == seq) throw std::invalid_argument("forward_loss: every target is kIgnore; nothing to learn from");
    if (!(dropout.p >= 0 && dropout.p < 1) || (dropout.p > 0 && !dropout.gen))
      throw std::invalid_argument(
          fmt::format("forward_loss: attention dropout p must be in [0, 1) with a generator, got {}", dropout.p));
    run_forward(ids, batch, first, dropout);
    Workspace& w = current();
    w.targets.clear();
    for (int64_t b = 0; b < batch; ++b)
      w.targets.insert(w.targets.end(), targets.begin() + b * seq + first, targets.begin() + (b + 1) * seq);
    return cross_entropy_forward(w.logits, w.targets, w.probs);
  }

  // The last forward's logits and, after a loss, the targets of their rows
  // (all positions after forward(); positions first .. seq-1 of every
  // sequence after forward_loss()).
  const Matrix& logits() const { return current_->logits; }

  // Frees the buffers every forward keeps per (batch, seq_len) for reuse.
  // Generation from scratch (chapter 8) runs one new seq_len per token, and
  // keeping all of them would hold O(seq_len³) floats.
  void forget_workspaces() {
    workspaces_.clear();
    current_ = nullptr;
  }
  const std::vector<int64_t>& loss_targets() const { return current_->targets; }

  // After loss() or forward_loss(): the gradient of that loss with respect
  // to every parameter, into `grads`. The forward's order, reversed.
  void backward() {
    Workspace& w = current();
    if (w.targets.size() != size_t(w.logits.rows())) throw std::logic_error("backward: compute a loss first");
    // The logits exist only for the kept rows (positions first .. seq-1 of
    // each sequence, see Workspace), so the backward starts on those rows
    // and widens to all rows at the last block's attention.
    ActivationGrads& kept_grads = w.kept;
    cross_entropy_backward(w.probs, w.targets, w.d_logits);
    linear_backward(w.y, params.head, w.d_logits, kept_grads.d_m, grads.head);
    // d_x is the gradient of the residual stream, carried down the blocks.
    layernorm_backward(kept_grads.d_m, w.ln_f, params.ln_f, kept_grads.d_x, grads.ln_f);
    for (int64_t l = cfg_.n_layers - 1; l >= 0; --l) {
      const bool last = l == cfg_.n_layers - 1;
      const BlockParams& block = params.blocks[size_t(l)];
      BlockParams& block_grads = grads.blocks[size_t(l)];
      BlockCache& cache = w.blocks[size_t(l)];
      // The rows after the attention: only the kept ones in the last block
      // (nothing after it reads the others), every row before it.
      ActivationGrads& after_att = last ? w.kept : w.all;
      // x_out = x_mid + FFN(x_mid): the identity passes d_x through, the
      // feed-forward branch adds its part.
      linear_backward(cache.g, block.fc2, after_att.d_x, after_att.d_g, block_grads.fc2);
      gelu_backward(cache.h, cache.Phi, after_att.d_g, after_att.d_h);
      linear_backward(cache.m, block.fc1, after_att.d_h, after_att.d_m, block_grads.fc1);
      layernorm_backward(after_att.d_m, cache.ln2, block.ln2, after_att.d_ln, block_grads.ln2);
      after_att.d_x += after_att.d_ln;  // now the gradient of x_mid
      // x_mid = x_in + W_o · attention(...): the same again.
      linear_backward(last ? cache.att_kept : cache.att, block.W_o, after_att.d_x, after_att.d_att, block_grads.W_o);
      if (last) {  // every row enters the attention; the rows that were not kept got no gradient
        w.all.d_att.setZero();
        add_scattered_rows(after_att.d_att, w.seq, w.first, w.all.d_att);
      }
      attention_backward(cache.qkv, cache.P, w.all.d_att, w.batch, cfg_.n_heads, w.d_P, w.d_qkv, &cache.dropout);
      if (cfg_.position == PositionEncoding::rope) rope_backward(w.d_qkv, w.batch, cfg_.n_heads);  // un-rotate dQ, dK
      linear_backward(cache.a, block.qkv, w.d_qkv, w.all.d_m, block_grads.qkv);
      layernorm_backward(w.all.d_m, cache.ln1, block.ln1, w.all.d_ln, block_grads.ln1);
      if (last) {  // the gradient of x_in: the identity path (kept rows) plus the attention branch
        w.all.d_x = w.all.d_ln;
        add_scattered_rows(after_att.d_x, w.seq, w.first, w.all.d_x);
      } else {
        w.all.d_x += w.all.d_ln;
      }
    }
    // (A fixed table's gradient is computed and dropped: nothing learns it.)
    embedding_backward(w.ids, w.seq, w.all.d_x, grads.tok, learned_pos() ? grads.pos : d_fixed_pos_);
  }

  // The attention weights of layer `layer` in the last forward:
  // (batch * n_heads * seq, seq), see attention_forward. Always every
  // position, whatever forward computed.
  const Matrix& weights(int64_t layer) const { return current_->blocks.at(size_t(layer)).P; }
  const Workspace& workspace() const { return *current_; }

  Params params;
  Params grads;

 private:
  const Matrix& run_forward(const std::vector<int64_t>& ids, int64_t batch, int64_t first,
                            const DropoutSetting& dropout) {
    if (batch < 1 || ids.empty() || int64_t(ids.size()) % batch != 0)
      throw std::invalid_argument(fmt::format("forward: {} ids do not make {} sequences", ids.size(), batch));
    Workspace& w = workspace_for(batch, int64_t(ids.size()) / batch, first);
    w.ids.assign(ids.begin(), ids.end());
    w.targets.clear();
    embedding_forward(w.ids, w.seq, params.tok, learned_pos() ? params.pos : fixed_pos_, w.x0);
    const Matrix* x = &w.x0;
    for (int64_t l = 0; l < cfg_.n_layers; ++l) {
      const bool last = l == cfg_.n_layers - 1;
      const BlockParams& block = params.blocks[size_t(l)];
      BlockCache& cache = w.blocks[size_t(l)];
      // x_mid = x + W_o · attention(LayerNorm1(x))
      layernorm_forward(*x, block.ln1, cache.a, cache.ln1);
      linear_forward(cache.a, block.qkv, cache.qkv);
      if (cfg_.position == PositionEncoding::rope) rope_forward(cache.qkv, batch, cfg_.n_heads);  // Q, K by position
      cache.dropout.p = dropout.p;  // set every forward: an evaluation after training drops nothing
      cache.dropout.gen = dropout.gen;
      attention_forward(cache.qkv, batch, cfg_.n_heads, w.mask, cache.scores, cache.P, cache.att, &cache.dropout);
      if (last) {  // from here on, only the kept rows: nothing after the last attention mixes positions
        gather_rows(cache.att, w.seq, w.first, cache.att_kept);
        gather_rows(*x, w.seq, w.first, cache.x_kept);
      }
      linear_forward(last ? cache.att_kept : cache.att, block.W_o, cache.x_mid);
      cache.x_mid += last ? cache.x_kept : *x;
      // x_out = x_mid + W2 · GELU(W1 · LayerNorm2(x_mid) + b1) + b2
      layernorm_forward(cache.x_mid, block.ln2, cache.m, cache.ln2);
      linear_forward(cache.m, block.fc1, cache.h);
      gelu_forward(cache.h, cache.g, cache.Phi);
      linear_forward(cache.g, block.fc2, cache.x_out);
      cache.x_out += cache.x_mid;
      x = &cache.x_out;
    }
    layernorm_forward(*x, params.ln_f, w.y, w.ln_f);
    linear_forward(w.y, params.head, w.logits);
    return w.logits;
  }

  bool learned_pos() const { return cfg_.position == PositionEncoding::learned; }
  Workspace& current() {
    if (!current_) throw std::logic_error("TinyTransformer: call forward() first");
    return *current_;
  }
  Workspace& workspace_for(int64_t batch, int64_t seq, int64_t first) {
    if (seq > cfg_.max_seq)
      throw std::invalid_argument(fmt::format("forward: {} tokens, but the model knows {} positions", seq, cfg_.max_seq));
    auto& slot = workspaces_[{batch, seq, first}];
    if (!slot) slot = std::make_unique<Workspace>(cfg_, batch, seq, first);
    current_ = slot.get();
    return *slot;
  }

  ModelConfig cfg_;
  Matrix fixed_pos_, d_fixed_pos_;  // without a learned table: the rows added, and a gradient nobody reads
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::unique_ptr<Workspace>> workspaces_;
  Workspace* current_ = nullptr;
};

// Adam over every tensor of the model: one adam_step per tensor, with the
// moments m and v kept in two more copies of the parameters' shapes.
class Adam {
 public:
  Adam(Params& params, const Params& grads, const AdamConfig& cfg)
      : cfg_(cfg), m_(zeros_like(params)), v_(zeros_like(params)) {
    for_each_tensor(params, [&](const std::string&, std::span<float> t) { params_.push_back(t); });
    for_each_tensor(grads, [&](const std::string&, std::span<const float> t) { grads_.push_back(t); });
    for_each_tensor(m_, [&](const std::string&, std::span<float> t) { m_spans_.push_back(t); });
    for_each_tensor(v_, [&](const std::string&, std::span<float> t) { v_spans_.push_back(t); });
  }
  Adam(const Adam&) = delete;  // holds spans into its own members
  Adam& operator=(const Adam&) = delete;

  void step() {
    ++t_;
    for (size_t k = 0; k < params_.size(); ++k) adam_step(params_[k], grads_[k], m_spans_[k], v_spans_[k], t_, cfg_);
  }
  int64_t steps() const { return t_; }
  const AdamConfig& config() const { return cfg_; }

 private:
  AdamConfig cfg_;
  Params m_, v_;
  std::vector<std::span<float>> params_, m_spans_, v_spans_;
  std::vector<std::span<const float>> grads_;
  int64_t t_ = 0;
};

// Rows whose largest logit is the target, among the counted rows (ties go
// to the first maximum, like torch.argmax).
inline int64_t count_correct(const Matrix& logits, const std::vector<int64_t>& targets) {
  int64_t correct = 0;
  for (int64_t i = 0; i < logits.rows(); ++i) {
    const int64_t t = targets[size_t(i)];
    if (t == kIgnore) continue;
    Eigen::Index best = 0;
    logits.row(i).maxCoeff(&best);
    if (best == t) ++correct;
  }
  return correct;
}

struct StepStats {
  float loss = 0;
  int64_t correct = 0;  // predictions right before this step's update
  int64_t counted = 0;
};

// One training step: forward and loss (with attention dropout if given),
// backward, Adam.
inline StepStats train_step(TinyTransformer& model, Adam& adam, const std::vector<int64_t>& ids,
                            const std::vector<int64_t>& targets, int64_t batch, const DropoutSetting& dropout = {}) {
  StepStats s;
  s.loss = model.forward_loss(ids, batch, targets, dropout);
  s.correct = count_correct(model.logits(), model.loss_targets());
  for (int64_t t : model.loss_targets()) s.counted += t != kIgnore;
  model.backward();
  adam.step();
  return s;
}

}  // namespace sa
