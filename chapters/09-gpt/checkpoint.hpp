// Chapter 9: the trained GPT saved to a file, and read back without
// trusting it; with AdamW's state and the training generator's, so that a
// run can stop and resume exactly where it was.
//
// The file is a safetensors file, as chapter 7's checkpoints are (its
// checkpoint.hpp describes the layout: an 8-byte little-endian header
// length, a JSON header, then the float32 data), written by chapter 7's
// atomic save (save_file_atomically) and read by chapter 7's header checks.
// Chapter 7's format itself cannot hold this model: there is no output
// layer (the embedding is tied), no d_ff field (it is 4 d_model), and the
// tokens are characters, ' ' and '\n' among them, which chapter 7's
// space-separated token list refuses.
//
// Tensors, in this order, each F32, row-major as the book keeps them:
//   every parameter under visit_gpt_parameters' name ("tok", "pos",
//   "blocks.0.ln1.gamma", ..., "ln_f.beta"), shape [rows, cols] for a
//   matrix and [n] for a vector; a Linear's W is (d_in, d_out): y = x W + b;
//   then, in a file saved to resume from (optimizer "adamw"), AdamW's
//   moments of every parameter, "adamw.m.<name>" then "adamw.v.<name>".
// __metadata__ (strings, as the format requires):
//   format "sa09-gpt", version "1"
//   vocab_size, seq_len, d_model, n_heads, n_layers   the GptConfig
//   vocabulary      the characters in id order as one UTF-8 string
//   text_sha256     the SHA-256 of the text the model was trained on
//   iteration       iterations done; iters, the run's planned total
//   seed            the run's --seed (the validation batches come from it)
//   optimizer       "adamw" (the moments are in the file) or "none"
//   adamw_step      AdamW's step count (equal to iteration; 0 with "none")
//   generator       the training generator's state (Generator::state()),
//                   "" with "none"
//   note            free text
//   crc32           CRC-32 of the data section, metadata_crc32 of every
//                   other entry (chapter 7's crc32 and detail::metadata_crc)
//
// Reading refuses, with one CheckpointError line naming the file, before
// any allocation of the data's size: not a regular file, too short, a
// header length too large or beyond the file, a header that is not JSON, a
// chapter 7 checkpoint, another format or version, a metadata CRC
// mismatch, an impossible configuration, a vocabulary of another size, a
// missing, unknown or misshapen tensor, ranges that do not cover the data
// contiguously; then, with the data read, a data CRC mismatch and NaN or
// infinite values.
#pragma once

#include "09-gpt/model.hpp"

#include "07-training/checkpoint.hpp"

#include <cstdint>
#include <span>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sa::ch9 {

inline constexpr std::string_view kGptCheckpointFormat = "sa09-gpt";
inline constexpr uint32_t kGptCheckpointVersion = 1;
inline constexpr std::string_view kGptCheckpointName = "09-gpt.safetensors";
// A --quick run's: `./book start` and the docs test run --quick, and must
// not replace the model a reader's full run saved.
inline constexpr std::string_view kGptQuickCheckpointName = "09-gpt-quick.safetensors";
// Where the full run and a --quick run save unless given --checkpoint.
inline std::string default_gpt_checkpoint(bool quick) {
  return default_checkpoint_dir() + "/" + std::string(quick ? kGptQuickCheckpointName : kGptCheckpointName);
}
// Limits the reader holds a configuration to: far beyond the program's
// options (--n-layers up to 64), small enough that nothing overflows.
inline constexpr int64_t kMaxGptLayers = 1024;
inline constexpr int64_t kMaxGptVocab = 1 << 16;
// The training run a checkpoint records, as the programs' options allow
// it (--batch, --lr, --dropout) and as the checkpoint's reader checks it.
inline constexpr int64_t kMaxBatch = 4096;

struct GptCheckpoint {
  GptConfig config;
  std::string vocabulary;   // the characters in id order, UTF-8: config.vocab_size of them
  std::string text_sha256;  // of the text trained on (data.hpp's kTextSha256 for the Bible)
  int64_t iteration = 0;    // iterations done
  int64_t iters = 0;        // the run's planned iterations
  uint64_t seed = 0;
  std::string note;
  GptParams params;
  // What a resumed run needs besides the parameters. Without it
  // (has_optimizer false) the file holds the model only.
  bool has_optimizer = false;
  GptParams adam_m, adam_v;  // AdamW's first and second moments, the parameters' shapes
  int64_t adamw_step = 0;
  std::string generator;     // Generator::state() of the training generator
  // The run's options that shape its batches and steps, which --resume
  // takes from here. Absent in a model-only file and in files of a book
  // that did not record them yet.
  struct Training {
    int64_t batch = 0;
    double lr = 0, dropout = 0;
  };
  std::optional<Training> training;
};

// The parameter count a configuration implies (exact, without allocating).
int64_t gpt_parameter_count(const GptConfig& c);

// The bytes of the file. Throws std::invalid_argument for a checkpoint the
// reader would refuse: an impossible configuration, a vocabulary of
// another size or not UTF-8 or with a character twice, parameters (or
// moments) of other shapes, a NaN or an infinity, adamw_step not equal to
// iteration, a generator state that is not one.
std::vector<uint8_t> gpt_checkpoint_bytes(const GptCheckpoint& ckpt);

// Writes the file atomically (chapter 7's save_file_atomically), running
// `check_before_rename` on the temporary file.
void save_gpt_checkpoint(const std::string& path, const GptCheckpoint& ckpt,
                         const CheckpointCheck& check_before_rename = {});

// An upper bound of the file's size for `cfg`, with the optimizer state.
uint64_t gpt_checkpoint_size_bound(const GptConfig& cfg);

// Reads a checkpoint from its bytes (`name` only appears in messages), or
// from a file; every check of the list above, in order.
GptCheckpoint parse_gpt_checkpoint(std::span<const uint8_t> bytes, const std::string& name);
GptCheckpoint load_gpt_checkpoint(const std::string& path);

// What a run is about to do, for require_same_model.
struct GptRunPlan {
  GptConfig config;
  std::string vocabulary;   // the program's vocabulary, the characters in id order
  std::string text_sha256;  // of the text it trains on
};

// Refuses (CheckpointError, one line naming the file, the field and both
// values) a checkpoint of another model than the run's: another size, another
// vocabulary, another text.
void require_same_model(const GptCheckpoint& ckpt, const GptRunPlan& plan, const std::string& name);

// The vocabulary as the checkpoint stores it: its characters in id order.
std::string vocabulary_text(const CharVocab& vocab);

// Copies AdamW's state into `opt` (GptAdamW::restore) and the generator's
// into `gen`: what --resume continues from. Requires has_optimizer.
void restore_training_state(const GptCheckpoint& ckpt, GptAdamW& opt, Generator& gen);

}  // namespace sa::ch9
