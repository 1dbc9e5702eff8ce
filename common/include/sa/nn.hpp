// Parameters of the layers the book builds, created exactly as PyTorch's
// modules create theirs, so the same seed gives the same initial weights.
#pragma once

#include "sa/rng.hpp"
#include "sa/tensor.hpp"

#include <optional>

namespace sa {

// y = x W + b. PyTorch's nn.Linear stores weight as (d_out, d_in) and
// computes x weightᵀ; the book keeps W = weightᵀ, (d_in, d_out), so that a
// token row times W reads like the math: Q = X W_q.
struct Linear {
  Matrix W;                     // (d_in, d_out)
  std::optional<RowVector> b;   // (d_out), or none for bias=False

  int64_t d_in() const { return W.rows(); }
  int64_t d_out() const { return W.cols(); }
  int64_t parameter_count() const { return W.size() + (b ? b->size() : 0); }
};

// nn.Linear(d_in, d_out, bias): weight ~ U(-1/√d_in, 1/√d_in) (kaiming_uniform
// with a = √5 works out to that bound), drawn in PyTorch's (d_out, d_in)
// order, then the bias from the same interval.
Linear make_linear(Generator& gen, int64_t d_in, int64_t d_out, bool bias = true);
// Its two draws on their own, for a W (d_in, d_out) and a b (d_out) already
// allocated: a model that initialises its tensors one by one (chapter 7's
// parameter table) draws them in the same order as make_linear.
void init_linear_weight(Generator& gen, Matrix& W);
void init_linear_bias(Generator& gen, RowVector& b, int64_t d_in);

// The four projections of a multi-head attention layer, each
// nn.Linear(d_model, d_model), drawn in the order W_q, W_k, W_v, W_o.
struct AttentionParams {
  Linear W_q, W_k, W_v, W_o;
  int64_t parameter_count() const {
    return W_q.parameter_count() + W_k.parameter_count() + W_v.parameter_count() + W_o.parameter_count();
  }
};
AttentionParams make_attention_params(Generator& gen, int64_t d_model, bool bias = true);

// nn.Embedding(vocab, d_model).weight: every entry ~ N(0, 1).
Matrix make_embedding(Generator& gen, int64_t vocab, int64_t d_model);

}  // namespace sa
