// Chapter 7: saving a trained model, and reading it back without trusting
// the file.
//
// A checkpoint is one binary file. Every number is little-endian whatever
// the machine (written byte by byte, never by dumping memory), the floats
// are IEEE float32, and the layout is:
//
//   offset  size           field
//   0       8              magic "SA07CKPT" (this file is a chapter 7 checkpoint)
//   8       4   u32        format version, 1
//   12      8   u64        file size in bytes, checksum included
//   20      7 x 4  u32     vocab, max_seq, d_model, n_heads, n_layers, d_ff, causal (0 or 1)
//   48      4 + n          note: u32 length, then UTF-8 text (what was trained, how well)
//   ...     vocab x (4 + n) the token strings, id 0 first: u32 length, then the text
//   ...     8   u64        number of parameters P (what the configuration implies)
//   ...     4 P float32    the parameters, tensor after tensor in for_each_tensor's order
//   end-4   4   u32        CRC-32 of every byte before it
//
// Reading checks, in this order, and refuses with one line (CheckpointError,
// a UsageError: the programs print it and exit with status 2):
//   the file opens;                  the magic is there;
//   the version is one we read;      the size recorded in the header is the
//                                    file's size (a truncated copy fails here);
//   the checksum matches (a flipped bit anywhere fails here);
//   the configuration is sane, every length stays inside the file, the
//   parameter count is the one the configuration implies, and the fields
//   end exactly at the checksum; no parameter is NaN or infinite.
// So a reader never trusts a length before checking it against the bytes
// that are really there: no allocation of a size read from a damaged file,
// no read past the end, no garbage model.
//
// Header-only because both tracks use it.
#pragma once

#include "07-training/model.hpp"

#include "sa/cli.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
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

inline constexpr std::string_view kCheckpointMagic = "SA07CKPT";
inline constexpr uint32_t kCheckpointVersion = 1;

// CRC-32 as zlib, PNG and gzip compute it (polynomial 0xEDB88320,
// reflected, initial and final XOR 0xFFFFFFFF): crc32("123456789") is
// 0xCBF43926. Any single flipped bit, and any burst of up to 32 flipped
// bits, changes it.
inline uint32_t crc32(std::span<const uint8_t> bytes) {
  static constexpr std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t n = 0; n < 256; ++n) {
      uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[n] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (uint8_t b : bytes) c = table[(c ^ b) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

// How many parameters a configuration implies, computed from the sizes
// alone (the tensors of init_params, counted), in 64-bit arithmetic so
// that a damaged configuration cannot overflow it.
inline uint64_t expected_parameter_count(const ModelConfig& c) {
  const uint64_t d = uint64_t(c.d_model), ff = uint64_t(c.d_ff), v = uint64_t(c.vocab);
  const uint64_t block = 3 * d * d   // W_q | W_k | W_v
                         + d * d     // W_o
                         + 4 * d     // ln1 and ln2: gamma and beta
                         + d * ff + ff + ff * d + d;  // fc1 and fc2 with their biases
  return v * d + uint64_t(c.max_seq) * d + uint64_t(c.n_layers) * block + 2 * d + d * v + v;
}

namespace detail {

// Little-endian writing, byte by byte: the same file on any machine.
struct ByteWriter {
  std::vector<uint8_t> bytes;
  void u32(uint32_t x) {
    for (int k = 0; k < 4; ++k) bytes.push_back(uint8_t(x >> (8 * k)));
  }
  void u64(uint64_t x) {
    for (int k = 0; k < 8; ++k) bytes.push_back(uint8_t(x >> (8 * k)));
  }
  void f32(float x) { u32(std::bit_cast<uint32_t>(x)); }
  void text(std::string_view s) {
    u32(uint32_t(s.size()));
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
};

// Reading, where every read first checks that the bytes are there.
class ByteReader {
 public:
  ByteReader(std::span<const uint8_t> bytes, std::string_view name) : bytes_(bytes), name_(name) {}
  size_t position() const { return at_; }
  size_t remaining() const { return bytes_.size() - at_; }
  void need(size_t n, std::string_view what) const {
    if (n > remaining())
      throw CheckpointError(fmt::format("checkpoint '{}': {} needs {} bytes at offset {}, but only {} remain: "
                                        "its sizes do not match the file length",
                                        name_, what, n, at_, remaining()));
  }
  uint32_t u32(std::string_view what) {
    need(4, what);
    uint32_t x = 0;
    for (int k = 0; k < 4; ++k) x |= uint32_t(bytes_[at_ + size_t(k)]) << (8 * k);
    at_ += 4;
    return x;
  }
  uint64_t u64(std::string_view what) {
    need(8, what);
    uint64_t x = 0;
    for (int k = 0; k < 8; ++k) x |= uint64_t(bytes_[at_ + size_t(k)]) << (8 * k);
    at_ += 8;
    return x;
  }
  std::string text(std::string_view what) {
    const uint32_t n = u32(what);
    need(n, what);
    std::string s(reinterpret_cast<const char*>(bytes_.data() + at_), n);
    at_ += n;
    return s;
  }
  void skip(size_t n) {
    need(n, "the header");
    at_ += n;
  }
  // Only after need() has checked the room for all of them.
  float f32() {
    uint32_t x = 0;
    for (int k = 0; k < 4; ++k) x |= uint32_t(bytes_[at_ + size_t(k)]) << (8 * k);
    at_ += 4;
    return std::bit_cast<float>(x);
  }

 private:
  std::span<const uint8_t> bytes_;
  std::string_view name_;
  size_t at_ = 0;
};

// Offsets of the fixed header fields.
inline constexpr size_t kCkptVersionAt = 8, kCkptSizeAt = 12, kCkptConfigAt = 20;
inline constexpr size_t kCkptFixedHeader = kCkptConfigAt + 7 * 4;  // up to the note

}  // namespace detail

// The bytes of a checkpoint file.
inline std::vector<uint8_t> checkpoint_bytes(const Checkpoint& ckpt) {
  const ModelConfig& c = ckpt.config;
  c.validate();
  if (int64_t(ckpt.tokens.size()) != c.vocab)
    throw std::invalid_argument(
        fmt::format("checkpoint_bytes: {} token strings for a vocabulary of {}", ckpt.tokens.size(), c.vocab));
  detail::ByteWriter w;
  w.bytes.reserve(size_t(expected_parameter_count(c)) * 4 + 4096);
  // (Byte by byte: GCC 12 warns, wrongly, about inserting the 8 bytes of the
  // magic into the empty vector with insert().)
  for (char ch : kCheckpointMagic) w.bytes.push_back(uint8_t(ch));
  w.u32(kCheckpointVersion);
  w.u64(0);  // the file size, filled in at the end
  for (int64_t v : {c.vocab, c.max_seq, c.d_model, c.n_heads, c.n_layers, c.d_ff}) w.u32(uint32_t(v));
  w.u32(c.causal ? 1u : 0u);
  w.text(ckpt.note);
  for (const std::string& t : ckpt.tokens) w.text(t);
  const uint64_t count = uint64_t(parameter_count(ckpt.params));
  if (count != expected_parameter_count(c))
    throw std::invalid_argument(fmt::format("checkpoint_bytes: {} parameters, but the configuration implies {}",
                                            count, expected_parameter_count(c)));
  w.u64(count);
  for_each_tensor(ckpt.params, [&](const std::string&, std::span<const float> t) {
    for (float x : t) w.f32(x);
  });
  const uint64_t size = w.bytes.size() + 4;
  for (size_t k = 0; k < 8; ++k) w.bytes[detail::kCkptSizeAt + k] = uint8_t(size >> (8 * k));
  w.u32(crc32(w.bytes));
  return w.bytes;
}

// Writes the checkpoint to a temporary file next to `path` and renames it:
// a crash or a full disk while writing never leaves a half-written file
// under the real name. Creates the folder if needed.
inline void save_checkpoint(const std::string& path, const Checkpoint& ckpt) {
  namespace fs = std::filesystem;
  const std::vector<uint8_t> bytes = checkpoint_bytes(ckpt);
  const fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  if (ec) throw std::runtime_error(fmt::format("cannot create the folder of '{}': {}", path, ec.message()));
  const fs::path tmp = target.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    out.close();
    if (!out) throw std::runtime_error(fmt::format("cannot write the checkpoint '{}'", tmp.string()));
  }
  fs::rename(tmp, target, ec);
  if (ec) throw std::runtime_error(fmt::format("cannot move the checkpoint to '{}': {}", path, ec.message()));
}

// Reads a checkpoint from its bytes; `name` (the file name) is only used in
// messages. Every check of the list at the top of this file, in order.
inline Checkpoint parse_checkpoint(std::span<const uint8_t> bytes, const std::string& name) {
  const auto fail = [&](const std::string& why) { return CheckpointError(fmt::format("checkpoint '{}': {}", name, why)); };
  if (bytes.empty()) throw fail("the file is empty");
  const size_t magic_seen = std::min(bytes.size(), kCheckpointMagic.size());
  if (std::memcmp(bytes.data(), kCheckpointMagic.data(), magic_seen) != 0) {
    std::string shown;
    for (size_t k = 0; k < magic_seen; ++k) shown += (bytes[k] >= 0x20 && bytes[k] < 0x7F) ? char(bytes[k]) : '?';
    throw fail(fmt::format("not a chapter 7 checkpoint (it starts with '{}', not '{}')", shown, kCheckpointMagic));
  }
  if (bytes.size() < detail::kCkptFixedHeader + 4)
    throw fail(fmt::format("truncated: {} bytes, less than the fixed header and the checksum ({} bytes)", bytes.size(),
                           detail::kCkptFixedHeader + 4));
  {
    detail::ByteReader r(bytes.subspan(detail::kCkptVersionAt), name);
    const uint32_t version = r.u32("the version");
    if (version != kCheckpointVersion)
      throw fail(fmt::format("format version {}, but this program reads version {}", version, kCheckpointVersion));
    const uint64_t size = r.u64("the file size");
    if (size != bytes.size())
      throw fail(size > bytes.size()
                     ? fmt::format("truncated: the header records {} bytes, the file has {}", size, bytes.size())
                     : fmt::format("{} bytes, but the header records {}: something was appended", bytes.size(), size));
  }
  const size_t body = bytes.size() - 4;
  {
    detail::ByteReader r(bytes.subspan(body), name);
    const uint32_t stored = r.u32("the checksum"), computed = crc32(bytes.first(body));
    if (stored != computed)
      throw fail(fmt::format("corrupted: its CRC-32 is {:08x}, but the file records {:08x}", computed, stored));
  }

  // From here on the bytes are the ones the writer wrote; what is left to
  // catch is a file whose fields disagree with each other.
  Checkpoint ckpt;
  detail::ByteReader r(bytes.first(body), name);
  r.skip(detail::kCkptConfigAt);  // magic, version and size: checked above
  ModelConfig& c = ckpt.config;
  const char* fields[] = {"vocab", "max_seq", "d_model", "n_heads", "n_layers", "d_ff"};
  int64_t* values[] = {&c.vocab, &c.max_seq, &c.d_model, &c.n_heads, &c.n_layers, &c.d_ff};
  // Limits far beyond any model of this chapter, so that the products
  // below stay far from overflow and a bad size is refused before it is
  // used to allocate anything.
  constexpr uint32_t kLimit = 1u << 20;
  for (size_t k = 0; k < 6; ++k) {
    const uint32_t v = r.u32(fields[k]);
    if (v < 1 || v > kLimit) throw fail(fmt::format("invalid configuration: {} = {}", fields[k], v));
    *values[k] = int64_t(v);
  }
  const uint32_t causal = r.u32("causal");
  if (causal > 1) throw fail(fmt::format("invalid configuration: causal = {} (must be 0 or 1)", causal));
  c.causal = causal == 1;
  if (c.d_model % c.n_heads != 0)
    throw fail(fmt::format("invalid configuration: d_model {} is not divisible by {} heads", c.d_model, c.n_heads));
  ckpt.note = r.text("the note");
  // Each token takes at least 4 bytes: a vocabulary larger than that is
  // refused before reserving room for it.
  r.need(size_t(c.vocab) * 4, fmt::format("a vocabulary of {} tokens", c.vocab));
  ckpt.tokens.reserve(size_t(c.vocab));
  for (int64_t t = 0; t < c.vocab; ++t) ckpt.tokens.push_back(r.text(fmt::format("token {}", t)));
  const uint64_t count = r.u64("the parameter count");
  const uint64_t expected = expected_parameter_count(c);
  if (count != expected)
    throw fail(fmt::format("it holds {} parameters, but its configuration implies {}", count, expected));
  // (count <= 5.8e18 with the limits above, but count * 4 could overflow:
  // compare against remaining / 4.)
  if (count > r.remaining() / 4 || r.remaining() != count * 4)
    throw fail(fmt::format("{} parameters need {} bytes before the checksum, but {} are there: its sizes do not "
                           "match the file length",
                           count, count > r.remaining() / 4 ? fmt::format("{} x 4", count) : std::to_string(count * 4),
                           r.remaining()));

  // Shapes from the configuration (init_params builds them; the values it
  // draws are overwritten), then the values from the file.
  Generator shapes_only(0);
  ckpt.params = init_params(shapes_only, c);
  std::string bad;
  for_each_tensor(ckpt.params, [&](const std::string& tensor, std::span<float> t) {
    for (float& x : t) {
      x = r.f32();
      if (!std::isfinite(x) && bad.empty()) bad = tensor;
    }
  });
  if (!bad.empty()) throw fail(fmt::format("tensor {} holds a NaN or infinite value", bad));
  return ckpt;
}

// Reads and checks a checkpoint file (see parse_checkpoint).
inline Checkpoint load_checkpoint(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw CheckpointError(fmt::format("checkpoint '{}': no such file", path));
  if (fs::is_directory(path, ec)) throw CheckpointError(fmt::format("checkpoint '{}': is a folder, not a file", path));
  const auto size = fs::file_size(path, ec);
  if (ec) throw CheckpointError(fmt::format("checkpoint '{}': cannot read its size: {}", path, ec.message()));
  if (size > (uint64_t(1) << 32))
    throw CheckpointError(fmt::format("checkpoint '{}': {} bytes, too large to be a chapter 7 checkpoint", path, size));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError(fmt::format("checkpoint '{}': cannot open it", path));
  std::vector<uint8_t> bytes(size);
  in.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(size));
  if (size_t(in.gcount()) != size) throw CheckpointError(fmt::format("checkpoint '{}': cannot read it", path));
  return parse_checkpoint(bytes, path);
}

// A model holding a checkpoint's parameters, ready for forward().
inline std::unique_ptr<TinyTransformer> model_from(const Checkpoint& ckpt) {
  Generator unused(0);
  auto model = std::make_unique<TinyTransformer>(ckpt.config, unused);
  model->params = ckpt.params;
  return model;
}

// Where the chapter's programs keep checkpoints unless told otherwise: the
// build tree (build/checkpoints, next to build/bin where the programs are),
// not the repository, so no binary file gets committed by accident.
inline std::string default_checkpoint_dir() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec || !exe.has_parent_path()) return "checkpoints";
  return (exe.parent_path().parent_path() / "checkpoints").string();
}

// Another program of the build, next to the running one (build/bin/...).
inline std::string sibling_program(const std::string& name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec || !exe.has_parent_path()) return name;
  return (exe.parent_path() / name).string();
}

// A path as the reader would type it from the repository root (unchanged
// when it lies outside the repository).
inline std::string shown_path(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path rel = fs::relative(path, SA_SOURCE_DIR, ec);
  if (ec || rel.empty() || *rel.begin() == "..") return path;
  return rel.string();
}

}  // namespace sa
