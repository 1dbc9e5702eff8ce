// Chapter 8 exercises: the key/value cache of generation. Write each
// function, then run `./book check 8`. The declarations and what each must
// do are in chapters/08-efficient-attention/efficient.hpp.
#include "08-efficient-attention/efficient.hpp"

#include "sa/exercise.hpp"

#include <cmath>
#include <stdexcept>

namespace sa {

void kv_append(KVCache& cache, const RowVector& k, const RowVector& v) {
  // TODO: store k and v in row cache.size and count it.
  SA_TODO("kv_append",
          "refuse a full cache (size == capacity()) and k or v of the wrong width with std::invalid_argument; "
          "cache.K.row(size) = k; cache.V.row(size) = v; ++size");
}

RowVector kv_attend(const KVCache& cache, const RowVector& q) {
  // TODO: one query against the rows in use: softmax(q Kᵀ / sqrt(d_k)) V.
  SA_TODO("kv_attend",
          "refuse an empty cache, d_k = 0 and q of the wrong width; use only cache.K.topRows(size) and "
          "cache.V.topRows(size); subtract the largest score before exp");
}

}  // namespace sa
