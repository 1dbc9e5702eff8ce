// Hidden suite of chapter 8, part 3: kv_append and kv_attend. Generation one
// token at a time must give, after n tokens, row n - 1 of causal attention
// over them (PyTorch, tests/reference/ch08_efficient_attention.py); the rest
// are the cache's bookkeeping and its refusals.
#include "08-efficient-attention/efficient.hpp"

#include "03-softmax/softmax.hpp"
#include "sa/rng.hpp"
#include "support/compare.hpp"
#include "support/fixtures.hpp"

#include "support/catch.hpp"
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

using namespace sa;
using namespace sa::test;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

const Fixtures& fx() {
  static const Fixtures f("08-efficient-attention.txt");
  return f;
}

// A cache whose every row holds NaN before anything is appended: a row that
// was never appended and is read anyway turns the answer into NaN.
KVCache poisoned_cache(int64_t capacity, int64_t d_k, int64_t d_v) {
  KVCache cache(capacity, d_k, d_v);
  cache.K.setConstant(kNaN);
  cache.V.setConstant(kNaN);
  return cache;
}

}  // namespace

TEST_CASE("kv_append: stores k and v in row size and counts it", "[ch08][kv_append]") {
  Generator gen(812);
  const Matrix K = gen.randn(3, 4), V = gen.randn(3, 2);
  KVCache cache(5, 4, 2);
  for (int64_t n = 0; n < 3; ++n) {
    INFO(n + 1 << " kv_append(s) into a cache of capacity 5 (d_k 4, d_v 2)");
    kv_append(cache, K.row(n), V.row(n));
    if (cache.size != n + 1 || cache.capacity() != 5)
      FAIL_CHECK("after " << n + 1 << " kv_append(s), cache.size is " << cache.size << " and capacity() "
                          << cache.capacity() << "; expected " << n + 1 << " and 5 (append writes row size, then "
                          << "counts it)");
    // A copy, nothing computed: bit for bit. Earlier rows are untouched.
    require_close(fmt::format("cache.K rows 0..{}", n), Matrix(cache.K.topRows(n + 1)), Matrix(K.topRows(n + 1)),
                  kBitExact);
    require_close(fmt::format("cache.V rows 0..{}", n), Matrix(cache.V.topRows(n + 1)), Matrix(V.topRows(n + 1)),
                  kBitExact);
  }
}

TEST_CASE("kv_append: a full cache, or k or v of the wrong width, is refused", "[ch08][kv_append]") {
  const RowVector k = RowVector::Ones(4), v = RowVector::Ones(2);
  KVCache cache(2, 4, 2);
  kv_append(cache, k, v);
  kv_append(cache, k, v);
  {
    INFO("a third append into a cache of capacity 2");
    CHECK_THROWS_AS(kv_append(cache, k, v), std::invalid_argument);
    INFO("size after the refused append is " << cache.size << ", expected 2");
    CHECK(cache.size == 2);
  }
  {
    INFO("a cache of capacity 0");
    KVCache none(0, 4, 2);
    CHECK_THROWS_AS(kv_append(none, k, v), std::invalid_argument);
  }
  KVCache room(3, 4, 2);
  {
    INFO("k of width 3 or 5 into a cache of d_k 4");
    CHECK_THROWS_AS(kv_append(room, RowVector::Ones(3), v), std::invalid_argument);
    CHECK_THROWS_AS(kv_append(room, RowVector::Ones(5), v), std::invalid_argument);
  }
  {
    INFO("v of width 1 or 4 into a cache of d_v 2");
    CHECK_THROWS_AS(kv_append(room, k, RowVector::Ones(1)), std::invalid_argument);
    CHECK_THROWS_AS(kv_append(room, k, RowVector::Ones(4)), std::invalid_argument);
  }
  INFO("size after only refused appends is " << room.size << ", expected 0");
  CHECK(room.size == 0);
}

// One query's softmax over at most 37 scores and a weighted sum of value
// rows, in float32, against float64 rounded once: kFloat32.

TEST_CASE("kv_attend: after n tokens, equals row n-1 of PyTorch's causal attention, for every n",
          "[ch08][kv_attend]") {
  // Capacity 40 > 37 tokens, and the rows not yet appended hold NaN: only
  // rows 0..size-1 may be read.
  const Matrix Q = fx().matrix("tiled.self.Q"), K = fx().matrix("tiled.self.K"), V = fx().matrix("tiled.self.V");
  const Matrix expected = fx().matrix("tiled.self.causal.output");
  KVCache cache = poisoned_cache(40, 16, 8);
  for (int64_t n = 1; n <= Q.rows(); ++n) {
    INFO("kv_attend after " << n << " kv_append(s) into a cache of capacity 40");
    kv_append(cache, K.row(n - 1), V.row(n - 1));
    const RowVector out = kv_attend(cache, Q.row(n - 1));
    require_close(fmt::format("kv_attend after {} token(s) (capacity 40, d_k 16, d_v 8) vs causal row {}", n, n - 1),
                  Matrix(out), Matrix(expected.row(n - 1)), kFloat32);
  }
}

TEST_CASE("kv_attend: any query equals chapter 3's attention over the cached rows", "[ch08][kv_attend]") {
  // A query that is not one of the tokens, asked at several sizes of a
  // cache of capacity 12: attention(q, K[0:size], V[0:size]) with chapter 3's
  // whole-matrix attention as the reference. kFloat32.
  Generator gen(810);
  const Matrix K = gen.randn(9, 6), V = gen.randn(9, 5), q = gen.randn(1, 6) * 2.0f;
  KVCache cache = poisoned_cache(12, 6, 5);
  for (int64_t size = 1; size <= 9; ++size) {
    INFO("kv_attend after " << size << " kv_append(s) into a cache of capacity 12");
    kv_append(cache, K.row(size - 1), V.row(size - 1));
    const Attention reference = attention(q, K.topRows(size), V.topRows(size));
    require_close(fmt::format("kv_attend(q) with {} of 12 rows in use (d_k 6, d_v 5)", size), Matrix(kv_attend(cache, q)),
                  reference.output, kFloat32);
  }
  // With one row, the weight is exactly 1 whatever q: the output is v.
  KVCache one(3, 6, 5);
  kv_append(one, K.row(4), V.row(4));
  require_close("kv_attend with one cached token", Matrix(kv_attend(one, q)), Matrix(V.row(4)), kElementwise);
}

TEST_CASE("kv_attend: scores near 1000 do not overflow", "[ch08][kv_attend]") {
  // d_k = 4 (scale exactly 1/2), q = (2, 0, 0, 0), key j = (1000 - j, 0, 0, 0):
  // scores 1000 - j, exact. exp(1000) overflows float32, so the largest
  // score must be subtracted first. Weights softmax(0, -1, ..., -5) in
  // double: kFloat32.
  const int64_t n = 6;
  Matrix K = Matrix::Zero(n, 4);
  for (int64_t j = 0; j < n; ++j) K(j, 0) = float(1000 - j);
  const Matrix V = Generator(811).randn(n, 3);
  KVCache cache(n, 4, 3);
  for (int64_t j = 0; j < n; ++j) kv_append(cache, K.row(j), V.row(j));
  RowVector q = RowVector::Zero(4);
  q(0) = 2.0f;
  double z = 0;
  for (int64_t j = 0; j < n; ++j) z += std::exp(-double(j));
  Matrix expected = Matrix::Zero(1, 3);
  for (int64_t c = 0; c < 3; ++c) {
    double o = 0;
    for (int64_t j = 0; j < n; ++j) o += std::exp(-double(j)) / z * V(j, c);
    expected(0, c) = float(o);
  }
  require_close("kv_attend with scores 1000, 999, ..., 995", Matrix(kv_attend(cache, q)), expected, kFloat32);
}

TEST_CASE("kv_attend: an empty cache, or q of the wrong width, is refused", "[ch08][kv_attend]") {
  KVCache cache(3, 4, 2);
  {
    INFO("kv_attend on an empty cache");
    CHECK_THROWS_AS(kv_attend(cache, RowVector::Ones(4)), std::invalid_argument);
  }
  kv_append(cache, RowVector::Ones(4), RowVector::Ones(2));
  {
    INFO("q of width 3 or 5 against keys of d_k 4");
    CHECK_THROWS_AS(kv_attend(cache, RowVector::Ones(3)), std::invalid_argument);
    CHECK_THROWS_AS(kv_attend(cache, RowVector::Ones(5)), std::invalid_argument);
  }
  {
    INFO("a cache of d_k 0 holding one token (scores would divide by sqrt(0))");
    KVCache empty_keys(2, 0, 2);
    kv_append(empty_keys, RowVector(0), RowVector::Ones(2));
    CHECK_THROWS_AS(kv_attend(empty_keys, RowVector(0)), std::invalid_argument);
  }
}
