// Chapter 7: reading a checkpoint back without trusting the file. The
// checks of checkpoint.hpp's list, in that order, one function each; every
// refusal is a CheckpointError of one line naming the file.
#include "07-training/checkpoint.hpp"

#include <boost/crc.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <system_error>

namespace sa {

namespace {

using json = nlohmann::json;
using Metadata = std::map<std::string, std::string>;
using detail::hex32;

using detail::metadata_entry;
using detail::Refusal;
using detail::TensorEntry;
using detail::shape_text;

std::string shown(std::string_view s) { return printable(s, 80); }


// What a checkpoint's header says, checked against itself, the
// configuration and the length of the data; the parameters are allocated
// (their shapes), not yet read.
struct CheckpointLayout {
  Checkpoint ckpt;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // [begin, end) in the data, for_each_tensor's order
  std::vector<std::string> names;                     // for_each_tensor's order
  uint32_t crc = 0;                                   // the data's CRC-32 the header records
};


// The metadata keys the book writes (checkpoint_metadata, and the seal).
bool is_book_metadata_key(const std::string& key) {
  for (const detail::ConfigField& f : detail::kConfigFields)
    if (key == f.name) return true;
  for (const char* k : {"format", "version", "causal", "tokens", "note", "crc32", "metadata_crc32"})
    if (key == k) return true;
  return false;
}

// __metadata__: there, a map of strings, of the book's format and version,
// and sealed by its own CRC-32 (a flipped bit in the configuration, a token
// or the note stops here).
Metadata read_metadata(const json& root, const Refusal& fail) {
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
  if (metadata_entry(meta, "version", fail) != std::to_string(kCheckpointVersion))
    throw fail(fmt::format("format version '{}', but this program reads version {}",
                           shown(metadata_entry(meta, "version", fail)), kCheckpointVersion));
  // Its seal (this README's section 8 says how another writer records it).
  detail::check_metadata_crc(meta, metadata_entry(meta, "metadata_crc32", fail), fail, is_book_metadata_key);

  return meta;
}

// A possible configuration (reached with a valid metadata CRC-32: an edit
// that resealed it).
ModelConfig read_configuration(const Metadata& meta, const Refusal& fail) {
  ModelConfig c;
  for (const detail::ConfigField& f : detail::kConfigFields) {
    const std::string& text = metadata_entry(meta, f.name, fail);
    if (!detail::parse_dimension(text, c.*f.value))
      throw fail(fmt::format("invalid configuration: {} = '{}' (a whole number from 1 to {})", f.name, shown(text),
                             kMaxCheckpointDimension));
  }
  const std::string& causal = metadata_entry(meta, "causal", fail);
  if (causal != "true" && causal != "false")
    throw fail(fmt::format("invalid configuration: causal = '{}' (true or false)", shown(causal)));
  c.causal = causal == "true";
  if (c.d_model % c.n_heads != 0)
    throw fail(fmt::format("invalid configuration: d_model {} is not divisible by {} heads", c.d_model, c.n_heads));
  return c;
}

// The vocabulary: vocab tokens, each valid and none twice.
std::vector<std::string> read_vocabulary(const Metadata& meta, int64_t vocab, const Refusal& fail) {
  std::vector<std::string> result;
  const std::string& tokens = metadata_entry(meta, "tokens", fail);
  // Counted before any is copied: at most one token per 2 bytes.
  const size_t count = size_t(std::count(tokens.begin(), tokens.end(), ' ')) + 1;
  if (int64_t(count) != vocab)
    throw fail(fmt::format("its vocabulary holds {} tokens, but vocab = {}", count, vocab));
  result.reserve(count);
  std::map<std::string_view, size_t> seen;
  for (size_t at = 0; result.size() < count;) {
    const size_t end = std::min(tokens.find(' ', at), tokens.size());
    const std::string_view t = std::string_view(tokens).substr(at, end - at);
    const std::string problem = detail::token_problem(t);
    if (!problem.empty()) throw fail(fmt::format("token {} ('{}') {}", result.size(), shown(t), problem));
    const auto [it, fresh] = seen.emplace(t, result.size());
    if (!fresh) throw fail(fmt::format("tokens {} and {} are both '{}'", it->second, result.size(), shown(t)));
    result.emplace_back(t);
    at = end + 1;
  }
  return result;
}

// The CRC-32 of the data the header records.
uint32_t read_data_crc(const Metadata& meta, const Refusal& fail) {
  const std::string& crc = metadata_entry(meta, "crc32", fail);
  if (crc.size() != 8 || crc.find_first_not_of("0123456789abcdef") != std::string::npos)
    throw fail(fmt::format("its crc32 '{}' is not 8 hexadecimal digits", shown(crc)));
  return uint32_t(std::stoul(crc, nullptr, 16));
}

// Together the entries hold the parameter count the configuration implies,
// and the data is at least that long (a truncated copy stops here), before
// anything of that size is allocated.
void check_parameter_count(const std::vector<TensorEntry>& entries, const ModelConfig& c, uint64_t data_size,
                           const Refusal& fail) {
  uint64_t declared = 0;  // at most 2^62: each entry holds at most 2^40 values, and there are at most 2^22
  for (const TensorEntry& e : entries) declared += e.values;
  const uint64_t expected = expected_parameter_count(c);
  if (declared != expected)
    throw fail(fmt::format("its tensors hold {} parameters, but its configuration implies {}", declared, expected));
  // (expected < 2^63, so expected * 4 could overflow: compare with data_size / 4.)
  if (expected > data_size / 4)
    throw fail(fmt::format("truncated: its tensors need {} bytes of data, but only {} follow the header",
                           expected > (uint64_t(1) << 61) ? fmt::format("{} x 4", expected)
                                                          : std::to_string(expected * 4),
                           data_size));

}

// The names and shapes are exactly the configuration's, and every range lies
// inside the data and holds its shape's bytes. Allocates the parameters.
void place_tensors(const std::vector<TensorEntry>& entries, uint64_t data_size, CheckpointLayout& layout,
                   const Refusal& fail) {
  Checkpoint& ckpt = layout.ckpt;
  // The sizes are known to be there: the shapes of the configuration.
  ckpt.params = shaped_params(ckpt.config);
  const std::vector<Shape> shapes = tensor_shapes(ckpt.params);
  for_each_tensor(ckpt.params,
                  [&](const std::string& tensor, std::span<const float>) { layout.names.push_back(tensor); });
  layout.ranges = detail::match_tensor_entries(entries, layout.names, shapes, data_size, fail);
}

// Reads and checks the header (every check up to the data's CRC-32, see
// checkpoint.hpp); `data_size` is the number of bytes after it.
CheckpointLayout parse_checkpoint_header(std::string_view header, uint64_t data_size, const std::string& name) {
  const Refusal fail{name};
  const json root = detail::parse_header_json(header, fail);
  const Metadata meta = read_metadata(root, fail);
  CheckpointLayout layout;
  layout.ckpt.config = read_configuration(meta, fail);
  layout.ckpt.tokens = read_vocabulary(meta, layout.ckpt.config.vocab, fail);
  if (const auto note = meta.find("note"); note != meta.end()) layout.ckpt.note = note->second;
  layout.crc = read_data_crc(meta, fail);
  const std::vector<TensorEntry> entries = detail::read_tensor_entries(root, fail, "chapter 7");
  check_parameter_count(entries, layout.ckpt.config, data_size, fail);
  place_tensors(entries, data_size, layout, fail);
  detail::check_ranges_cover_data(layout.ranges, layout.names, data_size, fail);
  return layout;
}

Checkpoint read_checkpoint_data(CheckpointLayout& layout, std::span<const uint8_t> data,
                                      const std::string& name) {
  boost::crc_32_type crc;
  for (const auto& [begin, end] : layout.ranges)
    if (end > begin) crc.process_bytes(data.data() + begin, end - begin);
  if (crc.checksum() != layout.crc)
    throw Refusal{name}(fmt::format("corrupted: the CRC-32 of its data is {}, but the header records {}",
                                             hex32(crc.checksum()), hex32(layout.crc)));
  size_t k = 0;
  for_each_tensor(layout.ckpt.params, [&](const std::string& tensor, std::span<float> t) {
    const uint8_t* p = data.data() + layout.ranges[k++].first;
    for (size_t i = 0; i < t.size(); ++i, p += 4) {
      const uint32_t u = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
      t[i] = std::bit_cast<float>(u);
      if (!std::isfinite(t[i]))
        throw Refusal{name}(fmt::format("tensor {} holds a NaN or infinite value (at index {})", tensor, i));
    }
  });
  return std::move(layout.ckpt);
}

}  // namespace

namespace detail {

CheckpointError Refusal::operator()(const std::string& why) const {
  return CheckpointError(fmt::format("checkpoint '{}': {}", printable(name, 300), why));
}

std::string shape_text(const Shape& s) {
  std::string out = "[";
  for (size_t k = 0; k < s.size(); ++k) out += (k ? ", " : "") + std::to_string(s[k]);
  return out + "]";
}

// The header's length, from the file's first 8 bytes, checked against the
// file's size (all of it, first 8 bytes included) before anything is read.
uint64_t checkpoint_header_length(std::span<const uint8_t> first8, uint64_t file_size, const std::string& name) {
  const Refusal fail{name};
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

// The header as JSON: an object, '{' first, no name twice in one object,
// nothing nested deeper than a safetensors header nests.
json parse_header_json(std::string_view header, const Refusal& fail) {
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

  return root;
}

// Every tensor entry: F32, a shape, two offsets, nothing else.
std::vector<TensorEntry> read_tensor_entries(const json& root, const Refusal& fail, std::string_view kind) {
  std::vector<TensorEntry> entries;
  for (const auto& [key, value] : root.items()) {
    if (key == "__metadata__") continue;
    TensorEntry e;
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
      throw fail(fmt::format("{} has dtype {}; a {} checkpoint holds F32 only", who,
                             dtype.is_string() ? "'" + shown(dtype.get<std::string>()) + "'" : "that is no string",
                             kind));
    const json& shape = value.at("shape");
    if (!shape.is_array() || shape.size() > 8)
      throw fail(fmt::format("{}: its shape is not a list of at most 8 sizes", who));
    e.values = 1;
    for (const json& dim : shape) {
      if (!dim.is_number_unsigned()) throw fail(fmt::format("{}: its shape holds something other than a size", who));
      const uint64_t d = dim.get<uint64_t>();
      if (d > uint64_t(kMaxCheckpointDimension) * 4 || (d > 0 && e.values > (uint64_t(1) << 40) / d))
        throw fail(fmt::format("{}: its shape holds more values than any {} model", who, kind));
      e.values *= d;
      e.shape.push_back(int64_t(d));
    }
    const json& offsets = value.at("data_offsets");
    if (!offsets.is_array() || offsets.size() != 2 || !offsets.at(0).is_number_unsigned() ||
        !offsets.at(1).is_number_unsigned())
      throw fail(fmt::format("{}: its data_offsets are not two byte offsets [begin, end]", who));
    e.begin = offsets.at(0).get<uint64_t>();
    e.end = offsets.at(1).get<uint64_t>();
    entries.push_back(std::move(e));
  }
  return entries;
}

std::string metadata_entry(const std::map<std::string, std::string>& meta, const std::string& key,
                           const Refusal& fail) {
  const auto it = meta.find(key);
  if (it == meta.end()) throw fail(fmt::format("its __metadata__ has no '{}'", key));
  return it->second;
}

void check_metadata_crc(const std::map<std::string, std::string>& meta, const std::string& stored,
                        const Refusal& fail, const std::function<bool(const std::string& key)>& known,
                        std::string_view how) {
  const uint32_t computed = metadata_crc(meta);
  if (stored == hex32(computed)) return;
  std::string unknown;
  for (const auto& [key, value] : meta)
    if (!known(key)) unknown += (unknown.empty() ? "'" : ", '") + shown(key) + "'";
  throw fail(fmt::format("corrupted: the CRC-32 of its metadata is {}, but the header records '{}': {}", hex32(computed),
                         shown(stored),
                         unknown.empty() ? std::string("one of its values was changed after it was saved")
                                         : fmt::format("it holds {}, which the book does not write; a writer that adds "
                                                       "metadata must record the CRC-32 of all of it again{}",
                                                       unknown, how)));
}

std::vector<std::pair<uint64_t, uint64_t>> match_tensor_entries(
    const std::vector<TensorEntry>& entries, const std::vector<std::string>& names, const std::vector<Shape>& shapes,
    uint64_t data_size, const Refusal& fail, const std::function<std::string(const std::string& name)>& unknown_note) {
  std::map<std::string, size_t> slot;  // name -> its index in `names`
  for (size_t k = 0; k < names.size(); ++k) slot.emplace(names[k], k);
  std::vector<std::pair<uint64_t, uint64_t>> ranges(names.size(), {0, 0});
  std::vector<bool> present(names.size(), false);
  for (const TensorEntry& e : entries) {
    const std::string who = fmt::format("tensor '{}'", shown(e.name));
    const auto it = slot.find(e.name);
    if (it == slot.end())
      throw fail(fmt::format("it holds a {}, which its configuration does not have{}", who,
                             unknown_note ? unknown_note(e.name) : ""));
    const size_t k = it->second;
    present[k] = true;
    if (e.shape != shapes[k])
      throw fail(fmt::format("{} has shape {}, but its configuration implies {}", who, shape_text(e.shape),
                             shape_text(shapes[k])));
    if (e.begin > e.end || e.end > data_size)
      throw fail(fmt::format("{}: its data_offsets [{}, {}] do not lie inside the {} bytes of data", who, e.begin,
                             e.end, data_size));
    if (e.end - e.begin != e.values * 4)
      throw fail(fmt::format("{}: its data_offsets [{}, {}] hold {} bytes, but its shape needs {}", who, e.begin,
                             e.end, e.end - e.begin, e.values * 4));
    ranges[k] = {e.begin, e.end};
  }
  for (size_t k = 0; k < present.size(); ++k)
    if (!present[k]) throw fail(fmt::format("tensor '{}' is missing", names[k]));
  return ranges;
}

// The ranges cover the data contiguously, without overlap, gap or bytes
// after the last, as the safetensors format requires.
void check_ranges_cover_data(const std::vector<std::pair<uint64_t, uint64_t>>& ranges,
                             const std::vector<std::string>& names, uint64_t data_size, const Refusal& fail) {
  std::vector<size_t> order(ranges.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ranges[a] < ranges[b]; });
  uint64_t at = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    const auto [begin, end] = ranges[order[i]];
    if (begin < at)
      throw fail(fmt::format("tensors '{}' and '{}' overlap in the data", names[order[i - 1]],
                             names[order[i]]));
    if (begin > at)
      throw fail(fmt::format("{} bytes of data before tensor '{}' belong to no tensor", begin - at,
                             names[order[i]]));
    at = end;
  }
  if (at != data_size)
    throw fail(fmt::format("{} bytes after its last tensor: something was appended", data_size - at));
}

CheckpointFile::CheckpointFile(const std::string& path, std::string_view kind) : path_(path) {
  namespace fs = std::filesystem;
  const Refusal fail{path};
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
    throw fail(fmt::format("cannot look at it: {}", ec.message()));
  if (!fs::exists(status)) throw fail("no such file");
  if (fs::is_directory(status)) throw fail("is a folder, not a file");
  if (!fs::is_regular_file(status)) throw fail("is not a regular file (a device, a pipe or a socket?)");
  size_ = fs::file_size(path, ec);
  if (ec) throw fail(fmt::format("cannot read its size: {}", ec.message()));
  if (size_ > kMaxCheckpointFile)
    throw fail(fmt::format("{} bytes, more than the {} GiB a {} checkpoint may have", size_,
                           kMaxCheckpointFile >> 30, kind));
  in_.open(path, std::ios::binary);
  if (!in_) throw fail(fmt::format("cannot open it: {}", std::generic_category().message(errno)));
}

std::vector<uint8_t> CheckpointFile::read(size_t n) {
  std::vector<uint8_t> bytes(n);
  in_.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(n));
  if (size_t(in_.gcount()) != n) throw Refusal{path_}("cannot read it: it became shorter while being read");
  return bytes;
}

uint64_t CheckpointFile::header_length() {
  const std::vector<uint8_t> first = read(size_t(std::min<uint64_t>(8, size_)));
  return checkpoint_header_length(first, size_, path_);
}

}  // namespace detail

Checkpoint parse_checkpoint(std::span<const uint8_t> bytes, const std::string& name) {
  const uint64_t n =
      detail::checkpoint_header_length(bytes.first(std::min<size_t>(8, bytes.size())), bytes.size(), name);
  const std::string_view header(reinterpret_cast<const char*>(bytes.data()) + 8, size_t(n));
  CheckpointLayout layout = parse_checkpoint_header(header, bytes.size() - 8 - n, name);
  return read_checkpoint_data(layout, bytes.subspan(8 + size_t(n)), name);
}

Checkpoint load_checkpoint(const std::string& path) {
  detail::CheckpointFile file(path, "chapter 7");
  const uint64_t n = file.header_length();
  const std::vector<uint8_t> header = file.read(size_t(n));
  CheckpointLayout layout = parse_checkpoint_header(
      std::string_view(reinterpret_cast<const char*>(header.data()), header.size()), file.size() - 8 - n, path);
  const std::vector<uint8_t> data = file.read(size_t(file.size() - 8 - n));
  return read_checkpoint_data(layout, data, path);
}

}  // namespace sa
