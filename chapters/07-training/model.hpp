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
// (tests/reference/ch07_training.py) creates them, so
// one seed gives the same initial weights in both.
//
// The bodies are in model.cpp, compiled once into both tracks: the chapter
// program links either the solutions or your exercises, and this plumbing
// is neither.
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
//               (GPT-2's choice; the default);
//   sinusoidal  chapter 1's fixed sines and cosines added instead: nothing
//               learned, nothing drawn (the original Transformer);
//   rope        no table: Q and K are rotated by their position in every
//               block (rope.hpp; LLaMA, GPT-NeoX).
enum class PositionEncoding { learned, sinusoidal, rope };

const char* position_name(PositionEncoding e);

struct ModelConfig {
  int64_t vocab = 16;
  int64_t max_seq = 13;  // rows of the position table: the reversal task's 2 * 6 + 1 tokens
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
  // Refuses (std::invalid_argument) a size below 1, a window without a
  // causal mask, d_model not divisible by n_heads, and RoPE with an odd d_k.
  void validate() const;
};

struct BlockParams {
  LayerNorm ln1;
  Linear qkv;  // W (d, 3d) = [W_q | W_k | W_v], no bias (the twin's attention has none)
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

// ===========================================================================
// The parameter table: every tensor of the model, its name and how it
// starts, in the order PyTorch's model.parameters() lists the twin's
// (W_q, W_k, W_v travel together as qkv.W). Everything that walks over the
// parameters reads this one list: the initialisation (whose draws happen in
// this order, the twin's __init__ order: LayerNorms draw nothing), Adam,
// the parameter count, and the checkpoint's tensor names and shapes.
// ===========================================================================

// How a tensor starts, as the twin's nn.Module defaults start it.
struct TensorInit {
  enum Kind {
    normal,       // nn.Embedding: N(0, 1)
    attention,    // torch.randn(d, d) * 0.02 per part: W_q, W_k, W_v side by side (3 parts), or W_o (1)
    linear_W,     // nn.Linear's weight: U(-1/√fan_in, 1/√fan_in), drawn in PyTorch's (d_out, d_in) order
    linear_b,     // nn.Linear's bias: U(-1/√fan_in, 1/√fan_in)
    ones,         // LayerNorm's gamma: draws nothing
    zeros,        // LayerNorm's beta: draws nothing
  } kind;
  int64_t fan_in = 0;  // linear_W and linear_b: the layer's d_in
  int64_t parts = 1;   // attention: how many (d, d) draws sit side by side
};

// f(name, tensor, init) for every tensor in the table's order; tensor is
// a Matrix or a RowVector of p (const when p is), which f may read or write.
template <class ParamsT, class F>
void visit_parameters(ParamsT& p, F&& f) {
  auto linear = [&](const std::string& name, auto& layer) {
    f(name + ".W", layer.W, TensorInit{TensorInit::linear_W, layer.W.rows()});
    if (layer.b) f(name + ".b", *layer.b, TensorInit{TensorInit::linear_b, layer.W.rows()});
  };
  auto norm = [&](const std::string& name, auto& ln) {
    f(name + ".gamma", ln.gamma, TensorInit{TensorInit::ones});
    f(name + ".beta", ln.beta, TensorInit{TensorInit::zeros});
  };
  f("tok", p.tok, TensorInit{TensorInit::normal});
  if (p.pos.size() != 0) f("pos", p.pos, TensorInit{TensorInit::normal});  // sinusoidal and RoPE models have no table
  for (size_t l = 0; l < p.blocks.size(); ++l) {
    auto& block = p.blocks[l];
    const std::string prefix = fmt::format("blocks.{}.", l);
    f(prefix + "qkv.W", block.qkv.W, TensorInit{TensorInit::attention, 0, 3});
    f(prefix + "W_o.W", block.W_o.W, TensorInit{TensorInit::attention, 0, 1});
    norm(prefix + "ln1", block.ln1);
    norm(prefix + "ln2", block.ln2);
    linear(prefix + "fc1", block.fc1);
    linear(prefix + "fc2", block.fc2);
  }
  norm("ln_f", p.ln_f);
  linear("head", p.head);
}

// The same walk, each tensor as a flat span of its values.
template <class ParamsT, class F>
void for_each_tensor(ParamsT& p, F&& f) {
  visit_parameters(p, [&](const std::string& name, auto& t, const TensorInit&) {
    f(name, std::span(t.data(), size_t(t.size())));
  });
}

// Every tensor allocated for `cfg`, uninitialised: the one place that says
// how big each one is (the attention weights carry no bias, as in the twin).
Params shaped_params(const ModelConfig& cfg);

// One pre-norm block's tensors, shaped and unset: ln1, qkv (d_model x
// 3 d_model, no bias), W_o (no bias), ln2, fc1 and fc2 (with biases).
// Chapter 9's GPT stacks the same blocks.
BlockParams shaped_block(int64_t d_model, int64_t d_ff);

// The shape of every tensor, in the table's order, in the book's layout: a
// Linear's W is (d_in, d_out), a bias or LayerNorm vector (d,).
std::vector<Shape> tensor_shapes(const Params& p);

int64_t parameter_count(const Params& p);

// How many parameters `cfg` implies, from the sizes alone and without
// allocating anything (a checkpoint's header is checked with it before any
// tensor is read), in 64-bit arithmetic: with every size at most 2^20 it
// stays below 2^63. The suites check it against parameter_count.
uint64_t expected_parameter_count(const ModelConfig& cfg);

// Same shapes, all zeros: gradients and Adam's moments.
Params zeros_like(const Params& p);

// shaped_params, then every tensor drawn from gen by its TensorInit, in
// the table's order.
Params init_params(Generator& gen, const ModelConfig& cfg);

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
  Matrix dgelu;      // GELU'(h), GELU's cache for its backward, (rows, d_ff)
  Matrix x_out;      // x_mid + g W2 + b2, (rows, d)
};

// Gradients of the activations for one row count, reused block after block.
struct ActivationGrads {
  Matrix d_x;    // the residual stream
  Matrix d_ln, d_m, d_att;
  Matrix d_h, d_g;
  ActivationGrads(int64_t rows, const ModelConfig& cfg);
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

  Workspace(const ModelConfig& cfg, int64_t batch_, int64_t seq_, int64_t first_);
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
  TinyTransformer(const ModelConfig& cfg, Generator& gen);

  const ModelConfig& config() const { return cfg_; }

  // Logits (batch * seq, vocab) of every position of `batch` sequences of
  // ids.size() / batch tokens each. Keeps every cache for backward().
  // Evaluation: no dropout.
  const Matrix& forward(const std::vector<int64_t>& ids, int64_t batch) { return run_forward(ids, batch, 0, {}); }

  // After forward(): the mean cross-entropy of its logits against one
  // target per position; rows whose target is kIgnore do not count.
  float loss(const std::vector<int64_t>& targets);

  // The training forward: forward and loss in one, computing only what the
  // loss needs (positions before the first one with a target skip the end
  // of the last block, see Workspace). Same loss and gradients as
  // forward() + loss().
  // `dropout`: chapter 6's attention dropout, in every block, drawn from
  // dropout.gen (PyTorch's model.train() with dropout on the weights). Only
  // this training forward drops: forward() is evaluation and never does,
  // so a model is evaluated with dropout off without anyone switching it.
  float forward_loss(const std::vector<int64_t>& ids, int64_t batch, const std::vector<int64_t>& targets,
                     const DropoutSetting& dropout = {});

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
  void backward();

  // The attention weights of layer `layer` in the last forward:
  // (batch * n_heads * seq, seq), see attention_forward. Always every
  // position, whatever forward computed.
  const Matrix& weights(int64_t layer) const { return current_->blocks.at(size_t(layer)).P; }
  const Workspace& workspace() const { return *current_; }

  Params params;
  Params grads;

 private:
  const Matrix& run_forward(const std::vector<int64_t>& ids, int64_t batch, int64_t first,
                            const DropoutSetting& dropout);

  bool learned_pos() const { return cfg_.position == PositionEncoding::learned; }
  Workspace& current() {
    if (!current_) throw std::logic_error("TinyTransformer: call forward() first");
    return *current_;
  }
  Workspace& workspace_for(int64_t batch, int64_t seq, int64_t first);

  ModelConfig cfg_;
  Matrix fixed_pos_, d_fixed_pos_;  // without a learned table: the rows added, and a gradient nobody reads
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::unique_ptr<Workspace>> workspaces_;
  Workspace* current_ = nullptr;
};

// Adam over every tensor of the model: one adam_step per tensor, with the
// moments m and v kept in two more copies of the parameters' shapes.
class Adam {
 public:
  Adam(Params& params, const Params& grads, const AdamConfig& cfg);
  Adam(const Adam&) = delete;  // holds spans into its own members
  Adam& operator=(const Adam&) = delete;

  void step();
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
int64_t count_correct(const Matrix& logits, const std::vector<int64_t>& targets);

struct StepStats {
  float loss = 0;
  int64_t correct = 0;  // predictions right before this step's update
  int64_t counted = 0;
};

// One training step: forward and loss (with attention dropout if given),
// backward, Adam.
StepStats train_step(TinyTransformer& model, Adam& adam, const std::vector<int64_t>& ids,
                     const std::vector<int64_t>& targets, int64_t batch, const DropoutSetting& dropout = {});

}  // namespace sa
