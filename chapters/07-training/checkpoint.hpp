// Chapter 7: saving a trained model, and reading it back without trusting
// the file.
//
// A checkpoint is a safetensors file, Hugging Face's format for tensors,
// which PyTorch and most tools read (tests/reference/ch07_training.py --load
// reads one in a few lines of Python and reproduces the model's logits):
//
//   offset  size  field
//   0       8     N, a u64, little-endian: the length of the header
//   8       N     the header: JSON (UTF-8), padded with spaces to a multiple of 8
//   8 + N   ...   the data: every tensor's float32 values, little-endian,
//                 row-major, tensor after tensor in for_each_tensor's order
//
// The header maps each tensor's name (for_each_tensor's: "tok", "pos",
// "blocks.0.qkv.W", ..., "head.b") to
//   {"dtype": "F32", "shape": [rows, cols], "data_offsets": [begin, end]}
// (byte offsets into the data, end excluded; a bias or a LayerNorm vector
// has shape [n]). A Linear's W is stored as the book keeps it, (d_in, d_out):
// y = x W + b; PyTorch's nn.Linear holds its transpose. "__metadata__", a
// map of strings to strings as the format requires, holds what the book
// adds:
//   format          "sa07-checkpoint", and version "1"
//   vocab, max_seq, d_model, n_heads, n_layers, d_ff   decimal numbers
//   causal          "true" or "false"
//   tokens          the vocabulary, id 0 first, separated by single spaces
//                   (a token is never empty and holds no white space)
//   note            free text: the task, how long it trained, how well
//   crc32           CRC-32 (zlib's) of the tensors' bytes in
//                   for_each_tensor's order, that is of the data section as
//                   written, 8 hexadecimal digits
//   metadata_crc32  CRC-32 of every other metadata entry as "key=value\n",
//                   keys in byte order: the configuration, the vocabulary
//                   and the note are checked too
//
// Reading checks, in this order, and refuses with one line (CheckpointError,
// a UsageError: the programs print it and exit with status 2):
//   the file is a regular file of at most 1 GiB and at least 8 bytes;
//   the header length is at most 16 MiB and fits in the file (checked before
//   the header is read: a damaged length never allocates or reads more);
//   the header is a JSON object (valid UTF-8, no name twice) with the book's
//   __metadata__: its format and version, its metadata CRC-32 (a flipped bit
//   in the configuration, a token or the note stops here); a possible
//   configuration, a vocabulary of vocab valid tokens;
//   every tensor entry is F32 with a shape and two offsets; together they
//   hold the parameter count the configuration implies, and the data is at
//   least that long (a truncated copy stops here), before anything of that
//   size is allocated; the names and shapes are exactly the configuration's;
//   every range lies inside the data, holds its shape's bytes, and the
//   ranges cover the data contiguously, without overlap, gap or bytes after
//   the last (as the safetensors format requires);
//   the CRC-32 of the tensors matches (a flipped bit in the data stops here);
//   no parameter is NaN or infinite.
// Strings the file holds (and the file name) appear in messages with
// control characters escaped (see printable()): no stored string reaches
// the terminal raw.
//
// Saving writes a temporary file with a unique name (mkstemp) in the target
// folder, fsyncs it and renames it over the target, so that neither an
// interrupted save nor two saves at once leave a half-written file under
// the real name; on any failure the temporary file is removed.
//
// checkpoint.cpp writes (checkpoint_bytes, save_checkpoint), and
// checkpoint_read.cpp reads, one named check after another. Both are
// compiled once into both tracks.
#pragma once

#include "07-training/model.hpp"

#include "sa/cli.hpp"
#include "sa/paths.hpp"
#include "sa/printable.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sa {

// One line that says what is wrong with a checkpoint file.
class CheckpointError : public UsageError {
 public:
  using UsageError::UsageError;
};

struct Checkpoint {
  ModelConfig config;
  std::vector<std::string> tokens;  // the vocabulary: tokens[id], config.vocab of them
  std::string note;                 // free text: the task, how long it trained, how well
  Params params;
};

inline constexpr std::string_view kCheckpointFormat = "sa07-checkpoint";
inline constexpr uint32_t kCheckpointVersion = 1;
inline constexpr std::string_view kCheckpointExtension = ".safetensors";
// Far beyond any checkpoint of this chapter (the largest is 231 KB).
inline constexpr uint64_t kMaxCheckpointHeader = uint64_t(16) << 20;  // 16 MiB
inline constexpr uint64_t kMaxCheckpointFile = uint64_t(1) << 30;     // 1 GiB
// The largest size a configuration field may have: far beyond any model of
// this chapter, and small enough that expected_parameter_count cannot
// overflow.
inline constexpr int64_t kMaxCheckpointDimension = int64_t(1) << 20;

// CRC-32 as zlib, PNG and gzip compute it (Boost.CRC's crc_32_type:
// polynomial 0x04C11DB7 reflected, initial and final XOR 0xFFFFFFFF):
// crc32("123456789") is 0xCBF43926. Any single flipped bit, and any burst of
// up to 32 flipped bits, changes it.
uint32_t crc32(std::span<const uint8_t> bytes);

// The metadata a checkpoint stores (before metadata_crc32 is added), in the
// order the header lists it; `data_crc` is the data's CRC-32.
std::vector<std::pair<std::string, std::string>> checkpoint_metadata(const Checkpoint& ckpt, uint32_t data_crc);

// The bytes of a checkpoint file. Throws std::invalid_argument for a
// checkpoint that could not be read back: a model whose position encoding
// is not the learned table, an impossible configuration, a
// vocabulary of another size, a token that is empty or holds white space,
// control characters or bytes that are not UTF-8, the same token twice,
// parameters the configuration does not imply, a NaN or an infinity.
std::vector<uint8_t> checkpoint_bytes(const Checkpoint& ckpt);

// A check of the file a save wrote, given its temporary name; it throws to
// stop the save (the file is then removed, and nothing is renamed).
using CheckpointCheck = std::function<void(const std::string& written)>;

// Writes the checkpoint to a uniquely named temporary file in the folder of
// `path` (created if needed), fsyncs it, runs `check_before_rename` on it,
// and renames it to `path`: a crash or a full disk while writing never
// leaves a half-written file under the real name, saves running at once
// never share a temporary file, and each checks the file it wrote itself.
// Temporary files that an earlier save of the same name left behind when
// it was killed are removed first. On any failure the temporary file is
// removed and std::runtime_error says why.
void save_checkpoint(const std::string& path, const Checkpoint& ckpt, const CheckpointCheck& check_before_rename = {});

// What save_checkpoint does with the bytes, for any file of the book that
// must never be seen half-written (chapter 9's GPT checkpoint calls it too):
// the temporary file, fsync, the check, the rename, the stale temporaries.
void save_file_atomically(const std::string& path, std::span<const uint8_t> bytes,
                          const CheckpointCheck& check_before_rename = {});

// A file a run will save when it ends, and an upper bound of its size.
struct CheckpointTarget {
  std::string path;
  uint64_t bytes = 0;
};

// An upper bound of the size of a checkpoint of `cfg` whose vocabulary
// takes `token_bytes` bytes: the parameters' float32s and a generous
// header (the JSON entry of every tensor, the tokens, the note).
uint64_t checkpoint_size_bound(const ModelConfig& cfg, uint64_t token_bytes);

// Checks before any training that the run can save what it trains, and
// refuses with one line (UsageError, naming `flag`) otherwise: a target
// whose name a folder or a non-regular file already takes, a name that ends
// in a folder, a folder that cannot be created or written, or a file system
// with less room than the targets need together, plus 1 MiB.
void require_checkpoint_targets(const std::string& flag, const std::vector<CheckpointTarget>& targets);
// The room rule on its own: "" when `available` bytes hold `needed`, or why not.
std::string checkpoint_room_problem(const std::string& dir, uint64_t available, uint64_t needed);

// Reads a checkpoint from its bytes; `name` (the file name) is only used in
// messages. Every check of the list at the top of this file, in order.
Checkpoint parse_checkpoint(std::span<const uint8_t> bytes, const std::string& name);

// Reads and checks a checkpoint file (see parse_checkpoint): the header
// length first, then the header, then the data, each read only once the
// ones before it have said how long it is and that the file holds it.
Checkpoint load_checkpoint(const std::string& path);

// A model holding a checkpoint's parameters, ready for forward().
std::unique_ptr<TinyTransformer> model_from(const Checkpoint& ckpt);

// Where the chapter's programs keep checkpoints unless told otherwise: the
// build tree (build/checkpoints, next to build/bin where the programs are),
// not the repository, so no binary file gets committed by accident.
std::string default_checkpoint_dir();

// The parts of the format that the writer, the reader and the suites share.
namespace detail {

// The metadata CRC-32: every entry but metadata_crc32 itself as
// "key=value\n", keys in byte order (std::map's).
uint32_t metadata_crc(const std::map<std::string, std::string>& metadata);

// The configuration fields, in the order the metadata lists them.
struct ConfigField {
  const char* name;
  int64_t ModelConfig::*value;
};
inline constexpr ConfigField kConfigFields[] = {
    {"vocab", &ModelConfig::vocab},     {"max_seq", &ModelConfig::max_seq},   {"d_model", &ModelConfig::d_model},
    {"n_heads", &ModelConfig::n_heads}, {"n_layers", &ModelConfig::n_layers}, {"d_ff", &ModelConfig::d_ff}};

// A decimal configuration field: digits only, no sign, no leading zero,
// from 1 to kMaxCheckpointDimension.
bool parse_dimension(const std::string& s, int64_t& value);

// What is wrong with a vocabulary token, or "" when nothing is: a token is
// not empty, and holds no white space and no control character (C0, DEL,
// C1), since the text to analyze is split on spaces and the tokens are
// stored separated by single spaces.
std::string token_problem(std::string_view t);

std::string hex32(uint32_t x);

// One tensor on its way into a file.
struct TensorView {
  std::string name;
  Shape shape;
  std::span<const float> values;
};

// The bytes of a safetensors file: the header length, the header (the
// metadata first, then every tensor in order), the data. metadata_for gets
// the data's CRC-32 and returns the entries to store, in order;
// metadata_crc32 is added after them. A NaN or infinite value is refused
// (std::invalid_argument, starting with `who`).
std::vector<uint8_t> safetensors_bytes(
    const std::vector<TensorView>& tensors,
    const std::function<std::vector<std::pair<std::string, std::string>>(uint32_t data_crc)>& metadata_for,
    std::string_view who);

// ---- The reader's steps that do not depend on what the file holds: the
// file, the header length, the JSON, the tensor entries, the ranges. Chapter
// 9's reader calls them too; `kind` ("chapter 7") names the checkpoint in
// the messages where that matters.

// Makes the one-line refusals of one file: "checkpoint 'NAME': WHY".
struct Refusal {
  const std::string& name;
  CheckpointError operator()(const std::string& why) const;
};

// A checkpoint file opened for reading, refused unless it is there, a
// regular file and at most kMaxCheckpointFile bytes; read front to back.
class CheckpointFile {
 public:
  CheckpointFile(const std::string& path, std::string_view kind);
  uint64_t size() const { return size_; }
  // The next n bytes (refused if the file became shorter).
  std::vector<uint8_t> read(size_t n);
  // The first 8 bytes, checked by checkpoint_header_length.
  uint64_t header_length();

 private:
  const std::string& path_;
  uint64_t size_ = 0;
  std::ifstream in_;
};

// The header's length, from the file's first 8 bytes, checked against the
// file's size (all of it, first 8 bytes included) before anything is read.
uint64_t checkpoint_header_length(std::span<const uint8_t> first8, uint64_t file_size, const std::string& name);

// The header as JSON: an object, '{' first, no name twice in one object,
// nothing nested deeper than a safetensors header nests.
nlohmann::json parse_header_json(std::string_view header, const Refusal& fail);

// One tensor's entry as the header gives it.
struct TensorEntry {
  std::string name;
  Shape shape;
  uint64_t begin = 0, end = 0, values = 0;
};

// Every tensor entry of the header (all but __metadata__): F32, a shape,
// two offsets, nothing else.
std::vector<TensorEntry> read_tensor_entries(const nlohmann::json& root, const Refusal& fail, std::string_view kind);

// The metadata entry `key`, which must be there. (A copy: a reference into
// `meta` bound where the key is a temporary string reads to GCC 14 as one
// that may dangle.)
std::string metadata_entry(const std::map<std::string, std::string>& meta, const std::string& key,
                           const Refusal& fail);

// The metadata's CRC-32 against the one it records (`stored`). When they
// differ the CRC cannot say which value changed, but a key the book never
// writes (`known` says which it writes) is a likely culprit: another writer
// that added one without sealing the metadata again. The refusal names such
// keys, with `how` (where the recipe is) after it.
void check_metadata_crc(const std::map<std::string, std::string>& meta, const std::string& stored,
                        const Refusal& fail, const std::function<bool(const std::string& key)>& known,
                        std::string_view how = {});

// Matches the entries to the tensors the configuration implies (names[k]
// of shape shapes[k]): each name present with its shape, each range inside
// the data and holding its shape's bytes. Returns the ranges in the order
// of `names`. `unknown_note` may add a reason to the refusal of a name the
// configuration does not have (chapter 9: "(optimizer 'none')").
std::vector<std::pair<uint64_t, uint64_t>> match_tensor_entries(
    const std::vector<TensorEntry>& entries, const std::vector<std::string>& names, const std::vector<Shape>& shapes,
    uint64_t data_size, const Refusal& fail,
    const std::function<std::string(const std::string& name)>& unknown_note = {});

// The ranges ([begin, end) of tensor names[k]) cover the data contiguously,
// without overlap, gap or bytes after the last, as the format requires.
void check_ranges_cover_data(const std::vector<std::pair<uint64_t, uint64_t>>& ranges,
                             const std::vector<std::string>& names, uint64_t data_size, const Refusal& fail);

// The shape as messages print it: [3, 4].
std::string shape_text(const Shape& s);

}  // namespace detail

}  // namespace sa
