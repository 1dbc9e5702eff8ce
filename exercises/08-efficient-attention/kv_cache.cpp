// Chapter 8 exercises: the key/value cache of generation. Write each
// function, then run `./book check 8`. The declarations and what each must
// do are in chapters/08-efficient-attention/efficient.hpp.
#include "08-efficient-attention/efficient.hpp"

#include "sa/exercise.hpp"

#include <cmath>
#include <stdexcept>

namespace sa {

void kv_append(KVCache& cache, const RowVector& k, const RowVector& v) {
  // TODO: store k and v in the first free row and count it; refuse a full cache
  // and vectors of the wrong width.
  SA_TODO("kv_append",
          "the row after the last one in use; then one more row is in use "
          "(more: ./book hint 8 kv_append)");
}

RowVector kv_attend(const KVCache& cache, const RowVector& q) {
  // TODO: one query against the rows in use: ordinary attention for a single
  // query row.
  SA_TODO("kv_attend",
          "only the first cache.size rows count; subtract the largest score before exp() "
          "(more: ./book hint 8 kv_attend)");
}

}  // namespace sa
