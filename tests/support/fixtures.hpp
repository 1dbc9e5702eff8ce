// Golden values made by PyTorch (tests/reference/*.py) and committed under
// tests/fixtures/, so building and testing never need Python.
//
// File format, plain text so a diff shows what changed:
//     # comment
//     @ <name> <f32|i64> <dim0> <dim1> ...
//     <values, whitespace separated, as many lines as needed>
// float32 values are written with 9 significant digits, which round-trips
// every float32 exactly, so "bit for bit" comparisons are meaningful.
#pragma once

#include "sa/nn.hpp"
#include "sa/tensor.hpp"

#include <map>
#include <string>
#include <vector>

namespace sa::test {

class Fixtures {
 public:
  // `file` is relative to tests/fixtures/, e.g. "rng.txt".
  explicit Fixtures(const std::string& file);

  bool has(const std::string& name) const;
  const Shape& shape(const std::string& name) const;
  const std::vector<float>& f32(const std::string& name) const;
  const std::vector<int64_t>& i64(const std::string& name) const;
  float scalar(const std::string& name) const;
  // A 2-D tensor as a matrix; a tensor of more dimensions is refused unless
  // its leading dimensions are 1, so (1, 6, 64) reads as (6, 64).
  Matrix matrix(const std::string& name) const;
  // Rows [b] of a (B, R, C) tensor, as an (R, C) matrix.
  Matrix matrix(const std::string& name, int64_t b) const;
  // A (B, S, D) tensor as the (B * S, D) matrix a batch is stored in.
  Matrix stacked(const std::string& name) const;
  // A (B, H, S, D) tensor, same contiguous order.
  Tensor4 tensor4(const std::string& name) const;
  // A 2-D i64 tensor of 0/1 (PyTorch bool masks are written that way).
  Mask mask(const std::string& name) const;
  // A layer written as <prefix>.W (d_in, d_out) and, if present, <prefix>.b.
  Linear linear(const std::string& prefix) const;
  // <prefix>.W_q, .W_k, .W_v, .W_o, each a linear().
  AttentionParams attention_params(const std::string& prefix) const;

 private:
  struct Entry {
    Shape shape;
    std::vector<float> f32;
    std::vector<int64_t> i64;
    bool is_f32 = true;
  };
  const Entry& get(const std::string& name) const;
  std::string file_;
  std::map<std::string, Entry> entries_;
};

}  // namespace sa::test
