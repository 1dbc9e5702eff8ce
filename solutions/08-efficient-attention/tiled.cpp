// Reference solutions of chapter 8: tiled attention, forward and backward.
//
// Both walk the (seq_q, seq_k) matrix of scores one (block, block) tile at a
// time and never hold more than one tile of it. The products inside a tile
// are Eigen's matrix products (packed, vectorised kernels); the per-row
// bookkeeping is written with Eigen's array expressions so that exp, max and
// sum run over whole rows of a tile at once.
#include "08-efficient-attention/efficient.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace sa {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

void check_inputs(const char* function, const Matrix& Q, const Matrix& K, const Matrix& V, bool causal,
                  int64_t block) {
  if (Q.cols() != K.cols())
    throw std::invalid_argument(
        fmt::format("{}: Q is {} and K is {}: queries and keys need the same d_k", function, shape_str(Q), shape_str(K)));
  if (Q.cols() == 0) throw std::invalid_argument(fmt::format("{}: d_k is 0; scores would divide by sqrt(0)", function));
  if (K.rows() != V.rows())
    throw std::invalid_argument(
        fmt::format("{}: K is {} and V is {}: one value row per key row", function, shape_str(K), shape_str(V)));
  if (block < 1) throw std::invalid_argument(fmt::format("{}: block is {}; it must be at least 1", function, block));
  if (causal && Q.rows() != K.rows())
    throw std::invalid_argument(fmt::format("{}: causal attention needs as many queries as keys, got Q {} and K {}",
                                            function, shape_str(Q), shape_str(K)));
  if (!all_finite(Q) || !all_finite(K) || !all_finite(V))
    throw std::invalid_argument(fmt::format("{}: Q, K and V must be finite (found inf or nan)", function));
}

// Key blocks a query block [q0, q1) needs: all of them, or under the causal
// mask only those starting at or before its last query (q1 - 1). The rest
// lie entirely above the diagonal and are skipped without being computed.
int64_t key_end(bool causal, int64_t q1, int64_t seq_k) { return causal ? std::min(q1, seq_k) : seq_k; }

// Under the causal mask, sets the scores of keys after each query to -inf in
// the tile of queries q0.. and keys k0..; only tiles the diagonal crosses
// (k0 + cols - 1 > q0) hold any.
template <typename Tile>
void mask_above_diagonal(Tile& S, int64_t q0, int64_t k0) {
  for (int64_t r = 0; r < S.rows(); ++r) {
    const int64_t first_hidden = q0 + r + 1 - k0;  // the first column this query may not see
    if (first_hidden < S.cols()) S.row(r).tail(S.cols() - std::max<int64_t>(first_hidden, 0)).setConstant(-kInf);
  }
}

}  // namespace

TiledAttention tiled_attention(const Matrix& Q, const Matrix& K, const Matrix& V, bool causal, int64_t block) {
  check_inputs("tiled_attention", Q, K, V, causal, block);
  const int64_t seq_q = Q.rows(), seq_k = K.rows(), d_v = V.cols();
  const float scale = 1.0f / std::sqrt(float(Q.cols()));

  TiledAttention result{Matrix::Zero(seq_q, d_v), ColVector::Constant(seq_q, -kInf)};
  // One tile's work space, reused for every tile: O(block²), not O(seq²)
  // (and never larger than the matrix itself, whatever block is).
  Matrix S(std::min(block, seq_q), std::min(block, seq_k));
  ColVector row_max(S.rows()), row_sum(S.rows());

  for (int64_t q0 = 0; q0 < seq_q; q0 += block) {
    const int64_t rows = std::min(block, seq_q - q0);
    const auto Qb = Q.middleRows(q0, rows);
    auto acc = result.output.middleRows(q0, rows);  // unnormalised output: Σ exp(s - max) v
    auto m = row_max.head(rows);
    auto l = row_sum.head(rows);
    m.setConstant(-kInf);
    l.setZero();

    const int64_t k_end = key_end(causal, q0 + rows, seq_k);
    for (int64_t k0 = 0; k0 < k_end; k0 += block) {
      const int64_t cols = std::min(block, k_end - k0);
      auto s = S.topLeftCorner(rows, cols);
      // The scale goes in front of the product: Eigen passes it into the
      // product's kernel. Written after it, (Qb Kᵀ) * scale, the product
      // goes to a temporary tile first, which is then scaled and copied.
      s.noalias() = scale * (Qb * K.middleRows(k0, cols).transpose());
      if (causal && k0 + cols - 1 > q0) mask_above_diagonal(s, q0, k0);

      // Row by row (a row of a tile is contiguous, so Eigen vectorises the
      // exp): the running maximum grows to cover this tile, and what was
      // summed against the old maximum is rescaled by exp(old - new).
      // Causal: every query sees key k0 <= q0 of its first tile, so the new
      // maximum is finite from the first tile on and exp(-inf - new) = 0.
      for (int64_t r = 0; r < rows; ++r) {
        auto p = s.row(r).array();
        const float m_new = std::max(m(r), p.maxCoeff());
        const float alpha = std::exp(m(r) - m_new);
        p = (p - m_new).exp();
        l(r) = alpha * l(r) + p.sum();
        acc.row(r) *= alpha;
        m(r) = m_new;
      }
      acc.noalias() += s * V.middleRows(k0, cols);
    }
    // Normalise once at the end: divide by the row's sum. A row with no key
    // (seq_k = 0) keeps output 0 and lse -inf, as softmax_rows's zero rows.
    for (int64_t r = 0; r < rows; ++r) {
      if (l(r) > 0.0f) {
        acc.row(r) /= l(r);
        result.lse(q0 + r) = m(r) + std::log(l(r));
      }
    }
  }
  if (!all_finite(result.output))
    throw std::invalid_argument("tiled_attention: the scores overflow float (inputs too large)");
  return result;
}

AttentionGrads tiled_attention_backward(const Matrix& Q, const Matrix& K, const Matrix& V, const TiledAttention& fwd,
                                        const Matrix& dO, bool causal, int64_t block) {
  check_inputs("tiled_attention_backward", Q, K, V, causal, block);
  const int64_t seq_q = Q.rows(), seq_k = K.rows();
  if (fwd.output.rows() != seq_q || fwd.output.cols() != V.cols() || fwd.lse.size() != seq_q)
    throw std::invalid_argument(fmt::format(
        "tiled_attention_backward: the forward's output is {} with {} lse values; expected ({}, {}) and {}",
        shape_str(fwd.output), fwd.lse.size(), seq_q, V.cols(), seq_q));
  if (dO.rows() != seq_q || dO.cols() != V.cols())
    throw std::invalid_argument(fmt::format("tiled_attention_backward: dO is {}; expected ({}, {}), the output's shape",
                                            shape_str(dO), seq_q, V.cols()));
  const float scale = 1.0f / std::sqrt(float(Q.cols()));

  AttentionGrads g{Matrix::Zero(seq_q, Q.cols()), Matrix::Zero(seq_k, K.cols()), Matrix::Zero(seq_k, V.cols())};
  // D_i = Σ_j P_ij dP_ij, the row sum softmax_backward needs, equals
  // dO_i · O_i (since O = P V and dP = dO Vᵀ): O(seq · d), no tile needed.
  const ColVector D = dO.cwiseProduct(fwd.output).rowwise().sum();
  // A row that saw no key has lse = -inf and P = 0; shift by 0 instead so
  // that exp(S - lse) is not exp(-inf + inf).
  const ColVector lse = fwd.lse.unaryExpr([](float x) { return x == -kInf ? kInf : x; });

  Matrix P(std::min(block, seq_q), std::min(block, seq_k)), dP(P.rows(), P.cols());
  // Key blocks outside, query blocks inside: dK and dV of one key block are
  // finished in one sweep; dQ gathers from every key block.
  for (int64_t k0 = 0; k0 < seq_k; k0 += block) {
    const int64_t cols = std::min(block, seq_k - k0);
    const auto Kb = K.middleRows(k0, cols);
    const auto Vb = V.middleRows(k0, cols);
    auto dKb = g.dK.middleRows(k0, cols);
    auto dVb = g.dV.middleRows(k0, cols);
    // Causal: query blocks ending at or before k0 see none of these keys.
    const int64_t q_begin = causal ? k0 : 0;  // (both walk the same grid of blocks)
    for (int64_t q0 = q_begin; q0 < seq_q; q0 += block) {
      const int64_t rows = std::min(block, seq_q - q0);
      const auto Qb = Q.middleRows(q0, rows);
      const auto dOb = dO.middleRows(q0, rows);
      auto p = P.topLeftCorner(rows, cols);
      auto dp = dP.topLeftCorner(rows, cols);
      // P = exp(S - lse): the forward's weights, rebuilt from one number per
      // row instead of stored (the scale in front, as in the forward).
      p.noalias() = scale * (Qb * Kb.transpose());
      if (causal && k0 + cols - 1 > q0) mask_above_diagonal(p, q0, k0);
      for (int64_t r = 0; r < rows; ++r) p.row(r) = (p.row(r).array() - lse(q0 + r)).exp().matrix();
      dVb.noalias() += p.transpose() * dOb;
      dp.noalias() = dOb * Vb.transpose();
      // dS = P ∘ (dP - D), with the 1/sqrt(d_k) of the scores folded in.
      for (int64_t r = 0; r < rows; ++r)
        dp.row(r) = (p.row(r).array() * (dp.row(r).array() - D(q0 + r)) * scale).matrix();
      g.dQ.middleRows(q0, rows).noalias() += dp * Kb;
      dKb.noalias() += dp.transpose() * Qb;
    }
  }
  return g;
}

}  // namespace sa
