// Reference solutions of chapter 8: the key/value cache.
#include "08-efficient-attention/efficient.hpp"

#include <fmt/core.h>

#include <cmath>
#include <stdexcept>

namespace sa {

void kv_append(KVCache& cache, const RowVector& k, const RowVector& v) {
  if (cache.size >= cache.capacity())
    throw std::invalid_argument(
        fmt::format("kv_append: the cache is full ({} of {} rows)", cache.size, cache.capacity()));
  if (k.size() != cache.K.cols() || v.size() != cache.V.cols())
    throw std::invalid_argument(fmt::format("kv_append: k has {} and v {} columns; the cache holds d_k {} and d_v {}",
                                            k.size(), v.size(), cache.K.cols(), cache.V.cols()));
  cache.K.row(cache.size) = k;
  cache.V.row(cache.size) = v;
  ++cache.size;
}

RowVector kv_attend(const KVCache& cache, const RowVector& q) {
  if (cache.size == 0) throw std::invalid_argument("kv_attend: the cache is empty; append the token's k and v first");
  if (cache.K.cols() == 0) throw std::invalid_argument("kv_attend: d_k is 0; scores would divide by sqrt(0)");
  if (q.size() != cache.K.cols())
    throw std::invalid_argument(
        fmt::format("kv_attend: q has {} columns; the cache's keys have d_k {}", q.size(), cache.K.cols()));
  const auto K = cache.K.topRows(cache.size);
  const auto V = cache.V.topRows(cache.size);
  // One row of scores: O(size · d) per new token, instead of the
  // (size, size) matrix a recomputation from scratch would build.
  RowVector scores = (q * K.transpose()) / std::sqrt(float(q.size()));
  scores = (scores.array() - scores.maxCoeff()).exp();
  return (scores / scores.sum()) * V;
}

}  // namespace sa
