// Chapter 8 exercises: tiled attention, forward and backward. Write each
// function, then run `./book check 8`. The declarations and what each must
// do are in chapters/08-efficient-attention/efficient.hpp.
//
// Start with a plain version: loops over blocks, Eigen products inside a
// block, a scalar loop for the running maximum and sum. Correct first; the
// chapter's README shows what makes it fast.
#include "08-efficient-attention/efficient.hpp"

#include "sa/exercise.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace sa {

TiledAttention tiled_attention(const Matrix& Q, const Matrix& K, const Matrix& V, bool causal, int64_t block) {
  // TODO: attention block by block, with a running max m, sum l and unnormalised output per query row.
  SA_TODO("tiled_attention",
          "refuse bad shapes, d_k = 0, non-finite Q/K/V, block < 1, causal with seq_q != seq_k; for each query block, for each key block "
          "(causal: stop after the diagonal block): S = Qb Kbᵀ / sqrt(d_k) (-inf above the diagonal); m_new = "
          "max(m, rowmax S); alpha = exp(m - m_new); P = exp(S - m_new); l = alpha l + rowsum P; acc = alpha acc + "
          "P Vb; m = m_new; finally output = acc / l and lse = m + log l (a row with l = 0: output 0, lse -inf)");
}

AttentionGrads tiled_attention_backward(const Matrix& Q, const Matrix& K, const Matrix& V, const TiledAttention& fwd,
                                        const Matrix& dO, bool causal, int64_t block) {
  // TODO: the gradients block by block, rebuilding each block's weights from lse.
  SA_TODO("tiled_attention_backward",
          "D = rowsum(dO ∘ O); for each key block and each query block it is visible to: P = exp(S - lse) "
          "(masked: 0); dV += Pᵀ dO; dP = dO Vᵀ; dS = P ∘ (dP - D); dQ += dS K / sqrt(d_k); dK += dSᵀ Q / sqrt(d_k)");
}

}  // namespace sa
