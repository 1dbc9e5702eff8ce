// Chapter 9: the GPT, assembled from what the reader wrote in chapters 7
// and 8. Not an exercise: every piece is one already.
//
//   ids ─ token embedding + learned position row ─ x            (chapter 7's embedding_forward)
//   n_layers pre-norm blocks, chapter 7's BlockParams:
//     x = x + W_o · tiled_attention(LayerNorm1(x) [W_q | W_k | W_v])   (chapter 8, causal, one call per head)
//     x = x + W2 · GELU(W1 · LayerNorm2(x) + b1) + b2                   (d_ff = 4 d_model)
//   final LayerNorm ─ logits = y tokᵀ                           (weight tying: the output layer is tok)
//
// The layout follows nanoGPT's model.py (Karpathy, 2022), the model its
// character-level recipe trains, with chapter 7's biases: the feed-forward
// layers and the LayerNorms have them, the attention's projections do not.
// (nanoGPT's recipe trains with bias=False everywhere; the twin,
// tests/reference/ch09_gpt_twin.py, is this model, not nanoGPT's.)
//
// Weight tying: the output layer is the token embedding read backwards.
// Row v of tok is where token v enters the residual stream, and the logit
// of v is the final state's dot product with that same row. One matrix of
// vocab_size x d_model instead of two, and its gradient is the sum of both
// uses (Press & Wolf, "Using the Output Embedding to Improve Language
// Models", 2017; GPT-2).
#pragma once

#include "07-training/model.hpp"
#include "07-training/training.hpp"
#include "06-dropout/dropout.hpp"
#include "08-efficient-attention/efficient.hpp"
#include "09-gpt/gpt.hpp"

#include "sa/rng.hpp"
#include "sa/tensor.hpp"

#include <fmt/core.h>

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace sa {

// nanoGPT's names in comments: n_embd, n_head, n_layer, block_size. The
// defaults are its shakespeare_char recipe for a CPU.
struct GptConfig {
  int64_t vocab_size = 63;
  int64_t seq_len = 64;   // block_size: the longest context, and the rows of the position table
  int64_t d_model = 128;  // n_embd
  int64_t n_heads = 4;    // n_head
  int64_t n_layers = 4;   // n_layer

  int64_t d_ff() const { return 4 * d_model; }
  int64_t d_k() const { return d_model / n_heads; }
  // Refuses (std::invalid_argument) a size below 1 and d_model not
  // divisible by n_heads.
  void validate() const;
};

struct GptParams {
  Matrix tok;  // (vocab_size, d_model): the embedding, and transposed the output layer
  Matrix pos;  // (seq_len, d_model): a learned row per position
  std::vector<BlockParams> blocks;  // chapter 7's pre-norm block: ln1, qkv, W_o, ln2, fc1, fc2
  LayerNorm ln_f;
};

// ===========================================================================
// The parameter table: every tensor once, its name, how it starts and
// whether AdamW decays it. Everything that walks over the parameters reads
// this one list: the initialisation (draws in this order), AdamW, clipping,
// the parameter count, and the twin's names (cxx_layout in
// ch09_gpt_twin.py lists the same names in the same order).
// ===========================================================================

// How a tensor starts, nanoGPT's _init_weights: every matrix N(0, 0.02²),
// the two projections that write into the residual stream (W_o and fc2)
// N(0, (0.02 / √(2 n_layers))²), so that the stream's variance does not grow
// with depth; biases 0, LayerNorm's gamma 1 and beta 0. The embedding too
// starts at 0.02, not nn.Embedding's N(0, 1): it is also the output layer,
// and rows of norm √d_model would give logits of size √d_model and an
// initial loss far above ln(vocab_size).
struct GptTensor {
  enum Init { normal, ones, zeros } init;
  double stddev = 0;        // normal: the standard deviation
  bool transposed = false;  // drawn in PyTorch's (d_out, d_in) order, stored (d_in, d_out)
  // AdamW's weight decay, nanoGPT's configure_optimizers rule: tensors of
  // two dimensions (the matrices and the embeddings) decay, vectors
  // (biases, LayerNorm's gamma and beta) do not.
  bool decay = false;
};

// f(name, tensor, spec) for every tensor in the table's order; tensor is a
// Matrix or a RowVector of p (const when p is).
template <class ParamsT, class F>
void visit_gpt_parameters(ParamsT& p, F&& f) {
  const double base = 0.02, residual = 0.02 / std::sqrt(2.0 * double(p.blocks.size()));
  const GptTensor embedding{.init = GptTensor::normal, .stddev = base, .transposed = false, .decay = true};
  auto linear = [&](const std::string& name, auto& layer, double w_std) {
    f(name + ".W", layer.W,
      GptTensor{.init = GptTensor::normal, .stddev = w_std, .transposed = true, .decay = true});
    if (layer.b) f(name + ".b", *layer.b, GptTensor{.init = GptTensor::zeros});
  };
  auto norm = [&](const std::string& name, auto& ln) {
    f(name + ".gamma", ln.gamma, GptTensor{.init = GptTensor::ones});
    f(name + ".beta", ln.beta, GptTensor{.init = GptTensor::zeros});
  };
  f("tok", p.tok, embedding);
  f("pos", p.pos, embedding);
  for (size_t l = 0; l < p.blocks.size(); ++l) {
    auto& block = p.blocks[l];
    const std::string prefix = fmt::format("blocks.{}.", l);
    norm(prefix + "ln1", block.ln1);
    linear(prefix + "qkv", block.qkv, base);
    linear(prefix + "W_o", block.W_o, residual);
    norm(prefix + "ln2", block.ln2);
    linear(prefix + "fc1", block.fc1, base);
    linear(prefix + "fc2", block.fc2, residual);
  }
  norm("ln_f", p.ln_f);
}

// Every tensor allocated for `cfg`, uninitialised.
GptParams shaped_gpt_params(const GptConfig& cfg);
// shaped_gpt_params, then every tensor drawn from gen in the table's order.
GptParams init_gpt_params(Generator& gen, const GptConfig& cfg);
GptParams zeros_like(const GptParams& p);
int64_t parameter_count(const GptParams& p);
// Every tensor as a flat span, in the table's order (for clipping and AdamW).
std::vector<std::span<float>> tensor_spans(GptParams& p);

// What the forward keeps for the backward, for one block.
struct GptBlockCache {
  LayerNormCache ln1;
  Matrix a;     // LayerNorm1(x), (rows, d)
  Matrix qkv;   // a [W_q | W_k | W_v], (rows, 3d)
  // One per (sequence, head), sequence-major: chapter 8's output and
  // log-sum-exp of every query row, what its backward needs besides the
  // head's Q, K and V (which it copies out of qkv again).
  std::vector<TiledAttention> heads;
  Matrix att;   // the heads side by side, (rows, d)
  Matrix x_mid; // x + att W_o
  LayerNormCache ln2;
  Matrix m, g, dgelu;   // LayerNorm2(x_mid); GELU(h) and GELU'(h), h = m W1 + b1
  Matrix x_out;         // x_mid + g W2 + b2
  Mask keep_att, keep_ffn;  // dropout's masks on the two branches (training with dropout only)
};

// Every buffer of one (batch, seq) forward and backward, allocated again
// whenever the shape changes: between training and generation, and at each
// character of generation without the cache, whose context grows by one
// (about 6% of such a forward on an AMD EPYC core).
struct GptWorkspace {
  int64_t batch = 0, seq = 0;
  std::vector<int64_t> ids, targets;
  Matrix x0;
  std::vector<GptBlockCache> blocks;
  Mask keep_x0;  // dropout's mask on the embedding (training with dropout only)
  LayerNormCache ln_f;
  Matrix y, logits, probs, d_logits;
  // h = m W1 + b1 of the block being computed: GELU's cache is all its
  // backward needs, so one h serves every block (the step's largest
  // activations, (rows, 4 d_model), are kept twice per block, not three times).
  Matrix h;
  Matrix d_x, d_y, d_ln, d_m, d_att, d_qkv, d_h, d_g;
  // One head of one sequence at a time, for chapter 8's kernels: its Q, K
  // and V copied out of a block's qkv, its dO out of d_att.
  Matrix Q, K, V, dO;
  void resize(const GptConfig& cfg, int64_t batch, int64_t seq);
  int64_t rows() const { return batch * seq; }
};

class Gpt {
 public:
  Gpt(const GptConfig& cfg, Generator& gen);

  const GptConfig& config() const { return cfg_; }

  // Dropout (chapter 6's dropout and dropout_backward, nanoGPT's `dropout`)
  // with probability p, its masks drawn from gen, in training forwards
  // only: on the embedding x0, and on the output of each residual branch
  // (attention after W_o, feed-forward after fc2) before it is added to the
  // stream, where nanoGPT drops. nanoGPT also drops attention weights; the
  // tiled attention never holds them as a matrix (dropping them would go
  // inside the kernel, as FlashAttention does), so this model does not.
  // p = 0 (the recipe's value) draws nothing.
  void set_dropout(double p, Generator* gen);

  // Logits (batch * seq, vocab_size) of every position of `batch` sequences
  // of ids.size() / batch tokens each (at most seq_len). Keeps every cache
  // for backward(). `train`: with dropout (when set), as a training step.
  const Matrix& forward(const std::vector<int64_t>& ids, int64_t batch, bool train = false);
  // The same logits without dropout, for evaluation and generation: GELU's
  // derivative, which only backward() reads, is not computed (about 4% of a
  // forward), so backward() after it is refused. The other caches are
  // kept: the key/value cache's prefill reads qkv, step 12 the heads' lse.
  const Matrix& evaluate(const std::vector<int64_t>& ids, int64_t batch);
  // After forward() or evaluate(): the mean cross-entropy against one target per position.
  float loss(const std::vector<int64_t>& targets);
  // After loss(): the gradient of that loss into `grads`, the forward's
  // order reversed.
  void backward();
  const GptWorkspace& workspace() const { return w_; }

  GptParams params;
  GptParams grads;

 private:
  GptConfig cfg_;
  GptWorkspace w_;
  double dropout_ = 0;
  Generator* dropout_gen_ = nullptr;
  bool dropped_ = false;  // the last forward applied dropout
  bool ready_for_backward_ = false;  // the last pass was forward(), not evaluate()
  const Matrix& run_forward(const std::vector<int64_t>& ids, int64_t batch, bool train, bool for_backward);
};

// ---------------------------------------------------------------------------
// Generation (nanoGPT's GPT.generate), with and without chapter 8's
// key/value cache

// The context a new token is predicted from. The model knows seq_len
// positions; when the context is full, the oldest half is dropped and the
// rest is read again from position 0 (learned positions are absolute, so a
// cached key cannot move to another position: a window sliding by one
// token would have to recompute every key at every token). Both ways of
// generating use this same context, so they give the same logits and the
// same tokens; the cache only skips the work.
//   context_start(n, seq_len): the first of the n tokens so far that the
//   next prediction reads.
int64_t context_start(int64_t n_tokens, int64_t seq_len);
// "" for a prompt that fits the model's positions; for a longer one, the
// sentence that says how much of it the first draw reads, so that a
// prompt is never cut without a word.
std::string long_prompt_note(int64_t prompt_tokens, int64_t seq_len);

// One key/value cache per block and head (chapter 8's KVCache, kv_append
// and kv_attend): each new token runs through the model as a single row.
class GptDecoder {
 public:
  explicit GptDecoder(Gpt& model);
  // The logits (1, vocab_size) of the token after `context`: the whole
  // context through Gpt::evaluate at once (its keys and values then fill the
  // caches). At most seq_len tokens.
  const RowVector& prefill(const std::vector<int64_t>& context);
  // The logits after one more token `id`, at the next position: one row
  // through every block, attending over the cache. Refused when the cache
  // is full (seq_len tokens): prefill the shorter context instead.
  const RowVector& step(int64_t id);
  int64_t size() const { return size_; }

 private:
  Gpt& model_;
  std::vector<KVCache> caches_;  // block l, head h at l * n_heads + h
  int64_t size_ = 0;
  Matrix x_, a_, qkv_, att_, x_mid_, m_, h_, g_, x_out_, y_;  // one row each
  LayerNormCache ln_;
  RowVector logits_;
};

struct GenerationOptions {
  int64_t new_tokens = 300;
  double temperature = 1.0;
  int64_t top_k = 0;  // 0: every token of the vocabulary
  bool use_cache = true;
};

// `prompt` (at least one token) followed by o.new_tokens tokens, each drawn
// with sampling_probs and sample_token from the logits after the context
// (context_start), the draws from gen. With o.use_cache the caches carry
// the context from token to token (GptDecoder); without, every token runs
// Gpt::evaluate over its whole context again. Same tokens either way.
std::vector<int64_t> generate(Gpt& model, std::vector<int64_t> prompt, const GenerationOptions& o, Generator& gen);

// One untimed forward over the prompt's context: generate() with and
// without the cache are timed one after the other, and whichever goes first
// would otherwise also pay for shaping the model's buffers to the prompt.
void warm_up(Gpt& model, const std::vector<int64_t>& prompt);

// How the cache's speed compares, in words that stay true for any count:
// "the cache is 14.2x faster", or, when it is not faster, why. With a
// character or two, the prompt's forward that fills the cache is most of the
// work; with a context of a position or two, it starts again at almost every
// character, and each time a forward of all of it fills the cache.
// `r` is the speed with the cache over the speed without it.
inline std::string cache_gain(double r) {
  if (r >= 1.05) return fmt::format("the cache is {:.1f}x faster", r);
  if (r > 0.95)
    return fmt::format("the cache gains nothing here ({:.1f}x): the forwards that fill it are most of the work", r);
  return fmt::format("the cache costs more than it saves here ({:.1f}x): setting it up and filling it with the "
                     "context (at the prompt, and again whenever the context restarts) costs more than the few "
                     "characters after it save",
                     r);
}

// The benchmark's gain is the median of its turns' ratios (`turns`), printed
// beside each way's median speed (their ratio: `speeds`). With a gain near
// 1 the two can fall on either side of a threshold: "the cache costs more
// than it saves here (0.9x)" was printed beside 4554 characters a second
// with the cache and 4526 without. A verdict the speeds beside it
// contradict is not given; both figures are.
inline std::string cache_gain(double turns, double speeds) {
  const auto verdict = [](double r) { return r >= 1.05 ? 1 : r > 0.95 ? 0 : -1; };
  if (verdict(turns) == verdict(speeds)) return cache_gain(turns);
  return fmt::format("the cache's gain is within this run's noise ({:.2f}x by the median of the turns' ratios, "
                     "{:.2f}x by the median speeds)",
                     turns, speeds);
}

// ---------------------------------------------------------------------------
// Training

// A batch of `batch` windows of seq_len + 1 tokens of the text: x the
// first seq_len, y the same shifted by one (each position's next token).
struct Batch {
  std::vector<int64_t> offsets, x, y;
};

// nanoGPT's get_batch: offsets = torch.randint(len(data) - seq_len,
// (batch,)), one draw each, so the twin with the same generator reads the
// same windows. Refused: a text of seq_len tokens or fewer.
void sample_batch(std::span<const int64_t> data, int64_t batch, int64_t seq_len, Generator& gen, Batch& out);

// AdamW over the table: one adamw_step per tensor, with weight_decay where
// the table says decay and 0 elsewhere (nanoGPT's two parameter groups).
class GptAdamW {
 public:
  GptAdamW(GptParams& params, GptParams& grads, const AdamWConfig& cfg);
  GptAdamW(const GptAdamW&) = delete;  // holds spans into its own members
  GptAdamW& operator=(const GptAdamW&) = delete;

  // Clips the gradients to a global norm of max_norm (clip_grad_norm), then
  // one AdamW step at learning rate lr. Returns the norm before clipping.
  double step(double lr, double max_norm);
  int64_t steps() const { return t_; }

  // The state a checkpoint saves (09-gpt/checkpoint.hpp): the moments of
  // every tensor, and the step count bias correction reads.
  const GptParams& first_moments() const { return m_; }
  const GptParams& second_moments() const { return v_; }
  // Continues from a saved state: copies the moments into this optimizer's
  // own tensors, where step()'s spans point. Refused (std::invalid_argument):
  // moments of other shapes than the parameters', a negative step count.
  void restore(const GptParams& m, const GptParams& v, int64_t steps);

 private:
  AdamWConfig cfg_;
  GptParams m_, v_;
  std::vector<std::span<float>> params_, grads_, m_spans_, v_spans_;
  std::vector<bool> decay_;
  int64_t t_ = 0;
};

struct GptStepStats {
  float loss = 0;
  double grad_norm = 0;  // before clipping
};

// One iteration of nanoGPT's train.py: forward, loss, backward, clip,
// AdamW at the schedule's rate.
GptStepStats gpt_train_step(Gpt& model, GptAdamW& opt, const Batch& b, double lr, double max_norm);

// The mean loss over `batches` batches drawn from `gen` (nanoGPT's
// estimate_loss), without touching the gradients.
double estimate_loss(Gpt& model, std::span<const int64_t> data, int64_t batch, int64_t batches, Generator& gen);

}  // namespace sa
