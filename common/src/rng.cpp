// sa::Generator: PyTorch 1.13's CPU generator, bit for bit, for float32.
//
// Everything random in PyTorch's CPU backend starts from one Mersenne
// Twister (mt19937) and is turned into numbers by a handful of small
// formulas. Matching PyTorch therefore means three things:
//   1. the same mt19937 stream (std::mt19937: at::mt19937 seeds, twists and
//      tempers exactly as the standard engine does);
//   2. the same number of raw draws per value, in the same order, so the
//      stream advances exactly as in PyTorch (a single extra draw shifts
//      every later number);
//   3. the same floating-point operations in the same order, including
//      which multiply-adds are fused into one rounding (FMA) and which are
//      not.
// Point 3 is why this file never writes `a * b + c` where PyTorch fuses:
// the project compiles with -ffp-contract=off, so the compiler keeps every
// expression exactly as written, and std::fma marks each fused step.
//
// Sources (PyTorch 1.13): aten/src/ATen/core/MT19937RNGEngine.h,
// CPUGeneratorImpl.cpp, core/TransformationHelper.h,
// core/DistributionsHelper.h, native/cpu/DistributionTemplates.h,
// native/cpu/avx_mathfun.h and randperm in native/TensorFactories.cpp.
// Which multiply-adds are fused was read off the machine code of Debian's
// libtorch_cpu.so 1.13.1 (its AVX2 kernels are compiled with -mfma, and GCC
// contracts `a * b + c` there) and confirmed against torch's output.
#include "sa/rng.hpp"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <locale>
#include <sstream>
#include <numeric>
#include <stdexcept>
#include <utility>
#include <vector>

namespace sa {

namespace {

// ---- From raw bits to a uniform number ---------------------------------------
// A float has a 24-bit significand, so PyTorch keeps the low 24 bits of one
// 32-bit draw and scales them by 2^-24: every value k / 2^24 in [0, 1) is
// exactly representable and equally likely. A double has 53 bits, so it
// takes a 64-bit draw (two mt19937 outputs) and keeps the low 53.
constexpr uint32_t kFloatMask = (1U << 24) - 1;
constexpr float kFloatScale = 1.0f / static_cast<float>(1U << 24);
constexpr uint64_t kDoubleMask = (uint64_t{1} << 53) - 1;
constexpr double kDoubleScale = 1.0 / static_cast<double>(uint64_t{1} << 53);

constexpr double kPi = 3.14159265358979323846;  // c10::pi<double>

// at::uniform_real_distribution<float>: x in [0, 1), then x * (to - from) +
// from. The AVX2 build of PyTorch fuses that multiply-add into one FMA.
float uniform_float(uint32_t bits, float from, float to) {
  const float x = static_cast<float>(bits & kFloatMask) * kFloatScale;  // exact
  return std::fma(x, to - from, from);
}

// at::uniform_real_distribution<double>(0, 1): the (to - from, from) = (1, 0)
// step is exact, so it is left out.
double uniform_double01(uint64_t bits) { return static_cast<double>(bits & kDoubleMask) * kDoubleScale; }

// ---- Float math of normal_fill_16_AVX2 ---------------------------------------
// For float32 tensors of 16 or more contiguous elements, PyTorch's AVX2
// kernel does Box-Muller on 8 lanes at once with the Cephes-style
// polynomials of avx_mathfun.h (log256_ps, sincos256_ps), not std::log and
// std::sin/cos. Over the 2^24 inputs normal_ can feed them, they differ from
// the C library's float log for about 1 input in 13 and from its sin/cos for
// about 1 in 3 (by an ULP or so), so we port them lane by lane: same
// constants, same float operations, same order, same fused steps. Masks of
// the vector code (all ones or all zeros per lane) become plain `if`s: an
// AND with a false mask yields +0.0f, which is what we write.
//
// Credit: avx_mathfun.h is by Giovanni Garberoglio (2012, zlib licence),
// after Julien Pommier's sse_mathfun.h and Stephen Moshier's Cephes library.
// What follows is a scalar rewrite for this book, not the original code.

// The constants are float arrays initialised from these decimal literals, so
// each is the literal rounded to float (static_cast, not an `f` suffix:
// rounding through double first is what the original does).
constexpr float kSqrtHalf = static_cast<float>(0.707106781186547524);
constexpr float kLogP0 = static_cast<float>(7.0376836292E-2);
constexpr float kLogP1 = static_cast<float>(-1.1514610310E-1);
constexpr float kLogP2 = static_cast<float>(1.1676998740E-1);
constexpr float kLogP3 = static_cast<float>(-1.2420140846E-1);
constexpr float kLogP4 = static_cast<float>(+1.4249322787E-1);
constexpr float kLogP5 = static_cast<float>(-1.6668057665E-1);
constexpr float kLogP6 = static_cast<float>(+2.0000714765E-1);
constexpr float kLogP7 = static_cast<float>(-2.4999993993E-1);
constexpr float kLogP8 = static_cast<float>(+3.3333331174E-1);
constexpr float kLogQ1 = static_cast<float>(-2.12194440e-4);  // log(2) = Q2 + Q1, split for accuracy
constexpr float kLogQ2 = static_cast<float>(0.693359375);

constexpr uint32_t kExponentBits = 0x7f800000U;
constexpr uint32_t kSignBit = 0x80000000U;
constexpr float kMinNormal = std::numeric_limits<float>::min();  // 0x00800000

// Natural logarithm, one lane of log256_ps. Writes x = m * 2^e with m in
// [sqrt(1/2), sqrt(2)), then log(x) = log(m) + e * log(2), where
// log(m) = log(1 + t) ~ t - t^2/2 + t^3 P(t) for t = m - 1, P of degree 8.
float log_lane(float x) {
  const bool invalid = x <= 0.0f;  // the vector code ORs NaN into these lanes
  if (!(x > kMinNormal)) x = kMinNormal;  // _mm256_max_ps(x, min_norm): cut off denormals
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const int32_t exponent = static_cast<int32_t>(bits >> 23) - 0x7f;
  // Keep the significand, force the exponent of 0.5: m in [0.5, 1).
  x = std::bit_cast<float>((bits & ~kExponentBits) | std::bit_cast<uint32_t>(0.5f));
  float e = static_cast<float>(exponent);
  e = e + 1.0f;

  // if (m < sqrt(1/2)) { e -= 1; x = m + m - 1; } else { x = m - 1; }
  const bool small = x < kSqrtHalf;
  const float tmp = small ? x : 0.0f;
  x = x - 1.0f;
  e = e - (small ? 1.0f : 0.0f);
  x = x + tmp;

  const float z = x * x;
  float y = kLogP0;  // Horner's rule; PyTorch's build fuses each step
  y = std::fma(y, x, kLogP1);
  y = std::fma(y, x, kLogP2);
  y = std::fma(y, x, kLogP3);
  y = std::fma(y, x, kLogP4);
  y = std::fma(y, x, kLogP5);
  y = std::fma(y, x, kLogP6);
  y = std::fma(y, x, kLogP7);
  y = std::fma(y, x, kLogP8);
  y = y * x;
  const float e_q1 = e * kLogQ1;  // rounded on its own: its add got fused with y * z instead
  y = std::fma(y, z, e_q1);
  y = std::fma(-z, 0.5f, y);  // y - z / 2
  x = x + y;
  x = std::fma(e, kLogQ2, x);
  if (invalid) return std::bit_cast<float>(0xffffffffU);  // NaN, as the OR with the mask gives
  return x;
}

constexpr float kFourOverPi = static_cast<float>(1.27323954473516);
// pi/4 split into three parts (DP1 + DP2 + DP3) so that x - j * pi/4 loses
// almost nothing: "extended precision modular arithmetic".
constexpr float kMinusDP1 = static_cast<float>(-0.78515625);
constexpr float kMinusDP2 = static_cast<float>(-2.4187564849853515625e-4);
constexpr float kMinusDP3 = static_cast<float>(-3.77489497744594108e-8);
constexpr float kSinP0 = static_cast<float>(-1.9515295891E-4);
constexpr float kSinP1 = static_cast<float>(8.3321608736E-3);
constexpr float kSinP2 = static_cast<float>(-1.6666654611E-1);
constexpr float kCosP0 = static_cast<float>(2.443315711809948E-005);
constexpr float kCosP1 = static_cast<float>(-1.388731625493765E-003);
constexpr float kCosP2 = static_cast<float>(4.166664568298827E-002);

// Sine and cosine together, one lane of sincos256_ps (Cephes sinf/cosf).
// Reduces x to [-pi/4, pi/4] by the octant j, evaluates both polynomials and
// picks, per octant, which one is the sine and which the cosine.
void sincos_lane(float x, float& sin_out, float& cos_out) {
  uint32_t sign_sin = std::bit_cast<uint32_t>(x) & kSignBit;
  x = std::fabs(x);

  // j = (int(x * 4/pi) + 1) & ~1: the even octant nearest to x.
  int32_t j = static_cast<int32_t>(x * kFourOverPi);  // cvttps: truncation
  j = (j + 1) & ~1;
  const float y = static_cast<float>(j);
  const uint32_t swap_sign_sin = static_cast<uint32_t>(j & 4) << 29;
  const bool sin_uses_sin_poly = (j & 2) == 0;
  const uint32_t sign_cos = static_cast<uint32_t>(~(j - 2) & 4) << 29;
  sign_sin ^= swap_sign_sin;

  x = std::fma(y, kMinusDP1, x);  // x - y * pi/4, in three fused steps
  x = std::fma(y, kMinusDP2, x);
  x = std::fma(y, kMinusDP3, x);

  const float z = x * x;
  // Cosine polynomial: 1 - z/2 + z^2 (c2 + z (c1 + z c0)).
  float yc = std::fma(kCosP0, z, kCosP1);
  yc = std::fma(yc, z, kCosP2);
  yc = yc * z;
  const float half_z = z * 0.5f;
  yc = std::fma(yc, z, -half_z);
  yc = yc + 1.0f;
  // Sine polynomial: x + x z (s2 + z (s1 + z s0)).
  float ys = std::fma(kSinP0, z, kSinP1);
  ys = std::fma(ys, z, kSinP2);
  ys = ys * z;
  ys = std::fma(ys, x, x);

  // The vector code selects with masks and then adds the pieces back; the
  // subtractions and additions below are those of the original.
  const float sin_from_sin_poly = sin_uses_sin_poly ? ys : 0.0f;
  const float sin_from_cos_poly = sin_uses_sin_poly ? 0.0f : yc;
  ys = ys - sin_from_sin_poly;
  yc = yc - sin_from_cos_poly;
  const float s = sin_from_cos_poly + sin_from_sin_poly;
  const float c = yc + ys;
  sin_out = std::bit_cast<float>(std::bit_cast<uint32_t>(s) ^ sign_sin);
  cos_out = std::bit_cast<float>(std::bit_cast<uint32_t>(c) ^ sign_cos);
}

// normal_fill_16_AVX2: turns 16 uniforms in place into 16 normals. Lane j
// pairs data[j] (radius) with data[j + 8] (angle), Box-Muller style:
//   radius = sqrt(-2 log(1 - u1)),  theta = 2 pi u2,
//   data[j] = radius cos(theta) * std + mean,  data[j + 8] = radius sin(theta) * std + mean.
// 1 - u1 maps [0, 1) to (0, 1], so the logarithm is always finite.
constexpr float kTwoPi = static_cast<float>(2.0 * kPi);  // 2.0f * pi<double>, rounded to float

void normal_fill_16(float* data, float mean, float std) {
  for (int j = 0; j < 8; ++j) {
    const float u1 = 1.0f - data[j];
    const float u2 = data[j + 8];
    const float radius = std::sqrt(-2.0f * log_lane(u1));
    const float theta = kTwoPi * u2;
    float sin_theta = 0.0f;
    float cos_theta = 0.0f;
    sincos_lane(theta, sin_theta, cos_theta);
    const float n1 = radius * cos_theta;
    const float n2 = radius * sin_theta;
    data[j] = std::fma(n1, std, mean);  // _mm256_fmadd_ps in the original
    data[j + 8] = std::fma(n2, std, mean);
  }
}

void require_count(int64_t n, const char* what) {
  if (n < 0) throw std::invalid_argument(fmt::format("{}: n must be >= 0, got {}", what, n));
}

void require_shape(int64_t rows, int64_t cols, const char* what) {
  if (rows < 0 || cols < 0)
    throw std::invalid_argument(fmt::format("{}: rows and cols must be >= 0, got ({}, {})", what, rows, cols));
}

}  // namespace

// ---- Seeding and the raw stream ---------------------------------------------

Generator::Generator(uint64_t seed) { manual_seed(seed); }

void Generator::manual_seed(uint64_t seed) {
  seed_ = seed;  // initial_seed() reports all 64 bits, as torch.initial_seed() does...
  // ...but mt19937 only uses the low 32, seeded with Knuth's initialisation as
  // std::mt19937 and at::mt19937 both do.
  engine_.seed(static_cast<uint32_t>(seed & 0xffffffffU));
  next_double_normal_.reset();  // a cached Box-Muller sample would leak across seeds
}

std::string Generator::state() const {
  std::ostringstream out;
  out << "seed " << seed_ << " normal ";
  if (next_double_normal_) {
    // %a: the double's bits in hexadecimal, read back exactly by strtod.
    char buf[64];
    std::snprintf(buf, sizeof buf, "%a", *next_double_normal_);
    out << buf;
  } else {
    out << "none";
  }
  out << " mt " << engine_;  // the standard's text form: 624 words and the position
  return out.str();
}

void Generator::set_state(const std::string& state) {
  const auto refuse = [&](const std::string& why) {
    return std::invalid_argument(fmt::format("Generator::set_state: {} (expected \"seed N normal none|HEXFLOAT mt "
                                             "WORDS...\" as state() writes it; got {} characters starting \"{}\")",
                                             why, state.size(), state.substr(0, 40)));
  };
  std::istringstream in(state);
  in.imbue(std::locale::classic());
  std::string word, normal;
  uint64_t seed = 0;
  if (!(in >> word) || word != "seed" || !(in >> seed)) throw refuse("no seed");
  if (!(in >> word) || word != "normal" || !(in >> normal)) throw refuse("no cached normal");
  std::optional<double> cached;
  if (normal != "none") {
    char* end = nullptr;
    const double x = std::strtod(normal.c_str(), &end);
    if (end != normal.c_str() + normal.size() || !std::isfinite(x))
      throw refuse(fmt::format("the cached normal '{}' is not a finite number", normal.substr(0, 40)));
    cached = x;
  }
  if (!(in >> word) || word != "mt") throw refuse("no Mersenne Twister state");
  // Checked word by word before the engine reads them: its operator>> takes
  // any unsigned long (uint_fast32_t is 64 bits here) and any position, and
  // a word above 32 bits would change every later draw.
  std::vector<std::string> words;
  while (in >> word) words.push_back(word);
  constexpr size_t kWords = std::mt19937::state_size;
  if (words.size() != kWords + 1)
    throw refuse(fmt::format("the Mersenne Twister state has {} numbers, not {} words and a position", words.size(),
                             kWords + 1));
  for (size_t k = 0; k < words.size(); ++k) {
    const uint64_t limit = k < kWords ? 0xffffffffULL : kWords;
    if (words[k].empty() || words[k].size() > 10 || words[k].find_first_not_of("0123456789") != std::string::npos ||
        std::stoull(words[k]) > limit)
      throw refuse(fmt::format("Mersenne Twister {} {} is '{}', not a number from 0 to {}",
                               k < kWords ? "word" : "position", k, words[k].substr(0, 20), limit));
  }
  std::mt19937 engine;
  std::istringstream mt(state.substr(state.find(" mt ") + 4));
  mt.imbue(std::locale::classic());
  if (!(mt >> engine)) throw refuse("the Mersenne Twister state could not be read");
  seed_ = seed;
  engine_ = engine;
  next_double_normal_ = cached;
}

uint32_t Generator::next_mt() { return static_cast<uint32_t>(engine_()); }

uint32_t Generator::random() { return next_mt(); }

double Generator::uniform_double() { return uniform_double01(random64()); }

uint64_t Generator::random64() {
  const uint64_t hi = next_mt();  // drawn first
  const uint64_t lo = next_mt();
  return (hi << 32) | lo;
}

// ---- Uniform -------------------------------------------------------------------

void Generator::rand(float* out, int64_t n) { uniform_(out, n, 0.0, 1.0); }

void Generator::uniform_(float* out, int64_t n, double from, double to) {
  require_count(n, "uniform_");
  if (!(from <= to))
    throw std::invalid_argument(fmt::format("uniform_: expects from <= to, got from={} > to={}", from, to));
  if (to - from > static_cast<double>(std::numeric_limits<float>::max()))
    throw std::invalid_argument(fmt::format("uniform_: to - from = {} exceeds the float32 range", to - from));
  // PyTorch converts the bounds to the tensor's dtype before anything else.
  const float lo = static_cast<float>(from);
  const float hi = static_cast<float>(to);
  for (int64_t i = 0; i < n; ++i) out[i] = uniform_float(random(), lo, hi);  // one 32-bit draw each
}

// ---- Normal ---------------------------------------------------------------------

// at::normal_distribution<double>: Box-Muller in double precision. One pair
// of 53-bit uniforms gives two independent normals, r cos(theta) and
// r sin(theta); the second is kept in the generator and returned by the next
// call, whichever PyTorch function makes it. Returns a standard normal; the
// caller applies mean and std.
double Generator::normal_double() {
  if (next_double_normal_) {
    const double cached = *next_double_normal_;
    next_double_normal_.reset();
    return cached;
  }
  const double u1 = uniform_double01(random64());
  const double u2 = uniform_double01(random64());
  const double r = std::sqrt(-2.0 * std::log(1.0 - u2));  // 1 - u2 in (0, 1]: log is finite
  const double theta = 2.0 * kPi * u1;
  next_double_normal_ = r * std::sin(theta);
  return r * std::cos(theta);
}

void Generator::normal_(float* out, int64_t n, double mean, double std) {
  require_count(n, "normal_");
  if (!(std >= 0.0)) throw std::invalid_argument(fmt::format("normal_: expects std >= 0, got std={}", std));

  if (n < 16) {
    // Small tensors: one double-precision sample per element, each rounded
    // to float at the end. mean and std stay double here. PyTorch's machine
    // code fuses the final multiply-add; after rounding to float that almost
    // never matters (no case found), but we fuse too, to be the same code.
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(std::fma(normal_double(), std, mean));
    return;
  }

  // 16 or more elements: normal_fill_AVX2. First one float uniform per
  // element (in order), then Box-Muller on each full block of 16.
  const float mean_f = static_cast<float>(mean);
  const float std_f = static_cast<float>(std);
  for (int64_t i = 0; i < n; ++i) out[i] = uniform_float(random(), 0.0f, 1.0f);
  for (int64_t i = 0; i + 16 <= n; i += 16) normal_fill_16(out + i, mean_f, std_f);
  if (n % 16 != 0) {
    // The last n % 16 elements do not fill a block. PyTorch redoes the last
    // 16 elements as a block of their own, from 16 fresh uniforms; this
    // overwrites some already finished values and consumes 16 more draws.
    float* tail = out + n - 16;
    for (int i = 0; i < 16; ++i) tail[i] = uniform_float(random(), 0.0f, 1.0f);
    normal_fill_16(tail, mean_f, std_f);
  }
}

// ---- Matrices -------------------------------------------------------------------
// A row-major (rows, cols) matrix is the same contiguous buffer as a
// torch tensor of that shape, so the values land in the same places.

Matrix Generator::rand(int64_t rows, int64_t cols) {
  require_shape(rows, cols, "rand");
  Matrix m(rows, cols);
  rand(m.data(), rows * cols);
  return m;
}

Matrix Generator::randn(int64_t rows, int64_t cols) {
  require_shape(rows, cols, "randn");
  Matrix m(rows, cols);
  normal_(m.data(), rows * cols, 0.0, 1.0);
  return m;
}

Matrix Generator::uniform(int64_t rows, int64_t cols, double from, double to) {
  require_shape(rows, cols, "uniform");
  Matrix m(rows, cols);
  uniform_(m.data(), rows * cols, from, to);
  return m;
}

// ---- Integers -------------------------------------------------------------------

std::vector<int64_t> Generator::randint(int64_t low, int64_t high, int64_t n) {
  require_count(n, "randint");
  if (high <= low)
    throw std::invalid_argument(fmt::format("randint: expects low < high, got low={} >= high={}", low, high));
  // The range as an unsigned number, so that [INT64_MIN, INT64_MAX) fits.
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (auto& v : out) {
    // A 32-bit draw when the range fits in 32 bits, else a 64-bit one. The
    // modulo makes small ranges very slightly uneven; PyTorch accepts that.
    const uint64_t bits = range >= (uint64_t{1} << 32) ? random64() : uint64_t{random()};
    v = static_cast<int64_t>(bits % range + static_cast<uint64_t>(low));  // wraps like PyTorch's
  }
  return out;
}

std::vector<int64_t> Generator::randperm(int64_t n) {
  require_count(n, "randperm");
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), int64_t{0});
  // Fisher-Yates, front to back: swap position i with a random position in
  // [i, n). One 32-bit draw per step, n - 1 draws in all. PyTorch 1.13 uses
  // a 32-bit draw whatever n is (later versions switch to 64-bit draws for
  // n of about 2^32 / 20 and more).
  for (int64_t i = 0; i + 1 < n; ++i) {
    const int64_t z = static_cast<int64_t>(random() % static_cast<uint64_t>(n - i));
    std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(i + z)]);
  }
  return perm;
}

}  // namespace sa
