// Chapter 9 exercises: sampling the next token. Write each function, then
// run `./book check 9`. The declarations and what each must do are in
// chapters/09-gpt/gpt.hpp.
#include "09-gpt/gpt.hpp"

#include "03-softmax/softmax.hpp"
#include "sa/exercise.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <vector>

namespace sa {

RowVector sampling_probs(const RowVector& logits, double temperature, int64_t top_k) {
  // TODO: the distribution of the next token: the logits scaled by the
  // temperature, all but the top_k largest hidden, then chapter 3's
  // softmax_rows. Refuse what the header lists.
  SA_TODO("sampling_probs",
          "the temperature divides the logits, before the softmax, not the probabilities after it "
          "(more: ./book hint 9 sampling_probs)");
}

int64_t sample_token(const RowVector& probs, Generator& gen) {
  // TODO: draw one token as torch.multinomial does: one exponential draw per
  // entry, from gen.uniform_double(), and the entry with the largest
  // probability / draw wins.
  SA_TODO("sample_token",
          "one draw for every entry, in order, even those of probability 0 "
          "(more: ./book hint 9 sample_token)");
}

}  // namespace sa
