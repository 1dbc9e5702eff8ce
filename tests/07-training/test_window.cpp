// ModelConfig::window (local attention in chapter 7's model, which chapter 8
// trains on the reversal task): the weights outside the window are exactly
// 0, and a window as wide as the text is the causal model. (Bad windows:
// tests/common/test_inputs.cpp.)
#include "07-training/model.hpp"

#include "support/compare.hpp"

#include "support/catch.hpp"
#include <fmt/core.h>

#include <vector>

using namespace sa;
using namespace sa::test;

TEST_CASE("TinyTransformer with a window of 1: each query sees itself, so no gradient reaches W_q or W_k",
          "[ch07][attention_backward]") {
  // With one visible key every weight is 1 whatever the scores: softmax's
  // gradient is exactly 0, so the query and key projections get none, while
  // the values (and everything else) still do.
  ModelConfig cfg;
  cfg.max_seq = 8;
  cfg.window = 1;
  Generator gen(12);
  TinyTransformer model(cfg, gen);
  const std::vector<int64_t> ids{2, 5, 3, 9, 4, 7, 2, 6}, targets{5, 3, 9, 4, 7, 2, 6, 8};
  // (A crash in the reader's forward or backward passes says which run.)
  INFO("TinyTransformer with window 1, 8 tokens, batch 1: forward, loss, backward");
  model.forward(ids, 1);
  model.loss(targets);
  model.backward();
  const int64_t d = cfg.d_model;
  for (int64_t l = 0; l < cfg.n_layers; ++l) {
    const Matrix& dW = model.grads.blocks[size_t(l)].qkv.W;  // (d, 3d) = [dW_q | dW_k | dW_v]
    INFO("layer " << l);
    CHECK(dW.leftCols(2 * d).cwiseAbs().maxCoeff() == 0.0f);
    CHECK(dW.rightCols(d).cwiseAbs().maxCoeff() > 0.0f);
  }
}

TEST_CASE("TinyTransformer with a window: no weight outside the last w keys", "[ch07][attention_forward]") {
  for (const int64_t w : {1, 2, 3}) {
    INFO("TinyTransformer with window " << w << ", 8 tokens, batch 1: forward, loss, backward");
    ModelConfig cfg;
    cfg.max_seq = 8;
    cfg.window = w;
    Generator gen(11);
    TinyTransformer model(cfg, gen);
    const std::vector<int64_t> ids{2, 5, 3, 9, 4, 7, 2, 6}, targets{5, 3, 9, 4, 7, 2, 6, 8};
    model.forward(ids, 1);
    model.loss(targets);
    model.backward();  // the masked keys get no gradient either: checked below through P, which backward reuses
    for (int64_t l = 0; l < cfg.n_layers; ++l) {
      const Matrix& P = model.weights(l);  // (n_heads * seq, seq)
      for (int64_t r = 0; r < P.rows(); ++r) {
        const int64_t i = r % 8;  // the query position
        for (int64_t j = 0; j < 8; ++j) {
          const bool visible = j <= i && j > i - w;
          if (!visible && P(r, j) != 0.0f)
            FAIL(fmt::format("layer {}, row {} (query {}): weight {} on key {} outside the window", l, r, i, P(r, j), j));
        }
        check_close(fmt::format("layer {}, row {}: sum of the weights", l, r), P.row(r).sum(), 1.0, kFloat32);
      }
    }
  }
}

TEST_CASE("TinyTransformer: a window as wide as the text is the causal model", "[ch07][attention_forward]") {
  ModelConfig causal, wide;
  causal.max_seq = wide.max_seq = 8;
  wide.window = 8;
  Generator g1(4), g2(4);
  TinyTransformer a(causal, g1), b(wide, g2);
  const std::vector<int64_t> ids{3, 3, 8, 1, 12, 5}, targets{3, 8, 1, 12, 5, 7};
  INFO("TinyTransformer causal, and with window 8, over 6 tokens, batch 1: forward, loss, backward");
  const Matrix la = a.forward(ids, 1);
  require_close("logits with window 8 against the causal model", b.forward(ids, 1), la, kBitExact);
  a.forward(ids, 1);
  a.loss(targets);
  a.backward();
  b.loss(targets);
  b.backward();
  require_close("gradient of blocks.0.qkv.W, window 8 against causal", b.grads.blocks[0].qkv.W,
                a.grads.blocks[0].qkv.W, kBitExact);
}
