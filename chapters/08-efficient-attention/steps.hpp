// The steps of chapter 8's program (main.cpp lists them in order). Each
// prints its shapes and values and draws its figures.
//   steps_cost.cpp        steps 1 and 8 (what attention costs, against the layers before it),
//                         and the inputs every step shares
//   steps_tiled.cpp       steps 2 to 5: online softmax, tiled forward, causal, backward
//   steps_generation.cpp  step 6: the key/value cache
//   steps_cheaper.cpp     step 7: local and linear attention
#pragma once

#include "sa/cli.hpp"
#include "sa/figures.hpp"
#include "sa/print.hpp"
#include "sa/rng.hpp"
#include "sa/tensor.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sa::ch8 {

inline constexpr int64_t kMaxSeqLen = 65536;
// The largest seq_len the naive attention is run at: it holds the scores and
// the weights, two (seq_len, seq_len) float matrices, 128 MiB at 4096.
inline constexpr int64_t kNaiveMaxSeqLen = 4096;

// Bounds on the work a run may ask for, checked before anything is drawn:
// a tile costs a fixed overhead, so too many tiny ones crawl; and one
// forward is 4·seq_len²·d_k operations (2^40 is about 10 s on one core).
inline constexpr int64_t kMaxTiles = int64_t(1) << 20;         // (seq_len / block)² per pass
inline constexpr int64_t kMaxScoreWork = int64_t(1) << 38;     // seq_len² · d_k

struct Options {
  int64_t seq_len = 1024;
  int64_t d_k = 64;
  int64_t block = 128;
  int64_t window = 64;
  int64_t gen_tokens = 256;
  int64_t reversal_epochs = 10;
};

// Step 1 times both paths for T = 64, 128, ..., kSweepMaxSeqLen, with
// --block: the tile bound holds for it as for --seq-len.
inline constexpr int64_t kSweepMaxSeqLen = 8192;

// Throws UsageError naming the flags when o asks for more than the bounds.
inline void check_work(const Options& o) {
  if (o.block > o.seq_len)
    throw UsageError(fmt::format("--block {} is larger than --seq-len {}: one tile would hold the whole sequence, "
                                 "which is the naive computation (use --block {} or less)",
                                 o.block, o.seq_len, o.seq_len));
  // The longest sequence a run cuts into tiles: --seq-len, or step 1's sweep.
  const int64_t longest = std::max(o.seq_len, kSweepMaxSeqLen);
  const int64_t tiles_per_side = (longest + o.block - 1) / o.block;
  if (tiles_per_side * tiles_per_side > kMaxTiles)
    throw UsageError(fmt::format("--block {} cuts seq_len {}{} into {} x {} tiles; at most {} are allowed (use --block {} "
                                 "or more)",
                                 o.block, longest, longest == o.seq_len ? "" : " (step 1's largest)", tiles_per_side,
                                 tiles_per_side, kMaxTiles, (longest + 1023) / 1024));
  if (o.seq_len * o.seq_len * o.d_k > kMaxScoreWork)
    throw UsageError(fmt::format("--seq-len {} with --d-k {} asks for {:.2e} operations per forward; at most {:.2e} "
                                 "(seq_len² · d_k <= 2^38, about 10 s on one core)",
                                 o.seq_len, o.d_k, 4.0 * double(o.seq_len) * double(o.seq_len) * double(o.d_k),
                                 4.0 * double(kMaxScoreWork)));
}

// ---- The whole run's cost, for sa::Cli::check_budget ----------------------
// check_work bounds one forward pass; the program runs many: step 1 times
// both paths at eight lengths, steps 3 to 5 and 7 time several passes at
// --seq-len (each timing is one call to measure its memory, then a median of
// at least 3 calls filling 0.1 or 0.2 s), step 6 generates --gen-tokens
// tokens from scratch, step 7 trains chapter 7's reversal model five times
// for --reversal-epochs epochs. Constants measured on the book's machine (an
// AMD EPYC, family 25, AVX2, one core) and rounded up: the default run is
// estimated at 35 s and takes 22 s of CPU, --gen-tokens 1024 98 s against
// 75 s, --seq-len 8192 --d-k 128 66 s against 39 s, --reversal-epochs 30
// 75 s against 60 s.
namespace cost {
inline constexpr double kTiledOpsPerSecond = 4e10;     // the 4 T² d_k operations of a tiled forward
inline constexpr double kSecondsPerTile = 2e-6;        // a tile's fixed work (its row maxima, rescaling)
inline constexpr double kTiledSecondsPerScore = 2e-9;  // exp of each score, and tiles that spill the cache
inline constexpr double kNaiveOpsPerSecond = 2e10;     // the same operations through chapter 3's attention
inline constexpr double kSecondsPerScore = 6e-9;       // its exp and two T x T matrices, per score
inline constexpr double kSecondsPerFreshByte = 5e-10;  // a work space's new pages (about 2 us a 4 KiB page here)
inline constexpr double kGenerationSecondsPerCube = 6e-8;  // step 6 from scratch: n steps over up to n rows, n³
inline constexpr double kReversalEpochSeconds = 0.45;  // step 7: one epoch of chapter 7's reversal task (0.38 s measured)
inline constexpr double kFixedSeconds = 4;             // the rest: the small examples, step 6's trained model

inline double tiled_forward(double T, double d_k, double block) {
  const double tiles = std::ceil(T / block) * std::ceil(T / block), tile = std::min(block, T);
  return 4 * T * T * d_k / kTiledOpsPerSecond + tiles * kSecondsPerTile + T * T * kTiledSecondsPerScore +
         4 * tile * tile * kSecondsPerFreshByte;
}
inline double naive_forward(double T, double d_k) {
  return 4 * T * T * d_k / kNaiveOpsPerSecond + T * T * (kSecondsPerScore + 8 * kSecondsPerFreshByte);
}
// One timing: a call that measures the memory, then at least 3 more and as
// many as fill `budget` seconds (at most 50).
inline double timed(double call, double budget) { return call + std::max(3 * call, std::min(budget, 50 * call)); }
}  // namespace cost

inline RunEstimate estimate_run(const Options& o) {
  using namespace cost;
  const double T = double(o.seq_len), d = double(o.d_k), B = double(o.block);
  double s = kFixedSeconds;
  for (int64_t t = 64; t <= kSweepMaxSeqLen; t *= 2) {  // step 1
    s += timed(tiled_forward(double(t), d, B), 0.1);
    if (t <= kNaiveMaxSeqLen) s += timed(naive_forward(double(t), d), 0.1);
  }
  const double forward = tiled_forward(T, d, B);
  s += timed(forward, 0.2) + 2 * timed(forward, 0.2) + timed(forward / 2, 0.2);  // steps 3, 4 (full and causal), 7
  s += forward + timed(2.5 * forward, 0.2) + timed(forward, 0.2);                 // step 5: the backward is 10/4 of it
  if (o.seq_len <= kNaiveMaxSeqLen) s += timed(naive_forward(T, d), 0.2);
  s += timed(4 * T * double(std::min(o.window, o.seq_len)) * d / kTiledOpsPerSecond, 0.2);  // local: T r d
  s += timed(4 * T * d * d / kTiledOpsPerSecond, 0.2);                                      // linear: T d²
  const double n = double(o.gen_tokens);
  s += kGenerationSecondsPerCube * n * n * n;
  s += 5 * double(o.reversal_epochs) * kReversalEpochSeconds;
  RunEstimate e;
  e.seconds = s;
  // Q, K, V, dO and the gradients at --seq-len; the naive path's two T x T
  // matrices (step 1 always reaches T = 4096); a tile's work space.
  const double naive_T = double(std::min(o.seq_len, kNaiveMaxSeqLen));
  e.bytes = 4.0 * (10 * T * d + 2 * std::max(naive_T, double(kNaiveMaxSeqLen)) * std::max(naive_T, double(kNaiveMaxSeqLen)) +
                   3 * std::min(B, T) * std::min(B, T));
  e.options = fmt::format("--seq-len {} --d-k {} --block {} --gen-tokens {} --reversal-epochs {}", o.seq_len, o.d_k,
                          o.block, o.gen_tokens, o.reversal_epochs);
  return e;
}

// The small example every value of steps 2 to 5 and 7 is printed for:
// seq_len 10, d_k 4, tiles of 4 (so the last tile holds only 2 rows).
struct Small {
  static constexpr int64_t seq_len = 10, d_k = 4, block = 4;
  Matrix Q, K, V, dO;  // dO: an upstream gradient for the backward (step 5)
};

// The run at --seq-len, d_k: Q, K, V and an upstream gradient dO.
struct Large {
  Matrix Q, K, V, dO;
  bool naive_fits = false;  // seq_len <= kNaiveMaxSeqLen
};

// Both drawn from one generator, small first, so the small example's values
// do not depend on --seq-len. Steps 1 and 6 draw from generators of their
// own, seeded with --seed, for the same reason.
Small make_small(Generator& gen);
Large make_large(Generator& gen, const Options& o);

void quadratic_cost(uint64_t seed, const Options& o, Figures& figures);
void online_softmax_demo(const Small& small, Figures& figures);
void tiled_forward_demo(const Small& small, const Large& large, const Options& o);
void causal_demo(const Small& small, const Large& large, const Options& o, Figures& figures);
void backward_demo(const Small& small, const Large& large, const Options& o);
void kv_cache_demo(uint64_t seed, const Options& o, Figures& figures);
void cheaper_demo(const Small& small, const Large& large, const Options& o, Figures& figures);
void compare_layers(const Options& o);
void local_on_reversal(uint64_t seed, int64_t epochs, Figures& figures);

// A memory measure::extra_bytes measured, or "n/a" where this system gives
// no measurement (a program that cannot write /proc/self/clear_refs cannot
// reset its peak resident size): never a 0 nothing measured.
inline std::string measured_bytes_str(const std::optional<int64_t>& bytes) {
  return bytes ? bytes_str(double(*bytes)) : std::string("n/a");
}

// The exponent b of time ≈ a·T^b, by least squares on log time against log T.
double fitted_exponent(const std::vector<double>& T, const std::vector<double>& ms);

}  // namespace sa::ch8
