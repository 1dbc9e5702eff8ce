// Chapter 4 exercises: write each function, then run `./book check`.
// The declarations and what each must do are in chapters/04-multi-head/multihead.hpp.
// Delete the SA_TODO line of a function once you have written it.
//
// Reminder of the layout: a batch of `batch` sequences is a Matrix of
// batch * seq rows, sequence b in rows [b * seq, (b + 1) * seq). Head h of
// a (.., d_model) matrix is its d_k = d_model / n_heads columns starting
// at h * d_k.
#include "04-multi-head/multihead.hpp"

#include "01-qkv-projection/qkv.hpp"
#include "sa/exercise.hpp"

#include <stdexcept>

namespace sa {

Tensor4 split_heads(const Matrix& X, int64_t batch, int64_t n_heads) {
  // TODO: cut X's columns into n_heads blocks and each sequence's rows apart, so
  // that every (sequence, head) becomes its own (seq, d_k) matrix. Refuse sizes
  // that do not divide evenly.
  SA_TODO("split_heads",
          "nothing is computed: rectangles of X move into the views of a Tensor4 "
          "(more: ./book hint 4 split_heads)");
}

Matrix combine_heads(const Tensor4& heads) {
  // TODO: the inverse of split_heads: every head's matrix back into its column
  // block.
  SA_TODO("combine_heads", "split_heads with the copying the other way round (more: ./book hint 4 combine_heads)");
}

MultiHead multi_head_attention(const Matrix& X_q, const Matrix& X_kv, int64_t batch, const AttentionParams& params,
                               int64_t n_heads, const HeadAttention& head) {
  // TODO: project with chapter 1's linear, split into heads, attend in every
  // (sequence, head) with `head` or chapter 3's attention, combine, and
  // project with W_o. Refuse what the header lists.
  SA_TODO("multi_head_attention",
          "your split_heads and combine_heads around one attention per head; W_o last "
          "(more: ./book hint 4 multi_head_attention)");
}

}  // namespace sa
