// Chapter 9's dropout (Gpt::set_dropout): chapter 6's dropout on the
// embedding and on each residual branch, in training forwards only. The
// backward is checked against finite differences of the loss, every
// forward of which re-seeds the dropout generator so that it draws the same
// masks; a backward that skipped a mask, or scaled it wrongly, moves the
// analytic gradient away from the numeric one.
#include "09-gpt/model.hpp"

#include "support/catch2_compat.hpp"
#include <fmt/core.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

using namespace sa;

namespace {

struct Setup {
  Generator init{11};
  Gpt model{GptConfig{11, 8, 16, 2, 2}, init};
  std::vector<int64_t> x, y;
  Setup() {
    for (int64_t i = 0; i < 16; ++i) {
      x.push_back((5 * i + 1) % 11);
      y.push_back((3 * i + 2) % 11);
    }
  }
  // The training loss with the masks seed 7 draws.
  double loss(Generator& dropout_gen) {
    dropout_gen.manual_seed(7);
    model.forward(x, 2, /*train=*/true);
    return model.loss(y);
  }
};

}  // namespace

TEST_CASE("GPT dropout: the gradient through the masks matches finite differences") {
  Setup s;
  Generator dropout_gen(7);
  s.model.set_dropout(0.3, &dropout_gen);
  s.loss(dropout_gen);
  s.model.backward();
  const GptParams grads = s.model.grads;
  // One entry of a tensor behind each mask: the embedding's (tok, pos), the
  // attention branch's (W_o, qkv), the feed-forward's (fc2, fc1), and one
  // after the last block (ln_f).
  struct Probe {
    std::string name;
    std::function<float&(GptParams&)> at;
  };
  const std::vector<Probe> probes = {
      {"tok(3, 5)", [](GptParams& p) -> float& { return p.tok(3, 5); }},
      {"pos(2, 7)", [](GptParams& p) -> float& { return p.pos(2, 7); }},
      {"blocks.0.W_o.W(4, 1)", [](GptParams& p) -> float& { return p.blocks[0].W_o.W(4, 1); }},
      {"blocks.0.qkv.W(2, 20)", [](GptParams& p) -> float& { return p.blocks[0].qkv.W(2, 20); }},
      {"blocks.1.fc2.W(9, 3)", [](GptParams& p) -> float& { return p.blocks[1].fc2.W(9, 3); }},
      {"blocks.1.fc1.W(0, 30)", [](GptParams& p) -> float& { return p.blocks[1].fc1.W(0, 30); }},
      {"ln_f.gamma(6)", [](GptParams& p) -> float& { return p.ln_f.gamma(6); }},
  };
  for (const Probe& probe : probes) {
    float& w = probe.at(s.model.params);
    const float w0 = w, h = 1e-2f;
    w = w0 + h;
    const double up = s.loss(dropout_gen);
    w = w0 - h;
    const double down = s.loss(dropout_gen);
    w = w0;
    const double numeric = (up - down) / (2.0 * double(h));
    const double analytic = probe.at(const_cast<GptParams&>(grads));
    INFO(fmt::format("{}: analytic {:.6f}, finite difference {:.6f}", probe.name, analytic, numeric));
    // float32 losses differ in their 7th digit; over 2h = 0.02 that is an
    // error of about 1e-4 in the slope, plus the curvature's h² term.
    CHECK(std::abs(analytic - numeric) < 2e-3 + 2e-2 * std::abs(numeric));
  }
}

TEST_CASE("GPT dropout: training forwards drop, evaluation does not, and p = 0 draws nothing") {
  Setup s;
  const Matrix plain = s.model.forward(s.x, 2);
  Generator dropout_gen(7);
  s.model.set_dropout(0.5, &dropout_gen);
  // Evaluation (train = false) ignores dropout, and leaves the generator alone.
  CHECK(s.model.forward(s.x, 2).isApprox(plain, 0.0f));
  CHECK(dropout_gen.random() == Generator(7).random());
  // A training forward draws masks: other logits, and another each time.
  dropout_gen.manual_seed(7);
  const Matrix first = s.model.forward(s.x, 2, true);
  const Matrix second = s.model.forward(s.x, 2, true);
  CHECK((first - plain).cwiseAbs().maxCoeff() > 1e-3f);
  CHECK((first - second).cwiseAbs().maxCoeff() > 1e-3f);
  // p = 0: a training forward is the evaluation's.
  s.model.set_dropout(0.0, nullptr);
  CHECK(s.model.forward(s.x, 2, true).isApprox(plain, 0.0f));
  CHECK_THROWS_AS(s.model.set_dropout(1.0, &dropout_gen), std::invalid_argument);
  CHECK_THROWS_AS(s.model.set_dropout(-0.1, &dropout_gen), std::invalid_argument);
  CHECK_THROWS_AS(s.model.set_dropout(0.1, nullptr), std::invalid_argument);
}
