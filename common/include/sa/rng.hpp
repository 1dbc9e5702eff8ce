// The project's only source of randomness: a generator that reproduces
// PyTorch's CPU generator bit for bit, so that
//     torch.manual_seed(s); torch.randn(3, 4)
// and
//     sa::Generator g(s); g.randn(3, 4)
// print the same float32 numbers. Never use std::*_distribution: their
// output differs between standard libraries.
#pragma once

#include "sa/tensor.hpp"

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace sa {

class Generator {
 public:
  // The seed of a new torch.Generator(). (A fresh Python process seeds its
  // global generator from the OS instead, so always seed explicitly.) Only
  // the low 32 bits reach the Mersenne Twister, as in PyTorch: seeds 5 and
  // 2^32 + 5 give the same stream.
  static constexpr uint64_t kDefaultSeed = 67280421310721ULL;

  explicit Generator(uint64_t seed = kDefaultSeed);

  // torch.manual_seed(seed): restarts the stream and forgets any cached
  // normal sample.
  void manual_seed(uint64_t seed);
  uint64_t initial_seed() const { return seed_; }

  // The whole state as text, for a checkpoint to store and a resumed run to
  // restore: the seed, the cached normal sample (Box-Muller makes two and
  // returns one: the other is part of the stream) and the Mersenne Twister's
  // 624 words and position in std::mt19937's standard text form:
  //   "seed 42 normal none mt 1608637542 3421126067 ..."
  //   "seed 42 normal 0x1.3c8d2a8b7ep-1 mt ..."     (the cache, exactly: %a)
  // set_state(state()) continues the same stream, draw for draw. A string
  // that is not such a state is refused with std::invalid_argument, and the
  // generator is left as it was.
  std::string state() const;
  void set_state(const std::string& state);

  // Raw draws of the underlying mt19937.
  uint32_t random();
  uint64_t random64();  // two draws, the first is the high word
  // One double in [0, 1) from one random64(): its low 53 bits times 2^-53,
  // as torch.rand(dtype=torch.float64) and bernoulli_ (dropout) draw.
  double uniform_double();

  // Fill a contiguous float buffer exactly as the PyTorch call would fill a
  // contiguous float32 tensor of n elements.
  void rand(float* out, int64_t n);                                // torch.rand
  void uniform_(float* out, int64_t n, double from, double to);    // Tensor.uniform_
  void normal_(float* out, int64_t n, double mean = 0.0, double std = 1.0);  // Tensor.normal_, torch.randn

  // Convenience: a fresh (rows, cols) matrix, same draws as the 2-D tensor.
  Matrix rand(int64_t rows, int64_t cols);
  Matrix randn(int64_t rows, int64_t cols);
  Matrix uniform(int64_t rows, int64_t cols, double from, double to);

  // torch.randint(low, high, (n,)) with dtype int64, and torch.randperm(n).
  std::vector<int64_t> randint(int64_t low, int64_t high, int64_t n);
  std::vector<int64_t> randperm(int64_t n);

 private:
  uint32_t next_mt();
  double normal_double();  // one sample of at::normal_distribution<double>

  uint64_t seed_ = kDefaultSeed;
  // The standard engine is PyTorch's: at::mt19937 seeds, twists and tempers
  // exactly as std::mt19937 does (tests/common/test_rng.cpp checks the
  // reference outputs and every PyTorch fixture), so only what PyTorch does
  // with the draws is written here.
  std::mt19937 engine_;
  std::optional<double> next_double_normal_;
};

}  // namespace sa
