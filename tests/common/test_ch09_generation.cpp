// Chapter 9's generation (chapters/09-gpt/model.hpp): the key/value cache
// must change the speed and nothing else. The decoder's logits against the
// last row of a whole forward over the same context, the context's restarts
// (context_start), and whole generations with and without the cache.
// A small model with random weights: the cache has nothing to do with
// training, and random weights make every logit differ from token to token.
#include "09-gpt/model.hpp"

#include "support/catch2_compat.hpp"
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <vector>

using namespace sa;

namespace {

// 2 layers, d_model 32, 4 heads, 8 positions, 11 tokens.
GptConfig small() { return GptConfig{11, 8, 32, 4, 2}; }

std::vector<int64_t> ids(int64_t n) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back((7 * i + 3) % 11);
  return v;
}

}  // namespace

TEST_CASE("context_start: the context fills, then restarts from its newer half") {
  // seq_len 8: 8 tokens fit; the 9th drops the oldest 4 (start 4) and the
  // context grows again to 8 (12 tokens), the 13th drops 4 more.
  const std::vector<int64_t> expected = {0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12};
  for (int64_t n = 1; n <= int64_t(expected.size()); ++n) {
    INFO(fmt::format("{} tokens, seq_len 8", n));
    CHECK(context_start(n, 8) == expected[size_t(n - 1)]);
  }
  // Every context holds at most seq_len tokens and at least the newer half.
  for (int64_t T : {1, 2, 3, 7, 64})
    for (int64_t n = 1; n < 5 * T; ++n) {
      const int64_t len = n - context_start(n, T);
      INFO(fmt::format("{} tokens, seq_len {}: a context of {}", n, T, len));
      CHECK(len <= T);
      CHECK(len >= std::min(n, T - T / 2));
    }
  CHECK_THROWS_AS(context_start(0, 8), std::invalid_argument);
}

TEST_CASE("long_prompt_note: a prompt longer than the model's positions is never cut without a word") {
  CHECK(long_prompt_note(8, 8).empty());
  CHECK(long_prompt_note(1, 64).empty());
  // 9 tokens at seq_len 8 start at 4 (above): the first draw reads 5.
  CHECK(long_prompt_note(9, 8) ==
        "The prompt has 9 characters, more than the model's 8 positions: the context has restarted 1 time inside it "
        "(every 4 characters, from its newer half), so the first character drawn reads the prompt's last 5.");
  // 13 tokens at seq_len 8 start at 8 (above): two restarts, 5 read.
  CHECK(long_prompt_note(13, 8) ==
        "The prompt has 13 characters, more than the model's 8 positions: the context has restarted 2 times inside "
        "it (every 4 characters, from its newer half), so the first character drawn reads the prompt's last 5.");
  CHECK(long_prompt_note(3, 1) ==
        "The prompt has 3 characters, more than the model's 1 position: the first character drawn reads the "
        "prompt's last character alone.");
}

TEST_CASE("cache_gain: a gain said as a factor, and no gain or a loss said with its reason") {
  CHECK(cache_gain(10.44) == "the cache is 10.4x faster");
  CHECK(cache_gain(1.05) == "the cache is 1.1x faster");
  // Within 5% of 1: neither faster nor slower, and why.
  CHECK(cache_gain(1.04) ==
        "the cache gains nothing here (1.0x): the forwards that fill it are most of the work");
  CHECK(cache_gain(0.96).starts_with("the cache gains nothing here (1.0x)"));
  CHECK(cache_gain(0.6) ==
        "the cache costs more than it saves here (0.6x): setting it up and filling it with the context (at the "
        "prompt, and again whenever the context restarts) costs more than the few characters after it save");
}

TEST_CASE("cache_gain: the benchmark's verdict only where the median speeds printed beside it agree") {
  // The turns' median and the speeds' ratio on the same side: the turns'.
  CHECK(cache_gain(10.0, 10.4) == "the cache is 10.0x faster");
  CHECK(cache_gain(0.6, 0.7) == cache_gain(0.6));
  CHECK(cache_gain(1.02, 0.98) == cache_gain(1.02));
  // 0.94x from the turns beside speeds of 4554 and 4526 characters a second.
  CHECK(cache_gain(0.94, 4554.0 / 4526.0) ==
        "the cache's gain is within this run's noise (0.94x by the median of the turns' ratios, 1.01x by the median "
        "speeds)");
  CHECK(cache_gain(1.06, 1.03).starts_with("the cache's gain is within this run's noise (1.06x"));
}

TEST_CASE("GptDecoder: every cached step gives the last row of a whole forward over the same tokens") {
  Generator gen(5);
  Gpt model(small(), gen);
  const std::vector<int64_t> all = ids(8);
  GptDecoder decoder(model);
  // Prefill the first 3, then one token at a time up to the full context.
  RowVector cached = decoder.prefill({all.begin(), all.begin() + 3});
  for (int64_t n = 3; n <= 8; ++n) {
    if (n > 3) cached = decoder.step(all[size_t(n - 1)]);
    REQUIRE(decoder.size() == n);
    const Matrix& whole = model.forward({all.begin(), all.begin() + n}, 1);
    const RowVector last = whole.row(n - 1);
    const float err = (cached - last).cwiseAbs().maxCoeff();
    INFO(fmt::format("after {} tokens: largest difference {:.3g} (logits of size {:.3g})", n, err,
                     last.cwiseAbs().maxCoeff()));
    // float32: the single row and the batched product sum in other orders.
    CHECK(err < 1e-5f);
  }
  // Full: a ninth token has no position; and an id outside the vocabulary.
  CHECK_THROWS_AS(decoder.step(1), std::invalid_argument);
  GptDecoder fresh(model);
  fresh.prefill({1});
  CHECK_THROWS_AS(fresh.step(11), std::out_of_range);
  CHECK_THROWS_AS(fresh.step(-1), std::out_of_range);
}

TEST_CASE("generate: the same tokens with and without the cache, across restarts of the context") {
  Generator init(9);
  Gpt model(small(), init);
  for (const double temperature : {1.0, 0.7}) {
    GenerationOptions o;
    o.new_tokens = 30;  // 32 tokens in all: the context restarts six times
    o.temperature = temperature;
    o.top_k = 5;
    o.use_cache = true;
    Generator g1(3), g2(3);
    const std::vector<int64_t> with = generate(model, {2, 4}, o, g1);
    o.use_cache = false;
    const std::vector<int64_t> without = generate(model, {2, 4}, o, g2);
    INFO(fmt::format("temperature {}", temperature));
    REQUIRE(with.size() == 32);
    CHECK(with == without);
    // The prompt comes back first, and the draws are not all one token.
    CHECK(with[0] == 2);
    CHECK(with[1] == 4);
    CHECK(std::count(with.begin(), with.end(), with[5]) < 20);
  }
  GenerationOptions o;
  Generator g(1);
  CHECK_THROWS_AS(generate(model, {}, o, g), std::invalid_argument);
}
