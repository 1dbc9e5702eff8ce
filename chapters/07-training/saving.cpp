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
// the model saved: the same bits in every parameter, the same logits. The
// check reads the file this run wrote, before it takes the checkpoint's
// name (see save_checkpoint): another run saving to the same folder at the
// same time cannot swap its file in between.
void save_and_verify(const Checkpoint& ckpt, const std::string& path, TinyTransformer& model,
                     const std::vector<int64_t>& ids, int64_t batch) {
  int64_t same = 0, total = 0, tensors = 0;
  uintmax_t bytes = 0;
  bool logits_same = false;
  Checkpoint back;
  save_checkpoint(path, ckpt, [&](const std::string& written) {
    back = load_checkpoint(written);
    std::error_code ec;
    bytes = std::filesystem::file_size(written, ec);
    std::vector<std::span<const float>> a, b;
    for_each_tensor(ckpt.params, [&](const std::string&, std::span<const float> t) { a.push_back(t); });
    for_each_tensor(back.params, [&](const std::string&, std::span<const float> t) { b.push_back(t); });
    tensors = int64_t(b.size());
    for (size_t k = 0; k < a.size(); ++k)
      for (size_t i = 0; i < a[k].size(); ++i) {
        same += std::bit_cast<uint32_t>(a[k][i]) == std::bit_cast<uint32_t>(b[k][i]);
        ++total;
      }
    const Matrix before = model.forward(ids, batch);
    auto reloaded = model_from(back);
    const Matrix after = reloaded->forward(ids, batch);
    logits_same = before.rows() == after.rows() && (before.array() == after.array()).all();
    if (same != total || !logits_same)
      throw std::runtime_error(fmt::format("the checkpoint read back is not the model saved ({} of {} parameters "
                                           "identical, logits {}); it was not saved",
                                           same, total, logits_same ? "identical" : "different"));
  });
  fmt::print("  saved  {}  ({} bytes: JSON header, {} token strings, {} tensors of {} float32 parameters)\n",
             shown_path(path), bytes, back.tokens.size(), tensors, parameter_count(back.params));
  fmt::print("  read back: {} of {} parameters identical bit for bit; logits of {} sequence{} {}\n", same, total, batch,
             batch == 1 ? "" : "s", logits_same ? "identical" : "DIFFERENT");
}

}  // namespace sa::ch7
