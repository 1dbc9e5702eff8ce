// Chapter 4, steps 1 to 3: the running example and the four layers, Q, K
// and V projected once for all heads, and the split into heads (a view of
// the same numbers, then split_heads's contiguous copy).
#include "01-qkv-projection/qkv.hpp"
#include "04-multi-head/multihead.hpp"
#include "04-multi-head/steps.hpp"

#include "01-qkv-projection/running_example.hpp"
#include "sa/print.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <string>

namespace sa::ch4 {

namespace {

// "[0.1234, -0.5678]": n consecutive floats.
std::string values_str(const float* p, int64_t n) {
  std::string s = "[";
  for (int64_t i = 0; i < n; ++i) s += (i ? ", " : "") + format_value(p[i]);
  return s + "]";
}

}  // namespace

// "  Q[0, 2, 16:20]               = [...]   note", labels aligned.
void values_line(const std::string& label, const float* p, int64_t n, const std::string& note) {
  fmt::print("  {:<28} = {}{}\n", label, values_str(p, n), note.empty() ? "" : "   " + note);
}

const char* yes_no(bool b) { return b ? "yes" : "no"; }

Input input_and_layers(Generator& gen, const Options& o, const std::vector<std::string>& tokens) {
  Input in;
  in.tokens = tokens;
  in.seq_len = int64_t(tokens.size());
  in.d_model = o.d_model;
  in.n_heads = o.n_heads;
  in.d_k = o.d_model / o.n_heads;
  const int64_t seq_len = in.seq_len, d_model = in.d_model, d_k = in.d_k;
  const EmbeddedText text = embed_text(gen, tokens, d_model);
  in.X = text.X;
  in.params = make_attention_params(gen, d_model);
  fmt::print("  tokens  {}\n", tokens);
  print_shape("X = E + PE", {1, seq_len, d_model}, "(batch, seq, d_model), built as in chapter 1");
  for (const char* name : {"W_q", "W_k", "W_v", "W_o"})
    print_shape(name, {d_model, d_model},
                fmt::format("nn.Linear({}, {}), plus a bias of {}", d_model, d_model, d_model));
  say(fmt::format("Four layers of the same size, drawn in the order W_q, W_k, W_v, W_o like a PyTorch module that "
                  "defines them in that order. There is no per-head matrix anywhere: head h will own {} of W_q, "
                  "W_k and W_v, and the matching rows of W_o.",
                  d_k == 1 ? std::string("column h") : fmt::format("columns {}h to {}h+{}", d_k, d_k, d_k - 1)));
  return in;
}

QKV project_once(const Input& in) {
  const int64_t seq_len = in.seq_len, d_model = in.d_model, n_heads = in.n_heads, d_k = in.d_k;
  const QKV qkv = project_qkv(in.X, in.params.W_q, in.params.W_k, in.params.W_v);
  print_tensor("Q = X W_q + b_q", qkv.Q, {1, seq_len, d_model}, wide);
  print_shape("K = X W_k + b_k", {1, seq_len, d_model});
  print_shape("V = X W_v + b_v", {1, seq_len, d_model});
  if (n_heads > 1)
    say(fmt::format("One product with a ({0}, {0}) matrix, chapter 1's project_qkv, instead of {1} products with "
                    "({0}, {2}) matrices. The result is the same: column j of Q depends only on column j of W_q.",
                    d_model, n_heads, d_k));
  else
    say("With one head this is exactly chapter 1's projection; with more heads it would still be one product.");
  return qkv;
}

Heads split_into_heads(const Input& in, const QKV& qkv) {
  const int64_t seq_len = in.seq_len, d_model = in.d_model, n_heads = in.n_heads, d_k = in.d_k;
  const Matrix& Q = qkv.Q;
  const auto [h1, r2, show, c0] = example_element(in);
  auto strides_line = [](const std::string& what, const Shape& shape, const Shape& strides) {
    fmt::print("  {:<22} shape {:<16} strides {}\n", what, shape_str(shape), shape_str(strides));
  };
  strides_line("Q", {1, seq_len, d_model}, {seq_len * d_model, d_model, 1});
  strides_line(fmt::format(".view(1, {}, {}, {})", seq_len, n_heads, d_k), {1, seq_len, n_heads, d_k},
               {seq_len * d_model, d_model, d_k, 1});
  strides_line(".transpose(1, 2)", {1, n_heads, seq_len, d_k}, {seq_len * d_model, d_k, d_model, 1});
  say(fmt::format("That is PyTorch's split: the view cuts each row of {} into {} of {}, the "
                  "transpose swaps the seq and head dimensions. Neither moves a number; only the strides change. "
                  "Element [b, h, s, d] lives at offset b*{} + h*{} + s*{} + d of Q's storage.",
                  count_of(d_model, "number"),
                  n_heads == 1 ? std::string("one piece") : fmt::format("{} pieces", n_heads), d_k, seq_len * d_model,
                  d_k, d_model));
  // Head h1 of Q as an Eigen view: a rectangle of Q, no copy.
  const auto head_view = Q.block(0, c0, seq_len, d_k);
  const float* q_elem = &Q(r2, c0);
  const float* v_elem = head_view.data() + r2 * head_view.outerStride();  // the view's row r2, column 0
  gap();
  values_line(fmt::format("Q[0, {}, {}:{}]", r2, c0, c0 + show), q_elem, show,
              fmt::format("offset {} in Q", q_elem - Q.data()));
  values_line(fmt::format("head {} view, row {} [0:{}]", h1, r2, show), v_elem, show,
              fmt::format("offset {} in Q, same address: {}", v_elem - Q.data(), yes_no(v_elem == q_elem)));
  fmt::print("  the view's row stride: {} (the seq stride above), its shape ({}, {})\n",
             count_of(head_view.outerStride(), "float"), head_view.rows(), head_view.cols());

  const Tensor4 Q_h = split_heads(Q, 1, n_heads);
  const Tensor4 K_h = split_heads(qkv.K, 1, n_heads);
  const Tensor4 V_h = split_heads(qkv.V, 1, n_heads);
  fmt::print("\n");
  print_shape("Q_h = split_heads(Q, 1, n_heads)", Q_h.shape(), "(batch, n_heads, seq, d_k)");
  print_shape("K_h", K_h.shape());
  print_shape("V_h", V_h.shape());
  const float* t_elem = Q_h.view(0, h1).data() + r2 * d_k;  // row r2 of head h1's contiguous block
  bool all_equal = true;  // every head equals its column block, bit for bit
  for (int64_t h = 0; h < n_heads; ++h) all_equal = all_equal && Q_h.view(0, h) == Q.block(0, h * d_k, seq_len, d_k);
  values_line(fmt::format("Q_h[0, {}, {}, 0:{}]", h1, r2, show), t_elem, show,
              fmt::format("offset {} in Q_h: a copy", t_elem - Q_h.data()));
  fmt::print("  every head equal to its column block of Q, bit for bit: {}\n", yes_no(all_equal));
  fmt::print("  Q_h.view(0, {}) points into Q_h's storage (no copy): {}\n", h1,
             yes_no(Q_h.view(0, h1).data() == Q_h.data() + h1 * seq_len * d_k));
  say(fmt::format("split_heads goes one step further than the view: it moves the numbers once so that each head "
                  "is one contiguous ({}, {}) block (strides {}, what PyTorch's .contiguous() would give). The "
                  "values are copied, never computed: the same bits. From then on view(b, h) is a plain Eigen map "
                  "of a head, and no later step copies to reshape.",
                  seq_len, d_k, shape_str(Shape{n_heads * seq_len * d_k, seq_len * d_k, d_k, 1})));
  print_tensor(fmt::format("head {} of Q = Q_h.view(0, {})", h1, h1), Matrix(Q_h.view(0, h1)), {seq_len, d_k}, wide);
  return {Q_h, K_h, V_h};
}

}  // namespace sa::ch4
