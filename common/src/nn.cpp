#include "sa/nn.hpp"

#include <cmath>
#include <stdexcept>

namespace sa {

Linear make_linear(Generator& gen, int64_t d_in, int64_t d_out, bool bias) {
  if (d_in < 1 || d_out < 1) throw std::invalid_argument("make_linear: sizes must be positive");
  // torch.nn.init.kaiming_uniform_(weight, a=math.sqrt(5)), step by step in
  // double exactly as Python computes it, so the float bound is identical.
  const double a = std::sqrt(5.0);
  const double gain = std::sqrt(2.0 / (1.0 + a * a));
  const double std_dev = gain / std::sqrt(double(d_in));
  const double w_bound = std::sqrt(3.0) * std_dev;

  Linear layer;
  Matrix weight(d_out, d_in);  // PyTorch's layout, filled in PyTorch's order
  gen.uniform_(weight.data(), weight.size(), -w_bound, w_bound);
  layer.W = weight.transpose();
  if (bias) {
    const double b_bound = 1.0 / std::sqrt(double(d_in));
    RowVector b(d_out);
    gen.uniform_(b.data(), b.size(), -b_bound, b_bound);
    layer.b = b;
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
  if (vocab < 1 || d_model < 1) throw std::invalid_argument("make_embedding: sizes must be positive");
  return gen.randn(vocab, d_model);
}

}  // namespace sa
