// Chapter 9: the GPT's parameters, forward, backward and training step
// (model.hpp says what each does). Every layer is chapter 7's, the
// attention chapter 8's; this file only wires them together.
#include "09-gpt/model.hpp"

#include "sa/print.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

namespace sa {

void GptConfig::validate() const {
  if (vocab_size < 1 || seq_len < 1 || d_model < 1 || n_heads < 1 || n_layers < 1)
    throw std::invalid_argument(fmt::format(
        "GptConfig: every size must be at least 1, got vocab_size {}, seq_len {}, d_model {}, n_heads {}, n_layers {}",
        vocab_size, seq_len, d_model, n_heads, n_layers));
  if (d_model % n_heads != 0)
    throw std::invalid_argument(fmt::format(
        "d_model {} is not divisible by {} heads: every head gets d_model / n_heads columns", d_model, n_heads));
}

GptParams shaped_gpt_params(const GptConfig& cfg) {
  cfg.validate();
  const int64_t d = cfg.d_model;
  GptParams p;
  p.tok.resize(cfg.vocab_size, d);
  p.pos.resize(cfg.seq_len, d);
  // chapter 7's blocks, shaped as there
  for (int64_t l = 0; l < cfg.n_layers; ++l) p.blocks.push_back(shaped_block(d, cfg.d_ff()));
  p.ln_f = make_layernorm(d);
  return p;
}

namespace {

// One tensor drawn as the table says: Tensor.normal_(0, std) on PyTorch's
// layout of it, which for a Linear's weight is (d_out, d_in), the
// transpose of the book's.
void draw(Generator& gen, Matrix& t, const GptTensor& spec) {
  if (spec.init != GptTensor::normal) throw std::logic_error("init_gpt_params: a matrix starts from a normal draw");
  if (spec.transposed) {
    Matrix drawn(t.cols(), t.rows());
    gen.normal_(drawn.data(), drawn.size(), 0.0, spec.stddev);
    t = drawn.transpose();
  } else {
    gen.normal_(t.data(), t.size(), 0.0, spec.stddev);
  }
}
void draw(Generator&, RowVector& t, const GptTensor& spec) {
  switch (spec.init) {
    case GptTensor::ones: t.setOnes(); return;
    case GptTensor::zeros: t.setZero(); return;
    default: throw std::logic_error("init_gpt_params: a vector starts at 0 or 1");
  }
}

}  // namespace

GptParams init_gpt_params(Generator& gen, const GptConfig& cfg) {
  GptParams p = shaped_gpt_params(cfg);
  visit_gpt_parameters(p, [&](const std::string&, auto& t, const GptTensor& spec) { draw(gen, t, spec); });
  return p;
}

GptParams zeros_like(const GptParams& p) {
  GptParams z = p;
  visit_gpt_parameters(z, [](const std::string&, auto& t, const GptTensor&) { t.setZero(); });
  return z;
}

int64_t parameter_count(const GptParams& p) {
  int64_t n = 0;
  visit_gpt_parameters(p, [&](const std::string&, const auto& t, const GptTensor&) { n += int64_t(t.size()); });
  return n;
}

std::vector<std::span<float>> tensor_spans(GptParams& p) {
  std::vector<std::span<float>> spans;
  visit_gpt_parameters(p, [&](const std::string&, auto& t, const GptTensor&) {
    spans.emplace_back(t.data(), size_t(t.size()));
  });
  return spans;
}

void GptWorkspace::resize(const GptConfig& cfg, int64_t batch_, int64_t seq_) {
  if (batch_ == batch && seq_ == seq) return;
  batch = batch_;
  seq = seq_;
  const int64_t r = rows(), d = cfg.d_model, ff = cfg.d_ff(), d_k = cfg.d_k();
  x0.resize(r, d);
  blocks.assign(size_t(cfg.n_layers), GptBlockCache{});
  for (GptBlockCache& c : blocks) {
    c.ln1 = LayerNormCache(r, d);
    c.a.resize(r, d);
    c.qkv.resize(r, 3 * d);
    c.heads.resize(size_t(batch * cfg.n_heads));
    c.att.resize(r, d);
    c.x_mid.resize(r, d);
    c.ln2 = LayerNormCache(r, d);
    c.m.resize(r, d);
    c.g.resize(r, ff);
    c.dgelu.resize(r, ff);
    c.x_out.resize(r, d);
  }
  ln_f = LayerNormCache(r, d);
  y.resize(r, d);
  logits.resize(r, cfg.vocab_size);
  probs.resize(r, cfg.vocab_size);
  d_logits.resize(r, cfg.vocab_size);
  for (Matrix* m : {&d_x, &d_y, &d_ln, &d_m, &d_att}) m->resize(r, d);
  d_qkv.resize(r, 3 * d);
  h.resize(r, ff);
  d_h.resize(r, ff);
  d_g.resize(r, ff);
  for (Matrix* m : {&Q, &K, &V, &dO}) m->resize(seq, d_k);
}

Gpt::Gpt(const GptConfig& cfg, Generator& gen)
    : params(init_gpt_params(gen, cfg)), grads(zeros_like(params)), cfg_(cfg) {}

namespace {

// Chapter 8's tiled attention takes one head of one sequence: its Q, K and
// V are (seq, d_k) blocks of QKV (columns [0, d), [d, 2d), [2d, 3d), head h
// owning d_k of each), copied out so that the kernel reads contiguous rows.
// The forward and the backward each copy them into the same three small
// matrices, which stay in the core's nearest cache: keeping every head's
// copies for the backward (4.7 MB at the default sizes) made the step
// 0.1-0.2 ms slower on an AMD EPYC core with AVX-512.
// Tiles of 32: at seq_len 64 a head is four tiles, and the causal pass skips
// the one above the diagonal. One tile of 64 would compute it and mask it.
// Measured per head of (64, 32) on one AMD EPYC core, forward and backward:
// 24.1 against 29.2 µs with AVX2 code, 13.2 against 14.5 µs with AVX-512
// (tiles of 16 were slower than tiles of 32 with both); the step about 2%
// faster with AVX2.
constexpr int64_t kAttentionBlock = 32;

void copy_head(const Matrix& qkv, int64_t b, int64_t h, int64_t seq, int64_t d_k, Matrix& Q, Matrix& K, Matrix& V) {
  const int64_t d = qkv.cols() / 3;
  Q = qkv.block(b * seq, h * d_k, seq, d_k);
  K = qkv.block(b * seq, d + h * d_k, seq, d_k);
  V = qkv.block(b * seq, 2 * d + h * d_k, seq, d_k);
}

}  // namespace

void Gpt::set_dropout(double p, Generator* gen) {
  if (!(p >= 0 && p < 1)) throw std::invalid_argument(fmt::format("Gpt::set_dropout: p = {} outside [0, 1)", p));
  if (p > 0 && !gen) throw std::invalid_argument("Gpt::set_dropout: dropout needs a generator for its masks");
  dropout_ = p;
  dropout_gen_ = gen;
}

namespace {

// Chapter 6's dropout of `x` in place, its mask kept for the backward.
void drop(Matrix& x, double p, Generator& gen, Mask& keep) {
  DropoutResult r = dropout(x, p, gen);
  x = std::move(r.output);
  keep = std::move(r.keep);
}

}  // namespace

const Matrix& Gpt::forward(const std::vector<int64_t>& ids, int64_t batch, bool train) {
  return run_forward(ids, batch, train, /*for_backward=*/true);
}

const Matrix& Gpt::evaluate(const std::vector<int64_t>& ids, int64_t batch) {
  return run_forward(ids, batch, /*train=*/false, /*for_backward=*/false);
}

const Matrix& Gpt::run_forward(const std::vector<int64_t>& ids, int64_t batch, bool train, bool for_backward) {
  if (batch < 1 || ids.empty() || int64_t(ids.size()) % batch != 0)
    throw std::invalid_argument(fmt::format("Gpt::forward: {} ids do not make {} sequences", ids.size(), batch));
  const int64_t seq = int64_t(ids.size()) / batch, n_heads = cfg_.n_heads, d_k = cfg_.d_k();
  if (seq > cfg_.seq_len)
    throw std::invalid_argument(
        fmt::format("Gpt::forward: sequences of {} tokens, but the model knows {} positions", seq, cfg_.seq_len));
  w_.resize(cfg_, batch, seq);
  w_.ids.assign(ids.begin(), ids.end());
  w_.targets.clear();
  dropped_ = train && dropout_ > 0;
  ready_for_backward_ = for_backward;
  embedding_forward(w_.ids, seq, params.tok, params.pos, w_.x0);
  if (dropped_) drop(w_.x0, dropout_, *dropout_gen_, w_.keep_x0);
  const Matrix* x = &w_.x0;
  for (int64_t l = 0; l < cfg_.n_layers; ++l) {
    const BlockParams& block = params.blocks[size_t(l)];
    GptBlockCache& c = w_.blocks[size_t(l)];
    // x_mid = x + W_o · attention(LayerNorm1(x)), every head of every
    // sequence through chapter 8's causal tiled attention.
    layernorm_forward(*x, block.ln1, c.a, c.ln1);
    linear_forward(c.a, block.qkv, c.qkv);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < n_heads; ++h) {
        const size_t i = size_t(b * n_heads + h);
        copy_head(c.qkv, b, h, seq, d_k, w_.Q, w_.K, w_.V);
        TiledAttention& head = c.heads[i];
        head = tiled_attention(w_.Q, w_.K, w_.V, /*causal=*/true, kAttentionBlock);
        c.att.block(b * seq, h * d_k, seq, d_k) = head.output;
      }
    linear_forward(c.att, block.W_o, c.x_mid);
    if (dropped_) drop(c.x_mid, dropout_, *dropout_gen_, c.keep_att);
    c.x_mid += *x;
    // x_out = x_mid + W2 · GELU(W1 · LayerNorm2(x_mid) + b1) + b2
    layernorm_forward(c.x_mid, block.ln2, c.m, c.ln2);
    linear_forward(c.m, block.fc1, w_.h);
    if (for_backward)
      gelu_forward(w_.h, c.g, c.dgelu);
    else
      gelu_forward(w_.h, c.g);  // (no derivative: nothing will go back through it)
    linear_forward(c.g, block.fc2, c.x_out);
    if (dropped_) drop(c.x_out, dropout_, *dropout_gen_, c.keep_ffn);
    c.x_out += c.x_mid;
    x = &c.x_out;
  }
  layernorm_forward(*x, params.ln_f, w_.y, w_.ln_f);
  // Weight tying: the output layer is tokᵀ, (d_model, vocab_size).
  w_.logits.noalias() = w_.y * params.tok.transpose();
  return w_.logits;
}

float Gpt::loss(const std::vector<int64_t>& targets) {
  if (w_.rows() == 0) throw std::logic_error("Gpt::loss: call forward() first");
  if (int64_t(targets.size()) != w_.rows())
    throw std::invalid_argument(fmt::format("Gpt::loss: {} targets for {} positions", targets.size(), w_.rows()));
  w_.targets.assign(targets.begin(), targets.end());
  return cross_entropy_forward(w_.logits, w_.targets, w_.probs);
}

void Gpt::backward() {
  if (w_.rows() == 0 || int64_t(w_.targets.size()) != w_.rows())
    throw std::logic_error("Gpt::backward: compute a loss first");
  if (!ready_for_backward_)
    throw std::logic_error(
        "Gpt::backward: the last pass was evaluate(), which keeps no GELU derivative; use forward()");
  const int64_t batch = w_.batch, seq = w_.seq, n_heads = cfg_.n_heads, d_k = cfg_.d_k(), d = cfg_.d_model;
  cross_entropy_backward(w_.probs, w_.targets, w_.d_logits);
  // logits = y tokᵀ: dy = d_logits tok, and the output layer's share of
  // tok's gradient is d_logitsᵀ y (added after the embedding's share below).
  w_.d_y.noalias() = w_.d_logits * params.tok;
  // d_x is the gradient of the residual stream, carried down the blocks.
  layernorm_backward(w_.d_y, w_.ln_f, params.ln_f, w_.d_x, grads.ln_f);
  for (int64_t l = cfg_.n_layers - 1; l >= 0; --l) {
    const BlockParams& block = params.blocks[size_t(l)];
    BlockParams& g = grads.blocks[size_t(l)];
    GptBlockCache& c = w_.blocks[size_t(l)];
    // x_out = x_mid + FFN(x_mid): the identity passes d_x through, the
    // feed-forward branch adds its part (through its dropout first, when
    // the forward dropped).
    // (d_y, free once the final LayerNorm is through, holds the branch's
    // gradient.)
    const Matrix& d_ffn = dropped_ ? (w_.d_y = dropout_backward(w_.d_x, c.keep_ffn, dropout_)) : w_.d_x;
    linear_backward(c.g, block.fc2, d_ffn, w_.d_g, g.fc2);
    gelu_backward(c.dgelu, w_.d_g, w_.d_h);
    linear_backward(c.m, block.fc1, w_.d_h, w_.d_m, g.fc1);
    layernorm_backward(w_.d_m, c.ln2, block.ln2, w_.d_ln, g.ln2);
    w_.d_x += w_.d_ln;  // now the gradient of x_mid
    // x_mid = x + W_o · attention(...): the same again, through chapter
    // 8's backward, which rebuilds each head's weights from its lse.
    const Matrix& d_branch = dropped_ ? (w_.d_y = dropout_backward(w_.d_x, c.keep_att, dropout_)) : w_.d_x;
    linear_backward(c.att, block.W_o, d_branch, w_.d_att, g.W_o);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < n_heads; ++h) {
        const size_t i = size_t(b * n_heads + h);
        copy_head(c.qkv, b, h, seq, d_k, w_.Q, w_.K, w_.V);
        w_.dO = w_.d_att.block(b * seq, h * d_k, seq, d_k);
        const AttentionGrads ag =
            tiled_attention_backward(w_.Q, w_.K, w_.V, c.heads[i], w_.dO, /*causal=*/true, kAttentionBlock);
        w_.d_qkv.block(b * seq, h * d_k, seq, d_k) = ag.dQ;
        w_.d_qkv.block(b * seq, d + h * d_k, seq, d_k) = ag.dK;
        w_.d_qkv.block(b * seq, 2 * d + h * d_k, seq, d_k) = ag.dV;
      }
    linear_backward(c.a, block.qkv, w_.d_qkv, w_.d_m, g.qkv);
    layernorm_backward(w_.d_m, c.ln1, block.ln1, w_.d_ln, g.ln1);
    w_.d_x += w_.d_ln;  // now the gradient of the block's input
  }
  // tok is used twice, so its gradient is the sum of both uses: the
  // embedding's rows (which embedding_backward writes, zeroing first) and
  // the output layer's.
  if (dropped_) w_.d_x = dropout_backward(w_.d_x, w_.keep_x0, dropout_);
  embedding_backward(w_.ids, seq, w_.d_x, grads.tok, grads.pos);
  grads.tok.noalias() += w_.d_logits.transpose() * w_.y;
}

// ---------------------------------------------------------------------------
// Generation

int64_t context_start(int64_t n_tokens, int64_t seq_len) {
  if (n_tokens < 1 || seq_len < 1) throw std::invalid_argument(fmt::format(
        "context_start: {} tokens and {} positions; both must be at least 1", n_tokens, seq_len));
  // The context grows to seq_len tokens, then restarts from its newer half:
  // seq_len - seq_len / 2 tokens are kept at every restart.
  const int64_t kept = seq_len - seq_len / 2;
  if (n_tokens <= seq_len) return 0;
  if (kept == seq_len) return n_tokens - 1;  // seq_len 1: the last token only
  // After the first fill, a restart every seq_len - kept tokens.
  const int64_t restarts = (n_tokens - seq_len - 1) / (seq_len - kept) + 1;
  return restarts * (seq_len - kept);
}

std::string long_prompt_note(int64_t prompt_tokens, int64_t seq_len) {
  if (prompt_tokens <= seq_len) return "";
  const std::string has = fmt::format("The prompt has {}, more than the model's {}",
                                      count_of(prompt_tokens, "character"), count_of(seq_len, "position"));
  if (seq_len == 1) return has + ": the first character drawn reads the prompt's last character alone.";
  // context_start: the context fills, then restarts from its newer half
  // every seq_len / 2 tokens.
  const int64_t start = context_start(prompt_tokens, seq_len), every = seq_len / 2;
  return fmt::format("{}: the context has restarted {} inside it (every {}, from its newer half), so the first "
                     "character drawn reads the prompt's last {}.",
                     has, count_of(start / every, "time"), count_of(every, "character"), prompt_tokens - start);
}

GptDecoder::GptDecoder(Gpt& model) : model_(model) {
  const GptConfig& c = model.config();
  caches_.assign(size_t(c.n_layers * c.n_heads), KVCache(c.seq_len, c.d_k(), c.d_k()));
  for (Matrix* m : {&x_, &a_, &att_, &x_mid_, &m_, &x_out_, &y_}) m->resize(1, c.d_model);
  qkv_.resize(1, 3 * c.d_model);
  h_.resize(1, c.d_ff());
  g_.resize(1, c.d_ff());
  ln_ = LayerNormCache(1, c.d_model);
}

const RowVector& GptDecoder::prefill(const std::vector<int64_t>& context) {
  const GptConfig& c = model_.config();
  const int64_t n = int64_t(context.size()), d = c.d_model, d_k = c.d_k();
  // Gpt::evaluate refuses an empty or too long context, and ids outside the vocabulary.
  const Matrix& logits = model_.evaluate(context, 1);
  // Its caches hold every block's QKV for every position: the keys and
  // values the next tokens will attend over.
  for (int64_t l = 0; l < c.n_layers; ++l)
    for (int64_t h = 0; h < c.n_heads; ++h) {
      KVCache& cache = caches_[size_t(l * c.n_heads + h)];
      const Matrix& qkv = model_.workspace().blocks[size_t(l)].qkv;
      cache.K.topRows(n) = qkv.block(0, d + h * d_k, n, d_k);
      cache.V.topRows(n) = qkv.block(0, 2 * d + h * d_k, n, d_k);
      cache.size = n;
    }
  size_ = n;
  logits_ = logits.row(n - 1);
  return logits_;
}

const RowVector& GptDecoder::step(int64_t id) {
  const GptConfig& c = model_.config();
  const GptParams& p = model_.params;
  const int64_t d = c.d_model, d_k = c.d_k();
  if (size_ >= c.seq_len)
    throw std::invalid_argument(fmt::format("GptDecoder::step: the cache is full ({} positions)", c.seq_len));
  if (id < 0 || id >= c.vocab_size)
    throw std::out_of_range(fmt::format("GptDecoder::step: token id {} outside [0, {})", id, c.vocab_size));
  // The same layers as Gpt::forward, on one row.
  x_ = p.tok.row(id) + p.pos.row(size_);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const BlockParams& block = p.blocks[size_t(l)];
    layernorm_forward(x_, block.ln1, a_, ln_);
    linear_forward(a_, block.qkv, qkv_);
    for (int64_t h = 0; h < c.n_heads; ++h) {
      // The new token's key and value join the cache, then its query
      // attends over every key so far (itself included): the last row of
      // causal attention, chapter 8's kv_append and kv_attend.
      KVCache& cache = caches_[size_t(l * c.n_heads + h)];
      kv_append(cache, qkv_.block(0, d + h * d_k, 1, d_k), qkv_.block(0, 2 * d + h * d_k, 1, d_k));
      att_.block(0, h * d_k, 1, d_k) = kv_attend(cache, qkv_.block(0, h * d_k, 1, d_k));
    }
    linear_forward(att_, block.W_o, x_mid_);
    x_mid_ += x_;
    layernorm_forward(x_mid_, block.ln2, m_, ln_);
    linear_forward(m_, block.fc1, h_);
    gelu_forward(h_, g_);
    linear_forward(g_, block.fc2, x_out_);
    x_ = x_out_ + x_mid_;
  }
  layernorm_forward(x_, p.ln_f, y_, ln_);
  logits_.noalias() = y_ * p.tok.transpose();
  ++size_;
  return logits_;
}

std::vector<int64_t> generate(Gpt& model, std::vector<int64_t> tokens, const GenerationOptions& o, Generator& gen) {
  if (tokens.empty()) throw std::invalid_argument("generate: the prompt is empty; give at least one token");
  const int64_t T = model.config().seq_len;
  auto context = [&](int64_t from) { return std::vector<int64_t>(tokens.begin() + from, tokens.end()); };
  GptDecoder decoder(model);
  int64_t start = -1;  // where the decoder's context begins (-1: not filled yet)
  RowVector logits;
  for (int64_t i = 0; i < o.new_tokens; ++i) {
    const int64_t n = int64_t(tokens.size()), from = context_start(n, T);
    if (!o.use_cache) {
      // From scratch: the whole context again, its last row read.
      const Matrix& all = model.evaluate(context(from), 1);
      logits = all.row(all.rows() - 1);
    } else if (from != start) {
      // The first token, or a restart of the context: all of it at once.
      logits = decoder.prefill(context(from));
      start = from;
    } else {
      logits = decoder.step(tokens.back());  // one row; the rest is cached
    }
    tokens.push_back(sample_token(sampling_probs(logits, o.temperature, o.top_k ? o.top_k : logits.size()), gen));
  }
  return tokens;
}

void warm_up(Gpt& model, const std::vector<int64_t>& prompt) {
  if (prompt.empty()) throw std::invalid_argument("warm_up: the prompt is empty");
  const int64_t from = context_start(int64_t(prompt.size()), model.config().seq_len);
  model.evaluate(std::vector<int64_t>(prompt.begin() + from, prompt.end()), 1);
}

// ---------------------------------------------------------------------------
// Training

void sample_batch(std::span<const int64_t> data, int64_t batch, int64_t seq_len, Generator& gen, Batch& out) {
  const int64_t n = int64_t(data.size());
  if (n <= seq_len)
    throw std::invalid_argument(
        fmt::format("sample_batch: a text of {} tokens has no window of {} + 1 tokens", n, seq_len));
  out.offsets = gen.randint(0, n - seq_len, batch);
  out.x.resize(size_t(batch * seq_len));
  out.y.resize(size_t(batch * seq_len));
  for (int64_t b = 0; b < batch; ++b) {
    const auto first = data.begin() + out.offsets[size_t(b)];
    std::copy(first, first + seq_len, out.x.begin() + b * seq_len);
    std::copy(first + 1, first + 1 + seq_len, out.y.begin() + b * seq_len);
  }
}

GptAdamW::GptAdamW(GptParams& params, GptParams& grads, const AdamWConfig& cfg)
    : cfg_(cfg), m_(zeros_like(params)), v_(zeros_like(params)) {
  params_ = tensor_spans(params);
  grads_ = tensor_spans(grads);
  m_spans_ = tensor_spans(m_);
  v_spans_ = tensor_spans(v_);
  visit_gpt_parameters(params, [&](const std::string&, auto&, const GptTensor& spec) { decay_.push_back(spec.decay); });
}

double GptAdamW::step(double lr, double max_norm) {
  const double norm = clip_grad_norm(grads_, max_norm);
  ++t_;
  AdamWConfig decayed = cfg_, plain = cfg_;
  decayed.lr = plain.lr = lr;
  plain.weight_decay = 0;
  for (size_t k = 0; k < params_.size(); ++k)
    adamw_step(params_[k], grads_[k], m_spans_[k], v_spans_[k], t_, decay_[k] ? decayed : plain);
  return norm;
}

void GptAdamW::restore(const GptParams& m, const GptParams& v, int64_t steps) {
  if (steps < 0) throw std::invalid_argument(fmt::format("GptAdamW::restore: a step count of {}", steps));
  const auto flat = [](const GptParams& p) {
    std::vector<std::span<const float>> out;
    visit_gpt_parameters(p, [&](const std::string&, const auto& t, const GptTensor&) {
      out.emplace_back(t.data(), size_t(t.size()));
    });
    return out;
  };
  const std::vector<std::span<const float>> ms = flat(m), vs = flat(v);
  // Every shape checked before anything is copied: a refusal leaves the
  // optimizer as it was.
  for (const auto* src : {&ms, &vs}) {
    if (src->size() != m_spans_.size())
      throw std::invalid_argument(fmt::format("GptAdamW::restore: {} moment tensors for {} parameters", src->size(),
                                              m_spans_.size()));
    for (size_t k = 0; k < src->size(); ++k)
      if ((*src)[k].size() != m_spans_[k].size())
        throw std::invalid_argument(fmt::format(
            "GptAdamW::restore: moment tensor {} has {} values, its parameter {}", k, (*src)[k].size(),
            m_spans_[k].size()));
  }
  // Element by element into the existing tensors: assigning the matrices
  // could reallocate them under the spans.
  for (size_t k = 0; k < ms.size(); ++k) {
    std::copy(ms[k].begin(), ms[k].end(), m_spans_[k].begin());
    std::copy(vs[k].begin(), vs[k].end(), v_spans_[k].begin());
  }
  t_ = steps;
}

GptStepStats gpt_train_step(Gpt& model, GptAdamW& opt, const Batch& b, double lr, double max_norm) {
  GptStepStats s;
  model.forward(b.x, int64_t(b.offsets.size()), /*train=*/true);
  s.loss = model.loss(b.y);
  model.backward();
  s.grad_norm = opt.step(lr, max_norm);
  return s;
}

double estimate_loss(Gpt& model, std::span<const int64_t> data, int64_t batch, int64_t batches, Generator& gen) {
  Batch b;
  double total = 0;
  for (int64_t i = 0; i < batches; ++i) {
    sample_batch(data, batch, model.config().seq_len, gen, b);
    model.evaluate(b.x, batch);
    total += double(model.loss(b.y));
  }
  return total / double(batches);
}

}  // namespace sa
