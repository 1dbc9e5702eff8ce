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
// Header-only because both tracks use it.
#pragma once

#include "07-training/model.hpp"

#include "sa/cli.hpp"

#include <boost/crc.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
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
inline uint32_t crc32(std::span<const uint8_t> bytes) {
  boost::crc_32_type crc;
  if (!bytes.empty()) crc.process_bytes(bytes.data(), bytes.size());
  return crc.checksum();
}

// How many parameters a configuration implies, computed from the sizes
// alone (the tensors of init_params, counted), in 64-bit arithmetic: with
// every size at most kMaxCheckpointDimension it stays below 2^63.
inline uint64_t expected_parameter_count(const ModelConfig& c) {
  const uint64_t d = uint64_t(c.d_model), ff = uint64_t(c.d_ff), v = uint64_t(c.vocab);
  const uint64_t block = 3 * d * d   // W_q | W_k | W_v
                         + d * d     // W_o
                         + 4 * d     // ln1 and ln2: gamma and beta
                         + d * ff + ff + ff * d + d;  // fc1 and fc2 with their biases
  return v * d + uint64_t(c.max_seq) * d + uint64_t(c.n_layers) * block + 2 * d + d * v + v;
}

namespace detail {

// The length of the UTF-8 sequence that starts at s[i] (1 for ASCII), or 0
// when the bytes there are not UTF-8: a stray continuation byte, a sequence
// cut short, an overlong form, a surrogate, or a code point above U+10FFFF.
inline size_t utf8_sequence(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + len > s.size() || byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return len;
}

// A control character at s[i]: C0 (below 0x20), DEL, or C1 (U+0080 to
// U+009F, in UTF-8 0xC2 0x80 to 0xC2 0x9F).
inline bool control_at(std::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  return c < 0x20 || c == 0x7F ||
         (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9F &&
          static_cast<unsigned char>(s[i + 1]) >= 0x80);
}

}  // namespace detail

// A string from a file or the command line as a message may show it:
// control characters (C0, DEL, C1) become escapes (\n, \t, \r, \x1b,
// \u009b) and bytes that are not UTF-8 become \xff, so that no stored
// string moves the cursor, changes colours or hides text on the reader's
// terminal. Other characters, backslashes included, are kept. Longer than
// `max_bytes`, it is cut there and "..." says so.
inline std::string printable(std::string_view s, size_t max_bytes = std::string::npos) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (out.size() >= max_bytes) {
      out += "...";
      break;
    }
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (detail::control_at(s, i)) {
      if (c == '\n') out += "\\n";
      else if (c == '\t') out += "\\t";
      else if (c == '\r') out += "\\r";
      else if (c == 0xC2) out += fmt::format("\\u{:04x}", static_cast<unsigned char>(s[i + 1]));
      else out += fmt::format("\\x{:02x}", c);
      i += c == 0xC2 ? 2 : 1;
      continue;
    }
    const size_t len = detail::utf8_sequence(s, i);
    if (len == 0) {
      out += fmt::format("\\x{:02x}", c);
      ++i;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

namespace detail {

// The note as UTF-8: a byte that is not (a corpus file name in Latin-1, say)
// becomes U+FFFD, so that the JSON writer accepts it and the reader gets
// back exactly what was written.
inline std::string utf8_note(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const size_t len = utf8_sequence(s, i);
    if (len == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

// What is wrong with a vocabulary token, or "" when nothing is: a token is
// not empty, and holds no white space and no control character (C0, DEL,
// C1), since the text to analyze is split on spaces and the tokens are
// stored separated by single spaces.
inline std::string token_problem(std::string_view t) {
  if (t.empty()) return "is empty";
  for (size_t i = 0; i < t.size();) {
    if (static_cast<unsigned char>(t[i]) == ' ' || control_at(t, i)) return "holds white space or a control character";
    const size_t len = utf8_sequence(t, i);
    if (len == 0) return "is not UTF-8 text";
    i += len;
  }
  return "";
}

// The shape a tensor has in the file: a bias or a LayerNorm vector [n],
// anything else (an embedding table, a Linear's W) [rows, cols], even with
// one row (tensor_shapes shows a one-row matrix as [cols]).
inline Shape stored_shape(const std::string& name, const Shape& shape) {
  const auto ends_with = [&](std::string_view tail) {
    return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  const bool vector = ends_with(".b") || ends_with(".gamma") || ends_with(".beta");
  if (!vector && shape.size() == 1) return {1, shape[0]};
  return shape;
}

inline std::string shape_text(const Shape& s) {
  std::string out = "[";
  for (size_t k = 0; k < s.size(); ++k) out += (k ? ", " : "") + std::to_string(s[k]);
  return out + "]";
}

inline std::string hex32(uint32_t x) { return fmt::format("{:08x}", x); }

// The metadata CRC-32: every entry but metadata_crc32 itself as
// "key=value\n", keys in byte order (std::map's).
inline uint32_t metadata_crc(const std::map<std::string, std::string>& metadata) {
  boost::crc_32_type crc;
  for (const auto& [key, value] : metadata) {
    if (key == "metadata_crc32") continue;
    crc.process_bytes(key.data(), key.size());
    crc.process_byte('=');
    crc.process_bytes(value.data(), value.size());
    crc.process_byte('\n');
  }
  return crc.checksum();
}

// The configuration fields, in the order the metadata lists them.
struct ConfigField {
  const char* name;
  int64_t ModelConfig::*value;
};
inline constexpr ConfigField kConfigFields[] = {
    {"vocab", &ModelConfig::vocab},     {"max_seq", &ModelConfig::max_seq},   {"d_model", &ModelConfig::d_model},
    {"n_heads", &ModelConfig::n_heads}, {"n_layers", &ModelConfig::n_layers}, {"d_ff", &ModelConfig::d_ff}};

}  // namespace detail

// The metadata a checkpoint stores (before metadata_crc32 is added), in the
// order the header lists it; `data_crc` is the data's CRC-32.
inline std::vector<std::pair<std::string, std::string>> checkpoint_metadata(const Checkpoint& ckpt, uint32_t data_crc) {
  std::vector<std::pair<std::string, std::string>> m;
  m.emplace_back("format", std::string(kCheckpointFormat));
  m.emplace_back("version", std::to_string(kCheckpointVersion));
  for (const detail::ConfigField& f : detail::kConfigFields)
    m.emplace_back(f.name, std::to_string(ckpt.config.*f.value));
  m.emplace_back("causal", ckpt.config.causal ? "true" : "false");
  std::string tokens;
  for (const std::string& t : ckpt.tokens) tokens += (tokens.empty() ? "" : " ") + t;
  m.emplace_back("tokens", tokens);
  m.emplace_back("note", detail::utf8_note(ckpt.note));
  m.emplace_back("crc32", detail::hex32(data_crc));
  return m;
}

// The bytes of a checkpoint file. Throws std::invalid_argument for a
// checkpoint that could not be read back: a model whose position encoding
// is not the learned table, an impossible configuration, a
// vocabulary of another size, a token that is empty or holds white space,
// control characters or bytes that are not UTF-8, the same token twice,
// parameters the configuration does not imply, a NaN or an infinity.
inline std::vector<uint8_t> checkpoint_bytes(const Checkpoint& ckpt) {
  const ModelConfig& c = ckpt.config;
  c.validate();
  // The format (version 1) has no field for the position encoding, and a
  // reader would rebuild a learned model: refused rather than misread.
  if (c.position != PositionEncoding::learned)
    throw std::invalid_argument(fmt::format(
        "checkpoint_bytes: only a model with a learned position table can be saved, not a {} one",
        position_name(c.position)));
  for (const detail::ConfigField& f : detail::kConfigFields)
    if (c.*f.value > kMaxCheckpointDimension)
      throw std::invalid_argument(
          fmt::format("checkpoint_bytes: {} = {}, above the limit of {}", f.name, c.*f.value, kMaxCheckpointDimension));
  if (int64_t(ckpt.tokens.size()) != c.vocab)
    throw std::invalid_argument(
        fmt::format("checkpoint_bytes: {} token strings for a vocabulary of {}", ckpt.tokens.size(), c.vocab));
  std::map<std::string_view, size_t> seen;
  for (size_t k = 0; k < ckpt.tokens.size(); ++k) {
    const std::string problem = detail::token_problem(ckpt.tokens[k]);
    if (!problem.empty())
      throw std::invalid_argument(
          fmt::format("checkpoint_bytes: token {} '{}' {}", k, printable(ckpt.tokens[k], 80), problem));
    const auto [it, fresh] = seen.emplace(ckpt.tokens[k], k);
    if (!fresh)
      throw std::invalid_argument(fmt::format("checkpoint_bytes: tokens {} and {} are both '{}'", it->second, k,
                                              printable(ckpt.tokens[k], 80)));
  }
  const uint64_t count = uint64_t(parameter_count(ckpt.params));
  if (count != expected_parameter_count(c))
    throw std::invalid_argument(fmt::format("checkpoint_bytes: {} parameters, but the configuration implies {}",
                                            count, expected_parameter_count(c)));
  // The shapes the reader will expect: the configuration's.
  Generator shapes_only(0);
  const std::vector<Shape> have = tensor_shapes(ckpt.params), want = tensor_shapes(init_params(shapes_only, c));
  if (have != want)
    throw std::invalid_argument("checkpoint_bytes: the parameters do not have the shapes the configuration implies");

  // The data: little-endian float32, byte by byte, the same on any machine.
  std::vector<uint8_t> data;
  data.reserve(size_t(count) * 4);
  // The metadata first (filled in below), then the tensors in order: the
  // header reads in the model's order (ordered_json keeps it).
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  header["__metadata__"] = nullptr;
  size_t index = 0;
  std::string bad;
  for_each_tensor(ckpt.params, [&](const std::string& name, std::span<const float> t) {
    const uint64_t begin = data.size();
    for (float x : t) {
      if (!std::isfinite(x) && bad.empty()) bad = name;
      const uint32_t u = std::bit_cast<uint32_t>(x);
      for (int k = 0; k < 4; ++k) data.push_back(uint8_t(u >> (8 * k)));
    }
    header[name] = {{"dtype", "F32"},
                     {"shape", detail::stored_shape(name, have[index++])},
                     {"data_offsets", {begin, uint64_t(data.size())}}};
  });
  if (!bad.empty())
    throw std::invalid_argument(fmt::format("checkpoint_bytes: tensor {} holds a NaN or infinite value", bad));

  const auto metadata = checkpoint_metadata(ckpt, crc32(data));
  nlohmann::ordered_json meta = nlohmann::ordered_json::object();
  for (const auto& [key, value] : metadata) meta[key] = value;
  meta["metadata_crc32"] = detail::hex32(detail::metadata_crc({metadata.begin(), metadata.end()}));
  header["__metadata__"] = std::move(meta);
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(fmt::format("checkpoint_bytes: cannot write the header: {}", printable(e.what(), 200)));
  }
  // Padded with spaces so that the data starts at a multiple of 8, as the
  // format recommends.
  text.append((8 - text.size() % 8) % 8, ' ');

  std::vector<uint8_t> bytes;
  bytes.reserve(8 + text.size() + data.size());
  for (int k = 0; k < 8; ++k) bytes.push_back(uint8_t(uint64_t(text.size()) >> (8 * k)));
  bytes.insert(bytes.end(), text.begin(), text.end());
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

namespace detail {

// The process's umask, read without changing it (umask() can only be read
// by setting it, which would race with another thread's save): Linux shows
// it in /proc/self/status; 022, the usual one, elsewhere.
inline mode_t current_umask() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Umask:", 0) == 0) {
      try {
        return mode_t(std::stoul(line.substr(6), nullptr, 8)) & 0777;
      } catch (const std::exception&) {
        break;
      }
    }
  return 022;
}

}  // namespace detail

// Writes the checkpoint to a uniquely named temporary file in the folder of
// `path` (created if needed), fsyncs it and renames it to `path`: a crash
// or a full disk while writing never leaves a half-written file under the
// real name, and saves running at once never share a temporary file. On any
// failure the temporary file is removed and std::runtime_error says why.
inline void save_checkpoint(const std::string& path, const Checkpoint& ckpt) {
  namespace fs = std::filesystem;
  const std::vector<uint8_t> bytes = checkpoint_bytes(ckpt);
  const fs::path target(path);
  const auto fail = [&](const std::string& what, int error) {
    return std::runtime_error(fmt::format("cannot save the checkpoint '{}': {}{}", printable(path), what,
                                          error ? ": " + std::generic_category().message(error) : ""));
  };
  if (target.filename().empty() || target.filename() == "." || target.filename() == "..")
    throw fail("the path names a folder, not a file", 0);
  std::error_code ec;
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  fs::create_directories(dir, ec);
  if (ec) throw fail(fmt::format("cannot create the folder '{}'", printable(dir.string())), ec.value());

  std::string name = (dir / ("." + target.filename().string() + ".XXXXXX")).string();
  const int fd = ::mkstemp(name.data());
  if (fd < 0) throw fail(fmt::format("cannot create a temporary file in '{}'", printable(dir.string())), errno);
  bool fd_open = true;
  try {
    for (size_t done = 0; done < bytes.size();) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw fail("cannot write it", n < 0 ? errno : EIO);
      done += size_t(n);
    }
    // mkstemp creates the file for its owner only: give it the permissions
    // a new file gets (0666 less the umask).
    if (::fchmod(fd, 0666 & ~detail::current_umask()) != 0) throw fail("cannot set its permissions", errno);
    if (::fsync(fd) != 0) throw fail("cannot flush it to disk", errno);
    fd_open = false;
    if (::close(fd) != 0) throw fail("cannot close it", errno);
    if (std::rename(name.c_str(), path.c_str()) != 0) throw fail("cannot rename the temporary file to it", errno);
  } catch (...) {
    if (fd_open) ::close(fd);
    ::unlink(name.c_str());
    throw;
  }
  // The rename itself reaches the disk when the folder is flushed (a
  // failure here loses nothing that was not already written).
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

namespace detail {

// What a checkpoint's header says, checked against itself, the
// configuration and the length of the data; the parameters are allocated
// (their shapes), not yet read.
struct CheckpointLayout {
  Checkpoint ckpt;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // [begin, end) in the data, for_each_tensor's order
  std::vector<std::string> names;                     // for_each_tensor's order
  uint32_t crc = 0;                                   // the data's CRC-32 the header records
};

inline CheckpointError checkpoint_error(const std::string& name, const std::string& why) {
  return CheckpointError(fmt::format("checkpoint '{}': {}", printable(name, 300), why));
}

// The header's length, from the file's first 8 bytes, checked against the
// file's size (all of it, first 8 bytes included) before anything is read.
inline uint64_t checkpoint_header_length(std::span<const uint8_t> first8, uint64_t file_size, const std::string& name) {
  const auto fail = [&](const std::string& why) { return checkpoint_error(name, why); };
  if (file_size == 0) throw fail("the file is empty");
  if (file_size < 8 || first8.size() < 8)
    throw fail(fmt::format("truncated: {} bytes, fewer than the 8 of a safetensors header length", file_size));
  const std::string_view start(reinterpret_cast<const char*>(first8.data()), 8);
  if (start == "SA07CKPT")
    throw fail("a checkpoint in the book's former format (SA07CKPT), which this program no longer reads: run "
               "the chapter program (`./book run 7`) again to save it as safetensors");
  uint64_t n = 0;
  for (int k = 0; k < 8; ++k) n |= uint64_t(first8[size_t(k)]) << (8 * k);
  if (n > kMaxCheckpointHeader)
    throw fail(fmt::format("not a safetensors checkpoint: its first 8 bytes ('{}') give a header length of {} bytes, "
                           "more than the limit of {} MiB",
                           printable(start), n, kMaxCheckpointHeader >> 20));
  if (n > file_size - 8)
    throw fail(fmt::format("truncated: its header length is {} bytes, but only {} bytes follow the first 8", n,
                           file_size - 8));
  if (n < 2) throw fail(fmt::format("not a safetensors checkpoint: its header length is {} bytes", n));
  return n;
}

// A decimal configuration field: digits only, no sign, no leading zero,
// from 1 to kMaxCheckpointDimension.
inline bool parse_dimension(const std::string& s, int64_t& value) {
  if (s.empty() || s.size() > 7 || s[0] == '0') return false;
  int64_t v = 0;
  for (char ch : s) {
    if (ch < '0' || ch > '9') return false;
    v = v * 10 + (ch - '0');
  }
  if (v < 1 || v > kMaxCheckpointDimension) return false;
  value = v;
  return true;
}

// Reads and checks the header (every check up to the data's CRC-32, see the
// top of this file); `data_size` is the number of bytes after it.
inline CheckpointLayout parse_checkpoint_header(std::string_view header, uint64_t data_size, const std::string& name) {
  using json = nlohmann::json;
  const auto fail = [&](const std::string& why) { return checkpoint_error(name, why); };
  const auto shown = [](std::string_view s) { return printable(s, 80); };

  // (The format requires the '{' first, no white space before it.)
  if (header.empty() || header.front() != '{')
    throw fail(fmt::format("not a safetensors checkpoint: its header does not begin with '{{' (it begins '{}')",
                           shown(header.substr(0, 16))));
  // A safetensors header is an object of objects of arrays of numbers:
  // anything nested deeper is refused as it is read, and so is a name given
  // twice in one object (the JSON reader would keep only the last).
  std::string duplicate;
  std::vector<std::set<std::string>> names;  // of each object being read, innermost last
  json root;
  try {
    root = json::parse(header.begin(), header.end(), [&](int depth, json::parse_event_t event, json& parsed) {
      using event_t = json::parse_event_t;
      if ((event == event_t::object_start || event == event_t::array_start) && depth > 2)
        throw fail("its header nests deeper than a safetensors header does");
      if (event == event_t::object_start) names.emplace_back();
      if (event == event_t::object_end && !names.empty()) names.pop_back();
      if (event == event_t::key && !names.empty() && duplicate.empty() &&
          !names.back().insert(parsed.get<std::string>()).second)
        duplicate = parsed.get<std::string>();
      return true;
    });
  } catch (const json::exception& e) {
    // "[json.exception.parse_error.101] parse error at ...": without the
    // bracket, escaped, and short (the part it quotes can be megabytes).
    std::string_view what = e.what();
    if (const size_t close = what.find("] "); what.rfind("[json.", 0) == 0 && close != std::string_view::npos)
      what.remove_prefix(close + 2);
    throw fail(fmt::format("its header is not valid JSON: {}", printable(what, 200)));
  }
  if (!root.is_object()) throw fail("its header is not a JSON object");
  if (!duplicate.empty()) throw fail(fmt::format("its header gives '{}' twice in one object", shown(duplicate)));

  // ---- __metadata__ ------------------------------------------------------
  const auto meta_it = root.find("__metadata__");
  if (meta_it == root.end())
    throw fail("a safetensors file, but not a chapter 7 checkpoint: it has no __metadata__ (the configuration, "
               "the vocabulary and the CRC-32s this book stores there)");
  if (!meta_it->is_object()) throw fail("its __metadata__ is not a JSON object");
  std::map<std::string, std::string> meta;
  for (const auto& [key, value] : meta_it->items()) {
    if (!value.is_string())
      throw fail(fmt::format("its __metadata__ entry '{}' is not a string (the format stores strings only)",
                             shown(key)));
    meta.emplace(key, value.get<std::string>());
  }
  const auto entry = [&](const std::string& key) -> const std::string& {
    const auto it = meta.find(key);
    if (it == meta.end()) throw fail(fmt::format("its __metadata__ has no '{}'", key));
    return it->second;
  };
  {
    const auto format = meta.find("format");
    if (format == meta.end() || format->second != kCheckpointFormat)
      throw fail(format == meta.end()
                     ? fmt::format("a safetensors file, but not a chapter 7 checkpoint: its __metadata__ has no "
                                   "format '{}'",
                                   kCheckpointFormat)
                     : fmt::format("a safetensors file, but not a chapter 7 checkpoint: its format is '{}', not '{}'",
                                   shown(format->second), kCheckpointFormat));
  }
  if (entry("version") != std::to_string(kCheckpointVersion))
    throw fail(fmt::format("format version '{}', but this program reads version {}", shown(entry("version")),
                           kCheckpointVersion));
  {
    const std::string& stored = entry("metadata_crc32");
    const uint32_t computed = metadata_crc(meta);
    if (stored != hex32(computed))
      throw fail(fmt::format("corrupted: the CRC-32 of its metadata is {}, but the header records '{}'",
                             hex32(computed), shown(stored)));
  }

  // ---- the configuration, the vocabulary, the note --------------------------
  // (Reached with a valid metadata CRC-32: an edit that resealed it.)
  CheckpointLayout layout;
  Checkpoint& ckpt = layout.ckpt;
  ModelConfig& c = ckpt.config;
  for (const ConfigField& f : kConfigFields) {
    const std::string& text = entry(f.name);
    if (!parse_dimension(text, c.*f.value))
      throw fail(fmt::format("invalid configuration: {} = '{}' (a whole number from 1 to {})", f.name, shown(text),
                             kMaxCheckpointDimension));
  }
  const std::string& causal = entry("causal");
  if (causal != "true" && causal != "false")
    throw fail(fmt::format("invalid configuration: causal = '{}' (true or false)", shown(causal)));
  c.causal = causal == "true";
  if (c.d_model % c.n_heads != 0)
    throw fail(fmt::format("invalid configuration: d_model {} is not divisible by {} heads", c.d_model, c.n_heads));
  {
    const std::string& tokens = entry("tokens");
    // Counted before any is copied: at most one token per 2 bytes.
    const size_t count = size_t(std::count(tokens.begin(), tokens.end(), ' ')) + 1;
    if (int64_t(count) != c.vocab)
      throw fail(fmt::format("its vocabulary holds {} tokens, but vocab = {}", count, c.vocab));
    ckpt.tokens.reserve(count);
    std::map<std::string_view, size_t> seen;
    for (size_t at = 0; ckpt.tokens.size() < count;) {
      const size_t end = std::min(tokens.find(' ', at), tokens.size());
      const std::string_view t = std::string_view(tokens).substr(at, end - at);
      const std::string problem = token_problem(t);
      if (!problem.empty()) throw fail(fmt::format("token {} ('{}') {}", ckpt.tokens.size(), shown(t), problem));
      const auto [it, fresh] = seen.emplace(t, ckpt.tokens.size());
      if (!fresh) throw fail(fmt::format("tokens {} and {} are both '{}'", it->second, ckpt.tokens.size(), shown(t)));
      ckpt.tokens.emplace_back(t);
      at = end + 1;
    }
  }
  if (const auto note = meta.find("note"); note != meta.end()) ckpt.note = note->second;
  {
    const std::string& crc = entry("crc32");
    if (crc.size() != 8 || crc.find_first_not_of("0123456789abcdef") != std::string::npos)
      throw fail(fmt::format("its crc32 '{}' is not 8 hexadecimal digits", shown(crc)));
    layout.crc = uint32_t(std::stoul(crc, nullptr, 16));
  }

  // ---- the tensor entries ---------------------------------------------------
  struct Entry {
    std::string name;
    Shape shape;
    uint64_t begin = 0, end = 0, values = 0;
  };
  std::vector<Entry> entries;
  uint64_t declared = 0;  // the values all entries hold, at most 2^62 (each at most 2^40 of them, at most 2^22 entries)
  for (const auto& [key, value] : root.items()) {
    if (key == "__metadata__") continue;
    Entry e;
    e.name = key;
    const std::string who = fmt::format("tensor '{}'", shown(key));
    if (!value.is_object()) throw fail(fmt::format("{}: its entry is not a JSON object", who));
    for (const auto& [field, unused] : value.items())
      if (field != "dtype" && field != "shape" && field != "data_offsets")
        throw fail(fmt::format("{}: unknown field '{}' (a tensor has dtype, shape and data_offsets)", who,
                               shown(field)));
    for (const char* field : {"dtype", "shape", "data_offsets"})
      if (!value.contains(field)) throw fail(fmt::format("{} has no {}", who, field));
    const json& dtype = value.at("dtype");
    if (!dtype.is_string() || dtype.get<std::string>() != "F32")
      throw fail(fmt::format("{} has dtype {}; a chapter 7 checkpoint holds F32 only", who,
                             dtype.is_string() ? "'" + shown(dtype.get<std::string>()) + "'" : "that is no string"));
    const json& shape = value.at("shape");
    if (!shape.is_array() || shape.size() > 8)
      throw fail(fmt::format("{}: its shape is not a list of at most 8 sizes", who));
    e.values = 1;
    for (const json& dim : shape) {
      if (!dim.is_number_unsigned()) throw fail(fmt::format("{}: its shape holds something other than a size", who));
      const uint64_t d = dim.get<uint64_t>();
      if (d > uint64_t(kMaxCheckpointDimension) * 4 || (d > 0 && e.values > (uint64_t(1) << 40) / d))
        throw fail(fmt::format("{}: its shape holds more values than any chapter 7 model", who));
      e.values *= d;
      e.shape.push_back(int64_t(d));
    }
    const json& offsets = value.at("data_offsets");
    if (!offsets.is_array() || offsets.size() != 2 || !offsets.at(0).is_number_unsigned() ||
        !offsets.at(1).is_number_unsigned())
      throw fail(fmt::format("{}: its data_offsets are not two byte offsets [begin, end]", who));
    e.begin = offsets.at(0).get<uint64_t>();
    e.end = offsets.at(1).get<uint64_t>();
    declared += e.values;
    entries.push_back(std::move(e));
  }
  const uint64_t expected = expected_parameter_count(c);
  if (declared != expected)
    throw fail(fmt::format("its tensors hold {} parameters, but its configuration implies {}", declared, expected));
  // (expected < 2^63, so expected * 4 could overflow: compare with data_size / 4.)
  if (expected > data_size / 4)
    throw fail(fmt::format("truncated: its tensors need {} bytes of data, but only {} follow the header",
                           expected > (uint64_t(1) << 61) ? fmt::format("{} x 4", expected)
                                                          : std::to_string(expected * 4),
                           data_size));

  // Now the sizes are known to be there: the shapes of the configuration
  // (init_params builds them; the values it draws are overwritten).
  Generator shapes_only(0);
  ckpt.params = init_params(shapes_only, c);
  const std::vector<Shape> shapes = tensor_shapes(ckpt.params);
  std::map<std::string, size_t> slot;  // name -> index in for_each_tensor's order
  for_each_tensor(ckpt.params, [&](const std::string& tensor, std::span<const float>) {
    slot.emplace(tensor, layout.names.size());
    layout.names.push_back(tensor);
  });
  layout.ranges.assign(layout.names.size(), {0, 0});
  std::vector<bool> present(layout.names.size(), false);
  for (const Entry& e : entries) {
    const std::string who = fmt::format("tensor '{}'", shown(e.name));
    const auto it = slot.find(e.name);
    if (it == slot.end())
      throw fail(fmt::format("it holds a {}, which its configuration does not have", who));
    const size_t k = it->second;
    present[k] = true;
    const Shape want = stored_shape(e.name, shapes[k]);
    if (e.shape != want)
      throw fail(fmt::format("{} has shape {}, but its configuration implies {}", who, shape_text(e.shape),
                             shape_text(want)));
    if (e.begin > e.end || e.end > data_size)
      throw fail(fmt::format("{}: its data_offsets [{}, {}] do not lie inside the {} bytes of data", who, e.begin,
                             e.end, data_size));
    if (e.end - e.begin != e.values * 4)
      throw fail(fmt::format("{}: its data_offsets [{}, {}] hold {} bytes, but its shape needs {}", who, e.begin,
                             e.end, e.end - e.begin, e.values * 4));
    layout.ranges[k] = {e.begin, e.end};
  }
  for (size_t k = 0; k < present.size(); ++k)
    if (!present[k]) throw fail(fmt::format("tensor '{}' is missing", layout.names[k]));

  // The ranges cover the data exactly once, as the format requires.
  std::vector<size_t> order(layout.ranges.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return layout.ranges[a] < layout.ranges[b]; });
  uint64_t at = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    const auto [begin, end] = layout.ranges[order[i]];
    if (begin < at)
      throw fail(fmt::format("tensors '{}' and '{}' overlap in the data", layout.names[order[i - 1]],
                             layout.names[order[i]]));
    if (begin > at)
      throw fail(fmt::format("{} bytes of data before tensor '{}' belong to no tensor", begin - at,
                             layout.names[order[i]]));
    at = end;
  }
  if (at != data_size)
    throw fail(fmt::format("{} bytes after its last tensor: something was appended", data_size - at));
  return layout;
}

// The values, from the data section: the CRC-32 (over the tensors in
// for_each_tensor's order), then NaN and infinity.
inline Checkpoint read_checkpoint_data(CheckpointLayout& layout, std::span<const uint8_t> data,
                                      const std::string& name) {
  boost::crc_32_type crc;
  for (const auto& [begin, end] : layout.ranges)
    if (end > begin) crc.process_bytes(data.data() + begin, end - begin);
  if (crc.checksum() != layout.crc)
    throw checkpoint_error(name, fmt::format("corrupted: the CRC-32 of its data is {}, but the header records {}",
                                             hex32(crc.checksum()), hex32(layout.crc)));
  size_t k = 0;
  for_each_tensor(layout.ckpt.params, [&](const std::string& tensor, std::span<float> t) {
    const uint8_t* p = data.data() + layout.ranges[k++].first;
    for (size_t i = 0; i < t.size(); ++i, p += 4) {
      const uint32_t u = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
      t[i] = std::bit_cast<float>(u);
      if (!std::isfinite(t[i]))
        throw checkpoint_error(name, fmt::format("tensor {} holds a NaN or infinite value (at index {})", tensor, i));
    }
  });
  return std::move(layout.ckpt);
}

}  // namespace detail

// Reads a checkpoint from its bytes; `name` (the file name) is only used in
// messages. Every check of the list at the top of this file, in order.
inline Checkpoint parse_checkpoint(std::span<const uint8_t> bytes, const std::string& name) {
  const uint64_t n =
      detail::checkpoint_header_length(bytes.first(std::min<size_t>(8, bytes.size())), bytes.size(), name);
  const std::string_view header(reinterpret_cast<const char*>(bytes.data()) + 8, size_t(n));
  detail::CheckpointLayout layout = detail::parse_checkpoint_header(header, bytes.size() - 8 - n, name);
  return detail::read_checkpoint_data(layout, bytes.subspan(8 + size_t(n)), name);
}

// Reads and checks a checkpoint file (see parse_checkpoint): the header
// length first, then the header, then the data, each read only once the
// ones before it have said how long it is and that the file holds it.
inline Checkpoint load_checkpoint(const std::string& path) {
  namespace fs = std::filesystem;
  const auto fail = [&](const std::string& why) { return detail::checkpoint_error(path, why); };
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
    throw fail(fmt::format("cannot look at it: {}", ec.message()));
  if (!fs::exists(status)) throw fail("no such file");
  if (fs::is_directory(status)) throw fail("is a folder, not a file");
  if (!fs::is_regular_file(status)) throw fail("is not a regular file (a device, a pipe or a socket?)");
  const uint64_t size = fs::file_size(path, ec);
  if (ec) throw fail(fmt::format("cannot read its size: {}", ec.message()));
  if (size > kMaxCheckpointFile)
    throw fail(fmt::format("{} bytes, more than the {} GiB a chapter 7 checkpoint may have", size,
                           kMaxCheckpointFile >> 30));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw fail(fmt::format("cannot open it: {}", std::generic_category().message(errno)));
  const auto read = [&](size_t n) {
    std::vector<uint8_t> bytes(n);
    in.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(n));
    if (size_t(in.gcount()) != n) throw fail("cannot read it: it became shorter while being read");
    return bytes;
  };
  const std::vector<uint8_t> first = read(size_t(std::min<uint64_t>(8, size)));
  const uint64_t n = detail::checkpoint_header_length(first, size, path);
  const std::vector<uint8_t> header = read(size_t(n));
  detail::CheckpointLayout layout = detail::parse_checkpoint_header(
      std::string_view(reinterpret_cast<const char*>(header.data()), header.size()), size - 8 - n, path);
  const std::vector<uint8_t> data = read(size_t(size - 8 - n));
  return detail::read_checkpoint_data(layout, data, path);
}

// A model holding a checkpoint's parameters, ready for forward().
inline std::unique_ptr<TinyTransformer> model_from(const Checkpoint& ckpt) {
  Generator unused(0);
  auto model = std::make_unique<TinyTransformer>(ckpt.config, unused);
  model->params = ckpt.params;
  return model;
}

// The folder of the running program (build/bin), from /proc/self/exe;
// empty when Linux cannot say.
inline std::filesystem::path running_program_dir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec || !exe.has_parent_path()) return {};
  return exe.parent_path();
}

// Where the chapter's programs keep checkpoints unless told otherwise: the
// build tree (build/checkpoints, next to build/bin where the programs are),
// not the repository, so no binary file gets committed by accident.
inline std::string default_checkpoint_dir() {
  const std::filesystem::path bin = running_program_dir();
  return bin.empty() ? "checkpoints" : (bin.parent_path() / "checkpoints").string();
}

// Another program of the build, next to the running one (build/bin/...).
inline std::string sibling_program(const std::string& name) {
  const std::filesystem::path bin = running_program_dir();
  return bin.empty() ? name : (bin / name).string();
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
