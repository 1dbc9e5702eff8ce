// Hidden suite of chapter 1: context_vector, simple_attention, embed,
// positional_encoding, linear, project_qkv. Values come from PyTorch
// (tests/reference/ch01_qkv_projection.py) and from hand derivations.
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

using namespace sa;
using namespace sa::test;

namespace {

const Fixtures& fx() {
  static const Fixtures f("01-qkv-projection.txt");
  return f;
}

}  // namespace

// Attention without weights. Tolerance kFloat32: a score is a sum of 3 to
// 5 float products and a weight one exp and a division, so float32 against
// PyTorch's float32 differs by about 1e-7; a forgotten softmax, a softmax
// along the wrong axis, a wrong row or an index off by one moves a weight or
// a context entry by 0.01 or more (checked with each of those mistakes).
TEST_CASE("context_vector: every query of the six toy vectors matches PyTorch", "[ch01][context_vector]") {
  const Matrix X = fx().matrix("simple.toy.X");
  const Matrix expected = fx().matrix("simple.toy.context");
  for (int64_t i = 0; i < X.rows(); ++i) {
    const std::string call = fmt::format("context_vector(the six toy vectors (6, 3), query_index {})", i);
    INFO(call);  // (a crash inside names its input)
    require_close(call, Matrix(context_vector(X, i)), Matrix(expected.row(i)), kFloat32);
  }
}

TEST_CASE("context_vector: every query of seven random 5-number vectors matches PyTorch", "[ch01][context_vector]") {
  const Matrix X = fx().matrix("simple.rand.X");
  const Matrix expected = fx().matrix("simple.rand.context");
  for (int64_t i = 0; i < X.rows(); ++i) {
    const std::string call = fmt::format("context_vector(X (7, 5) from randn, query_index {})", i);
    INFO(call);
    require_close(call, Matrix(context_vector(X, i)), Matrix(expected.row(i)), kFloat32);
  }
}

TEST_CASE("context_vector: hand-derived values for two unit vectors", "[ch01][context_vector]") {
  // X = [[1, 0], [0, 1]]. Query 0 scores 1 against itself and 0 against
  // token 1, so its weights are e / (e + 1) and 1 / (e + 1), and its context
  // is those two weights (each row of X is one unit vector).
  Matrix X(2, 2);
  X << 1, 0, 0, 1;
  const double e = std::exp(1.0);
  Matrix expected(1, 2);
  expected << float(e / (e + 1)), float(1 / (e + 1));
  {
    INFO("context_vector(X = [[1, 0], [0, 1]], query_index 0)");
    require_close("context_vector(X = [[1, 0], [0, 1]], query_index 0)", Matrix(context_vector(X, 0)), expected,
                  kFloat32);
  }
  Matrix expected_1(1, 2);
  expected_1 << float(1 / (e + 1)), float(e / (e + 1));
  INFO("context_vector(X = [[1, 0], [0, 1]], query_index 1)");
  require_close("context_vector(X = [[1, 0], [0, 1]], query_index 1)", Matrix(context_vector(X, 1)), expected_1,
                kFloat32);
}

TEST_CASE("context_vector: one token attends only to itself", "[ch01][context_vector]") {
  // One key: its weight is 1 whatever the score, so the context is the row itself.
  Matrix X(1, 3);
  X << 0.5f, -2.0f, 3.0f;
  INFO("context_vector(X = [[0.5, -2, 3]], query_index 0)");
  require_close("context_vector(X = [[0.5, -2, 3]], query_index 0)", Matrix(context_vector(X, 0)), X, kFloat32);
}

TEST_CASE("context_vector: a zero query weighs every token alike, so its context is the mean row",
          "[ch01][context_vector]") {
  // The zero vector is orthogonal to every key: all scores 0, all weights
  // 1/seq_len. Row 2 is the query; the other rows differ in length.
  Matrix X(4, 3);
  X << 1, 2, 0,  //
      -1, 0, 3,  //
      0, 0, 0,   //
      2, 1, 1;
  const Matrix mean = X.colwise().mean();
  INFO("context_vector(X (4, 3) whose row 2 is zero, query_index 2)");
  require_close("context_vector(X (4, 3) whose row 2 is zero, query_index 2)", Matrix(context_vector(X, 2)), mean,
                kFloat32);
}

TEST_CASE("context_vector: a query_index outside the tokens is refused", "[ch01][context_vector]") {
  const Matrix X = Matrix::Ones(3, 2);
  CHECK_REFUSES("context_vector(X (3, 2), query_index 3): X has rows 0 to 2", context_vector(X, 3), std::out_of_range);
  CHECK_REFUSES("context_vector(X (3, 2), query_index -1)", context_vector(X, -1), std::out_of_range);
  CHECK_REFUSES("context_vector(X (0, 2), query_index 0): X has no rows", context_vector(Matrix(0, 2), 0),
                std::out_of_range);
}

TEST_CASE("simple_attention: weights and context of the six toy vectors match PyTorch", "[ch01][simple_attention]") {
  const Matrix X = fx().matrix("simple.toy.X");
  INFO("simple_attention(the six toy vectors (6, 3))");
  const SimpleAttention a = simple_attention(X);
  require_close("simple_attention(the six toy vectors (6, 3)).weights", a.weights, fx().matrix("simple.toy.weights"),
                kFloat32);
  require_close("simple_attention(the six toy vectors (6, 3)).context", a.context, fx().matrix("simple.toy.context"),
                kFloat32);
}

TEST_CASE("simple_attention: weights and context of seven random vectors match PyTorch", "[ch01][simple_attention]") {
  const Matrix X = fx().matrix("simple.rand.X");
  INFO("simple_attention(X (7, 5) from randn)");
  const SimpleAttention a = simple_attention(X);
  require_close("simple_attention(X (7, 5) from randn).weights", a.weights, fx().matrix("simple.rand.weights"),
                kFloat32);
  require_close("simple_attention(X (7, 5) from randn).context", a.context, fx().matrix("simple.rand.context"),
                kFloat32);
}

TEST_CASE("simple_attention: each row of weights is positive and sums to 1", "[ch01][simple_attention]") {
  // Row i holds query i's weights over the keys. A softmax taken down the
  // columns instead gives columns that sum to 1 and rows that do not.
  const Matrix X = fx().matrix("simple.rand.X");
  const Matrix W = [&] {
    INFO("simple_attention(X (7, 5) from randn)");
    return simple_attention(X).weights;
  }();
  require_shape("simple_attention(X (7, 5)).weights", W, 7, 7);
  require_close("row sums of simple_attention(X (7, 5) from randn).weights", Matrix(W.rowwise().sum()),
                Matrix::Ones(7, 1), kFloat32);
  INFO("simple_attention(X (7, 5) from randn).weights: every weight is exp(score) / (a sum of exps)");
  CHECK(W.minCoeff() > 0.0f);
}

TEST_CASE("simple_attention: one token, and equal rows", "[ch01][simple_attention]") {
  Matrix one(1, 3);
  one << 0.5f, -2.0f, 3.0f;
  const SimpleAttention a = [&] {
    INFO("simple_attention(X = [[0.5, -2, 3]])");
    return simple_attention(one);
  }();
  require_close("simple_attention(X = [[0.5, -2, 3]]).weights", a.weights, Matrix::Ones(1, 1), kFloat32);
  require_close("simple_attention(X = [[0.5, -2, 3]]).context", a.context, one, kFloat32);
  // Two equal rows are the same query, key and value: their context rows
  // are equal too (the toy sentence's two "the"s).
  INFO("simple_attention(the six toy vectors (6, 3))");
  const SimpleAttention toy = simple_attention(fx().matrix("simple.toy.X"));
  require_close("simple_attention(the six toy vectors).context, row 4 (\"the\") against row 0 (\"the\")",
                Matrix(toy.context.row(4)), Matrix(toy.context.row(0)), kFloat32);
}

TEST_CASE("embed: looks up one row per id, repeats included", "[ch01][embed]") {
  const Matrix table = fx().matrix("embed.table");
  const auto& ids = fx().i64("embed.ids");
  std::string id_list;
  for (int64_t id : ids) id_list += (id_list.empty() ? "" : ", ") + std::to_string(id);
  const Matrix X = [&] {
    INFO("embed(table " << shape_str(table) << ", ids [" << id_list << "])");  // a crash inside names its input
    return embed(table, ids);
  }();
  // A lookup copies: bit for bit, no arithmetic.
  require_close(fmt::format("embed(table {}, {} ids)", shape_str(table), ids.size()), X, fx().matrix("embed.out"),
                kBitExact);
}

TEST_CASE("embed: an id outside the table is refused", "[ch01][embed]") {
  const Matrix table = Matrix::Zero(4, 3);
  CHECK_REFUSES("embed(table (4, 3), ids [0, 4]): the table has ids 0 to 3", embed(table, {0, 4}), std::out_of_range);
  CHECK_REFUSES("embed(table (4, 3), ids [-1])", embed(table, {-1}), std::out_of_range);
  INFO("embed(table (4, 3), no ids)");
  require_shape("embed(table (4, 3), no ids)", embed(table, {}), 0, 3);
}

// The header's precision contract: float or double arithmetic. The fixture is
// computed in float64 and rounded once; an angle pos / 10000^(2i/d_model)
// computed in float32 is off by up to 50 * 2^-24 * a few = about 4e-6 at
// position 49, and sin/cos pass that on. 2e-5 leaves a margin of 5 and is
// still 4 orders of magnitude below what a wrong formula moves.
constexpr Tolerance kPositional{2e-5, 0.0};

TEST_CASE("positional_encoding: matches the sinusoid formula", "[ch01][positional_encoding]") {
  // (Each INFO names the call to come: a crash inside says which one.)
  {
    INFO("positional_encoding(seq_len 50, d_model 64)");
    require_close("positional_encoding(50, 64)", positional_encoding(50, 64), fx().matrix("pe.50x64"), kPositional);
  }
  {
    INFO("positional_encoding(seq_len 7, d_model 7), an odd d_model");
    require_close("positional_encoding(7, 7) (odd d_model)", positional_encoding(7, 7), fx().matrix("pe.7x7"),
                  kPositional);
  }
  INFO("positional_encoding(seq_len 1, d_model 1)");
  require_close("positional_encoding(1, 1)", positional_encoding(1, 1), fx().matrix("pe.1x1"), kPositional);
}

TEST_CASE("positional_encoding: seq_len 0 is empty, a negative seq_len or d_model < 1 is refused",
          "[ch01][positional_encoding]") {
  {
    INFO("positional_encoding(seq_len 0, d_model 8)");
    require_shape("positional_encoding(0, 8)", positional_encoding(0, 8), 0, 8);
  }
  CHECK_THROWS_AS(positional_encoding(-1, 8), std::invalid_argument);
  CHECK_THROWS_AS(positional_encoding(4, 0), std::invalid_argument);
  CHECK_THROWS_AS(positional_encoding(4, -2), std::invalid_argument);
}

TEST_CASE("positional_encoding: hand-derived values", "[ch01][positional_encoding]") {
  INFO("positional_encoding(seq_len 4, d_model 4)");
  const Matrix PE = positional_encoding(4, 4);
  require_shape("positional_encoding(4, 4)", PE, 4, 4);
  // Position 0: sin 0 = 0 and cos 0 = 1 in every pair.
  CHECK(PE(0, 0) == 0.0f);
  CHECK(PE(0, 1) == 1.0f);
  CHECK(PE(0, 3) == 1.0f);
  // Columns 0 and 1 have frequency 1: PE[2, 0] = sin 2, PE[2, 1] = cos 2.
  CHECK(PE(2, 0) == Approx(std::sin(2.0)).margin(kPositional.atol));
  CHECK(PE(2, 1) == Approx(std::cos(2.0)).margin(kPositional.atol));
  // Columns 2 and 3 have frequency 1/10000^(2/4) = 1/100.
  CHECK(PE(3, 2) == Approx(std::sin(0.03)).margin(kPositional.atol));
  CHECK(PE(3, 3) == Approx(std::cos(0.03)).margin(kPositional.atol));
}

TEST_CASE("linear: X W + b, with and without bias", "[ch01][linear]") {
  const Matrix X = fx().matrix("lin.X");
  Linear layer = fx().linear("lin");
  const std::string shapes = fmt::format("X {}, W {}", shape_str(X), shape_str(layer.W));
  // (INFO inside each call's lambda: a crash inside names the call.)
  const Matrix Y = [&] {
    INFO(fmt::format("linear(X, W, b) ({}, b {})", shapes, layer.b->size()));
    return linear(X, layer);
  }();
  require_close(fmt::format("linear(X, W, b) ({})", shapes), Y, fx().matrix("lin.Y"), kFloat32);
  layer.b.reset();
  const Matrix Y_nobias = [&] {
    INFO(fmt::format("linear(X, W) without bias ({}, layer.b empty)", shapes));
    return linear(X, layer);
  }();
  require_close(fmt::format("linear(X, W) without bias ({})", shapes), Y_nobias, fx().matrix("lin.Y_nobias"),
                kFloat32);
}

TEST_CASE("linear: mismatched sizes are refused", "[ch01][linear]") {
  Linear layer{Matrix::Ones(3, 2), std::nullopt};
  CHECK_REFUSES("linear(X (4, 5), W (3, 2)): X has 5 columns, W 3 rows", linear(Matrix::Ones(4, 5), layer),
                std::invalid_argument);
  layer.b = RowVector::Ones(3);  // W has 2 outputs: a bias of the wrong length
  CHECK_REFUSES("linear(X (4, 3), W (3, 2), b of length 3): W has 2 outputs", linear(Matrix::Ones(4, 3), layer),
                std::invalid_argument);
}

TEST_CASE("project_qkv: the chapter's toy size, d_model 8, d_k 4", "[ch01][project_qkv]") {
  const Matrix X = fx().matrix("small.X");
  Linear W_q = fx().linear("small.W_q"), W_k = fx().linear("small.W_k"), W_v = fx().linear("small.W_v");
  const std::string call = fmt::format("project_qkv(X {}, W_q {}, W_k {}, W_v {})", shape_str(X), shape_str(W_q.W),
                                       shape_str(W_k.W), shape_str(W_v.W));
  const QKV qkv = [&] {
    INFO(call << " with biases");
    return project_qkv(X, W_q, W_k, W_v);
  }();
  require_close(call + ".Q", qkv.Q, fx().matrix("small.Q"), kFloat32);
  require_close(call + ".K", qkv.K, fx().matrix("small.K"), kFloat32);
  require_close(call + ".V", qkv.V, fx().matrix("small.V"), kFloat32);
  W_q.b.reset();
  W_k.b.reset();
  W_v.b.reset();
  const QKV no_bias = [&] {
    INFO(call << " without biases");
    return project_qkv(X, W_q, W_k, W_v);
  }();
  require_close(call + ".Q without bias", no_bias.Q, fx().matrix("small.Q_nobias"), kFloat32);
  require_close(call + ".K without bias", no_bias.K, fx().matrix("small.K_nobias"), kFloat32);
  require_close(call + ".V without bias", no_bias.V, fx().matrix("small.V_nobias"), kFloat32);
}

TEST_CASE("the running example matches PyTorch from the seed on", "[ch01][project_qkv]") {
  // The chapter program's path: tokens -> ids -> embedding + PE -> Q, K, V,
  // with every parameter drawn from the generator in PyTorch's order.
  const auto tokens = tokenize("the cat sat on the mat");
  const Vocabulary vocab(tokens);
  const auto ids = vocab.ids(tokens);
  {
    INFO("vocabulary ids of \"the cat sat on the mat\"");
    CHECK(ids == fx().i64("run.ids"));
  }

  Generator gen(42);
  const Matrix table = make_embedding(gen, vocab.size(), 64);
  const Linear W_q = make_linear(gen, 64, 64), W_k = make_linear(gen, 64, 64), W_v = make_linear(gen, 64, 64);
  require_close("embedding table", table, fx().matrix("run.table"), kBitExact);
  require_close("W_q", W_q.W, fx().matrix("run.W_q.W"), kBitExact);
  require_close("b_v", Matrix(*W_v.b), fx().matrix("run.W_v.b"), kBitExact);

  const Matrix E = [&] {
    INFO("embed(the running example's table (5, 64), the ids of \"the cat sat on the mat\")");
    return embed(table, ids);
  }();
  const Matrix X = E + [&] {
    INFO("positional_encoding(seq_len 6, d_model 64) of the running example");
    return positional_encoding(int64_t(ids.size()), 64);
  }();
  require_close("X = E + PE (6 tokens, d_model 64)", X, fx().matrix("run.X"), kElementwise);
  const std::string call = "project_qkv(X (6, 64), W_q, W_k, W_v (64, 64)) of the running example";
  const QKV qkv = [&] {
    INFO(call);
    return project_qkv(X, W_q, W_k, W_v);
  }();
  require_close(call + ".Q", qkv.Q, fx().matrix("run.Q"), kFloat32);
  require_close(call + ".K", qkv.K, fx().matrix("run.K"), kFloat32);
  require_close(call + ".V", qkv.V, fx().matrix("run.V"), kFloat32);
  // Scores reach ~10 in magnitude over 64-term sums: float32 ordering
  // differences stay below 1e-4 relative.
  const Matrix scores = qkv.Q * qkv.K.transpose();
  require_close("Q Kᵀ of the running example (6 x 6)", scores, fx().matrix("run.scores"), kFloat32);
  // The two "the"s share an embedding row; the positional encoding is
  // what tells them apart.
  INFO("rows 0 and 4 of E = embed(table (5, 64), ids) and of X = E + PE: both are \"the\"");
  CHECK(E.row(0) == E.row(4));
  CHECK(X.row(0) != X.row(4));
}
