// Chapter 7 exercises: write each function, then run `./book check`.
// The declarations, the forwards they undo, and what each must do are in
// chapters/07-training/training.hpp. Delete the SA_TODO line of a function
// once you have written it. Outputs come allocated with the right shape:
// write every entry (the tests fill them with NaN first).
#include "07-training/training.hpp"

#include "03-softmax/softmax.hpp"
#include "06-dropout/dropout.hpp"
#include "sa/exercise.hpp"

#include <cmath>
#include <stdexcept>

namespace sa {

void layernorm_backward(const Matrix& dY, const LayerNormCache& cache, const LayerNorm& ln, Matrix& dX,
                        LayerNorm& grad) {
  // TODO: the gradients of gamma and beta (sums over the rows), and dX, which
  // has to account for each x moving its row's mean and variance too.
  SA_TODO("layernorm_backward",
          "gamma and beta: column sums; dX: a direct term and two corrections per row "
          "(more: ./book hint 7 layernorm_backward)");
}

void attention_backward(const Matrix& QKV, const Matrix& P, const Matrix& dO, int64_t batch, int64_t n_heads,
                        Matrix& dP, Matrix& dQKV, const AttentionDropout* dropout) {
  // TODO: for every sequence b and head h (head_block / head_rows in the header
  // give the pieces), go back through O = P V, then through softmax with
  // chapter 3's softmax_backward, then through the scaled scores. dP is
  // yours to fill before softmax_backward. With an active dropout
  // (dropout && dropout->active()) the forward multiplied V by
  // dropout->P_drop: go back through chapter 6's dropout_backward too.
  SA_TODO("attention_backward",
          "three steps back: the weighted sum, the softmax, the scores "
          "(more: ./book hint 7 attention_backward)");
}

void cross_entropy_backward(const Matrix& probs, const std::vector<int64_t>& targets, Matrix& dlogits) {
  // TODO: the gradient of the mean loss with respect to the logits: the
  // probabilities minus the one-hot target, averaged over the rows that
  // count; rows with target kIgnore get zeros.
  SA_TODO("cross_entropy_backward",
          "probabilities minus the one-hot target, divided by the number of counted rows "
          "(more: ./book hint 7 cross_entropy_backward)");
}

void adam_step(std::span<float> param, std::span<const float> grad, std::span<float> m, std::span<float> v, int64_t t,
               const AdamConfig& cfg) {
  // TODO: one Adam step, element by element: update the two running moments,
  // then the parameter, with the bias corrections (the header has the
  // formula in PyTorch's order).
  SA_TODO("adam_step", "two moving averages, their bias corrections, then the step (more: ./book hint 7 adam_step)");
}

}  // namespace sa
