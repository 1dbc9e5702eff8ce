// Chapter 7: attention on every sequence at once. Why, and the layout: see
// attention_lanes.hpp.
#include "07-training/attention_lanes.hpp"

#include "06-dropout/dropout.hpp"

#include <fmt/core.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

namespace sa {

namespace detail {
// A SIMD register type as a template argument drops its alignment
// attribute, harmlessly here (loads and stores are unaligned); GCC and
// clang say so, and Eigen silences the same warning inside its own headers.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"
// dst (cols, rows) = src (rows, cols) transposed; ld_* are the row strides.
void transpose_into(const float* src, int64_t rows, int64_t cols, int64_t ld_src, float* dst, int64_t ld_dst) {
  using Packet = Eigen::internal::packet_traits<float>::type;
  constexpr int64_t kTile = Eigen::internal::unpacket_traits<Packet>::size;
  const int64_t full_rows = rows - rows % kTile, full_cols = cols - cols % kTile;
  for (int64_t r0 = 0; r0 < full_rows; r0 += kTile)
    for (int64_t c0 = 0; c0 < full_cols; c0 += kTile) {
      Eigen::internal::PacketBlock<Packet, int(kTile)> tile;
      for (int64_t k = 0; k < kTile; ++k) tile.packet[k] = Eigen::internal::ploadu<Packet>(src + (r0 + k) * ld_src + c0);
      Eigen::internal::ptranspose(tile);
      for (int64_t k = 0; k < kTile; ++k) Eigen::internal::pstoreu(dst + (c0 + k) * ld_dst + r0, tile.packet[k]);
    }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = r < full_rows ? full_cols : 0; c < cols; ++c) dst[c * ld_dst + r] = src[r * ld_src + c];
}
#pragma GCC diagnostic pop
}  // namespace detail

std::vector<KeySpan> key_spans(const Mask& mask) {
  std::vector<KeySpan> spans;
  for (int64_t i = 0; i < mask.rows(); ++i) {
    KeySpan span{mask.cols(), -1};
    for (int64_t j = 0; j < mask.cols(); ++j)
      if (mask(i, j)) span = {std::min(span.first, j), j};
    spans.push_back(span);
  }
  return spans;
}

AttentionLanes& attention_lanes() {
  thread_local AttentionLanes lanes;
  return lanes;
}

namespace {
// attention_forward's refusal of a score that is not finite: finds the
// first lane (sequence) of query i whose sum went NaN or whose smallest
// score is -inf, and in it the first NaN or +inf score, or else the first
// -inf one.
[[noreturn]] void attention_bad_score(const Matrix& S, const Matrix& row_sum, const Matrix& row_min, const Mask& mask,
                                      int64_t T, int64_t i, int64_t h) {
  int64_t b = 0;
  while (!std::isnan(row_sum(0, b)) && std::isfinite(row_min(0, b))) ++b;
  auto first = [&](auto&& bad) {
    for (int64_t j = 0; j < T; ++j)
      if (mask(i, j) && bad(S(i * T + j, b))) return j;
    return int64_t(-1);
  };
  int64_t j = first([](float x) { return std::isnan(x) || x == std::numeric_limits<float>::infinity(); });
  if (j < 0) j = first([](float x) { return !std::isfinite(x); });
  throw std::invalid_argument(fmt::format(
      "attention_forward: the score of query {} and key {} in head {} of sequence {} is {}; Q and K must be finite, "
      "and small enough that Q Kᵀ / √d_k does not overflow",
      i, j, h, b, S(i * T + j, b)));
}

}  // namespace

void attention_forward_lanes(const Matrix& QKV, int64_t batch, int64_t n_heads, const Mask& mask, Matrix& scores,
                             Matrix& P, Matrix& O, AttentionDropout* dropout) {
  const AttentionDims a = attention_dims("attention_forward", QKV, batch, n_heads);
  if (mask.rows() != a.seq || mask.cols() != a.seq)
    throw std::invalid_argument(fmt::format("attention_forward: mask is ({}, {}) for sequences of {} tokens",
                                            mask.rows(), mask.cols(), a.seq));
  detail::expect_shape("attention_forward", "scores", scores, a.batch * a.n_heads * a.seq, a.seq);
  detail::expect_shape("attention_forward", "O", O, QKV.rows(), a.d_model);
  if (dropout && !(dropout->p >= 0 && dropout->p < 1))
    throw std::invalid_argument(fmt::format("attention_forward: attention dropout p must be in [0, 1), got {}", dropout->p));
  if (dropout && dropout->active() && !dropout->gen)
    throw std::invalid_argument("attention_forward: attention dropout needs a generator for its draws");
  const int64_t T = a.seq, d_k = a.d_k, d = a.d_model, X = QKV.cols();
  // Divide (not multiply by 1/√d_k) as PyTorch's `/ math.sqrt(d_k)` does.
  const float sqrt_dk = std::sqrt(float(d_k));
  P.resize(a.batch * a.n_heads * T, T);
  // Lanes: QKV's row i * 3d + col is entry (i, col) of every sequence, and
  // the weights' row (h T + i) T + j is weight (i, j) of head h, P's own
  // order within a sequence; they live in `scores`.
  AttentionLanes& lanes = attention_lanes();
  to_lanes(QKV, a.batch, lanes.QKV);
  const Matrix& qkv = lanes.QKV;
  Eigen::Map<Matrix> weights(scores.data(), a.n_heads * T * T, a.batch);
  Matrix &S = lanes.S, &O_lanes = lanes.O;
  Matrix &row_max = lanes.row_a, &row_min = lanes.row_c, &row_sum = lanes.row_b;
  S.resize(T * T, a.batch);
  row_max.resize(1, a.batch);
  row_min.resize(1, a.batch);
  row_sum.resize(1, a.batch);

  // 1. The weights of every head: S = Q Kᵀ / √d_k where the mask allows,
  //    and P = chapter 3's softmax over each query's keys (stable: the
  //    maximum is subtracted first; a masked weight is exactly 0, and a
  //    query allowed no key gets a row of zeros).
  for (int64_t h = 0; h < a.n_heads; ++h) {
    auto Q = [&](int64_t i) { return lane_rows(qkv, i * X + h * d_k, d_k); };  // Q_i0 .. Q_i(d_k-1)
    auto K = [&](int64_t j) { return lane_rows(qkv, j * X + d + h * d_k, d_k); };
    auto P_ij = [&](int64_t i, int64_t j) { return weights.row((h * T + i) * T + j); };
    for (int64_t i = 0; i < T; ++i) {
      row_max.setConstant(-std::numeric_limits<float>::infinity());
      row_min.setConstant(std::numeric_limits<float>::infinity());
      for (int64_t j = 0; j < T; ++j) {
        if (!mask(i, j)) continue;
        auto S_ij = S.row(i * T + j);
        S_ij = (Q(i).array() * K(j).array()).colwise().sum() / sqrt_dk;  // Σ_c Q_ic K_jc / √d_k
        row_max = row_max.cwiseMax(S_ij);
        row_min = row_min.cwiseMin(S_ij);
      }
      row_sum.setZero();
      for (int64_t j = 0; j < T; ++j) {
        if (!mask(i, j)) {
          P_ij(i, j).setZero();
          continue;
        }
        P_ij(i, j).array() = (S.row(i * T + j) - row_max).array().exp();
        row_sum += P_ij(i, j);
      }
      // A NaN or +inf score makes its lane's sum NaN (exp(NaN), or
      // +inf − +inf); each sum is at most T, so the total is NaN only then.
      // A -inf score would pass as a masked one: refused too.
      if (std::isnan(row_sum.sum()) || row_min.minCoeff() == -std::numeric_limits<float>::infinity())
        attention_bad_score(S, row_sum, row_min, mask, T, i, h);
      // row_sum is 0 only in the lanes of a query allowed no key, whose
      // weights are all 0 already: divide the others.
      for (int64_t j = 0; j < T; ++j)
        if (mask(i, j)) P_ij(i, j).array() /= row_sum.array();
    }
  }
  from_lanes(weights, a.batch, P);
  // 2. P's rows are PyTorch's (b, h, i) order, so one dropout call over all
  //    of P draws for the same weights in the same order as F.dropout on the
  //    (batch, n_heads, seq, seq) tensor.
  const bool dropped = dropout && dropout->active();
  if (dropped) {
    DropoutResult result = sa::dropout(P, dropout->p, *dropout->gen);
    dropout->P_drop = std::move(result.output);
    dropout->keep = std::move(result.keep);
    to_lanes(dropout->P_drop, a.batch, lanes.W);
  }
  const Eigen::Map<const Matrix> W(dropped ? lanes.W.data() : weights.data(), weights.rows(), a.batch);
  // 3. O = weights · V, head by head: O_ic = Σ_j W_ij V_jc over the allowed
  //    keys (a masked weight is 0, with or without dropout). O's lanes are
  //    laid out like QKV's: row i d + h d_k + c.
  O_lanes.resize(T * d, a.batch);
  const std::vector<KeySpan> keys = key_spans(mask);
  for (int64_t h = 0; h < a.n_heads; ++h)
    for (int64_t i = 0; i < T; ++i) {
      const KeySpan span = keys[size_t(i)];
      if (span.count() == 0) {  // a query that sees nothing: O_i = 0
        O_lanes.middleRows(i * d + h * d_k, d_k).setZero();
        continue;
      }
      const auto W_i = lane_rows(W, (h * T + i) * T + span.first, span.count());
      for (int64_t c = 0; c < d_k; ++c) {
        const auto V_c = lane_rows(qkv, span.first * X + 2 * d + h * d_k + c, span.count(), X);  // V_jc over the span
        O_lanes.row(i * d + h * d_k + c) = (W_i.array() * V_c.array()).colwise().sum();
      }
    }
  from_lanes(O_lanes, a.batch, O);
}

}  // namespace sa
