// Chapter 7: the attention-pattern analyzer, four numbers and a
// name for what one head does on one input.
//
// For the weights P (seq_q, seq_k) of one head (every row sums to 1):
//   entropy    mean over rows of −Σ_j P_ij ln P_ij           (chapter 3's row_entropy)
//              0 for one-hot rows, ln n for rows uniform over n keys
//   focus      mean over rows of max_j P_ij                   (chapter 3's focus; also
//              called concentration) 1/n uniform, 1 one-hot
//   diagonal   mean over i of P_ii: how much a token attends to itself
//   local      mean over rows of Σ_{|j − i| <= window} P_ij: how much weight
//              stays within `window` positions (3 by default)
//
// Solutions in solutions/07-training/patterns.cpp; the exercise is
// exercises/07-training/patterns.cpp. classify_pattern is written out below:
// it is a rule of thumb with fixed thresholds, not something to derive.
#pragma once

#include "sa/tensor.hpp"

#include <cstdint>
#include <string_view>

namespace sa {

struct PatternStats {
  double entropy = 0;   // nats
  double focus = 0;
  double diagonal = 0;
  double local = 0;
};

// EXERCISE. The four numbers above for one head's weights. Reuse chapter
// 3's row_entropy and focus. `window` >= 0; the diagonal runs over
// min(seq_q, seq_k) entries. An empty matrix or a negative window is
// refused with std::invalid_argument.
PatternStats attention_pattern(const Matrix& weights, int64_t window = 3);

// The classes, tested in this order (the first that holds wins):
//   self-focused       diagonal > 0.7
//   locally focused    local > 0.8
//   concentrated       focus > 0.5 and entropy < 1.0
//   distributed        entropy > 2.0
//   mixed              anything else
// The thresholds are absolute, and that has consequences worth knowing: a
// window of 3 on each side covers most of a short sentence (a *uniform*
// head over 6 tokens already has local 0.83, and is called "locally
// focused"), and no row over fewer than e² ≈ 7.4 keys can have an entropy
// above 2, so short inputs are never "distributed". Compare a head with
// the uniform head on the same input (attention_pattern of the uniform
// weights) before reading much into its class.
enum class PatternClass { SelfFocused, LocallyFocused, Concentrated, Distributed, Mixed };

struct PatternThresholds {
  double self_diagonal = 0.7;
  double local = 0.8;
  double concentrated_focus = 0.5;
  double concentrated_entropy = 1.0;
  double distributed_entropy = 2.0;
};

inline PatternClass classify_pattern(const PatternStats& s, const PatternThresholds& t = {}) {
  if (s.diagonal > t.self_diagonal) return PatternClass::SelfFocused;
  if (s.local > t.local) return PatternClass::LocallyFocused;
  if (s.focus > t.concentrated_focus && s.entropy < t.concentrated_entropy) return PatternClass::Concentrated;
  if (s.entropy > t.distributed_entropy) return PatternClass::Distributed;
  return PatternClass::Mixed;
}

inline std::string_view pattern_name(PatternClass c) {
  switch (c) {
    case PatternClass::SelfFocused: return "self-focused";
    case PatternClass::LocallyFocused: return "locally focused";
    case PatternClass::Concentrated: return "concentrated";
    case PatternClass::Distributed: return "distributed";
    case PatternClass::Mixed: return "mixed";
  }
  return "?";
}

}  // namespace sa
