#include "sa/tensor.hpp"

#include <cassert>
#include <stdexcept>

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace sa {

std::string shape_str(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) s += ",";  // torch.Size([6]) prints as (6,)
  return s + ")";
}

void flush_subnormals_to_zero() {
#if defined(__SSE__) || defined(__x86_64__)
  // MXCSR: flush-to-zero (bit 15) for results, denormals-are-zero (bit 6)
  // for inputs.
  _mm_setcsr(_mm_getcsr() | 0x8040);
#elif defined(__aarch64__)
  // FPCR.FZ (bit 24): subnormal inputs and results are 0.
  uint64_t fpcr;
  __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
  __asm__ volatile("msr fpcr, %0" : : "r"(fpcr | (uint64_t(1) << 24)));
#endif
}

std::string shape_str(const Matrix& m) { return shape_str(Shape{m.rows(), m.cols()}); }

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Tensor4::Tensor4(int64_t batch, int64_t heads, int64_t seq, int64_t d, float fill)
    : shape_{batch, heads, seq, d} {
  if (batch < 0 || heads < 0 || seq < 0 || d < 0)
    throw std::invalid_argument("Tensor4: negative size in " + shape_str(shape_));
  data_.assign(static_cast<size_t>(numel(shape_)), fill);
}

MatrixMap Tensor4::view(int64_t b, int64_t h) {
  assert(b >= 0 && b < batch() && h >= 0 && h < heads());
  return MatrixMap(data_.data() + (b * heads() + h) * seq() * dim(), seq(), dim());
}

ConstMatrixMap Tensor4::view(int64_t b, int64_t h) const {
  assert(b >= 0 && b < batch() && h >= 0 && h < heads());
  return ConstMatrixMap(data_.data() + (b * heads() + h) * seq() * dim(), seq(), dim());
}

float& Tensor4::operator()(int64_t b, int64_t h, int64_t s, int64_t d) {
  return data_[static_cast<size_t>(((b * heads() + h) * seq() + s) * dim() + d)];
}

float Tensor4::operator()(int64_t b, int64_t h, int64_t s, int64_t d) const {
  return data_[static_cast<size_t>(((b * heads() + h) * seq() + s) * dim() + d)];
}

}  // namespace sa
