#include "sa/nn.hpp"

#include <fmt/core.h>

#include <cmath>
#include <stdexcept>

namespace sa {

void init_linear_weight(Generator& gen, Matrix& W) {
  // torch.nn.init.kaiming_uniform_(weight, a=math.sqrt(5)), step by step in
  // double exactly as Python computes it, so the float bound is identical.
  const double a = std::sqrt(5.0);
  const double gain = std::sqrt(2.0 / (1.0 + a * a));
  const double std_dev = gain / std::sqrt(double(W.rows()));
  const double w_bound = std::sqrt(3.0) * std_dev;
  Matrix weight(W.cols(), W.rows());  // PyTorch's (d_out, d_in) layout, filled in PyTorch's order
  gen.uniform_(weight.data(), weight.size(), -w_bound, w_bound);
  W = weight.transpose();
}

void init_linear_bias(Generator& gen, RowVector& b, int64_t d_in) {
  const double b_bound = 1.0 / std::sqrt(double(d_in));
  gen.uniform_(b.data(), b.size(), -b_bound, b_bound);
}

Linear make_linear(Generator& gen, int64_t d_in, int64_t d_out, bool bias) {
  if (d_in < 1 || d_out < 1) throw std::invalid_argument(fmt::format("make_linear: sizes must be positive, got d_in {} and d_out {}", d_in, d_out));
  Linear layer;
  layer.W.resize(d_in, d_out);
  init_linear_weight(gen, layer.W);
  if (bias) {
    layer.b = RowVector(d_out);
    init_linear_bias(gen, *layer.b, d_in);
  }
  return layer;
}

AttentionParams make_attention_params(Generator& gen, int64_t d_model, bool bias) {
  // Separate statements: the order of the draws is the order of PyTorch's
  // module definition, and function arguments have no evaluation order.
  AttentionParams p;
  p.W_q = make_linear(gen, d_model, d_model, bias);
  p.W_k = make_linear(gen, d_model, d_model, bias);
  p.W_v = make_linear(gen, d_model, d_model, bias);
  p.W_o = make_linear(gen, d_model, d_model, bias);
  return p;
}

Matrix make_embedding(Generator& gen, int64_t vocab, int64_t d_model) {
  if (vocab < 1 || d_model < 1) throw std::invalid_argument(
        fmt::format("make_embedding: sizes must be positive, got vocab {} and d_model {}", vocab, d_model));
  return gen.randn(vocab, d_model);
}

}  // namespace sa
