// Chapter 7: rotary position embeddings (RoPE), the third way the chapter
// tells a token where it is (step "Three ways to say where a token is").
//
// A learned table (GPT-2, the chapter's model) or chapter 1's sinusoids
// (the original Transformer) add a position vector to the token's
// embedding, once, before the first block. RoPE (LLaMA, GPT-NeoX) adds
// nothing: in every block it turns each query and key by an angle that
// grows with the position, right after the qkv Linear and before the
// scores. V is left alone.
//
// Inside one head, the d_k features of a row at position p are taken in
// consecutive pairs (2i, 2i+1), i = 0 .. d_k/2 − 1, and each pair is
// rotated by the angle p θ_i:
//   θ_i = base^(−2i / d_k),  base = 10000 (chapter 1's frequencies, per head)
//   x'_2i   = x_2i cos(p θ_i) − x_2i+1 sin(p θ_i)
//   x'_2i+1 = x_2i sin(p θ_i) + x_2i+1 cos(p θ_i)
// (the pairing of the RoFormer paper, and of the PyTorch reference in
// tests/reference/ch07_positions.py; GPT-NeoX's code pairs i with
// i + d_k/2 instead, a permutation of the features that changes nothing the
// model can learn, but changes every number).
//
// Why it works: a rotation keeps lengths and turns dot products by the
// difference of the angles. For one pair, R(a)x · R(b)y = x · R(b − a)y, so
//   score(q at p, k at p + k) = q · R(k θ) k
// depends on the offset k between query and key, never on p itself: the
// attention scores see relative positions, with no position table.
//
// The backward: the rotation is linear and orthogonal, so its transpose is
// its inverse, the rotation by −p θ_i. rope_backward applies it to dQ and
// dK (the gradient reaching the rotated Q and K becomes the gradient of the
// unrotated ones); dV passes unchanged.
//
// Both work in place on a QKV matrix (batch * seq, 3 d_model) in
// attention_forward's layout (training.hpp): Q in columns [0, d_model), K in
// [d_model, 2 d_model), head h owning [h d_k, (h + 1) d_k) of each; row
// b * seq + p is position p of sequence b. Angles are computed in double
// and their cos and sin rounded once to float; the products are float32.
// Refused with std::invalid_argument: rows that do not split into `batch`
// sequences, a column count that is not 3 d_model with d_model divisible
// by n_heads, an odd d_k (a pair would be missing its partner), a base
// that is not a finite number above 1.
//
// EXERCISE: both functions (solutions/07-training/rope.cpp holds the
// reference, exercises/07-training/rope.cpp is yours).
#pragma once

#include "sa/tensor.hpp"

#include <cstdint>

namespace sa {

inline constexpr double kRopeBase = 10000.0;

// Rotates the Q and K parts of QKV in place: pair (2i, 2i+1) of every head
// of the row at position p by the angle p θ_i.
void rope_forward(Matrix& QKV, int64_t batch, int64_t n_heads, double base = kRopeBase);

// The backward of rope_forward, in place on dQKV (QKV's layout): the
// gradient of the rotated Q and K in, the gradient of the unrotated ones
// out, each pair rotated by −p θ_i. The V part is not touched.
void rope_backward(Matrix& dQKV, int64_t batch, int64_t n_heads, double base = kRopeBase);

}  // namespace sa
