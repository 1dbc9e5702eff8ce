// Reference solution of chapter 7's RoPE exercise: rotary position
// embeddings and their backward (chapters/07-training/rope.hpp says what
// each must do).
#include "07-training/rope.hpp"

#include "07-training/training.hpp"

#include <fmt/core.h>

#include <cmath>
#include <stdexcept>
#include <string_view>

namespace sa {

namespace {

// The dimensions of QKV, refused as rope.hpp says.
AttentionDims rope_dims(std::string_view function, const Matrix& QKV, int64_t batch, int64_t n_heads, double base) {
  const AttentionDims a = attention_dims(function, QKV, batch, n_heads);
  if (a.d_k % 2 != 0)
    throw std::invalid_argument(fmt::format("{}: d_k = {} is odd; RoPE rotates features in pairs (2i, 2i+1), so "
                                            "d_k = d_model / n_heads must be even",
                                            function, a.d_k));
  if (!std::isfinite(base) || !(base > 1.0))
    throw std::invalid_argument(fmt::format("{}: base {} is not a finite number above 1", function, base));
  return a;
}

// Turns pair (2i, 2i+1) of every head of Q and K, in the row at position p,
// by sign · p θ_i: +1 is the forward, −1 its transpose (the backward).
void rotate_pairs(Matrix& M, const AttentionDims& a, double base, double sign) {
  for (int64_t i = 0; i < a.d_k / 2; ++i) {
    // θ_i = base^(−2i / d_k): pair 0 turns by one radian per position, the
    // last pair almost not at all.
    const double theta = std::pow(base, -double(2 * i) / double(a.d_k));
    for (int64_t p = 0; p < a.seq; ++p) {
      // One rounding of cos and sin; every sequence and head reuses them.
      const double angle = sign * double(p) * theta;
      const float c = float(std::cos(angle)), s = float(std::sin(angle));
      for (int64_t b = 0; b < a.batch; ++b) {
        float* row = M.row(b * a.seq + p).data();
        for (int64_t part = 0; part < 2; ++part)  // Q, then K; V (part 2) keeps no position
          for (int64_t h = 0; h < a.n_heads; ++h) {
            float* pair = row + part * a.d_model + h * a.d_k + 2 * i;
            const float x0 = pair[0], x1 = pair[1];
            pair[0] = x0 * c - x1 * s;
            pair[1] = x0 * s + x1 * c;
          }
      }
    }
  }
}

}  // namespace

void rope_forward(Matrix& QKV, int64_t batch, int64_t n_heads, double base) {
  const AttentionDims a = rope_dims("rope_forward", QKV, batch, n_heads, base);
  rotate_pairs(QKV, a, base, +1.0);
}

void rope_backward(Matrix& dQKV, int64_t batch, int64_t n_heads, double base) {
  // y = R x with R orthogonal: dx = Rᵀ dy = R⁻¹ dy, the same rotation with
  // the opposite angle.
  const AttentionDims a = rope_dims("rope_backward", dQKV, batch, n_heads, base);
  rotate_pairs(dQKV, a, base, -1.0);
}

}  // namespace sa
