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

#include <cstdint>
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

// Throws UsageError naming the flags when o asks for more than the bounds.
inline void check_work(const Options& o) {
  if (o.block > o.seq_len)
    throw UsageError(fmt::format("--block {} is larger than --seq-len {}: one tile would hold the whole sequence, "
                                 "which is the naive computation (use --block {} or less)",
                                 o.block, o.seq_len, o.seq_len));
  const int64_t tiles_per_side = (o.seq_len + o.block - 1) / o.block;
  if (tiles_per_side * tiles_per_side > kMaxTiles)
    throw UsageError(fmt::format("--block {} cuts seq_len {} into {} x {} tiles; at most {} are allowed (use --block {} "
                                 "or more)",
                                 o.block, o.seq_len, tiles_per_side, tiles_per_side, kMaxTiles, (o.seq_len + 1023) / 1024));
  if (o.seq_len * o.seq_len * o.d_k > kMaxScoreWork)
    throw UsageError(fmt::format("--seq-len {} with --d-k {} asks for {:.2e} operations per forward; at most {:.2e} "
                                 "(seq_len² · d_k <= 2^38, about 10 s on one core)",
                                 o.seq_len, o.d_k, 4.0 * double(o.seq_len) * double(o.seq_len) * double(o.d_k),
                                 4.0 * double(kMaxScoreWork)));
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

// The exponent b of time ≈ a·T^b, by least squares on log time against log T.
double fitted_exponent(const std::vector<double>& T, const std::vector<double>& ms);

}  // namespace sa::ch8
