// sa::Generator against PyTorch 1.13's CPU generator. The claim is bit for
// bit, so every fixture comparison uses kBitExact. Values come from
// tests/reference/rng.py; the tests without fixtures pin down properties a
// wrong implementation would break (reference mt19937 outputs, draw counts,
// the normal cache, argument checks).
#include "sa/rng.hpp"

#include "support/compare.hpp"
#include "support/fixtures.hpp"

#include "support/catch2_compat.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

using namespace sa;
using namespace sa::test;

namespace {

const Fixtures& fx() {
  static const Fixtures f("rng.txt");
  return f;
}

// The seeds of tests/reference/rng.py. 2^32 + 5 shows that only the low 32
// bits reach mt19937.
const std::vector<uint64_t> kSeeds = {0, 1, 42, 1234, (uint64_t{1} << 32) + 5};

std::string sfx(uint64_t seed) { return "_s" + std::to_string(seed); }

std::vector<float> normal(Generator& g, int64_t n, double mean = 0.0, double std = 1.0) {
  std::vector<float> v(static_cast<size_t>(n));
  g.normal_(v.data(), n, mean, std);
  return v;
}

std::vector<float> uniform(Generator& g, int64_t n, double from, double to) {
  std::vector<float> v(static_cast<size_t>(n));
  g.uniform_(v.data(), n, from, to);
  return v;
}

std::vector<float> rand(Generator& g, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  g.rand(v.data(), n);
  return v;
}

// How many raw 32-bit draws `call` consumed, found by comparing the next raw
// output with a fresh generator of the same seed.
template <class Call>
int draws_consumed(uint64_t seed, Call call) {
  Generator g(seed);
  call(g);
  const uint32_t next = g.random();
  Generator fresh(seed);
  for (int k = 0; k < 100000; ++k)
    if (fresh.random() == next) return k;
  return -1;
}

}  // namespace

// ---- The raw stream ---------------------------------------------------------

TEST_CASE("rng: mt19937 seeded with 5489 gives the reference outputs", "[rng]") {
  // The published first outputs of mt19937 with its default seed 5489, and
  // the 10000th output that the C++ standard requires of std::mt19937.
  Generator g(5489);
  const std::vector<uint32_t> expected = {3499211612U, 581869302U, 3890346734U, 3586334585U, 545404204U};
  for (uint32_t want : expected) CHECK(g.random() == want);
  for (int i = 6; i < 10000; ++i) g.random();
  CHECK(g.random() == 4123659995U);
}

TEST_CASE("rng: random64 draws the high word first", "[rng]") {
  Generator a(7), b(7);
  const uint64_t hi = a.random();
  const uint64_t lo = a.random();
  CHECK(b.random64() == ((hi << 32) | lo));
  // PyTorch's Tensor.random_() on int64 is random64() modulo 2^63.
  Generator g(5489);
  CHECK((g.random64() & 0x7fffffffffffffffULL) == 5805627399050534646ULL);
  for (uint64_t s : kSeeds) {
    INFO("seed " << s);
    Generator h(s);
    const auto& want = fx().i64("random64_low63_n4" + sfx(s));
    for (int64_t w : want) CHECK(static_cast<int64_t>(h.random64() & 0x7fffffffffffffffULL) == w);
  }
}

TEST_CASE("rng: a seed above 32 bits seeds mt19937 with its low 32 bits", "[rng]") {
  const uint64_t big = (uint64_t{1} << 32) + 5;
  Generator g(big), h(5);
  CHECK(g.initial_seed() == big);  // like torch.initial_seed(), all 64 bits are kept
  for (int i = 0; i < 1000; ++i) REQUIRE(g.random() == h.random());
}

TEST_CASE("rng: an unseeded Generator matches a fresh torch.Generator()", "[rng]") {
  // 67280421310721 is the seed of torch.Generator(). The global generator
  // of a fresh Python process is seeded from the OS instead, so scripts
  // that want reproducible numbers call torch.manual_seed first.
  Generator g;
  CHECK(g.initial_seed() == 67280421310721ULL);
  CHECK(Generator::kDefaultSeed == 67280421310721ULL);
  require_close("rand(10) of an unseeded Generator", rand(g, 10), fx().f32("rand_n10_fresh_generator"), kBitExact);
}

TEST_CASE("rng: manual_seed restarts the stream and forgets the cached normal", "[rng]") {
  Generator g(3);
  const float first = normal(g, 1)[0];  // leaves its partner sample in the cache
  g.random();
  g.manual_seed(3);
  CHECK(g.initial_seed() == 3);
  // Had the cache survived, this would be the cached partner of `first`.
  CHECK(normal(g, 1)[0] == first);

  g.manual_seed(11);
  const uint32_t r = g.random();
  g.manual_seed(11);
  CHECK(g.random() == r);
}

// ---- Draw counts: the stream must advance exactly as PyTorch's ---------------

TEST_CASE("rng: each call consumes the number of draws PyTorch's does", "[rng]") {
  CHECK(draws_consumed(9, [](Generator& g) { rand(g, 10); }) == 10);  // one 32-bit draw per float
  CHECK(draws_consumed(9, [](Generator& g) { uniform(g, 7, -2, 3); }) == 7);
  // n < 16: two 64-bit uniforms per pair of normals, i.e. 4 draws per pair.
  CHECK(draws_consumed(9, [](Generator& g) { normal(g, 1); }) == 4);
  CHECK(draws_consumed(9, [](Generator& g) { normal(g, 2); }) == 4);
  CHECK(draws_consumed(9, [](Generator& g) { normal(g, 3); }) == 8);
  // n >= 16: one 32-bit draw per element, plus 16 more if n is not a
  // multiple of 16 (the last 16 are redone).
  CHECK(draws_consumed(9, [](Generator& g) { normal(g, 16); }) == 16);
  CHECK(draws_consumed(9, [](Generator& g) { normal(g, 32); }) == 32);
  CHECK(draws_consumed(9, [](Generator& g) { normal(g, 17); }) == 33);
  CHECK(draws_consumed(9, [](Generator& g) { normal(g, 100); }) == 116);
  // randint: 32-bit draws while the range fits in 32 bits, 64-bit beyond.
  CHECK(draws_consumed(9, [](Generator& g) { g.randint(0, 10, 5); }) == 5);
  CHECK(draws_consumed(9, [](Generator& g) { g.randint(0, int64_t{1} << 32, 5); }) == 10);
  // randperm: n - 1 draws (none for n = 0 or 1).
  CHECK(draws_consumed(9, [](Generator& g) { g.randperm(0); }) == 0);
  CHECK(draws_consumed(9, [](Generator& g) { g.randperm(1); }) == 0);
  CHECK(draws_consumed(9, [](Generator& g) { g.randperm(10); }) == 9);
}

TEST_CASE("rng: the cached normal sample carries across calls", "[rng]") {
  // Box-Muller makes normals in pairs; n < 16 keeps the odd one for the next
  // call, so randn(3) then randn(3) equals randn(6).
  Generator a(5), b(5);
  std::vector<float> two_calls = normal(a, 3);
  const std::vector<float> second = normal(a, 3);
  two_calls.insert(two_calls.end(), second.begin(), second.end());
  require_close("randn(3) + randn(3) vs randn(6)", two_calls, normal(b, 6), kBitExact);

  // Calls that do not use the double Box-Muller (rand, randn of 16 or more)
  // leave the cache alone; the cached value is a standard normal that takes
  // the mean and std of the call that uses it.
  Generator c(5), d(5);
  normal(c, 1);
  normal(d, 1);
  const float partner = normal(d, 1)[0];
  rand(c, 4);
  normal(c, 20);
  CHECK(normal(c, 1)[0] == partner);
  Generator e(5), f(5);
  normal(e, 1);
  normal(f, 1);
  CHECK(normal(e, 1, 0.0, 2.0)[0] == static_cast<float>(2.0 * normal(f, 1)[0]));
}

// ---- Against PyTorch -----------------------------------------------------------

TEST_CASE("rng: rand matches torch.rand", "[rng]") {
  for (uint64_t s : kSeeds) {
    Generator g(s);
    require_close("rand(10)" + sfx(s), rand(g, 10), fx().f32("rand_n10" + sfx(s)), kBitExact);
    Generator h(s);
    require_close("rand(3, 4)" + sfx(s), h.rand(3, 4), fx().matrix("rand_3x4" + sfx(s)), kBitExact);
  }
}

TEST_CASE("rng: rand lies on the 2^-24 grid from 0 up to 1", "[rng]") {
  Generator g(17);
  for (float v : rand(g, 10000)) {
    REQUIRE(v >= 0.0f);
    REQUIRE(v < 1.0f);
    const float scaled = v * 16777216.0f;
    REQUIRE(scaled == std::floor(scaled));
  }
}

TEST_CASE("rng: randn matches torch.randn on both kernels (n < 16, n >= 16)", "[rng]") {
  for (uint64_t s : kSeeds) {
    for (int64_t n : {1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 40, 48, 100}) {
      Generator g(s);
      const std::string name = "randn_n" + std::to_string(n) + sfx(s);
      require_close(name, normal(g, n), fx().f32(name), kBitExact);
    }
    Generator g(s);
    require_close("randn(3, 4)" + sfx(s), g.randn(3, 4), fx().matrix("randn_3x4" + sfx(s)), kBitExact);
    Generator h(s);
    require_close("randn(6, 8)" + sfx(s), h.randn(6, 8), fx().matrix("randn_6x8" + sfx(s)), kBitExact);
  }
}

TEST_CASE("rng: randn(5000) matches torch.randn bit for bit", "[rng]") {
  Generator g(0);
  require_close("randn(5000)_s0", normal(g, 5000), fx().f32("randn_n5000_s0"), kBitExact);
}

TEST_CASE("rng: normal_ with mean and std matches Tensor.normal_", "[rng]") {
  for (uint64_t s : kSeeds) {
    Generator g(s);
    require_close("normal_(0.5, 2) n=5" + sfx(s), normal(g, 5, 0.5, 2.0), fx().f32("normal_n5_mean0.5_std2" + sfx(s)),
                  kBitExact);
    Generator h(s);
    require_close("normal_(-1, 0.1) n=37" + sfx(s), normal(h, 37, -1.0, 0.1),
                  fx().f32("normal_n37_mean-1_std0.1" + sfx(s)), kBitExact);
  }
  // std = 0 is allowed and gives the mean exactly, on both kernels.
  Generator g(1);
  for (int64_t n : {5, 20})
    for (float v : normal(g, n, 1.5, 0.0)) CHECK(v == 1.5f);
}

TEST_CASE("rng: uniform_ matches Tensor.uniform_", "[rng]") {
  struct Bounds {
    const char* name;
    double from, to;
  };
  const Bounds bounds[] = {{"linear64", -1 / std::sqrt(64.0), 1 / std::sqrt(64.0)},
                           {"inv_sqrt3", -1 / std::sqrt(3.0), 1 / std::sqrt(3.0)},
                           {"m2_3", -2.0, 3.0}};
  for (uint64_t s : kSeeds) {
    for (const auto& b : bounds) {
      Generator g(s);
      const std::string name = std::string("uniform_") + b.name + "_n50" + sfx(s);
      require_close(name, uniform(g, 50, b.from, b.to), fx().f32(name), kBitExact);
    }
  }
  Generator g(2);
  for (float v : uniform(g, 1000, -2.0, 3.0)) {
    REQUIRE(v >= -2.0f);
    REQUIRE(v < 3.0f);
  }
  for (float v : uniform(g, 10, 0.25, 0.25)) CHECK(v == 0.25f);  // from == to is allowed
}

TEST_CASE("rng: randint matches torch.randint and stays in low <= x < high", "[rng]") {
  struct Range {
    const char* name;
    int64_t low, high;
  };
  const Range ranges[] = {{"0_10", 0, 10}, {"m5_5", -5, 5}, {"0_2p33", 0, int64_t{1} << 33}};
  for (uint64_t s : kSeeds) {
    for (const auto& r : ranges) {
      Generator g(s);
      const std::string name = std::string("randint_") + r.name + "_n20" + sfx(s);
      INFO(name);
      CHECK(g.randint(r.low, r.high, 20) == fx().i64(name));
    }
  }
  Generator g(4);
  std::set<int64_t> seen;
  for (int64_t v : g.randint(-3, 4, 2000)) {
    REQUIRE(v >= -3);
    REQUIRE(v < 4);
    seen.insert(v);
  }
  CHECK(seen.size() == 7);  // every value of the range shows up
  for (int64_t v : g.randint(41, 42, 10)) CHECK(v == 41);
  const int64_t lo = std::numeric_limits<int64_t>::min();
  const int64_t hi = std::numeric_limits<int64_t>::max();
  for (int64_t v : g.randint(lo, hi, 100)) CHECK(v < hi);  // a range wider than int64_t
  CHECK(g.randint(0, 10, 0).empty());
}

TEST_CASE("rng: randperm matches torch.randperm and is a permutation", "[rng]") {
  for (uint64_t s : kSeeds) {
    for (int64_t n : {10, 100}) {
      Generator g(s);
      const std::string name = "randperm_n" + std::to_string(n) + sfx(s);
      INFO(name);
      CHECK(g.randperm(n) == fx().i64(name));
    }
  }
  Generator g(0);
  std::vector<int64_t> perm = g.randperm(5000);
  CHECK(perm == fx().i64("randperm_n5000_s0"));
  std::sort(perm.begin(), perm.end());
  std::vector<int64_t> identity(5000);
  std::iota(identity.begin(), identity.end(), int64_t{0});
  CHECK(perm == identity);
  CHECK(g.randperm(0).empty());
  CHECK(g.randperm(1) == std::vector<int64_t>{0});
}

TEST_CASE("rng: one stream through many calls matches PyTorch's", "[rng]") {
  for (uint64_t s : kSeeds) {
    Generator g(s);
    const std::string t = sfx(s);
    require_close("seq01 randn(3)" + t, normal(g, 3), fx().f32("seq01_randn3" + t), kBitExact);
    require_close("seq02 randn(3)" + t, normal(g, 3), fx().f32("seq02_randn3" + t), kBitExact);
    require_close("seq03 rand(5)" + t, rand(g, 5), fx().f32("seq03_rand5" + t), kBitExact);
    require_close("seq04 randn(3)" + t, normal(g, 3), fx().f32("seq04_randn3" + t), kBitExact);
    require_close("seq05 randn(20)" + t, normal(g, 20), fx().f32("seq05_randn20" + t), kBitExact);
    require_close("seq06 randn(1)" + t, normal(g, 1), fx().f32("seq06_randn1" + t), kBitExact);
    CHECK(g.randint(0, 7, 4) == fx().i64("seq07_randint_0_7_n4" + t));
    require_close("seq08 normal_(2, 0.5)" + t, normal(g, 5, 2.0, 0.5), fx().f32("seq08_normal_n5_mean2_std0.5" + t),
                  kBitExact);
    require_close("seq09 randn(17)" + t, normal(g, 17), fx().f32("seq09_randn17" + t), kBitExact);
    require_close("seq10 randn(2)" + t, normal(g, 2), fx().f32("seq10_randn2" + t), kBitExact);
    require_close("seq11 uniform_(-2, 3)" + t, uniform(g, 6, -2.0, 3.0), fx().f32("seq11_uniform_m2_3_n6" + t),
                  kBitExact);
    CHECK(g.randperm(9) == fx().i64("seq12_randperm9" + t));
    require_close("seq13 randn(1)" + t, normal(g, 1), fx().f32("seq13_randn1" + t), kBitExact);
  }
}

TEST_CASE("rng: nn.Embedding(5, 64) then nn.Linear(64, 64) initialise as in PyTorch", "[rng]") {
  // Embedding: weight.normal_(0, 1). Linear: kaiming_uniform_ of the
  // (out, in) weight, then the bias, both U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  for (uint64_t s : {0, 42}) {
    Generator g(s);
    const std::string t = sfx(s);
    const Matrix embedding = g.randn(5, 64);
    const double bound = 1.0 / std::sqrt(64.0);
    const Matrix weight = g.uniform(64, 64, -bound, bound);
    const Matrix bias = g.uniform(1, 64, -bound, bound);
    require_close("Embedding(5, 64).weight" + t, embedding, fx().matrix("layers_embedding_weight" + t), kBitExact);
    require_close("Linear(64, 64).weight" + t, weight, fx().matrix("layers_linear_weight" + t), kBitExact);
    require_close("Linear(64, 64).bias" + t, bias, fx().matrix("layers_linear_bias" + t), kBitExact);
  }
}

// ---- Bad arguments -------------------------------------------------------------

TEST_CASE("rng: bad arguments are refused with std::invalid_argument", "[rng]") {
  Generator g(0);
  std::vector<float> buf(4);
  CHECK_THROWS_AS(g.rand(buf.data(), -1), std::invalid_argument);
  CHECK_THROWS_AS(g.normal_(buf.data(), -1), std::invalid_argument);
  CHECK_THROWS_AS(g.normal_(buf.data(), 4, 0.0, -1.0), std::invalid_argument);
  CHECK_THROWS_AS(g.normal_(buf.data(), 4, 0.0, std::nan("")), std::invalid_argument);
  CHECK_THROWS_AS(g.uniform_(buf.data(), -1, 0.0, 1.0), std::invalid_argument);
  CHECK_THROWS_AS(g.uniform_(buf.data(), 4, 3.0, -2.0), std::invalid_argument);
  CHECK_THROWS_AS(g.uniform_(buf.data(), 4, -1e39, 1e39), std::invalid_argument);  // wider than float
  CHECK_THROWS_AS(g.randint(5, 5, 3), std::invalid_argument);
  CHECK_THROWS_AS(g.randint(6, 5, 3), std::invalid_argument);
  CHECK_THROWS_AS(g.randint(0, 5, -1), std::invalid_argument);
  CHECK_THROWS_AS(g.randperm(-1), std::invalid_argument);
  CHECK_THROWS_AS(g.rand(-1, 3), std::invalid_argument);
  CHECK_THROWS_AS(g.randn(2, -3), std::invalid_argument);
  CHECK_THROWS_AS(g.uniform(2, 2, 1.0, 0.0), std::invalid_argument);
  CHECK_THROWS_WITH(g.randint(5, 5, 3), sa::test::ContainsText("low < high"));
  CHECK_THROWS_WITH(g.normal_(buf.data(), 4, 0.0, -1.0), sa::test::ContainsText("std"));
  // A refused call draws nothing.
  Generator fresh(0);
  CHECK(g.random() == fresh.random());
  // Empty requests are fine and draw nothing either.
  CHECK(g.rand(int64_t{0}, 5).size() == 0);  // plain 0 would also convert to float*
  CHECK(g.randn(3, 0).size() == 0);
  g.normal_(nullptr, 0);
  CHECK(g.random() == fresh.random());
}

TEST_CASE("rng: uniform_double is the low 53 bits of one random64, times 2^-53", "[rng]") {
  sa::Generator a(11), b(11);
  for (int i = 0; i < 1000; ++i) {
    const double u = a.uniform_double();
    CHECK(u == double(b.random64() & ((uint64_t{1} << 53) - 1)) * 0x1p-53);
    CHECK(u >= 0.0);
    CHECK(u < 1.0);
  }
}

// ---- The state as text: what a checkpoint stores to resume a run ---------------

TEST_CASE("rng: a generator restored from state() continues the same stream, the cached normal included",
          "[rng]") {
  Generator g(2024);
  g.randint(0, 1000, 7);
  // One normal_double() call makes two samples and keeps the second: a
  // single float from normal_ leaves it cached. The restored generator must
  // return that cached sample next, not draw a fresh pair.
  normal(g, 1);
  const std::string saved = g.state();
  REQUIRE(saved.find("normal none") == std::string::npos);  // the cache is in the text
  Generator h(7);  // another seed and another position: everything must come from the text
  h.set_state(saved);
  CHECK(h.initial_seed() == 2024);
  CHECK(h.state() == saved);
  // 3 normals from the cache and fresh pairs, then raw and uniform draws.
  const std::vector<float> a = normal(g, 3), b = normal(h, 3);
  for (size_t k = 0; k < a.size(); ++k) CHECK(std::bit_cast<uint32_t>(a[k]) == std::bit_cast<uint32_t>(b[k]));
  CHECK(g.randint(0, 1 << 30, 50) == h.randint(0, 1 << 30, 50));
  CHECK(g.uniform_double() == h.uniform_double());

  // Without a cached sample the text says so, and the streams still agree.
  Generator fresh(5);
  fresh.random();
  Generator copy(9);
  copy.set_state(fresh.state());
  CHECK(fresh.state().find("normal none") != std::string::npos);
  CHECK(normal(fresh, 20) == normal(copy, 20));
}

TEST_CASE("rng: set_state refuses a string that is not a generator state, and keeps its own", "[rng]") {
  Generator g(1);
  const std::string good = Generator(3).state();
  const std::string before = g.state();
  const auto refused = [&](const std::string& s, const std::string& words) {
    INFO("state: " << s.substr(0, 60));
    try {
      g.set_state(s);
      FAIL("accepted");
    } catch (const std::invalid_argument& e) {
      CHECK_THAT(std::string(e.what()), sa::test::ContainsText(words));
    }
    CHECK(g.state() == before);
  };
  refused("", "no seed");
  refused("seed x", "no seed");
  refused("seed 3 normal", "no cached normal");
  refused("seed 3 normal nan mt 1", "not a finite number");
  refused("seed 3 normal 0x1p+0x mt 1", "not a finite number");
  refused("seed 3 normal none", "no Mersenne Twister state");
  refused("seed 3 normal none mt 1 2 3", "has 3 numbers, not 625");
  refused(good + " 17", "has 626 numbers");
  std::string big = good;
  big.replace(big.find(" mt ") + 4, big.find(' ', big.find(" mt ") + 4) - big.find(" mt ") - 4, "4294967296");
  refused(big, "word 0 is '4294967296'");
  std::string position = good.substr(0, good.rfind(' ')) + " 625";
  refused(position, "position 624 is '625'");
}
