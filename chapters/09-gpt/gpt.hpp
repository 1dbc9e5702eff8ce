// Chapter 9: a small GPT trained on a real book.
//
// The functions this chapter teaches, only what is new after chapters 1 to
// 8. solutions/09-gpt/ holds the reference; exercises/09-gpt/ is yours:
//   - a character tokenizer: the vocabulary of a text, encode and decode;
//   - sampling the next character with a temperature and top-k, from the
//     project's generator, picking the token torch.multinomial picks;
//   - the learning-rate schedule: linear warm-up, then cosine decay;
//   - clipping the gradients by their global norm;
//   - AdamW: Adam with decoupled weight decay.
// Each follows a public reference, named where it is declared: nanoGPT
// (Karpathy, 2022-2024: model.py, train.py, sample.py) and PyTorch 1.13's
// torch.optim.AdamW and torch.nn.utils.clip_grad_norm_.
#pragma once

#include "07-training/training.hpp"
#include "sa/rng.hpp"
#include "sa/tensor.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sa {

// ---------------------------------------------------------------------------
// The character tokenizer

// A vocabulary of characters (Unicode code points), sorted by code point, as
// nanoGPT's shakespeare_char/prepare.py builds it: chars = sorted(set(text)).
// Token id i is chars[i]. Sorting makes the ids independent of where a
// character first appears, so the same text always gives the same ids.
struct CharVocab {
  std::vector<char32_t> chars;
  int64_t size() const { return int64_t(chars.size()); }
};

// The vocabulary of `text` (UTF-8): every character it holds, once, sorted.
// Refused with std::invalid_argument: an empty text (no vocabulary to
// learn), and bytes that are not UTF-8 (utf8_chars names the byte).
CharVocab build_vocab(std::string_view text);

// The token id of every character of `text`, in order. Refused with
// std::invalid_argument, in one line naming the character and its position
// (0-based, counted in characters): a character outside the vocabulary
//   encode: character 'é' (U+00E9) at position 3 is not in the vocabulary of 63 characters
// an empty text (nothing to feed the model), bytes that are not UTF-8.
std::vector<int64_t> encode(const CharVocab& vocab, std::string_view text);

// The text of `ids`: their characters, written as UTF-8, one after another.
// An id outside [0, vocab.size()) is refused with std::out_of_range naming
// the id and its position. An empty list gives an empty text.
std::string decode(const CharVocab& vocab, const std::vector<int64_t>& ids);

// ---------------------------------------------------------------------------
// Sampling the next token (nanoGPT's GPT.generate)

// The distribution the next token is drawn from, given the model's logits
// for it (1, vocab_size):
//   1. divide every logit by `temperature` (below 1 sharpens, above 1 flattens);
//   2. top-k: keep the logits at least as large as the k-th largest, set
//      the others to -inf (a tie with the k-th keeps every tied logit, as
//      nanoGPT's `logits[logits < v[:, [-1]]] = -inf` does);
//   3. softmax.
// The temperature divides the logits, not the probabilities: p^(1/T)
// renormalised is the same distribution, p / T is not one at all.
// Refused with std::invalid_argument: temperature <= 0 or not finite,
// top_k < 1 or above vocab_size (top_k = vocab_size keeps every token), an
// empty row, a logit that is NaN or +inf.
RowVector sampling_probs(const RowVector& logits, double temperature, int64_t top_k);

// One token drawn from `probs` (1, vocab_size), a distribution as
// sampling_probs returns it, exactly as torch.multinomial(probs, 1) draws
// it on the CPU in PyTorch 1.13, so that after torch.manual_seed(s) and
// sa::Generator(s) both pick the same token:
//   for every entry i, in order, one gen.uniform_double() u_i (a 64-bit
//   draw, its low 53 bits), and q_i = -log(1 - u_i) computed in double and
//   rounded to float: an Exp(1) draw;
//   the token is the first i with the largest p_i / q_i (float32).
// This is the "exponential race": each token waits an Exp(1) time divided
// by its probability and the first to arrive wins, which happens with
// probability p_i. It takes vocab_size draws whatever the probabilities.
// Refused with std::invalid_argument: an empty row, a negative, NaN or
// infinite entry, a row that sums to 0. The row is checked before any draw,
// as torch.multinomial checks it: a refused row leaves `gen` as it was.
int64_t sample_token(const RowVector& probs, Generator& gen);

// ---------------------------------------------------------------------------
// The learning-rate schedule (nanoGPT's train.py, get_lr, as of its commit
// dc81cb36 of December 2024: the warm-up below never starts at 0)

struct LrSchedule {
  double lr = 1e-3;              // the peak, reached at the end of the warm-up
  double min_lr = 1e-4;          // the floor, from lr_decay_iters on
  int64_t warmup_iters = 100;    // iterations of linear warm-up
  int64_t lr_decay_iters = 2000; // where the cosine reaches min_lr
};

// The learning rate of iteration `it` (0 for the first):
//   it < warmup_iters:               lr (it + 1) / (warmup_iters + 1)
//   warmup_iters <= it <= decay:     min_lr + ½ (1 + cos(π r)) (lr − min_lr),
//                                    r = (it − warmup_iters) / (lr_decay_iters − warmup_iters)
//   it > lr_decay_iters:             min_lr
// The warm-up starts above 0 (the first iteration already learns) and
// reaches lr at it = warmup_iters, where the cosine starts at r = 0.
// Refused with std::invalid_argument: it < 0, warmup_iters < 0,
// lr_decay_iters <= warmup_iters, lr <= 0 or not finite, min_lr < 0, NaN
// or above lr.
double learning_rate(int64_t it, const LrSchedule& s);

// ---------------------------------------------------------------------------
// Gradient clipping (torch.nn.utils.clip_grad_norm_)

// Scales every gradient tensor by one factor so that their global norm,
// sqrt of the sum of every squared entry of every tensor, is at most
// max_norm; returns the norm before clipping. As PyTorch 1.13 computes it:
//   total = ‖(‖g_1‖, ‖g_2‖, ...)‖  (each tensor's 2-norm, then the norm of those)
//   c = max_norm / (total + 1e-6);  every g *= min(c, 1)
// One factor for all tensors keeps the direction of the whole update; a
// factor per tensor would change it. Refused with std::invalid_argument:
// max_norm <= 0 or not finite, and a NaN or infinite norm (a gradient holds
// NaN or inf: training has diverged; PyTorch's error_if_nonfinite=True).
// Nothing is scaled when a refusal is thrown.
double clip_grad_norm(const std::vector<std::span<float>>& grads, double max_norm);

// ---------------------------------------------------------------------------
// AdamW (Loshchilov & Hutter, "Decoupled Weight Decay Regularization",
// ICLR 2019; torch.optim.AdamW)

struct AdamWConfig {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.99;          // nanoGPT's shakespeare_char value (PyTorch's default is 0.999)
  double eps = 1e-8;
  double weight_decay = 0.1;    // nanoGPT's value
};

// One AdamW step for one parameter tensor, as torch.optim.AdamW (1.13)
// computes it:
//   θ ← θ (1 − lr · weight_decay)         the decay, on the weights themselves
//   then chapter 7's Adam step with the same lr, betas and eps.
// The decay is decoupled from the gradient: it never enters m or v, so it
// shrinks every weight by the same fraction, whatever its gradient's scale.
// (Adding weight_decay · θ to the gradient instead, L2 regularisation, lets
// Adam's division by sqrt(v) undo it for weights with large gradients.)
// Which tensors decay is the caller's choice, made with weight_decay: as in
// nanoGPT's configure_optimizers, every tensor of two dimensions (the
// matrices of the linear layers and the embeddings) decays, and biases and
// LayerNorm's gamma and beta (one dimension) get weight_decay = 0.
// Spans of different lengths, t < 1, weight_decay < 0 are refused with
// std::invalid_argument, before anything changes: a refused step leaves
// param, m and v as they were (so check first, then decay).
void adamw_step(std::span<float> param, std::span<const float> grad, std::span<float> m, std::span<float> v,
                int64_t t, const AdamWConfig& cfg);

}  // namespace sa
