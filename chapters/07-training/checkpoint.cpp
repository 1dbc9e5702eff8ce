// Chapter 7: writing a checkpoint (the format: checkpoint.hpp), and the
// pieces of the format the reader shares.
#include "07-training/checkpoint.hpp"

#include "sa/paths.hpp"
#include "sa/print.hpp"

#include <boost/crc.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace sa {

uint32_t crc32(std::span<const uint8_t> bytes) {
  boost::crc_32_type crc;
  if (!bytes.empty()) crc.process_bytes(bytes.data(), bytes.size());
  return crc.checksum();
}

namespace detail {

uint32_t metadata_crc(const std::map<std::string, std::string>& metadata) {
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

std::string hex32(uint32_t x) { return fmt::format("{:08x}", x); }

std::vector<uint8_t> safetensors_bytes(
    const std::vector<TensorView>& tensors,
    const std::function<std::vector<std::pair<std::string, std::string>>(uint32_t data_crc)>& metadata_for,
    std::string_view who) {
  // The data: little-endian float32, byte by byte, the same on any machine.
  uint64_t count = 0;
  for (const TensorView& t : tensors) count += t.values.size();
  std::vector<uint8_t> data;
  data.reserve(size_t(count) * 4);
  // The metadata first (filled in below), then the tensors in order: the
  // header reads in the model's order (ordered_json keeps it).
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  header["__metadata__"] = nullptr;
  std::string bad;
  for (const TensorView& t : tensors) {
    const uint64_t begin = data.size();
    for (float x : t.values) {
      if (!std::isfinite(x) && bad.empty()) bad = t.name;
      const uint32_t u = std::bit_cast<uint32_t>(x);
      for (int k = 0; k < 4; ++k) data.push_back(uint8_t(u >> (8 * k)));
    }
    header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {begin, uint64_t(data.size())}}};
  }
  if (!bad.empty())
    throw std::invalid_argument(fmt::format("{}: tensor {} holds a NaN or infinite value", who, bad));

  const auto metadata = metadata_for(crc32(data));
  nlohmann::ordered_json meta = nlohmann::ordered_json::object();
  for (const auto& [key, value] : metadata) meta[key] = value;
  meta["metadata_crc32"] = hex32(metadata_crc({metadata.begin(), metadata.end()}));
  header["__metadata__"] = std::move(meta);
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(fmt::format("{}: cannot write the header: {}", who, printable(e.what(), 200)));
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

std::string token_problem(std::string_view t) {
  if (t.empty()) return "is empty";
  for (size_t i = 0; i < t.size();) {
    if (static_cast<unsigned char>(t[i]) == ' ' || control_at(t, i)) return "holds white space or a control character";
    const size_t len = utf8_sequence(t, i);
    if (len == 0) return "is not UTF-8 text";
    i += len;
  }
  return "";
}

bool parse_dimension(const std::string& s, int64_t& value) {
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

}  // namespace detail

namespace {

// The note as UTF-8: a byte that is not (a corpus file name in Latin-1, say)
// becomes U+FFFD, so that the JSON writer accepts it and the reader gets
// back exactly what was written.
std::string utf8_note(std::string_view s) {
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

// The process's umask, read without changing it (umask() can only be read
// by setting it, which would race with another thread's save): Linux shows
// it in /proc/self/status; 022, the usual one, elsewhere.
mode_t current_umask() {
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


// A save's temporary file: ".NAME.tmp-PID-" and six random characters
// (mkstemp's), hidden, in the target's folder. The process id lets a later
// save tell a temporary file whose writer was killed (kill -9, a power cut)
// from one that another run is writing right now.
std::string temporary_prefix(const std::string& filename, long pid) {
  return fmt::format(".{}.tmp-{}-", filename, pid);
}

// Removes the temporary files of earlier saves of `filename` in `dir` whose
// process no longer runs. Anything else, a live save's file included, stays.
void remove_stale_temporaries(const std::filesystem::path& dir, const std::string& filename) {
  namespace fs = std::filesystem;
  const std::string start = "." + filename + ".tmp-";
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(start, 0) != 0 || !it->is_regular_file(ec)) continue;
    const std::string rest = name.substr(start.size());  // "PID-XXXXXX"
    const size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string::npos || rest.size() != dash + 7 ||
        rest.find_first_not_of("0123456789") != dash)
      continue;
    // (A number no process id can be, 20 digits say, is no save's: it stays.)
    long pid = 0;
    if (std::from_chars(rest.data(), rest.data() + dash, pid).ec != std::errc() || pid > INT_MAX) continue;
    if (pid > 0 && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH) fs::remove(it->path(), ec);
  }
}
}  // namespace

std::vector<std::pair<std::string, std::string>> checkpoint_metadata(const Checkpoint& ckpt, uint32_t data_crc) {
  std::vector<std::pair<std::string, std::string>> m;
  m.emplace_back("format", std::string(kCheckpointFormat));
  m.emplace_back("version", std::to_string(kCheckpointVersion));
  for (const detail::ConfigField& f : detail::kConfigFields)
    m.emplace_back(f.name, std::to_string(ckpt.config.*f.value));
  m.emplace_back("causal", ckpt.config.causal ? "true" : "false");
  std::string tokens;
  for (const std::string& t : ckpt.tokens) tokens += (tokens.empty() ? "" : " ") + t;
  m.emplace_back("tokens", tokens);
  m.emplace_back("note", utf8_note(ckpt.note));
  m.emplace_back("crc32", detail::hex32(data_crc));
  return m;
}

std::vector<uint8_t> checkpoint_bytes(const Checkpoint& ckpt) {
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
  const std::vector<Shape> have = tensor_shapes(ckpt.params), want = tensor_shapes(shaped_params(c));
  if (have != want)
    throw std::invalid_argument("checkpoint_bytes: the parameters do not have the shapes the configuration implies");

  std::vector<detail::TensorView> tensors;
  for_each_tensor(ckpt.params, [&](const std::string& name, std::span<const float> t) {
    tensors.push_back({name, have[tensors.size()], t});
  });
  return detail::safetensors_bytes(tensors, [&](uint32_t data_crc) { return checkpoint_metadata(ckpt, data_crc); },
                                   "checkpoint_bytes");
}

void save_checkpoint(const std::string& path, const Checkpoint& ckpt, const CheckpointCheck& check_before_rename) {
  save_file_atomically(path, checkpoint_bytes(ckpt), check_before_rename);
}

void save_file_atomically(const std::string& path, std::span<const uint8_t> bytes,
                          const CheckpointCheck& check_before_rename) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const auto fail = [&](const std::string& what, int error) {
    return std::runtime_error(fmt::format("cannot save '{}': {}{}", printable(path), what,
                                          error ? ": " + std::generic_category().message(error) : ""));
  };
  if (target.filename().empty() || target.filename() == "." || target.filename() == "..")
    throw fail("the path names a folder, not a file", 0);
  std::error_code ec;
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  fs::create_directories(dir, ec);
  if (ec) throw fail(fmt::format("cannot create the folder '{}'", printable(dir.string())), ec.value());
  remove_stale_temporaries(dir, target.filename().string());

  std::string name = (dir / (temporary_prefix(target.filename().string(), ::getpid()) + "XXXXXX")).string();
  const int fd = ::mkstemp(name.data());
  if (fd < 0) throw fail(fmt::format("cannot create a temporary file in '{}'", printable(dir.string())), errno);
  // Ctrl-C or a kill while it is written and checked removes it (it stayed,
  // as big as the checkpoint, until a later save of the same name).
  const RemovedOnSignal interrupted(name);
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
    if (::fchmod(fd, 0666 & ~current_umask()) != 0) throw fail("cannot set its permissions", errno);
    if (::fsync(fd) != 0) throw fail("cannot flush it to disk", errno);
    fd_open = false;
    if (::close(fd) != 0) throw fail("cannot close it", errno);
    // The check reads this process's own file, before anyone else can
    // replace it: another run saving to the same name at the same time
    // renames its own file, verified the same way, and the last rename wins.
    if (check_before_rename) check_before_rename(name);
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

uint64_t checkpoint_size_bound(const ModelConfig& cfg, uint64_t token_bytes) {
  const uint64_t tensors = 2 + 10 * uint64_t(cfg.n_layers) + 4;  // tok, pos; 10 a block; ln_f, head
  const uint64_t header = 8 + 1024 + 128 * tensors + token_bytes + uint64_t(cfg.vocab) + 4096;  // + note
  return header + 4 * expected_parameter_count(cfg);
}

std::string checkpoint_room_problem(const std::string& dir, uint64_t available, uint64_t needed) {
  constexpr uint64_t kSpare = uint64_t(1) << 20;
  if (available >= needed + kSpare) return "";
  return fmt::format("'{}' has {} free, but the checkpoints this run saves need about {} (and 1 MiB to spare): "
                     "free some space or choose another folder",
                     printable(dir), bytes_str(double(available)), bytes_str(double(needed)));
}

void require_checkpoint_targets(const std::string& flag, const std::vector<CheckpointTarget>& targets) {
  namespace fs = std::filesystem;
  std::map<std::string, uint64_t> by_dir;  // the folders, and what each must hold
  for (const CheckpointTarget& t : targets) {
    std::error_code ec;
    const fs::file_status status = fs::symlink_status(t.path, ec);
    // A name the system cannot look at (too long, under a loop of symbolic
    // links) failed only at the save, after the training.
    if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
      throw UsageError(fmt::format("{}: '{}': {}", flag, printable(t.path), ec.message()));
    if (fs::is_directory(status))
      throw UsageError(fmt::format("{}: '{}' is a folder, so the checkpoint cannot be saved under that name: "
                                   "move it, or choose another {}",
                                   flag, printable(t.path), flag));
    if (fs::exists(status) && !fs::is_regular_file(status) && !fs::is_symlink(status))
      throw UsageError(fmt::format("{}: '{}' is not a regular file (a pipe, a socket or a device?), so the "
                                   "checkpoint cannot replace it",
                                   flag, printable(t.path)));
    // A name that ends in a folder ("new/"), or whose folder cannot hold a
    // file (it is a file, read-only, /proc), would fail only at the save,
    // after the training: said now, as the folder of chapter 7's
    // --checkpoint-dir is.
    const fs::path name = fs::path(t.path).filename();
    if (name.empty() || name == "." || name == "..")
      throw UsageError(fmt::format("{}: '{}' names a folder, not a file: give a file name, such as {}/model.safetensors",
                                   flag, printable(t.path), printable(fs::path(t.path).parent_path().string())));
    // The save writes a temporary file beside it first, whose name is longer
    // (".NAME.tmp-PID-XXXXXX"): it must fit in a folder entry too.
    const std::string temporary = temporary_prefix(name.string(), ::getpid()) + "XXXXXX";
    if (temporary.size() > NAME_MAX)
      throw UsageError(fmt::format("{}: the file name '{}' has {} bytes; at most {}, for the temporary file the save "
                                   "writes first ('{}')",
                                   flag, printable(name.string(), 40), name.string().size(),
                                   name.string().size() - (temporary.size() - NAME_MAX), printable(temporary, 40)));
    const fs::path parent = fs::path(t.path).has_parent_path() ? fs::path(t.path).parent_path() : fs::path(".");
    // (named "--checkpoint 'a/x.safetensors': its folder 'a' ...": the
    // option's value is the file)
    require_writable_dir(fmt::format("{} '{}': its folder", flag, printable(t.path)), parent.string());
    by_dir[parent.string()] += t.bytes;
  }
  for (const auto& [dir, needed] : by_dir) {
    // A folder made only when the first checkpoint is written: the room is
    // that of its nearest existing parent's file system.
    std::error_code ec;
    fs::path existing = fs::absolute(dir, ec);
    while (!fs::exists(existing, ec) && existing.has_parent_path() && existing != existing.parent_path())
      existing = existing.parent_path();
    const fs::space_info room = fs::space(existing, ec);
    if (ec) continue;  // no file system to ask: the save itself will say what went wrong
    const std::string problem = checkpoint_room_problem(dir, room.available, needed);
    if (!problem.empty()) throw UsageError(fmt::format("{}: {}", flag, problem));
  }
}

std::unique_ptr<TinyTransformer> model_from(const Checkpoint& ckpt) {
  Generator unused(0);
  auto model = std::make_unique<TinyTransformer>(ckpt.config, unused);
  model->params = ckpt.params;
  return model;
}

std::string default_checkpoint_dir() {
  const std::filesystem::path bin = running_program_dir();
  return bin.empty() ? "checkpoints" : (bin.parent_path() / "checkpoints").string();
}

}  // namespace sa
