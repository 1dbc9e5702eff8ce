// Hidden suite of chapter 4: split_heads, combine_heads, multi_head_attention.
// Values come from PyTorch (tests/reference/ch04_multi_head.py); the rest are
// hand-derived numbers and properties that hold for any input.
#include "04-multi-head/multihead.hpp"

#include "01-qkv-projection/qkv.hpp"
#include "sa/nn.hpp"
#include "sa/rng.hpp"
#include "sa/text.hpp"
#include "support/compare.hpp"
#include "support/fixtures.hpp"

#include "support/catch.hpp"
#include <fmt/core.h>

#include <cmath>
#include <string>
#include <vector>

using namespace sa;
using namespace sa::test;

namespace {

const Fixtures& fx() {
  static const Fixtures f("04-multi-head.txt");
  return f;
}

// Shape first, then every (b, h) slice as a matrix, so a failure names the
// sequence and the head: "weights[1, 2]: largest error ... at [3, 0]".
void require_close(const std::string& what, const Tensor4& actual, const Tensor4& expected, Tolerance tol) {
  require_shape(what, actual.shape(), expected.shape());
  for (int64_t b = 0; b < expected.batch(); ++b)
    for (int64_t h = 0; h < expected.heads(); ++h)
      sa::test::require_close(fmt::format("{}[{}, {}]", what, b, h), Matrix(actual.view(b, h)),
                              Matrix(expected.view(b, h)), tol);
}

// Every row of every (b, h) slice is a distribution: entries in [0, 1],
// sum 1 within `tol` (added in double, so the test adds no rounding).
void require_distributions(const std::string& what, const Tensor4& w, double tol) {
  for (int64_t b = 0; b < w.batch(); ++b)
    for (int64_t h = 0; h < w.heads(); ++h)
      for (int64_t i = 0; i < w.seq(); ++i) {
        double sum = 0;
        for (int64_t j = 0; j < w.dim(); ++j) {
          const float a = w(b, h, i, j);
          if (!(a >= 0.0f && a <= 1.0f))
            FAIL(fmt::format("{}[{}, {}]: entry [{}, {}] = {} is not a weight in [0, 1]", what, b, h, i, j, a));
          sum += a;
        }
        if (std::abs(sum - 1.0) > tol)
          FAIL(fmt::format("{}[{}, {}]: row {} sums to {:.9f}, not 1 (tolerance {:.0e})", what, b, h, i, sum, tol));
      }
  SUCCEED();
}

// X(r, c) = 100 r + c: every entry names its own position (exact in float).
Matrix numbered(int64_t rows, int64_t cols) {
  Matrix X(rows, cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) X(r, c) = float(100 * r + c);
  return X;
}

}  // namespace

// ---------------------------------------------------------------------------
// split_heads

TEST_CASE("split_heads: matches PyTorch's view + transpose", "[ch04][split_heads]") {
  // (2 * 3, 8) -> (2, 4, 3, 2). Splitting copies numbers and computes
  // nothing, so bit for bit.
  INFO("split_heads(X " << shape_str(fx().matrix("split.X")) << ", batch 2, n_heads 4)");  // a crash inside names it
  const Tensor4 heads = split_heads(fx().matrix("split.X"), 2, 4);
  require_close(fmt::format("split_heads(X {}, batch 2, n_heads 4)", shape_str(fx().matrix("split.X"))), heads,
                fx().tensor4("split.heads"), kBitExact);
}

TEST_CASE("split_heads: head h of sequence b is a column block of that sequence's rows", "[ch04][split_heads]") {
  const int64_t batch = 2, seq = 4, n_heads = 3, d_k = 2;
  const Matrix X = numbered(batch * seq, n_heads * d_k);
  const Tensor4 heads = [&] {
    INFO("split_heads(X (8, 6) numbered 100 * row + column, batch 2, n_heads 3)");
    return split_heads(X, batch, n_heads);
  }();
  require_shape("split_heads(X (8, 6), 2, 3)", heads.shape(), Shape{batch, n_heads, seq, d_k});
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < n_heads; ++h)
      for (int64_t s = 0; s < seq; ++s)
        for (int64_t d = 0; d < d_k; ++d) {
          INFO("split_heads(X (8, 6), batch 2, n_heads 3): heads[" << b << ", " << h << ", " << s << ", " << d
                                                                    << "] should be X[" << b * seq + s << ", "
                                                                    << h * d_k + d << "]");
          REQUIRE(heads(b, h, s, d) == X(b * seq + s, h * d_k + d));
        }
  // One sequence and one head: the head is X itself.
  {
    INFO("split_heads(X (8, 6), batch 1, n_heads 1): one sequence, one head");
    require_close("split_heads(X, 1, 1).view(0, 0)", Matrix(split_heads(X, 1, 1).view(0, 0)), X, kBitExact);
  }
  // As many heads as columns: d_k = 1, head h is column h.
  const Tensor4 columns = [&] {
    INFO("split_heads(X (8, 6), batch 1, n_heads 6): one head per column");
    return split_heads(X, 1, 6);
  }();
  require_shape("split_heads(X, 1, 6)", columns.shape(), Shape{1, 6, 8, 1});
  require_close("split_heads(X, 1, 6).view(0, 5)", Matrix(columns.view(0, 5)), Matrix(X.col(5)), kBitExact);
}

TEST_CASE("split_heads: refuses sizes that do not divide", "[ch04][split_heads]") {
  const Matrix X = Matrix::Ones(6, 8);
  CHECK_REFUSES("split_heads(X (6, 8), batch 1, n_heads 3): 8 columns do not split into 3 heads", split_heads(X, 1, 3),
                std::invalid_argument);
  CHECK_REFUSES("split_heads(X (6, 8), batch 4, n_heads 2): 6 rows do not make 4 sequences", split_heads(X, 4, 2),
                std::invalid_argument);
  CHECK_REFUSES("split_heads(X (6, 8), batch 1, n_heads 0)", split_heads(X, 1, 0), std::invalid_argument);
  CHECK_REFUSES("split_heads(X (6, 8), batch 0, n_heads 2)", split_heads(X, 0, 2), std::invalid_argument);
  CHECK_REFUSES("split_heads(X (6, 8), batch -2, n_heads 2)", split_heads(X, -2, 2), std::invalid_argument);
  CHECK_REFUSES("split_heads(X (6, 8), batch 2, n_heads -4)", split_heads(X, 2, -4), std::invalid_argument);
}

// ---------------------------------------------------------------------------
// combine_heads

TEST_CASE("combine_heads: matches PyTorch's transpose + reshape", "[ch04][combine_heads]") {
  // (3, 2, 4, 5) -> (3 * 4, 2 * 5): copies only, bit for bit.
  const Matrix X = [&] {
    INFO("combine_heads(heads " << shape_str(fx().tensor4("combine.heads").shape()) << ")");
    return combine_heads(fx().tensor4("combine.heads"));
  }();
  require_close(fmt::format("combine_heads(heads {})", shape_str(fx().tensor4("combine.heads").shape())), X,
                fx().matrix("combine.X"), kBitExact);
}

TEST_CASE("combine_heads(split_heads(X)) == X exactly", "[ch04][combine_heads]") {
  Generator gen(4);
  struct Case {
    int64_t batch, seq, n_heads, d_k;
  };
  for (const Case c : {Case{1, 6, 4, 16}, Case{3, 5, 2, 3}, Case{2, 1, 8, 1}, Case{4, 7, 1, 5}}) {
    const Matrix X = gen.randn(c.batch * c.seq, c.n_heads * c.d_k);
    const std::string what = fmt::format("combine_heads(split_heads(X {}, {}, {}))", shape_str(X), c.batch, c.n_heads);
    // Two reorderings that undo each other: nothing is computed, so the
    // round trip must give back the very same bits.
    INFO(what);  // (a crash inside names its input)
    require_close(what, combine_heads(split_heads(X, c.batch, c.n_heads)), X, kBitExact);
  }
  // And the other way round: split_heads(combine_heads(T)) == T.
  const Tensor4 T = fx().tensor4("combine.heads");
  INFO("split_heads(combine_heads(T " << shape_str(T.shape()) << "), batch 3, n_heads 2)");
  require_close("split_heads(combine_heads(T), 3, 2)", split_heads(combine_heads(T), T.batch(), T.heads()), T,
                kBitExact);
}

// ---------------------------------------------------------------------------
// multi_head_attention

TEST_CASE("multi_head_attention: a batch of 3 sequences matches PyTorch", "[ch04][multi_head_attention]") {
  const AttentionParams params = fx().attention_params("batch");
  const Matrix X = fx().matrix("batch.X_q");  // 3 sequences of 5 tokens, d_model 16
  const std::string call = fmt::format("multi_head_attention(X {}, batch 3, n_heads 4)", shape_str(X));
  const MultiHead mh = [&] {
    INFO(call);  // for an exception thrown inside
    return multi_head_attention(X, X, 3, params, 4);
  }();
  // Products of 16 terms, a softmax over 5 keys, 4 more products: float32
  // summation order is the only difference from PyTorch.
  require_close(call + ".weights (batch, n_heads, seq_q, seq_k)", mh.weights, fx().tensor4("batch.weights"),
                kFloat32);
  require_close(call + ".output (batch * seq, d_model)", mh.output, fx().matrix("batch.output"), kFloat32);
}

TEST_CASE("multi_head_attention: cross-attention, 4 queries over 7 keys", "[ch04][multi_head_attention]") {
  const AttentionParams params = fx().attention_params("cross");
  const Matrix X_q = fx().matrix("cross.X_q");    // 2 sequences of 4 queries, d_model 12
  const Matrix X_kv = fx().matrix("cross.X_kv");  // 2 sequences of 7 keys/values
  const std::string call = fmt::format("multi_head_attention(X_q {}, X_kv {}, batch 2, n_heads 3)", shape_str(X_q),
                                       shape_str(X_kv));
  const MultiHead mh = [&] {
    INFO(call);  // for an exception thrown inside
    return multi_head_attention(X_q, X_kv, 2, params, 3);
  }();
  // Same operations as the batch case, at most 12-term sums: kFloat32.
  require_close(call + ".weights (batch, n_heads, seq_q, seq_k)", mh.weights, fx().tensor4("cross.weights"),
                kFloat32);
  require_close(call + ".output (batch * seq_q, d_model)", mh.output, fx().matrix("cross.output"), kFloat32);
}

TEST_CASE("multi_head_attention: the chapter's running example from the seed", "[ch04][multi_head_attention]") {
  // The program's path: "the cat sat on the mat", seed 42, d_model 64,
  // 4 heads; the embedding table, then W_q, W_k, W_v, W_o, then 10 + 50
  // random rows for the cross-attention, all from one generator.
  const auto tokens = tokenize("the cat sat on the mat");
  const Vocabulary vocab(tokens);
  Generator gen(42);
  const Matrix table = make_embedding(gen, vocab.size(), 64);
  const AttentionParams params = make_attention_params(gen, 64);
  // Drawn from the seed, not computed: bit for bit (W_o's bias is the last
  // draw of the four layers, so every draw before it came in PyTorch's order).
  require_close("b_q", Matrix(*params.W_q.b), fx().matrix("run.W_q.b"), kBitExact);
  require_close("b_o", Matrix(*params.W_o.b), fx().matrix("run.W_o.b"), kBitExact);
  const Matrix X = embed(table, vocab.ids(tokens)) + positional_encoding(int64_t(tokens.size()), 64);
  require_close("X = E + PE", X, fx().matrix("run.X_q"), kElementwise);

  const MultiHead mh = [&] {
    INFO("multi_head_attention(X (6, 64), batch 1, n_heads 4)");  // for an exception thrown inside
    return multi_head_attention(X, X, 1, params, 4);
  }();
  // 64-term products and scores of a few units: float32 ordering only.
  INFO("split_heads(linear(X, W_q) (6, 64), batch 1, n_heads 4) of the running example");
  require_close("split_heads(linear(X, W_q) (6, 64), batch 1, n_heads 4)", split_heads(linear(X, params.W_q), 1, 4),
                fx().tensor4("run.Q_heads"), kFloat32);
  require_close("multi_head_attention(X (6, 64), batch 1, n_heads 4).weights (1, 4, 6, 6)", mh.weights,
                fx().tensor4("run.weights"), kFloat32);
  require_close("multi_head_attention(X (6, 64), batch 1, n_heads 4).output (6, 64)", mh.output,
                fx().matrix("run.output"), kFloat32);

  const Matrix X_dec = gen.randn(10, 64), X_enc = gen.randn(50, 64);
  const MultiHead cross = [&] {
    INFO("multi_head_attention(X_q (10, 64), X_kv (50, 64), batch 1, n_heads 4)");  // for an exception thrown inside
    return multi_head_attention(X_dec, X_enc, 1, params, 4);
  }();
  require_close("multi_head_attention(X_q (10, 64), X_kv (50, 64), batch 1, n_heads 4).weights (1, 4, 10, 50)",
                cross.weights, fx().tensor4("run.cross.weights"), kFloat32);
  require_close("multi_head_attention(X_q (10, 64), X_kv (50, 64), batch 1, n_heads 4).output (10, 64)",
                cross.output, fx().matrix("run.cross.output"), kFloat32);
}

TEST_CASE("multi_head_attention: every head's weight rows sum to 1", "[ch04][multi_head_attention]") {
  Generator gen(11);
  const AttentionParams params = make_attention_params(gen, 24);
  const Matrix X_q = gen.randn(3 * 5, 24), X_kv = gen.randn(3 * 9, 24);
  const MultiHead self = [&] {
    INFO("multi_head_attention(X (15, 24), batch 3, n_heads 6)");  // for an exception thrown inside
    return multi_head_attention(X_q, X_q, 3, params, 6);
  }();
  const std::string self_call = "multi_head_attention(X (15, 24), batch 3, n_heads 6).weights";
  require_shape(self_call, self.weights.shape(), Shape{3, 6, 5, 5});
  require_distributions(self_call, self.weights, 1e-5);  // float32 softmax rows: a few ulps
  const MultiHead cross = [&] {
    INFO("multi_head_attention(X_q (15, 24), X_kv (27, 24), batch 3, n_heads 6)");  // for an exception thrown inside
    return multi_head_attention(X_q, X_kv, 3, params, 6);
  }();
  const std::string cross_call = "multi_head_attention(X_q (15, 24), X_kv (27, 24), batch 3, n_heads 6)";
  require_shape(cross_call + ".weights", cross.weights.shape(), Shape{3, 6, 5, 9});
  require_shape(cross_call + ".output", cross.output, 15, 24);
  require_distributions(cross_call + ".weights", cross.weights, 1e-5);
}

TEST_CASE("multi_head_attention: a custom HeadAttention runs once per (sequence, head)",
          "[ch04][multi_head_attention]") {
  // What chapters 5 and 6 rely on: their masked or dropout attention is
  // called with each head's Q, K and V and the sequence index, and what it
  // returns is what multi_head_attention uses.
  const int64_t batch = 2, seq_q = 3, seq_k = 5, n_heads = 4, d_model = 8, d_k = 2;
  Generator gen(5);
  const AttentionParams params = make_attention_params(gen, d_model);
  const Matrix X_q = gen.randn(batch * seq_q, d_model), X_kv = gen.randn(batch * seq_k, d_model);
  // The heads the custom attention should see, computed independently of
  // split_heads: column block h of sequence b's rows of X W + b.
  const Matrix Q = X_q * params.W_q.W + params.W_q.b->replicate(batch * seq_q, 1);
  const Matrix K = X_kv * params.W_k.W + params.W_k.b->replicate(batch * seq_k, 1);
  auto head_of = [&](const Matrix& M, int64_t seq, int64_t b, int64_t h) {
    return Matrix(M.block(b * seq, h * d_k, seq, d_k));
  };

  std::vector<std::vector<int>> calls(batch, std::vector<int>(n_heads, 0));
  int unknown = 0;
  auto spy = [&](const Matrix& q, const Matrix& k, const Matrix& v, int64_t b) {
    INFO("the head attention was called with sequence index b = " << b << "; batch 2, n_heads 4, d_k 2, seq_q 3, "
                                                                     "seq_k 5");
    REQUIRE(b >= 0);
    REQUIRE(b < batch);
    require_shape("Q of one head (seq_q, d_k)", q, seq_q, d_k);
    require_shape("K of one head (seq_k, d_k)", k, seq_k, d_k);
    require_shape("V of one head (seq_k, d_k)", v, seq_k, d_k);
    // Which head is this? Its Q must be one of sequence b's column blocks
    // (float32 tolerance: the projection may be summed in another order).
    int64_t h = -1;
    for (int64_t c = 0; c < n_heads; ++c)
      if ((q - head_of(Q, seq_q, b, c)).cwiseAbs().maxCoeff() < 1e-5f &&
          (k - head_of(K, seq_k, b, c)).cwiseAbs().maxCoeff() < 1e-5f)
        h = c;
    if (h < 0) {
      ++unknown;
      h = 0;
    } else {
      ++calls[size_t(b)][size_t(h)];
    }
    // Recognisable results: weights all 10 b + h, output all 0.
    return Attention{Matrix::Zero(seq_q, d_k), Matrix::Constant(seq_q, seq_k, float(10 * b + h))};
  };
  const MultiHead mh = [&] {
    INFO("multi_head_attention(X_q (6, 8), X_kv (10, 8), batch 2, n_heads 4) with a spy as the head attention");
    return multi_head_attention(X_q, X_kv, batch, params, n_heads, spy);
  }();

  if (unknown != 0)
    FAIL_CHECK(unknown << " call(s) of the head attention got a Q and K that are no head of that sequence"
                       << " (batch 2, n_heads 4, d_model 8, d_k 2): expected each call to get one head's Q and K");
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < n_heads; ++h)
      if (const int n = calls[size_t(b)][size_t(h)]; n != 1)
        FAIL_CHECK("the head attention was called " << n << " time(s) for sequence " << b << ", head " << h
                                                    << " (batch 2, n_heads 4): expected once");
  // The custom weights land in weights[b, h] untouched.
  require_shape("weights", mh.weights.shape(), Shape{batch, n_heads, seq_q, seq_k});
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < n_heads; ++h)
      require_close(fmt::format("weights[{}, {}]", b, h), Matrix(mh.weights.view(b, h)),
                    Matrix::Constant(seq_q, seq_k, float(10 * b + h)), kBitExact);
  // Heads that output 0 leave only W_o's bias: 0 W_o + b_o = b_o exactly.
  require_close("multi_head_attention(X_q (6, 8), X_kv (10, 8), batch 2, n_heads 4).output when every head "
                "returns 0",
                mh.output, params.W_o.b->replicate(batch * seq_q, 1), kBitExact);
}

TEST_CASE("multi_head_attention: one head of width d_model is chapter 3's attention, then W_o",
          "[ch04][multi_head_attention]") {
  Generator gen(6);
  const AttentionParams params = make_attention_params(gen, 16);
  const Matrix X = gen.randn(7, 16);
  const MultiHead mh = [&] {
    INFO("multi_head_attention(X (7, 16), batch 1, n_heads 1)");
    return multi_head_attention(X, X, 1, params, 1);
  }();
  const QKV qkv = project_qkv(X, params.W_q, params.W_k, params.W_v);
  const Attention single = attention(qkv.Q, qkv.K, qkv.V);
  // The same operations on the same numbers; kFloat32 only in case a
  // product is blocked differently.
  require_close("multi_head_attention(X (7, 16), batch 1, n_heads 1).weights[0, 0] vs attention",
                Matrix(mh.weights.view(0, 0)), single.weights, kFloat32);
  require_close("multi_head_attention(X (7, 16), batch 1, n_heads 1).output vs linear(attention output, W_o)",
                mh.output, linear(single.output, params.W_o), kFloat32);
}

TEST_CASE("multi_head_attention: the sequences of a batch never see each other", "[ch04][multi_head_attention]") {
  Generator gen(7);
  const AttentionParams params = make_attention_params(gen, 12);
  const Matrix X = gen.randn(2 * 4, 12);  // two sequences of 4 tokens
  const MultiHead both = [&] {
    INFO("multi_head_attention(X (8, 12), batch 2, n_heads 3)");
    return multi_head_attention(X, X, 2, params, 3);
  }();
  const Matrix second = X.bottomRows(4);
  const MultiHead alone = [&] {
    INFO("multi_head_attention(sequence 1 alone (4, 12), batch 1, n_heads 3)");
    return multi_head_attention(second, second, 1, params, 3);
  }();
  // Sequence 1 in the batch = sequence 1 on its own; kFloat32 because a
  // product over more rows may be blocked (summed) differently.
  for (int64_t h = 0; h < 3; ++h)
    require_close(fmt::format("multi_head_attention(X (8, 12), batch 2, n_heads 3).weights[1, {}] vs sequence 1 alone "
                              "(batch 1)",
                              h),
                  Matrix(both.weights.view(1, h)), Matrix(alone.weights.view(0, h)), kFloat32);
  require_close("multi_head_attention(X (8, 12), batch 2, n_heads 3).output rows 4..7 vs sequence 1 alone (batch 1)",
                Matrix(both.output.bottomRows(4)), alone.output, kFloat32);
}

TEST_CASE("multi_head_attention: refuses sizes that do not divide", "[ch04][multi_head_attention]") {
  Generator gen(8);
  const AttentionParams params = make_attention_params(gen, 12);
  const Matrix X = gen.randn(6, 12);
  CHECK_REFUSES("multi_head_attention(X (6, 12), batch 1, n_heads 5): d_model 12 does not split into 5 heads",
                multi_head_attention(X, X, 1, params, 5), std::invalid_argument);
  CHECK_REFUSES("multi_head_attention(X (6, 12), batch 1, n_heads 0)", multi_head_attention(X, X, 1, params, 0),
                std::invalid_argument);
  CHECK_REFUSES("multi_head_attention(X (6, 12), batch 4, n_heads 3): 6 rows do not make 4 sequences",
                multi_head_attention(X, X, 4, params, 3), std::invalid_argument);
  CHECK_REFUSES(
      "multi_head_attention(queries (6, 12), keys and values (7, 12), batch 2, n_heads 3): 7 rows do not make 2 "
      "sequences",
      multi_head_attention(X, gen.randn(7, 12), 2, params, 3), std::invalid_argument);
  CHECK_REFUSES("multi_head_attention(X (6, 12), batch 0, n_heads 3)", multi_head_attention(X, X, 0, params, 3),
                std::invalid_argument);
}

TEST_CASE("multi_head_attention: a head attention that returns the wrong shapes is refused",
          "[ch04][multi_head_attention]") {
  Generator gen(6);
  const AttentionParams params = make_attention_params(gen, 8);
  const Matrix X = gen.randn(6, 8);  // 2 sequences of 3 tokens, d_model 8
  // One head drops a query row, another returns an output one column too wide.
  auto short_weights = [](const Matrix& q, const Matrix& k, const Matrix& v, int64_t) {
    Attention a = attention(q, k, v);
    a.weights = Matrix(a.weights.topRows(a.weights.rows() - 1));
    return a;
  };
  auto wide_output = [](const Matrix& q, const Matrix& k, const Matrix& v, int64_t) {
    Attention a = attention(q, k, v);
    a.output = Matrix::Zero(a.output.rows(), a.output.cols() + 1);
    return a;
  };
  CHECK_REFUSES(
      "multi_head_attention(X (6, 8), batch 2, n_heads 2) with a head attention whose weights lack a query row",
      multi_head_attention(X, X, 2, params, 2, short_weights), std::invalid_argument);
  CHECK_REFUSES(
      "multi_head_attention(X (6, 8), batch 2, n_heads 2) with a head attention whose output has one column too many",
      multi_head_attention(X, X, 2, params, 2, wide_output), std::invalid_argument);
}
