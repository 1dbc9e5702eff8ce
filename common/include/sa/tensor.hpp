// Tensors of the book: row-major Eigen matrices for the math, and a
// contiguous 4-D tensor for (batch, heads, seq, d_k) with 2-D views.
#pragma once

#include <Eigen/Dense>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace sa {

// float32, like PyTorch's default dtype, so fixtures compare like for like.
// Row-major so a token is a row and `X * W_q` reads like the book.
using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowVector = Eigen::Matrix<float, 1, Eigen::Dynamic>;
using MatrixMap = Eigen::Map<Matrix>;
using ConstMatrixMap = Eigen::Map<const Matrix>;

// true = allowed, false = forbidden (masked). (seq_q, seq_k) for attention.
using Mask = Eigen::Matrix<bool, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

using Shape = std::vector<int64_t>;

// "(1, 4, 6, 16)", the way PyTorch prints torch.Size.
std::string shape_str(const Shape& shape);
std::string shape_str(const Matrix& m);  // "(rows, cols)"

int64_t numel(const Shape& shape);

// Whether every entry of m is finite (no inf, no NaN): Eigen's allFinite,
// ten times faster. x * 0 is 0 for every finite x and NaN for inf and NaN,
// so one vectorised sum answers; allFinite compares entry by entry and
// took a tenth of chapter 9's training step in chapter 8's input checks.
// (Exact without -ffast-math, which the book never uses.)
template <class Derived>
bool all_finite(const Eigen::DenseBase<Derived>& m) {
  return std::isfinite((m.derived().array() * 0.0f).sum());
}

// Sets this thread's floating-point unit to treat subnormal floats (below
// 1.18e-38 in magnitude) as 0, in results and inputs. Eigen's vectorised
// exp (in AVX2 and SSE code) returns 2^-128, a subnormal, for every argument
// below about -88, such as the -inf of a masked attention score, where
// exp(-inf) should be 0; on many x86 cores every operation that meets a
// subnormal takes a slow path (chapter 8's causal kernels ran 10-28% slower
// in AVX2 code on an AMD EPYC core). The programs that train and time the
// tiled kernels call it once at start, as TensorFlow does by default; no
// number they print is that small. A no-op where the book knows no such
// switch.
void flush_subnormals_to_zero();

// A contiguous (batch, heads, seq, d) tensor. view(b, h) is a (seq, d)
// matrix over the same storage: splitting into heads never copies.
class Tensor4 {
 public:
  Tensor4() = default;
  Tensor4(int64_t batch, int64_t heads, int64_t seq, int64_t d, float fill = 0.0f);

  int64_t batch() const { return shape_[0]; }
  int64_t heads() const { return shape_[1]; }
  int64_t seq() const { return shape_[2]; }
  int64_t dim() const { return shape_[3]; }
  const Shape& shape() const { return shape_; }

  MatrixMap view(int64_t b, int64_t h);
  ConstMatrixMap view(int64_t b, int64_t h) const;

  float& operator()(int64_t b, int64_t h, int64_t s, int64_t d);
  float operator()(int64_t b, int64_t h, int64_t s, int64_t d) const;

  float* data() { return data_.data(); }
  const float* data() const { return data_.data(); }
  int64_t size() const { return static_cast<int64_t>(data_.size()); }

 private:
  Shape shape_{0, 0, 0, 0};
  std::vector<float> data_;
};

}  // namespace sa
