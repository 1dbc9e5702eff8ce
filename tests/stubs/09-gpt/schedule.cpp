// Chapter 9 exercises: the learning-rate schedule. Write the function, then
// run `./book check 9`. What it must compute is in chapters/09-gpt/gpt.hpp.
#include "09-gpt/gpt.hpp"

#include "sa/exercise.hpp"

#include <fmt/core.h>

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace sa {

double learning_rate(int64_t it, const LrSchedule& s) {
  // TODO: a linear climb during the warm-up, then half a cosine from lr down
  // to min_lr, then min_lr. Refuse the schedules the header lists.
  SA_TODO("learning_rate",
          "the first iteration is 0 and must already learn: mind which iteration reaches lr "
          "(more: ./book hint 9 learning_rate)");
}

}  // namespace sa
