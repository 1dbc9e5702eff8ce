// Chapter 7: the tiny transformer's parameters, forward, backward and
// optimizer (model.hpp says what each does).
#include "07-training/model.hpp"

#include "07-training/attention_lanes.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace sa {

namespace {
// Rows [first, seq) of every sequence of a (batch * seq, cols) matrix,
// packed into (batch * (seq - first), cols), and back.
void gather_rows(const Matrix& src, int64_t seq, int64_t first, Matrix& dst) {
  const int64_t kept = seq - first, batch = src.rows() / seq;
  for (int64_t b = 0; b < batch; ++b) dst.middleRows(b * kept, kept) = src.middleRows(b * seq + first, kept);
}

void add_scattered_rows(const Matrix& src, int64_t seq, int64_t first, Matrix& dst) {
  const int64_t kept = seq - first, batch = dst.rows() / seq;
  for (int64_t b = 0; b < batch; ++b) dst.middleRows(b * seq + first, kept) += src.middleRows(b * kept, kept);
}
}  // namespace

const char* position_name(PositionEncoding e) {
  switch (e) {
    case PositionEncoding::learned: return "learned";
    case PositionEncoding::sinusoidal: return "sinusoidal";
    case PositionEncoding::rope: return "rope";
  }
  return "?";
}

void ModelConfig::validate() const {
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

namespace {
Linear shaped_linear(int64_t d_in, int64_t d_out, bool bias) {
  Linear layer;
  layer.W.resize(d_in, d_out);
  if (bias) layer.b = RowVector(d_out);
  return layer;
}
}  // namespace

BlockParams shaped_block(int64_t d_model, int64_t d_ff) {
  BlockParams block;
  block.ln1 = make_layernorm(d_model);
  block.qkv = shaped_linear(d_model, 3 * d_model, false);
  block.W_o = shaped_linear(d_model, d_model, false);
  block.ln2 = make_layernorm(d_model);
  block.fc1 = shaped_linear(d_model, d_ff, true);
  block.fc2 = shaped_linear(d_ff, d_model, true);
  return block;
}

Params shaped_params(const ModelConfig& cfg) {
  cfg.validate();
  const int64_t d = cfg.d_model;
  Params p;
  p.tok.resize(cfg.vocab, d);
  if (cfg.position == PositionEncoding::learned) p.pos.resize(cfg.max_seq, d);
  for (int64_t l = 0; l < cfg.n_layers; ++l) p.blocks.push_back(shaped_block(d, cfg.d_ff));
  p.ln_f = make_layernorm(d);
  p.head = shaped_linear(d, cfg.vocab, true);
  return p;
}

std::vector<Shape> tensor_shapes(const Params& p) {
  std::vector<Shape> shapes;
  visit_parameters(p, [&](const std::string&, const auto& t, const TensorInit&) {
    if constexpr (std::decay_t<decltype(t)>::RowsAtCompileTime == 1)
      shapes.push_back(Shape{t.cols()});
    else
      shapes.push_back(Shape{t.rows(), t.cols()});
  });
  return shapes;
}

int64_t parameter_count(const Params& p) {
  int64_t n = 0;
  for_each_tensor(p, [&](const std::string&, std::span<const float> t) { n += int64_t(t.size()); });
  return n;
}

uint64_t expected_parameter_count(const ModelConfig& c) {
  const uint64_t d = uint64_t(c.d_model), ff = uint64_t(c.d_ff), v = uint64_t(c.vocab);
  const uint64_t block = 3 * d * d   // W_q | W_k | W_v
                         + d * d     // W_o
                         + 4 * d     // ln1 and ln2: gamma and beta
                         + d * ff + ff + ff * d + d;  // fc1 and fc2 with their biases
  return v * d + uint64_t(c.max_seq) * d + uint64_t(c.n_layers) * block + 2 * d + d * v + v;
}

Params zeros_like(const Params& p) {
  Params z = p;
  for_each_tensor(z, [](const std::string&, std::span<float> t) { std::fill(t.begin(), t.end(), 0.0f); });
  return z;
}

// One tensor drawn as `init` says. The twin's attention draws W_q, W_k,
// W_v as torch.randn(d_model, n_heads, d_k) * 0.02 and W_o as
// torch.randn(n_heads, d_k, d_model) * 0.02: as contiguous memory those are
// (d, d) matrices whose column (or row) h d_k + j belongs to head h, exactly
// the layout attention_forward reads.
static void draw(Generator& gen, Matrix& t, const TensorInit& init) {
  switch (init.kind) {
    case TensorInit::normal: t = gen.randn(t.rows(), t.cols()); return;
    case TensorInit::attention:
      for (int64_t part = 0; part < init.parts; ++part) {
        Matrix W = gen.randn(t.rows(), t.rows());
        W *= 0.02f;  // float32 times 0.02f, as PyTorch multiplies a float tensor by a Python float
        t.middleCols(part * t.rows(), t.rows()) = W;
      }
      return;
    case TensorInit::linear_W: init_linear_weight(gen, t); return;
    default: throw std::logic_error("init_params: a matrix cannot start as a vector does");
  }
}
static void draw(Generator& gen, RowVector& t, const TensorInit& init) {
  switch (init.kind) {
    case TensorInit::linear_b: init_linear_bias(gen, t, init.fan_in); return;
    case TensorInit::ones: t.setOnes(); return;
    case TensorInit::zeros: t.setZero(); return;
    default: throw std::logic_error("init_params: a vector cannot start as a matrix does");
  }
}

Params init_params(Generator& gen, const ModelConfig& cfg) {
  Params p = shaped_params(cfg);
  visit_parameters(p, [&](const std::string&, auto& t, const TensorInit& init) { draw(gen, t, init); });
  return p;
}

ActivationGrads::ActivationGrads(int64_t rows, const ModelConfig& cfg)
    : d_x(rows, cfg.d_model), d_ln(rows, cfg.d_model), d_m(rows, cfg.d_model), d_att(rows, cfg.d_model),
      d_h(rows, cfg.d_ff), d_g(rows, cfg.d_ff) {}

Workspace::Workspace(const ModelConfig& cfg, int64_t batch_, int64_t seq_, int64_t first_)
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
    c.dgelu.resize(r, cfg.d_ff);
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

TinyTransformer::TinyTransformer(const ModelConfig& cfg, Generator& gen)
    : params(init_params(gen, cfg)), grads(zeros_like(params)), cfg_(cfg) {
  // Without a learned table the embedding adds fixed rows instead:
  // chapter 1's sinusoids, or zeros for RoPE (its positions enter in the
  // attention, not here).
  if (cfg.position == PositionEncoding::sinusoidal) fixed_pos_ = positional_encoding(cfg.max_seq, cfg.d_model);
  if (cfg.position == PositionEncoding::rope) fixed_pos_ = Matrix::Zero(cfg.max_seq, cfg.d_model);
  d_fixed_pos_.resize(fixed_pos_.rows(), fixed_pos_.cols());
}

float TinyTransformer::loss(const std::vector<int64_t>& targets) {
  Workspace& w = current();
  if (w.first != 0) throw std::logic_error("loss: the last forward was forward_loss(); it has its loss already");
  w.targets.assign(targets.begin(), targets.end());
  return cross_entropy_forward(w.logits, w.targets, w.probs);
}

float TinyTransformer::forward_loss(const std::vector<int64_t>& ids, int64_t batch, const std::vector<int64_t>& targets,
                   const DropoutSetting& dropout) {
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

void TinyTransformer::backward() {
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
    gelu_backward(cache.dgelu, after_att.d_g, after_att.d_h);
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

const Matrix& TinyTransformer::run_forward(const std::vector<int64_t>& ids, int64_t batch, int64_t first,
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
    attention_forward_lanes(cache.qkv, batch, cfg_.n_heads, w.mask, cache.scores, cache.P, cache.att, &cache.dropout);
    if (last) {  // from here on, only the kept rows: nothing after the last attention mixes positions
      gather_rows(cache.att, w.seq, w.first, cache.att_kept);
      gather_rows(*x, w.seq, w.first, cache.x_kept);
    }
    linear_forward(last ? cache.att_kept : cache.att, block.W_o, cache.x_mid);
    cache.x_mid += last ? cache.x_kept : *x;
    // x_out = x_mid + W2 · GELU(W1 · LayerNorm2(x_mid) + b1) + b2
    layernorm_forward(cache.x_mid, block.ln2, cache.m, cache.ln2);
    linear_forward(cache.m, block.fc1, cache.h);
    gelu_forward(cache.h, cache.g, cache.dgelu);
    linear_forward(cache.g, block.fc2, cache.x_out);
    cache.x_out += cache.x_mid;
    x = &cache.x_out;
  }
  layernorm_forward(*x, params.ln_f, w.y, w.ln_f);
  linear_forward(w.y, params.head, w.logits);
  return w.logits;
}

Workspace& TinyTransformer::workspace_for(int64_t batch, int64_t seq, int64_t first) {
  if (seq > cfg_.max_seq)
    throw std::invalid_argument(fmt::format("forward: {} tokens, but the model knows {} positions", seq, cfg_.max_seq));
  auto& slot = workspaces_[{batch, seq, first}];
  if (!slot) slot = std::make_unique<Workspace>(cfg_, batch, seq, first);
  current_ = slot.get();
  return *slot;
}

Adam::Adam(Params& params, const Params& grads, const AdamConfig& cfg)
    : cfg_(cfg), m_(zeros_like(params)), v_(zeros_like(params)) {
  for_each_tensor(params, [&](const std::string&, std::span<float> t) { params_.push_back(t); });
  for_each_tensor(grads, [&](const std::string&, std::span<const float> t) { grads_.push_back(t); });
  for_each_tensor(m_, [&](const std::string&, std::span<float> t) { m_spans_.push_back(t); });
  for_each_tensor(v_, [&](const std::string&, std::span<float> t) { v_spans_.push_back(t); });
}

void Adam::step() {
  ++t_;
  for (size_t k = 0; k < params_.size(); ++k) adam_step(params_[k], grads_[k], m_spans_[k], v_spans_[k], t_, cfg_);
}

int64_t count_correct(const Matrix& logits, const std::vector<int64_t>& targets) {
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

StepStats train_step(TinyTransformer& model, Adam& adam, const std::vector<int64_t>& ids,
                     const std::vector<int64_t>& targets, int64_t batch, const DropoutSetting& dropout) {
  StepStats s;
  s.loss = model.forward_loss(ids, batch, targets, dropout);
  s.correct = count_correct(model.logits(), model.loss_targets());
  for (int64_t t : model.loss_targets()) s.counted += t != kIgnore;
  model.backward();
  adam.step();
  return s;
}

}  // namespace sa
