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
  // TODO: attention block by block, with a running maximum, sum and
  // unnormalised output per query row (online softmax a block at a time);
  // no (seq_q, seq_k) matrix.
  SA_TODO("tiled_attention",
          "per query block: walk the key blocks, rescale what you have when the maximum grows "
          "(more: ./book hint 8 tiled_attention)");
}

AttentionGrads tiled_attention_backward(const Matrix& Q, const Matrix& K, const Matrix& V, const TiledAttention& fwd,
                                        const Matrix& dO, bool causal, int64_t block) {
  // TODO: the gradients block by block, rebuilding each block's weights from
  // the forward's lse instead of storing them.
  SA_TODO("tiled_attention_backward",
          "weights from exp(score - lse); then the attention backward a block at a time "
          "(more: ./book hint 8 tiled_attention_backward)");
}

}  // namespace sa
