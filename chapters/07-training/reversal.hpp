// Chapter 7, task 1: sequence reversal.
//
// A sample is `a b c d e f SEP f e d c b a`: `digits` random tokens from
// [2, vocab), the separator, and the same tokens reversed (token 0 is
// reserved for padding and never occurs: every sample has the same length).
// The model reads all but the last token and predicts the next one at every
// position; the loss counts only the predictions of the reversed half, the
// ones that need the first half:
//
//   position   0 1 2 3 4 5  6   7 8 9 10 11
//   input      a b c d e f SEP  f e d c  b
//   target     - - - - - -  f   e d c b  a      (- = kIgnore)
//
// To write the token of position p (p >= digits) the model must find it at
// input position 2 digits − 1 − p: a fixed, position-only pattern that
// attention can learn.
//
// Header-only, shared by both tracks.
#pragma once

#include "07-training/model.hpp"

#include "sa/rng.hpp"

#include <fmt/core.h>

#include <span>
#include <string>
#include <stdexcept>
#include <vector>

namespace sa {

struct ReversalTask {
  static constexpr int64_t kPad = 0;
  static constexpr int64_t kSep = 1;
  int64_t digits = 6;  // tokens to reverse (the input's length)
  int64_t vocab = 16;

  int64_t sample_len() const { return 2 * digits + 1; }  // a..f SEP f..a
  int64_t input_len() const { return 2 * digits; }       // what the model reads
  void validate() const {
    if (digits < 1) throw std::invalid_argument("reversal: at least one token to reverse");
    if (vocab < 3) throw std::invalid_argument("reversal: the vocabulary needs tokens besides PAD (0) and SEP (1)");
  }
};

struct ReversalData {
  int64_t count = 0;
  int64_t len = 0;              // sample_len()
  std::vector<int64_t> tokens;  // count * len, sample i at [i len, (i + 1) len)
  std::span<const int64_t> sample(int64_t i) const {
    return std::span<const int64_t>(tokens).subspan(size_t(i * len), size_t(len));
  }
};

// The samples as the PyTorch twin (tests/reference/ch07_training.py) draws
// them: one torch.randint(2, vocab, (digits,)) per sample, so the C++ and the twin draw the same samples from one seed.
inline ReversalData make_reversal_data(Generator& gen, int64_t count, const ReversalTask& task) {
  task.validate();
  ReversalData data;
  data.count = count;
  data.len = task.sample_len();
  data.tokens.reserve(size_t(count * data.len));
  for (int64_t i = 0; i < count; ++i) {
    const std::vector<int64_t> seq = gen.randint(2, task.vocab, task.digits);
    data.tokens.insert(data.tokens.end(), seq.begin(), seq.end());
    data.tokens.push_back(ReversalTask::kSep);
    data.tokens.insert(data.tokens.end(), seq.rbegin(), seq.rend());
  }
  return data;
}

// The inputs (every sample without its last token) and the targets (every
// sample without its first token, kIgnore before the reversed half) of the
// samples `indices`, ready for TinyTransformer::forward and loss. The
// vectors keep their capacity, so a second call of the same size allocates
// nothing.
inline void make_batch(const ReversalData& data, std::span<const int64_t> indices, const ReversalTask& task,
                       std::vector<int64_t>& ids, std::vector<int64_t>& targets) {
  const int64_t T = task.input_len();
  ids.resize(indices.size() * size_t(T));
  targets.resize(ids.size());
  for (size_t n = 0; n < indices.size(); ++n) {
    const auto s = data.sample(indices[n]);
    for (int64_t p = 0; p < T; ++p) {
      ids[n * size_t(T) + size_t(p)] = s[size_t(p)];
      targets[n * size_t(T) + size_t(p)] = p >= task.digits ? s[size_t(p + 1)] : kIgnore;
    }
  }
}

struct Score {
  float loss = 0;  // mean cross-entropy over the reversed halves
  int64_t correct = 0, counted = 0;
  double percent() const { return counted ? 100.0 * double(correct) / double(counted) : 0.0; }
};

// Loss and token accuracy on the reversed half of every sample of `data`,
// in one forward pass (its workspace is allocated the first time and
// reused). Leaves the model's last forward on these samples, for
// analyze_heads.
inline Score evaluate(TinyTransformer& model, const ReversalData& data, const ReversalTask& task,
                      std::vector<int64_t>& ids, std::vector<int64_t>& targets) {
  std::vector<int64_t> all(size_t(data.count));
  for (int64_t i = 0; i < data.count; ++i) all[size_t(i)] = i;
  make_batch(data, all, task, ids, targets);
  Score score;
  score.loss = model.forward_loss(ids, data.count, targets);
  score.correct = count_correct(model.logits(), model.loss_targets());
  for (int64_t t : model.loss_targets()) score.counted += t != kIgnore;
  return score;
}

// How much of each head's attention follows the reversal. For a query p in
// the reversed half, the head's largest weight can fall on
//  - the mirror position 2 digits − p: the input position that holds the
//    same token as the query (the check that first comes to mind; queries digits+1 .. 2 digits−1),
//  - the source position 2 digits − 1 − p: the token the query must write
//    next (queries digits .. 2 digits − 1).
struct HeadScore {
  int64_t layer = 0, head = 0;
  double mirror = 0;  // fraction of queries whose largest weight (unique) is on the mirror position
  double source = 0;  // fraction whose largest weight (unique) is on the source position
  double source_weight = 0;  // mean weight on the source position over those queries
};

// Reads the attention weights of the model's last forward, which must have
// been over `samples` sequences of task.input_len() tokens (evaluate()).
inline std::vector<HeadScore> analyze_heads(const TinyTransformer& model, int64_t samples, const ReversalTask& task) {
  const ModelConfig& cfg = model.config();
  const int64_t T = task.input_len(), D = task.digits;
  if (model.workspace().batch != samples || model.workspace().seq != T)
    throw std::logic_error("analyze_heads: the last forward was not over these samples");
  std::vector<HeadScore> scores;
  for (int64_t l = 0; l < cfg.n_layers; ++l) {
    const Matrix& P = model.weights(l);
    for (int64_t h = 0; h < cfg.n_heads; ++h) {
      int64_t mirror_hits = 0, mirror_total = 0, source_hits = 0, source_total = 0;
      double source_weight = 0;
      for (int64_t b = 0; b < samples; ++b)
        for (int64_t p = D; p < T; ++p) {
          // The position holding the row's largest weight, if only one
          // does: a tie (a head that cannot tell two keys apart) counts
          // for neither position.
          const auto row = P.row((b * cfg.n_heads + h) * T + p);
          Eigen::Index best = 0;
          const float largest = row.maxCoeff(&best);
          if ((row.array() == largest).count() > 1) best = -1;
          source_hits += best == 2 * D - 1 - p;
          source_weight += row(2 * D - 1 - p);
          ++source_total;
          if (p > D) {
            mirror_hits += best == 2 * D - p;
            ++mirror_total;
          }
        }
      scores.push_back({l, h, mirror_total ? double(mirror_hits) / double(mirror_total) : 0.0,
                        double(source_hits) / double(source_total), source_weight / double(source_total)});
    }
  }
  return scores;
}

// Held-out score with one head switched off (ablation): the rows of the
// block's W_o that read that head's d_k output columns are zeroed, so
// nothing the head computes reaches the residual stream; the other heads
// and layers run unchanged. W_o is restored afterwards, also on an
// exception.
inline Score evaluate_without_head(TinyTransformer& model, int64_t layer, int64_t head, const ReversalData& data,
                                   const ReversalTask& task, std::vector<int64_t>& ids,
                                   std::vector<int64_t>& targets) {
  const ModelConfig& cfg = model.config();
  if (layer < 0 || layer >= cfg.n_layers || head < 0 || head >= cfg.n_heads)
    throw std::invalid_argument(fmt::format("evaluate_without_head: no layer {}, head {} in a model of {} layers "
                                            "of {} heads",
                                            layer, head, cfg.n_layers, cfg.n_heads));
  auto rows = model.params.blocks[size_t(layer)].W_o.W.middleRows(head * cfg.d_k(), cfg.d_k());
  const Matrix saved = rows;
  struct Restore {
    decltype(rows)& target;
    const Matrix& value;
    ~Restore() { target = value; }
  } restore{rows, saved};
  rows.setZero();
  return evaluate(model, data, task, ids, targets);
}

// How the reversal's tokens print: SEP and PAD by name, digits as numbers.
inline std::string token_label(int64_t id) {
  if (id == ReversalTask::kSep) return "SEP";
  if (id == ReversalTask::kPad) return "PAD";
  return std::to_string(id);
}

inline std::string join_tokens(std::span<const int64_t> ids) {
  std::string s;
  for (int64_t id : ids) {
    if (!s.empty()) s += ' ';
    s += token_label(id);
  }
  return s;
}

}  // namespace sa
