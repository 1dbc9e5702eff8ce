// Chapter 7: saving a trained model, as every task of the program does.
#include "07-training/checkpoint.hpp"
#include "07-training/program.hpp"

#include <fmt/core.h>

#include <bit>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace sa::ch7 {

// Saves a checkpoint, reads it back and checks that the model read back is
// the model saved: the same bits in every parameter, the same logits.
void save_and_verify(const Checkpoint& ckpt, const std::string& path, TinyTransformer& model,
                     const std::vector<int64_t>& ids, int64_t batch) {
  save_checkpoint(path, ckpt);
  const Checkpoint back = load_checkpoint(path);
  std::vector<std::span<const float>> a, b;
  for_each_tensor(ckpt.params, [&](const std::string&, std::span<const float> t) { a.push_back(t); });
  for_each_tensor(back.params, [&](const std::string&, std::span<const float> t) { b.push_back(t); });
  int64_t same = 0, total = 0;
  for (size_t k = 0; k < a.size(); ++k)
    for (size_t i = 0; i < a[k].size(); ++i) {
      same += std::bit_cast<uint32_t>(a[k][i]) == std::bit_cast<uint32_t>(b[k][i]);
      ++total;
    }
  const Matrix before = model.forward(ids, batch);
  auto reloaded = model_from(back);
  const Matrix after = reloaded->forward(ids, batch);
  const bool logits_same = before.rows() == after.rows() && (before.array() == after.array()).all();
  std::error_code ec;
  int64_t tensors = 0;
  for_each_tensor(back.params, [&](const std::string&, std::span<const float>) { ++tensors; });
  fmt::print("  saved  {}  ({} bytes: JSON header, {} token strings, {} tensors of {} float32 parameters)\n",
             shown_path(path), std::filesystem::file_size(path, ec), back.tokens.size(), tensors,
             parameter_count(back.params));
  fmt::print("  read back: {} of {} parameters identical bit for bit; logits of {} sequence{} {}\n", same, total, batch,
             batch == 1 ? "" : "s", logits_same ? "identical" : "DIFFERENT");
  if (same != total || !logits_same) throw std::runtime_error("the checkpoint read back is not the model saved");
}

}  // namespace sa::ch7
