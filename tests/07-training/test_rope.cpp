// Hidden suite of chapter 7, position encodings: the RoPE exercise
// (rope_forward, rope_backward) against its PyTorch reference
// (tests/reference/ch07_positions.py), its inverse, its relative property
// and its refusals; then whole models with sinusoidal and rotary positions
// against their PyTorch twins and, for RoPE, against finite differences.
//
// Tolerances
//  - rope_forward and rope_backward: two float32 products and one sum per
//    entry, with cos and sin rounded once from the same float64 angle on
//    both sides. A compiler may fuse a product into the sum (FMA), so the
//    two sides may differ by an ulp or two: kElementwise (1e-6 + 1e-5 of the
//    value). A wrong angle, sign or pairing moves entries by order 1.
//  - the models: the tolerances of test_training.cpp's model tests (logits
//    kFloat32, loss 1e-5 relative, gradients 1e-5 of the tensor's largest
//    plus 1e-4 of each entry), for the same reason: a dozen layers of float32
//    sums in another order than PyTorch's.
#include "07-training/checkpoint.hpp"
#include "07-training/model.hpp"
#include "07-training/reversal.hpp"
#include "07-training/rope.hpp"
#include "support/scratch.hpp"
#include "model_gradcheck.hpp"

#include "01-qkv-projection/qkv.hpp"
#include "sa/rng.hpp"
#include "support/compare.hpp"
#include "support/fixtures.hpp"

#include "support/catch.hpp"
#include <fmt/core.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

using namespace sa;
using namespace sa::test;

namespace {

const Fixtures& fx() {
  static const Fixtures f("07-positions.txt");
  return f;
}

// A (rows, cols) matrix of N(0, 1) draws.
Matrix random_matrix(Generator& gen, int64_t rows, int64_t cols) { return gen.randn(rows, cols); }

ModelConfig fixture_config(const std::vector<int64_t>& c, PositionEncoding position) {
  ModelConfig cfg;
  cfg.vocab = c[1];
  cfg.max_seq = 2 * c[2] + 1;
  cfg.d_model = c[3];
  cfg.n_heads = c[4];
  cfg.n_layers = c[5];
  cfg.d_ff = 4 * c[3];
  cfg.position = position;
  return cfg;
}

// The fixture's model of this position encoding against PyTorch: same
// initial weights (nothing drawn for a position table), data, batch order,
// logits, loss and every gradient.
void check_model_against_pytorch(PositionEncoding position) {
  const std::string prefix = std::string(position_name(position)) + ".";
  const std::vector<int64_t> c = fx().i64("model.config");
  const int64_t seed = c[0], batch = c[6], samples = c[7];
  INFO(fmt::format("the {} model: seed {}, vocab {}, d_model {}, n_heads {}, n_layers {}, batch {}",
                   position_name(position), seed, c[1], c[3], c[4], c[5], batch));
  ReversalTask task;
  task.vocab = c[1];
  task.digits = c[2];
  Generator gen{uint64_t(seed)};
  TinyTransformer model(fixture_config(c, position), gen);
  int64_t tensors = 0;
  for_each_tensor(model.params, [&](const std::string& name, std::span<const float> t) {
    ++tensors;
    require_close("initial " + name, std::vector<float>(t.begin(), t.end()), fx().f32(prefix + "init." + name),
                  kBitExact);
  });
  CHECK(tensors == 1 + 10 * c[5] + 4);  // tok, 10 tensors a block, ln_f and head (2 each): no "pos"
  const ReversalData data = make_reversal_data(gen, samples, task);
  CHECK(data.tokens == fx().i64(prefix + "data"));
  const std::vector<int64_t> perm = gen.randperm(samples);
  CHECK(perm == fx().i64(prefix + "perm"));

  std::vector<int64_t> ids, targets;
  make_batch(data, std::span<const int64_t>(perm).first(size_t(batch)), task, ids, targets);
  require_close("logits", model.forward(ids, batch), fx().matrix(prefix + "logits"), kFloat32);
  CHECK(model.loss(targets) == Approx(fx().scalar(prefix + "loss")).epsilon(1e-5));
  model.backward();
  for_each_tensor(model.grads, [&](const std::string& name, std::span<const float> g) {
    require_close_gradient("gradient of " + name, g, fx().matrix(prefix + "grad." + name));
  });
}

}  // namespace

// ===========================================================================
// rope_forward, rope_backward
// ===========================================================================
TEST_CASE("rope_forward: matches the PyTorch reference (2 heads of d_k 6, batch 2), V untouched",
          "[ch07][rope_forward]") {
  const std::vector<int64_t> c = fx().i64("rope.config");
  const Matrix X = fx().matrix("rope.X");
  Matrix Y = X;
  {
    INFO("rope_forward(X " << shape_str(X) << ", batch " << c[0] << ", n_heads " << c[1] << ")");
    rope_forward(Y, c[0], c[1]);
  }
  const int64_t d = X.cols() / 3;
  const std::string call = fmt::format("rope_forward(X {}, batch {}, n_heads {}) (d_k {})", shape_str(X), c[0], c[1],
                                       d / c[1]);
  require_close(call, Y, fx().matrix("rope.Y"), kElementwise);
  // V carries no position; position 0 has angle 0, no turn.
  require_close(call + ", the V columns (untouched)", Matrix(Y.rightCols(d)), Matrix(X.rightCols(d)), kBitExact);
  require_close(call + ", row 0 (position 0, untouched)", Matrix(Y.topRows(1)), Matrix(X.topRows(1)), kBitExact);
}

TEST_CASE("rope_backward: matches PyTorch autograd, and dV passes unchanged", "[ch07][rope_backward]") {
  const std::vector<int64_t> c = fx().i64("rope.config");
  const Matrix dY = fx().matrix("rope.dY");
  Matrix dX = dY;
  {
    INFO("rope_backward(dY " << shape_str(dY) << ", batch " << c[0] << ", n_heads " << c[1] << ")");
    rope_backward(dX, c[0], c[1]);
  }
  const int64_t d = dY.cols() / 3;
  const std::string call = fmt::format("rope_backward(dY {}, batch {}, n_heads {}) (d_k {})", shape_str(dY), c[0],
                                       c[1], d / c[1]);
  require_close(call, dX, fx().matrix("rope.dX"), kElementwise);
  require_close(call + ", the dV columns (unchanged)", Matrix(dX.rightCols(d)), Matrix(dY.rightCols(d)), kBitExact);
}

TEST_CASE("rope_backward undoes rope_forward, and both keep every pair's length", "[ch07][rope_forward]") {
  // A rotation's transpose is its inverse. Positions up to 40 (angles up to
  // 40 rad), 4 heads of d_k 8, batch 3.
  Generator gen(7031);
  const int64_t batch = 3, seq = 41, heads = 4, d_k = 8, d = heads * d_k;
  const Matrix X = random_matrix(gen, batch * seq, 3 * d);
  Matrix Y = X;
  {
    INFO("rope_forward(X (123, 96) from random_matrix, batch 3, seq 41, n_heads 4, d_k 8)");
    rope_forward(Y, batch, heads);
  }
  double moved = 0.0, length_error = 0.0;
  for (int64_t r = 0; r < Y.rows(); ++r)
    for (int64_t j = 0; j < 2 * d; j += 2) {
      moved = std::max(moved, double(std::abs(Y(r, j) - X(r, j))));
      const double before = std::hypot(double(X(r, j)), double(X(r, j + 1)));
      const double after = std::hypot(double(Y(r, j)), double(Y(r, j + 1)));
      length_error = std::max(length_error, std::abs(after - before) / std::max(before, 1e-3));
    }
  const std::string dims = fmt::format("X {}, batch {}, seq {}, n_heads {}, d_k {}", shape_str(X), batch, seq, heads,
                                       d_k);
  {
    INFO(fmt::format("rope_forward({}): largest change of a Q or K entry {:.3g}, expected above 0.5 (it did turn "
                     "something)",
                     dims, moved));
    CHECK(moved > 0.5);  // it did turn something
  }
  {
    INFO(fmt::format("rope_forward({}): largest relative change of a pair's length {:.3g}, expected below 1e-6 (a "
                     "rotation keeps lengths)",
                     dims, length_error));
    CHECK(length_error < 1e-6);
  }
  {
    INFO("rope_backward(rope_forward(X) (123, 96), batch 3, seq 41, n_heads 4, d_k 8)");
    rope_backward(Y, batch, heads);
  }
  require_close(fmt::format("rope_backward(rope_forward(X)) against X ({})", dims), Y, X, kElementwise);
}

TEST_CASE("rope_forward: the score of q at position p and k at p + k depends only on the offset k",
          "[ch07][rope_forward]") {
  // Every row of a sequence of 64 holds the same q and the same k; after
  // rope_forward, row p holds q turned to position p and k turned to p.
  // The score Q_p · K_(p+k) (summed in double) must be the same for every
  // p. And it must depend on k: position does reach the scores.
  Generator gen(7032);
  const int64_t seq = 64, d_k = 16;
  const Matrix q = random_matrix(gen, 1, d_k), k = random_matrix(gen, 1, d_k);
  Matrix QKV = Matrix::Zero(seq, 3 * d_k);
  for (int64_t p = 0; p < seq; ++p) {
    QKV.block(p, 0, 1, d_k) = q;
    QKV.block(p, d_k, 1, d_k) = k;
  }
  {
    INFO("rope_forward(QKV (64, 48): one q and one k on every row, batch 1, n_heads 1, d_k 16)");
    rope_forward(QKV, 1, 1);
  }
  auto score = [&](int64_t i, int64_t j) {
    double s = 0.0;
    for (int64_t c = 0; c < d_k; ++c) s += double(QKV(i, c)) * double(QKV(j, d_k + c));
    return s;
  };
  const double scale = double(q.norm()) * double(k.norm());
  std::vector<double> by_offset;
  for (int64_t offset : {0, 1, 2, 5, 17, 40}) {
    double worst = 0.0;
    for (int64_t p = 0; p + offset < seq; ++p)
      worst = std::max(worst, std::abs(score(p, p + offset) - score(0, offset)));
    INFO(fmt::format("rope_forward(QKV (64, 48), batch 1, n_heads 1, d_k 16), offset {}: max over p of "
                     "|score(p, p + k) - score(0, k)| = {:.3g}, expected at most {:.3g} (|q| |k| = {:.3g})",
                     offset, worst, 1e-5 * scale, scale));
    CHECK(worst <= 1e-5 * scale);  // float32 rounding of the turned vectors, about 1e-7 of |q| |k|
    by_offset.push_back(score(0, offset));
  }
  // Keys before the query too: score(p + k, p) is score(k, 0).
  for (int64_t p = 0; p + 3 < seq; ++p) {
    INFO(fmt::format("rope_forward(QKV (64, 48), batch 1, n_heads 1): score(p + 3, p) at p = {} is {:.9g}, expected "
                     "score(3, 0) = {:.9g} within {:.3g}",
                     p, score(p + 3, p), score(3, 0), 1e-5 * scale));
    CHECK(std::abs(score(p + 3, p) - score(3, 0)) <= 1e-5 * scale);
  }
  INFO(fmt::format("rope_forward(QKV (64, 48), batch 1, n_heads 1): score at offset 0 {:.6g}, at offset 1 {:.6g}: "
                   "expected them to differ by more than {:.3g}",
                   by_offset[0], by_offset[1], 1e-2 * scale));
  CHECK(std::abs(by_offset[1] - by_offset[0]) > 1e-2 * scale);  // offset 1 scores differently from offset 0
}

TEST_CASE("rope_forward and rope_backward refuse an odd d_k, rows that do not split, a bad base, and "
          "ModelConfig refuses a RoPE model with an odd d_k",
          "[ch07][rope_forward]") {
  Matrix QKV = Matrix::Ones(10, 3 * 6);  // d_model 6
  try {
    {
      INFO("rope_forward(QKV (10, 18), batch 2, n_heads 2): d_k 3 is odd");
      rope_forward(QKV, 2, 2);  // d_k = 3
    }
    FAIL("rope_forward accepted d_k = 3");
  } catch (const std::invalid_argument& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find("odd") != std::string::npos);
  }
  CHECK_REFUSES("rope_backward(QKV (10, 18), batch 2, n_heads 2): d_k 3 is odd", rope_backward(QKV, 2, 2),
                std::invalid_argument);
  CHECK_REFUSES("rope_forward(QKV (10, 18), batch 3, n_heads 3): 10 rows do not make 3 sequences",
                rope_forward(QKV, 3, 3), std::invalid_argument);
  CHECK_REFUSES("rope_backward(QKV (10, 18), batch 3, n_heads 3): 10 rows do not make 3 sequences",
                rope_backward(QKV, 3, 3), std::invalid_argument);
  CHECK_REFUSES("rope_forward(QKV (10, 18), batch 2, n_heads 4): d_model 6 does not split into 4 heads",
                rope_forward(QKV, 2, 4), std::invalid_argument);
  // A base that is not a finite number above 1, in both directions.
  for (const double base : {1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    INFO(fmt::format("QKV (10, 18), batch 2, n_heads 3, base {}: the base must be a finite number above 1", base));
    CHECK_THROWS_AS(rope_forward(QKV, 2, 3, base), std::invalid_argument);
    CHECK_THROWS_AS(rope_backward(QKV, 2, 3, base), std::invalid_argument);
  }
  require_close("QKV (10, 18) after refused rope_forward/rope_backward calls (left alone)", QKV,
                Matrix::Ones(10, 3 * 6), kBitExact);  // a refused call leaves its input alone
  {
    INFO("rope_forward(QKV (10, 18) of ones, batch 2, n_heads 3) (d_k 2), to be accepted");
    rope_forward(QKV, 2, 3);  // d_k = 2: one pair per head, accepted
  }
  INFO("rope_forward(QKV (10, 18) of ones, batch 2, n_heads 3) (d_k 2): QKV[9, 0] (position 4) should have turned");
  CHECK(QKV(9, 0) != 1.0f);

  ModelConfig cfg;
  cfg.d_model = 12;
  cfg.n_heads = 4;  // d_k 3
  cfg.validate();   // fine with a learned table
  cfg.position = PositionEncoding::rope;
  try {
    cfg.validate();
    FAIL("ModelConfig accepted RoPE with d_k = 3");
  } catch (const std::invalid_argument& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find("odd") != std::string::npos);
  }
}

// ===========================================================================
// Whole models with sinusoidal and rotary positions
// ===========================================================================
TEST_CASE("model with RoPE: PyTorch's initial weights, logits, loss and gradients", "[ch07][rope_backward]") {
  check_model_against_pytorch(PositionEncoding::rope);
}

TEST_CASE("model with sinusoidal positions: PyTorch's initial weights, logits, loss and gradients",
          "[ch07][model]") {
  check_model_against_pytorch(PositionEncoding::sinusoidal);
}

TEST_CASE("model with RoPE: every parameter's gradient agrees with finite differences", "[ch07][rope_backward]") {
  // The directional check of model_gradcheck.hpp, with the weights
  // re-drawn N(0, 0.3²) so attention is far from uniform. A backward that
  // forgot to un-rotate dQ and dK, or turned them the wrong way, gives W_q
  // and W_k a gradient of the wrong direction.
  GradcheckModel m = make_gradcheck_model(705, 7, PositionEncoding::rope);
  m.targets[0] = m.targets[8] = kIgnore;
  require_model_gradients(m, " with RoPE");
}

TEST_CASE("models without a position table: no 'pos' tensor, Adam trains them, checkpoints refuse them",
          "[ch07][rope_forward]") {
  ModelConfig cfg;
  cfg.vocab = 7;
  cfg.max_seq = 6;
  cfg.d_model = 8;
  cfg.n_heads = 2;
  cfg.n_layers = 1;
  cfg.d_ff = 16;
  Generator learned_gen(9);
  const TinyTransformer learned(cfg, learned_gen);
  for (const PositionEncoding position : {PositionEncoding::sinusoidal, PositionEncoding::rope}) {
    INFO(position_name(position));
    cfg.position = position;
    Generator gen(9);
    TinyTransformer model(cfg, gen);
    bool has_pos = false;
    for_each_tensor(model.params, [&](const std::string& name, std::span<const float>) { has_pos |= name == "pos"; });
    CHECK_FALSE(has_pos);
    CHECK(parameter_count(model.params) == parameter_count(learned.params) - cfg.max_seq * cfg.d_model);
    CHECK(tensor_shapes(model.params).size() == tensor_shapes(learned.params).size() - 1);
    // The token table is the first draw either way; nothing drawn for
    // positions, so the first block's weights are the learned model's
    // next draws shifted, not the same.
    CHECK((model.params.tok.array() == learned.params.tok.array()).all());
    // One Adam step over every tensor (the spans line up with the grads).
    Adam adam(model.params, model.grads, AdamConfig{});
    const std::vector<int64_t> ids{2, 3, 4, 5, 6, 2}, targets{kIgnore, 3, 4, 5, 6, 2};
    const Params before = model.params;
    const StepStats s = train_step(model, adam, ids, targets, 1);
    CHECK(std::isfinite(s.loss));
    CHECK_FALSE((model.params.head.W.array() == before.head.W.array()).all());
    if (position == PositionEncoding::sinusoidal) {
      // The embedding added chapter 1's table: row 1 of x0 is tok[3] + PE[1].
      const Matrix PE = positional_encoding(cfg.max_seq, cfg.d_model);
      model.forward(ids, 1);
      require_close("x0 row 1", Matrix(model.workspace().x0.row(1)), Matrix(model.params.tok.row(3) + PE.row(1)),
                    kBitExact);
    }
    Checkpoint ckpt;
    ckpt.config = cfg;
    for (int64_t id = 0; id < cfg.vocab; ++id) ckpt.tokens.push_back(fmt::format("t{}", id));
    ckpt.params = model.params;
    const std::string path = (sa::test::scratch_dir("sa-test-rope") / "rope.safetensors").string();
    try {
      save_checkpoint(path, ckpt);
      FAIL("a model without a learned position table was saved");
    } catch (const std::invalid_argument& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(position_name(position)) != std::string::npos);
    }
    CHECK_FALSE(std::filesystem::exists(path));
  }
}
