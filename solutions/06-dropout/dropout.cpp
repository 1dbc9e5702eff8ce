// Reference solutions of chapter 6.
//
// The draws reproduce PyTorch 1.13's F.dropout(x, p, training=True) on the
// CPU bit for bit, mask and values. What PyTorch does there
// (aten/src/ATen/native/Dropout.cpp, native/cpu/DistributionTemplates.h):
//     if p == 0: return x                        (no draws)
//     if p == 1: return x * 0                    (no draws)
//     noise = empty_like(x).bernoulli_(1 - p)    (one uniform double per element)
//     noise.div_(1 - p)                          (float32: 1.0f / float(1 - p))
//     return x * noise
// bernoulli_(q) runs at::bernoulli_distribution<double>(q) element by
// element in memory order: u = at::uniform_real_distribution<double>(0, 1),
// which takes ONE 64-bit draw and keeps its low 53 bits, and the element is
// 1 when u < q. (A build of PyTorch with MKL takes another path on Intel
// CPUs; Debian's build has no MKL, and the tests check its output.)
#include "06-dropout/dropout.hpp"

#include <fmt/core.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace sa {

namespace {

void require_probability(double p, const char* what) {
  // Written so that NaN fails too: every comparison with NaN is false.
  if (!(p >= 0.0 && p <= 1.0))
    throw std::invalid_argument(fmt::format("{}: the drop probability p must be in [0, 1], got {}", what, p));
}

// The survivors' factor, rounded the way PyTorch rounds it: the scalar
// 1 - p is computed in double, converted to the tensor's float32, and the
// division happens in float32. (float(1 / (1 - p)) can differ in the last bit.)
float survivor_scale(double p) { return 1.0f / static_cast<float>(1.0 - p); }

}  // namespace

DropoutResult dropout(const Matrix& x, double p, Generator& gen) {
  require_probability(p, "dropout");
  DropoutResult r;
  // The two ends draw nothing, as in PyTorch, so the generator's stream (and
  // every random number after this call) stays the same as in Python.
  if (p == 0.0) {
    r.output = x;  // the identity, bit for bit
    r.keep = Mask::Constant(x.rows(), x.cols(), true);
    return r;
  }
  if (p == 1.0) {
    // Everything is dropped. 1 / (1 - p) would be 1 / 0 = inf, and 0 * inf
    // is NaN, so the scale is never formed here.
    r.output = Matrix::Zero(x.rows(), x.cols());
    r.keep = Mask::Constant(x.rows(), x.cols(), false);
    return r;
  }

  // Keep with probability 1 - p, independently for every element. The loop
  // walks the row-major matrix in memory order, which is the order PyTorch
  // fills a contiguous tensor, so element k gets the k-th draw in both.
  const double keep_probability = 1.0 - p;
  const float scale = survivor_scale(p);
  r.output.resize(x.rows(), x.cols());
  r.keep.resize(x.rows(), x.cols());
  for (int64_t i = 0; i < x.rows(); ++i) {
    for (int64_t j = 0; j < x.cols(); ++j) {
      const bool keep = gen.uniform_double() < keep_probability;
      r.keep(i, j) = keep;
      // Inverted dropout: scale the survivors now, so that
      // E[output] = (1 - p) * x / (1 - p) = x and evaluation needs no change.
      r.output(i, j) = keep ? x(i, j) * scale : 0.0f;
    }
  }
  return r;
}

Matrix dropout_backward(const Matrix& d_out, const Mask& keep, double p) {
  require_probability(p, "dropout_backward");
  if (d_out.rows() != keep.rows() || d_out.cols() != keep.cols())
    throw std::invalid_argument(fmt::format("dropout_backward: d_out is ({}, {}) but the mask is ({}, {})",
                                            d_out.rows(), d_out.cols(), keep.rows(), keep.cols()));
  // With its mask fixed, dropout is y_ij = x_ij * m_ij, m_ij = keep_ij / (1 - p):
  // each output depends on its own input only, so the Jacobian is diagonal
  // and dL/dx_ij = dL/dy_ij * m_ij. A dropped element passes no gradient; a
  // kept one passes it scaled like its value was.
  if (p == 1.0) return Matrix::Zero(d_out.rows(), d_out.cols());  // nothing survived; never 0 * inf
  const float scale = survivor_scale(p);                       // exactly 1 when p = 0
  Matrix d_x(d_out.rows(), d_out.cols());
  for (int64_t i = 0; i < d_out.rows(); ++i)
    for (int64_t j = 0; j < d_out.cols(); ++j) d_x(i, j) = keep(i, j) ? d_out(i, j) * scale : 0.0f;
  return d_x;
}

}  // namespace sa
