// Chapter 7: attention on every sequence of a batch at once ("lanes").
//
// The model trains with attention_forward_lanes, declared here: the same
// numbers as training.hpp's attention_forward (the suites check that they
// agree, tests/07-training/test_training.cpp), computed in another order of
// loops. attention_forward is the formula as the book writes it, one head
// of one sequence at a time with chapter 3's softmax and chapter 5's mask;
// read that one beside your attention_backward. This file is only about
// speed, and why it pays is below.
//
//
// For one head of one sequence the products are tiny: (seq, d_k) by
// (d_k, seq), 12 × 8 by 8 × 12 in the reversal task, about a thousand
// multiply-adds. A GEMM library (Eigen here) spends longer preparing such a
// product (packing, blocking) than computing it, and a training step of the
// reversal task asks for 6,144 of them (2 layers × 4 heads × 128 sequences,
// 2 products forward and 4 backward): they took 40% of the step.
// Every sequence has the same shapes, though, so the model runs each
// formula on all `batch` sequences together. It transposes a matrix so that
// its columns are the sequences, the lanes:
//   lanes(i * M.cols() + c, b) = M(b * seq + i, c)
// (sequence b's block of rows, read row after row, is column b). Then an
// entry of a formula, say S_ij = Σ_c Q_ic K_jc, is a handful of operations
// on whole rows of `batch` numbers, which the compiler vectorizes. The
// arithmetic is the per-head formulas' own; only the order of the loops
// changed.
//
// The transposition goes by square tiles of one SIMD register's width (16
// floats with AVX-512), turned inside the registers by Eigen's ptranspose
// (the kernel its own matrix products use); the edges that do not fill a
// tile go one number at a time. Copying number by number made the copies
// cost as much as the arithmetic they serve.
#pragma once

#include "07-training/training.hpp"

#include "sa/tensor.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace sa {

namespace detail {
// dst (cols, rows) = src (rows, cols) transposed; ld_* are the row strides.
void transpose_into(const float* src, int64_t rows, int64_t cols, int64_t ld_src, float* dst, int64_t ld_dst);
}  // namespace detail


// M has batch * seq rows; lanes becomes (seq * M.cols(), batch). M may be a
// Mask, whose true becomes 1 and false 0.
template <class Source>
void to_lanes(const Source& M, int64_t batch, Matrix& lanes) {
  const int64_t per_sequence = M.size() / batch;
  lanes.resize(per_sequence, batch);
  if constexpr (std::is_same_v<typename Source::Scalar, float>) {
    detail::transpose_into(M.data(), batch, per_sequence, per_sequence, lanes.data(), batch);
  } else {
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t r = 0; r < per_sequence; ++r) lanes(r, b) = float(M.data()[b * per_sequence + r]);
  }
}
// The way back: M (batch * seq rows, allocated) from its lanes.
template <class Lanes>  // a Matrix or a Map of one
void from_lanes(const Lanes& lanes, int64_t batch, Matrix& M) {
  if (lanes.cols() != batch || lanes.size() != M.size())
    throw std::invalid_argument(fmt::format("from_lanes: lanes {} do not hold {} for {} sequences", shape_str(lanes),
                                            shape_str(M), batch));
  detail::transpose_into(lanes.data(), lanes.rows(), batch, batch, M.data(), lanes.rows());
}

// `count` rows of a lanes matrix, `step` rows apart from row `first`, as a
// matrix of their own: the terms of one sum of a formula. Multiplied
// element by element with another such matrix, .colwise().sum() adds them
// up lane by lane, the running sums staying in registers (twice as fast as
// adding one row at a time into memory).
template <class Lanes>
auto lane_rows(const Lanes& M, int64_t first, int64_t count, int64_t step = 1) {
  return Eigen::Map<const Matrix, 0, Eigen::OuterStride<>>(M.data() + first * M.cols(), count, M.cols(),
                                                           Eigen::OuterStride<>(step * M.cols()));
}

// The keys a query i may see, first to last (mask(i, j) true); a key
// inside that span that the mask forbids has weight 0. A query allowed no
// key gets first > last.
struct KeySpan {
  int64_t first, last;
  int64_t count() const { return std::max<int64_t>(0, last - first + 1); }
};

// The lanes' work buffers, kept from one call to
// the next. Allocated afresh, a dozen of them per call came back from the
// system as page faults every step (10% of the backward's time). One set
// per thread; the reference attention_backward uses them too.
struct AttentionLanes {
  Matrix QKV, S, O, W, P, dO, keep, dS, dQKV, row_a, row_b, row_c;
};
AttentionLanes& attention_lanes();

// attention_forward (training.hpp) with every sequence of the batch in
// lanes: the same arguments, the same refusals, the same P, O and dropout
// draws (up to float rounding: the sums run in another order). The model's
// forward calls this one.
void attention_forward_lanes(const Matrix& QKV, int64_t batch, int64_t n_heads, const Mask& mask, Matrix& scores,
                             Matrix& P, Matrix& O, AttentionDropout* dropout = nullptr);

}  // namespace sa
