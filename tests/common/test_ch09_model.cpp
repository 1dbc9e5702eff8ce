// Chapter 9's GPT (chapters/09-gpt/model.hpp) against its PyTorch twin
// (tests/reference/ch09_gpt_twin.py, fixture 09-gpt-twin.txt): the same
// parameter table, the same initial weights and batches from one seed, and
// one training step's loss and every gradient. The model is not an
// exercise (it is chapters 7 and 8 wired together, and passes with chapter
// 9's stubs untouched), so it is tested here and not in tests/09-gpt/.
//
// The twin's model: 2 layers, d_model 32, 4 heads, seq_len 16, batch 4, the
// 63 characters of the Bible's training text, its first 2048 characters as
// the data.
#include "09-gpt/model.hpp"

#include "support/compare.hpp"
#include "support/fixtures.hpp"

#include "support/catch2_compat.hpp"
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

using namespace sa;
using namespace sa::test;

namespace {

const Fixtures& fx() {
  static const Fixtures f("09-gpt-twin.txt");
  return f;
}

struct Twin {
  uint64_t seed;
  GptConfig cfg;
  int64_t batch;
  std::vector<int64_t> data;
};

Twin twin() {
  const std::vector<int64_t>& c = fx().i64("config");  // seed, vocab, seq_len, d_model, heads, layers, batch
  Twin t{uint64_t(c[0]), GptConfig{c[1], c[2], c[3], c[4], c[5]}, c[6], fx().i64("data")};
  return t;
}

// A tensor of the table as the fixture's float list, row-major.
template <class T>
std::vector<float> values(const T& t) {
  return std::vector<float>(t.data(), t.data() + t.size());
}

template <class T>
Shape shape_of(const T& t) {
  if constexpr (std::decay_t<T>::RowsAtCompileTime == 1)
    return Shape{t.cols()};
  else
    return Shape{t.rows(), t.cols()};
}

}  // namespace

TEST_CASE("chapter 9: the GPT's parameter table names the twin's tensors, in its order, with nanoGPT's decay rule",
          "[ch09_model]") {
  const Twin t = twin();
  Generator gen(t.seed);
  const GptParams p = init_gpt_params(gen, t.cfg);
  const std::vector<int64_t>& decay = fx().i64("step0.decay");
  int64_t k = 0, fixture_values = 0;
  visit_gpt_parameters(p, [&](const std::string& name, const auto& tensor, const GptTensor& spec) {
    const std::string entry = "step0.grad." + name;
    INFO("tensor " << k << " of the table, " << name);
    REQUIRE(fx().has(entry));
    require_shape(name, shape_of(tensor), fx().shape(entry));
    fixture_values += int64_t(fx().f32(entry).size());
    REQUIRE(k < int64_t(decay.size()));
    INFO(name << " decays: " << spec.decay << ", the twin's (p.dim() >= 2): " << decay[size_t(k)]);
    CHECK(spec.decay == (decay[size_t(k)] == 1));
    ++k;
  });
  CHECK(k == int64_t(decay.size()));
  CHECK(parameter_count(p) == fixture_values);
}

TEST_CASE("chapter 9: the GPT starts from the twin's weights, bit for bit, and samples its batches", "[ch09_model]") {
  const Twin t = twin();
  Generator gen(t.seed);
  const GptParams p = init_gpt_params(gen, t.cfg);
  // The embedding (N(0, 0.02²)) and a residual projection (0.02 / √(2 n_layers),
  // drawn transposed): both kinds of draw of the table.
  require_close("tok after init_gpt_params(Generator(9))", values(p.tok), fx().f32("init.tok"), kBitExact);
  require_close("blocks.1.fc2.W after init_gpt_params(Generator(9))", values(p.blocks[1].fc2.W),
                fx().f32("init.blocks.1.fc2.W"), kBitExact);
  Batch b;
  sample_batch(t.data, t.batch, t.cfg.seq_len, gen, b);
  CHECK(b.offsets == fx().i64("step0.offsets"));
  CHECK(b.x[0] == t.data[size_t(b.offsets[0])]);
  CHECK(b.y[0] == t.data[size_t(b.offsets[0] + 1)]);
}

// Gradients are compared tensor by tensor, each against its own largest
// entry: |got − expected| <= 1e-5 · max|expected| + 1e-4 · |expected|. The
// sums behind a gradient (over 64 positions, d_model 32 or d_ff 128 terms)
// run in another order than PyTorch's; on an AVX2 core the worst entry of
// any tensor differed by 4.1e-7 of its tensor's largest gradient, 25 times
// below the bound. A wrong term (a transposed product, a missing residual
// or tied-embedding share, a mask off by one) moves entries by a good
// fraction of it.
// The twin's model and its first batch, drawn in the twin's order: the
// weights, then the batch, from one generator.
struct TwinStart {
  Twin t = twin();
  Generator gen{t.seed};
  Gpt model{t.cfg, gen};
  Batch b;
  TwinStart() { sample_batch(t.data, t.batch, t.cfg.seq_len, gen, b); }
};

TEST_CASE("chapter 9: one training step of the GPT: the loss and every gradient equal the twin's", "[ch09_model]") {
  TwinStart start;
  auto& [t, gen, model, b] = start;
  model.forward(b.x, t.batch);
  const float loss = model.loss(b.y);
  check_close("the loss of the first batch (ln 63 = 4.143 for a model that knows nothing)", loss,
              fx().scalar("step0.loss"), kFloat32);
  model.backward();
  visit_gpt_parameters(model.grads, [&](const std::string& name, const auto& g, const GptTensor&) {
    const std::vector<float>& expected = fx().f32("step0.grad." + name);
    float scale = 0;
    for (float x : expected) scale = std::max(scale, std::abs(x));
    require_close(fmt::format("the gradient of {} (its largest entry {:.3g})", name, scale), values(g), expected,
                  Tolerance{1e-5 * scale, 1e-4});
  });
}

TEST_CASE("chapter 9: evaluate gives forward's logits bit for bit, and refuses a backward after it", "[ch09_model]") {
  TwinStart start;
  auto& [t, gen, model, b] = start;
  const Matrix trained = model.forward(b.x, t.batch);
  const float loss = model.loss(b.y);
  // The same float operations in the same order: only GELU's derivative,
  // which the logits never read, is left out.
  const Matrix evaluated = model.evaluate(b.x, t.batch);
  CHECK(evaluated.cwiseEqual(trained).all());
  CHECK(model.loss(b.y) == loss);
  CHECK_THROWS_AS(model.backward(), std::logic_error);
  // forward() again makes the model ready for a backward.
  model.forward(b.x, t.batch);
  model.loss(b.y);
  CHECK_NOTHROW(model.backward());
}

TEST_CASE("chapter 9: one clipped AdamW step of the GPT: the gradient norm and the next batch's loss", "[ch09_model]") {
  const Twin t = twin();
  Generator gen(t.seed);
  Gpt model(t.cfg, gen);
  AdamWConfig cfg;  // lr 1e-3, betas (0.9, 0.99), weight decay 0.1 on the matrices
  GptAdamW opt(model.params, model.grads, cfg);
  Batch b;
  sample_batch(t.data, t.batch, t.cfg.seq_len, gen, b);
  const GptStepStats s = gpt_train_step(model, opt, b, cfg.lr, 1.0);
  check_close("the gradients' global norm before clipping", s.grad_norm, fx().scalar("step0.grad_norm"), kFloat32);
  sample_batch(t.data, t.batch, t.cfg.seq_len, gen, b);
  CHECK(b.offsets == fx().i64("step1.offsets"));
  model.forward(b.x, t.batch);
  // Adam's first step moves every weight by about lr whatever its
  // gradient's size, so an entry whose gradient is rounding noise may move
  // the other way than in PyTorch; the loss, a sum over every weight, does
  // not see it at this tolerance.
  check_close("the loss of the second batch after one step", model.loss(b.y), fx().scalar("step1.loss"),
              Tolerance{1e-5, 1e-4});
}
