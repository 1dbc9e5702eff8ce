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
  // TODO: grad.gamma and grad.beta are column sums (of dY ∘ X_hat and of dY);
  // dX row by row from g = dY ∘ gamma, the row's x̂ and rstd.
  SA_TODO("layernorm_backward",
          "g = dY.row(i) .* gamma; dX.row(i) = rstd(i) * (g - mean(g) - x_hat * mean(g .* x_hat)); "
          "grad.gamma = colwise sum of dY .* X_hat, grad.beta = colwise sum of dY");
}

void attention_backward(const Matrix& QKV, const Matrix& P, const Matrix& dO, int64_t batch, int64_t n_heads,
                        Matrix& dP, Matrix& dQKV, const AttentionDropout* dropout) {
  // TODO: for every sequence b and head h (head_block / head_rows in the
  // header give the pieces), go back through O = P V, then through softmax
  // with chapter 3's softmax_backward, then through S = Q Kᵀ / √d_k.
  // dP is yours to fill with dO Vᵀ (head by head) before softmax_backward.
  // With an active dropout (dropout && dropout->active()) the forward
  // multiplied V by dropout->P_drop: use it for dV, and pass dP through
  // chapter 6's dropout_backward with dropout->keep before the softmax.
  SA_TODO("attention_backward",
          "dV = Pᵀ dO, dP = dO Vᵀ; dS = softmax_backward(P, dP) (one call covers all heads); "
          "dQ = dS K / sqrt(d_k), dK = dSᵀ Q / sqrt(d_k); with dropout: dV = P_dropᵀ dO and "
          "dP = dropout_backward(dO Vᵀ, keep, p)");
}

void cross_entropy_backward(const Matrix& probs, const std::vector<int64_t>& targets, Matrix& dlogits) {
  // TODO: count the rows whose target is not kIgnore (n); counted rows get
  // (probs − onehot(target)) / n, ignored rows get zeros.
  SA_TODO("cross_entropy_backward",
          "dlogits.row(i) = probs.row(i) / n, then dlogits(i, t) -= 1 / n; rows with t == kIgnore are 0");
}

void adam_step(std::span<float> param, std::span<const float> grad, std::span<float> m, std::span<float> v, int64_t t,
               const AdamConfig& cfg) {
  // TODO: update m and v, then the parameter, element by element, with the
  // bias corrections 1 − beta1^t and 1 − beta2^t.
  SA_TODO("adam_step",
          "m = beta1 m + (1 - beta1) g; v = beta2 v + (1 - beta2) g g; "
          "param -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)");
}

}  // namespace sa
