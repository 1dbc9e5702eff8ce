// A bounded fuzz of chapter 7's checkpoint loader (checkpoint.hpp), run by CI
// (.ci/run), also under AddressSanitizer + UndefinedBehaviorSanitizer.
//
//   checkpoint_fuzz [--cases N] [--seconds S] [--seed K] [--case I] [--checkpoint FILE]
//
// It saves a real checkpoint (a small model trained a few Adam steps, or
// FILE, a checkpoint the chapter program saved), then damages copies of it
// N times (default 20000, stopping early after S seconds, default 50): bit
// flips, bytes overwritten, inserted or deleted, truncations, bytes appended,
// other header lengths, JSON edits (offsets out of range, overlapping or
// swapped, other shapes, dtypes and names, metadata removed, retyped or
// made absurd, tokens with control characters, ... most of them resealed
// with fresh CRC-32s so that the later checks are reached), and values
// replaced by NaN, infinities or huge finite numbers with valid CRC-32s.
// Each damaged file is loaded from disk (load_checkpoint) and from memory
// (parse_checkpoint), and each must be
//   refused: a CheckpointError whose message is one line of printable
//            text, the same both ways; or
//   loaded intact: the configuration, vocabulary, note and every parameter
//            bit for bit those of the original (or of the edited values,
//            for a huge finite value resealed).
// Anything else (another exception, a message on two lines or holding a
// control character, a model that loaded but differs, a case slower than
// 2 s) is a failure; a crash ends the run (and ASan names it). Exit status:
// 0 when every case passed, 1 otherwise. Each case draws from its own seed,
// so `--case I` replays case I alone and prints what happened.
#include "07-training/checkpoint.hpp"
#include "07-training/model.hpp"
#include "07-training/reversal.hpp"

#include "sa/rng.hpp"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace sa;
using namespace std::string_literals;
namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;
using Bytes = std::vector<uint8_t>;

namespace {

struct Options {
  int64_t cases = 20000;
  double seconds = 50;
  uint64_t seed = 1;
  int64_t only = -1;  // --case
  std::string checkpoint;
};

[[noreturn]] void usage(const std::string& why) {
  fmt::print(stderr, "checkpoint_fuzz: {}\nusage: checkpoint_fuzz [--cases N] [--seconds S] [--seed K] [--case I] "
                     "[--checkpoint FILE]\n", why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage(flag + " needs a value");
    const std::string value = argv[++i];
    const auto number = [&](double lo, double hi) {
      size_t used = 0;
      double x = 0;
      try {
        x = std::stod(value, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != value.size() || !(x >= lo && x <= hi))
        usage(fmt::format("{} must be a number in [{}, {}]", flag, lo, hi));
      return x;
    };
    if (flag == "--cases") o.cases = int64_t(number(1, 1e7));
    else if (flag == "--seconds") o.seconds = number(0.1, 86400);
    else if (flag == "--seed") o.seed = uint64_t(number(0, 1e15));
    else if (flag == "--case") o.only = int64_t(number(0, 1e7));
    else if (flag == "--checkpoint") o.checkpoint = value;
    else usage("unknown option " + flag);
  }
  return o;
}

// A small model after a few Adam steps, so that no tensor holds its
// initial values; a vocabulary and a note with some UTF-8 in them.
Checkpoint trained_checkpoint() {
  ReversalTask task;
  task.digits = 4;
  task.vocab = 12;
  ModelConfig cfg;
  cfg.vocab = task.vocab;
  cfg.max_seq = task.sample_len();
  cfg.d_model = 16;
  cfg.n_heads = 2;
  cfg.n_layers = 2;
  cfg.d_ff = 32;
  Generator gen(2024);
  TinyTransformer model(cfg, gen);
  const ReversalData data = make_reversal_data(gen, 16, task);
  AdamConfig adam_cfg;
  adam_cfg.lr = 1e-2;
  Adam adam(model.params, model.grads, adam_cfg);
  std::vector<int64_t> ids, targets;
  for (int64_t step = 0; step < 4; ++step) {
    const std::vector<int64_t> idx{step * 4, step * 4 + 1, step * 4 + 2, step * 4 + 3};
    make_batch(data, idx, task, ids, targets);
    train_step(model, adam, ids, targets, 4);
  }
  Checkpoint c;
  c.config = cfg;
  c.tokens = {"PAD", "SEP", "2", "3", "4", "5", "6", "7", "8", "9", "caf\xc3\xa9", "\xe2\x82\xac"};
  c.note = "4 Adam steps on reversal, for the fuzz: caf\xc3\xa9";
  c.params = model.params;
  return c;
}

bool same_checkpoint(const Checkpoint& a, const Checkpoint& b) {
  const ModelConfig &x = a.config, &y = b.config;
  if (x.vocab != y.vocab || x.max_seq != y.max_seq || x.d_model != y.d_model || x.n_heads != y.n_heads ||
      x.n_layers != y.n_layers || x.d_ff != y.d_ff || x.causal != y.causal || a.tokens != b.tokens || a.note != b.note)
    return false;
  std::vector<std::span<const float>> ta, tb;
  for_each_tensor(a.params, [&](const std::string&, std::span<const float> t) { ta.push_back(t); });
  for_each_tensor(b.params, [&](const std::string&, std::span<const float> t) { tb.push_back(t); });
  if (ta.size() != tb.size()) return false;
  for (size_t k = 0; k < ta.size(); ++k)
    if (ta[k].size() != tb[k].size() || std::memcmp(ta[k].data(), tb[k].data(), ta[k].size_bytes()) != 0) return false;
  return true;
}

uint64_t get_u64(const Bytes& b, size_t at) {
  uint64_t x = 0;
  for (size_t k = 0; k < 8 && at + k < b.size(); ++k) x |= uint64_t(b[at + k]) << (8 * k);
  return x;
}
void put_u64(Bytes& b, size_t at, uint64_t x) {
  for (size_t k = 0; k < 8 && at + k < b.size(); ++k) b[at + k] = uint8_t(x >> (8 * k));
}

// One damaged file, what was done to it, and the checkpoint it should load
// as when it is a valid file (a huge finite value resealed).
struct Mutant {
  Bytes bytes;
  std::string kind;
  std::optional<Checkpoint> expected;
};

class Mutator {
 public:
  Mutator(const Bytes& original, const Checkpoint& ckpt) : original_(original), ckpt_(ckpt) {
    n_ = size_t(get_u64(original, 0));
    header_ = ojson::parse(original.begin() + 8, original.begin() + 8 + int64_t(n_));
    data_.assign(original.begin() + 8 + int64_t(n_), original.end());
    for (const auto& [name, entry] : header_.items())
      if (name != "__metadata__") names_.push_back(name);
  }

  Mutant make(std::mt19937_64& rng) {
    rng_ = &rng;
    using Fn = void (Mutator::*)(Mutant&);
    static const std::vector<std::pair<const char*, Fn>> kinds = {
        {"bit flips in the header", &Mutator::header_bits}, {"bit flips anywhere", &Mutator::any_bits},
        {"bytes overwritten", &Mutator::overwrite},           {"bytes inserted or deleted", &Mutator::splice},
        {"truncation", &Mutator::truncate},                   {"bytes appended", &Mutator::append},
        {"another header length", &Mutator::header_length},  {"JSON: tensor entries", &Mutator::json_tensors},
        {"JSON: metadata", &Mutator::json_metadata},          {"JSON: text edits", &Mutator::json_text},
        {"values, CRC-32s resealed", &Mutator::values},       {"another file's start", &Mutator::foreign}};
    const auto& [kind, fn] = kinds[pick(kinds.size())];
    Mutant m;
    m.kind = kind;
    m.bytes = original_;
    (this->*fn)(m);
    return m;
  }

 private:
  size_t pick(size_t n) { return size_t((*rng_)() % n); }
  bool coin(double p = 0.5) { return std::uniform_real_distribution<double>(0, 1)(*rng_) < p; }
  uint8_t byte() { return uint8_t((*rng_)()); }
  size_t header_end() const { return 8 + n_; }

  // ---- bytes ----------------------------------------------------------------
  void header_bits(Mutant& m) {
    const size_t flips = 1 + pick(3);
    for (size_t k = 0; k < flips; ++k) m.bytes[pick(header_end())] ^= uint8_t(1u << pick(8));
  }
  void any_bits(Mutant& m) {
    const size_t flips = 1 + pick(8);
    for (size_t k = 0; k < flips; ++k) m.bytes[pick(m.bytes.size())] ^= uint8_t(1u << pick(8));
  }
  void overwrite(Mutant& m) {
    static const std::string interesting = "{}[]\",:\\0123456789-+.eE \t\n\x00\x01\x1b\x7f\x80\xc2\xff"s;
    const size_t count = 1 + pick(4);
    for (size_t k = 0; k < count; ++k) {
      const size_t at = coin(0.8) ? pick(header_end()) : pick(m.bytes.size());
      m.bytes[at] = coin() ? uint8_t(interesting[pick(interesting.size())]) : byte();
    }
  }
  void splice(Mutant& m) {
    const size_t at = 8 + pick(n_);
    const size_t len = 1 + pick(coin(0.8) ? 4 : 64);
    if (coin()) {
      Bytes extra(len);
      for (uint8_t& b : extra) b = coin() ? ' ' : byte();
      m.bytes.insert(m.bytes.begin() + int64_t(at), extra.begin(), extra.end());
    } else {
      m.bytes.erase(m.bytes.begin() + int64_t(at), m.bytes.begin() + int64_t(std::min(at + len, m.bytes.size())));
    }
    if (coin(0.7)) put_u64(m.bytes, 0, get_u64(m.bytes, 0) + m.bytes.size() - original_.size());  // length follows
  }
  void truncate(Mutant& m) {
    const size_t keep = coin(0.4) ? pick(header_end() + 16) : pick(m.bytes.size());
    m.bytes.resize(keep);
  }
  void append(Mutant& m) {
    const size_t len = 1 + pick(64);
    for (size_t k = 0; k < len; ++k) m.bytes.push_back(coin() ? 0 : byte());
  }
  void header_length(Mutant& m) {
    const uint64_t n = n_, size = m.bytes.size();
    const uint64_t choices[] = {0,
                                1,
                                2,
                                n - 1 - pick(8),
                                n + 1 + pick(8),
                                n + pick(size - n),
                                size - 8,
                                size - 7,
                                size,
                                kMaxCheckpointHeader,
                                kMaxCheckpointHeader + 1,
                                uint64_t(1) << 63,
                                std::numeric_limits<uint64_t>::max(),
                                std::numeric_limits<uint64_t>::max() - 7,
                                (*rng_)()};
    put_u64(m.bytes, 0, choices[pick(std::size(choices))]);
  }
  void foreign(Mutant& m) {
    static const std::vector<std::string> starts = {
        "\x89PNG\r\n\x1a\n"s, "SA07CKPT"s, "PK\x03\x04\x14\x00\x00\x00"s, std::string(8, '\0'),
        std::string("\x7f" "ELF\x02\x01\x01\x00", 8), "{\"a\":1}\n"};
    const std::string& s = starts[pick(starts.size())];
    std::copy(s.begin(), s.end(), m.bytes.begin());
  }

  // ---- JSON -------------------------------------------------------------------
  // A random value of some JSON type, for a field that wants another.
  ojson odd_value() {
    switch (pick(12)) {
      case 0: return nullptr;
      case 1: return true;
      case 2: return -1;
      case 3: return 1.5;
      case 4: return 1e300;
      case 5: return "F32";
      case 6: return ojson::array();
      case 7: return ojson::object();
      case 8: return ojson::array({ojson::array({1})});
      case 9: return std::numeric_limits<uint64_t>::max();
      case 10: return std::numeric_limits<int64_t>::min();
      default: return (*rng_)() % 100000;
    }
  }
  uint64_t odd_offset() {
    const uint64_t d = data_.size();
    const uint64_t choices[] = {0, 1, 3, 4, d, d + 4, d - 4, (*rng_)() % (d + 1), (*rng_)() % (d + 1) & ~uint64_t(3),
                                uint64_t(1) << 62, std::numeric_limits<uint64_t>::max(),
                                std::numeric_limits<uint64_t>::max() - 3};
    return choices[pick(std::size(choices))];
  }
  const std::string& some_tensor() { return names_[pick(names_.size())]; }

  // Writes the header back, padded or not, with the metadata CRC-32 (and,
  // for `data_crc`, the data's) recomputed when `reseal`.
  void rebuild(Mutant& m, ojson header, const Bytes& data, bool reseal, bool data_crc = false) {
    if (reseal && header.is_object() && header.contains("__metadata__") && header["__metadata__"].is_object()) {
      ojson& meta = header["__metadata__"];
      if (data_crc) meta["crc32"] = fmt::format("{:08x}", crc32(data));
      std::map<std::string, std::string> strings;
      for (auto it = meta.begin(); it != meta.end(); ++it)
        if (it->is_string()) strings[it.key()] = it->get<std::string>();
      meta["metadata_crc32"] = fmt::format("{:08x}", detail::metadata_crc(strings));
    }
    std::string text = coin(0.2) ? header.dump(1 + int(pick(3))) : header.dump();
    text.append(pick(9), ' ');
    m.bytes.assign(8, 0);
    put_u64(m.bytes, 0, text.size());
    m.bytes.insert(m.bytes.end(), text.begin(), text.end());
    m.bytes.insert(m.bytes.end(), data.begin(), data.end());
  }

  void json_tensors(Mutant& m) {
    ojson h = header_;
    Bytes data = data_;
    const std::string& name = some_tensor();
    ojson& e = h[name];
    switch (pick(14)) {
      case 0: e["data_offsets"][pick(2)] = odd_offset(); break;
      case 1: e["data_offsets"] = ojson::array({odd_offset(), odd_offset()}); break;
      case 2: e["data_offsets"][pick(2)] = odd_value(); break;
      case 3: std::swap(e["data_offsets"], h[some_tensor()]["data_offsets"]); break;
      case 4: std::swap(e, h[some_tensor()]); break;  // two tensors swap names
      case 5: {
        ojson& shape = e["shape"];
        switch (pick(6)) {
          case 0: if (shape.size() == 2) std::swap(shape[0], shape[1]); else shape.push_back(1); break;
          case 1: shape.push_back(1); break;
          case 2: if (!shape.empty()) shape.erase(shape.size() - 1); break;
          case 3: shape[pick(shape.size())] = shape[0].get<uint64_t>() + 1; break;
          case 4: shape[pick(shape.size())] = odd_value(); break;
          default: shape[pick(shape.size())] = uint64_t(1) << (32 + pick(32)); break;
        }
        break;
      }
      case 6: {
        static const char* dtypes[] = {"F16", "BF16", "F64", "I32", "U8", "f32", "F32 ", ""};
        e["dtype"] = coin(0.8) ? ojson(dtypes[pick(std::size(dtypes))]) : odd_value();
        break;
      }
      case 7: h.erase(name); break;
      case 8: {
        const ojson copy = e;  // (inserting may move e)
        h["extra." + name] = copy;
        break;
      }
      case 9: {
        const ojson copy = e;
        h.erase(name);
        h[name + "\x1b[2J"] = copy;
        break;
      }
      case 10: e[coin() ? "bias" : "dtype "] = 0; break;
      case 11: e.erase(coin() ? "shape" : coin() ? "dtype" : "data_offsets"); break;
      case 12: h[name] = odd_value(); break;
      default: h = coin() ? ojson::array({h}) : odd_value(); break;
    }
    rebuild(m, h, data, coin(0.8));
  }

  void json_metadata(Mutant& m) {
    ojson h = header_;
    ojson& meta = h["__metadata__"];
    static const char* keys[] = {"format", "version", "vocab", "max_seq", "d_model", "n_heads", "n_layers",
                                 "d_ff",   "causal",  "tokens", "note",   "crc32",   "metadata_crc32"};
    const std::string key = keys[pick(std::size(keys))];
    static const char* numbers[] = {"0", "-1", "1e3", " 8", "8 ", "08", "+8", "99999999", "1048577", "1048576",
                                    "8.0", "", "\xef\xbc\x98", "0x10", "3", "4", "16", "1"};
    switch (pick(9)) {
      case 0: meta.erase(key); break;
      case 1: meta[key] = odd_value(); break;
      case 2: meta[key] = numbers[pick(std::size(numbers))]; break;
      case 3: {  // the vocabulary
        std::vector<std::string> t = ckpt_.tokens;
        static const char* odd[] = {"", " ", "\x1b[31m", "a\tb", "\xc2\x9b", "x\ny", "\x7f", "PAD", "new"};
        switch (pick(4)) {
          case 0: t.erase(t.begin() + int64_t(pick(t.size()))); break;
          case 1: t.insert(t.begin() + int64_t(pick(t.size() + 1)), odd[pick(std::size(odd))]); break;
          case 2: t[pick(t.size())] = odd[pick(std::size(odd))]; break;
          default: t[pick(t.size())] = t[pick(t.size())]; break;
        }
        std::string joined;
        for (const std::string& s : t) joined += (joined.empty() ? "" : " ") + s;
        meta["tokens"] = joined;
        break;
      }
      case 4:
        meta["note"] = coin() ? std::string("\x1b]0;title\x07\x1b[2J\r\n") : std::string(size_t(1) << 20, 'n');
        break;
      case 5: meta["causal"] = coin() ? "yes" : "TRUE"; break;
      case 6: meta["extra"] = coin() ? ojson("kept") : odd_value(); break;
      case 7: h["__metadata__"] = odd_value(); break;
      default: meta[key] = std::string(meta.value(key, std::string("x"))) + "\x01"; break;
    }
    const bool reseal = coin(0.85);
    // Resealed, an edit may leave a valid checkpoint that says something
    // else (another note, token or head count): loaded, it must be what the
    // edited metadata says, and its parameters the original's.
    if (reseal && h.contains("__metadata__") && h["__metadata__"].is_object()) {
      const ojson& edited = h["__metadata__"];
      const auto text = [&](const char* k) -> std::optional<std::string> {
        if (edited.contains(k) && edited[k].is_string()) return edited[k].get<std::string>();
        return std::nullopt;
      };
      Checkpoint expected = ckpt_;
      if (const auto t = text("tokens")) {
        expected.tokens.clear();
        for (size_t at = 0;;) {
          const size_t end = t->find(' ', at);
          expected.tokens.push_back(t->substr(at, end == std::string::npos ? std::string::npos : end - at));
          if (end == std::string::npos) break;
          at = end + 1;
        }
      }
      expected.note = text("note").value_or("");
      for (const detail::ConfigField& f : detail::kConfigFields) {
        int64_t x = 0;
        if (const auto v = text(f.name); v && detail::parse_dimension(*v, x)) expected.config.*f.value = x;
      }
      if (const auto c = text("causal")) expected.config.causal = *c == "true";
      m.expected = std::move(expected);
    }
    rebuild(m, h, data_, reseal);
  }

  // Edits of the header's text that JSON tools would make: the same header
  // reformatted or with keys in another order (these load intact), or a
  // character removed, doubled or replaced.
  void json_text(Mutant& m) {
    std::string text(original_.begin() + 8, original_.begin() + int64_t(header_end()));
    switch (pick(5)) {
      case 0: text = nlohmann::json::parse(text).dump(pick(2) ? 2 : -1); break;  // keys sorted
      case 1: text = header_.dump(4); break;
      case 2: text.erase(pick(text.size()), 1); break;
      case 3: {
        const size_t at = pick(text.size());
        text.insert(at, 1, text[at]);
        break;
      }
      default: {
        static const std::string chars = "{}[]\":,0123456789 \\";
        text[pick(text.size())] = chars[pick(chars.size())];
        break;
      }
    }
    m.bytes.assign(8, 0);
    put_u64(m.bytes, 0, text.size());
    m.bytes.insert(m.bytes.end(), text.begin(), text.end());
    m.bytes.insert(m.bytes.end(), data_.begin(), data_.end());
  }

  // One value replaced, both CRC-32s made valid again: a NaN or an
  // infinity must be refused, a huge finite value loads as written.
  void values(Mutant& m) {
    Bytes data = data_;
    const size_t index = pick(data.size() / 4);
    float value = 0;
    switch (pick(6)) {
      case 0: value = std::numeric_limits<float>::quiet_NaN(); break;
      case 1: value = std::numeric_limits<float>::infinity(); break;
      case 2: value = -std::numeric_limits<float>::infinity(); break;
      case 3: value = std::bit_cast<float>(uint32_t(0x7F800001u + pick(0x7FFFFF))); break;  // a NaN payload
      case 4: value = coin() ? 3e38f : -3.4028235e38f; break;
      default: value = std::bit_cast<float>(uint32_t((*rng_)())); break;
    }
    const uint32_t u = std::bit_cast<uint32_t>(value);
    for (size_t k = 0; k < 4; ++k) data[4 * index + k] = uint8_t(u >> (8 * k));
    if (std::isfinite(value)) {
      Checkpoint expected = ckpt_;
      size_t at = 0;
      for_each_tensor(expected.params, [&](const std::string&, std::span<float> t) {
        if (index >= at && index < at + t.size()) t[index - at] = value;
        at += t.size();
      });
      m.expected = std::move(expected);
    }
    rebuild(m, header_, data, true, true);
  }

  const Bytes& original_;
  const Checkpoint& ckpt_;
  size_t n_ = 0;
  ojson header_;
  Bytes data_;
  std::vector<std::string> names_;
  std::mt19937_64* rng_ = nullptr;
};

// What one load did: loaded, or refused with a message.
struct Verdict {
  bool loaded = false;
  bool checkpoint_error = false;
  std::string message;
  Checkpoint ckpt;
};

template <class Load>
Verdict attempt(Load load) {
  Verdict v;
  try {
    v.ckpt = load();
    v.loaded = true;
  } catch (const CheckpointError& e) {
    v.checkpoint_error = true;
    v.message = e.what();
  } catch (const std::exception& e) {
    v.message = fmt::format("{} (not a CheckpointError)", e.what());
  } catch (...) {
    v.message = "an exception that is no std::exception";
  }
  return v;
}

// What is wrong with a refusal's message, or "".
std::string message_problem(const std::string& m) {
  if (m.empty()) return "an empty message";
  if (m.size() > 1000) return fmt::format("a message of {} bytes", m.size());
  for (size_t i = 0; i < m.size(); ++i)
    if (control_at(m, i)) return m[i] == '\n' ? "a message on more than one line" : "a control character";
  if (printable(m) != m) return "bytes that are not UTF-8";
  return "";
}

// The message's kind: the words after the file name, numbers and quotes
// left out, cut short.
std::string message_kind(const std::string& m) {
  std::string s = m;
  if (const size_t at = s.find("': "); at != std::string::npos) s = s.substr(at + 3);
  std::string out;
  bool quoted = false;
  for (char c : s) {
    // (A quote opens after a space or a bracket: "book's" is no quote.)
    if (c == '\'' && (quoted || out.empty() || out.back() == ' ' || out.back() == '(')) {
      quoted = !quoted;
      out += "'";
      continue;
    }
    if (quoted) continue;
    if (c >= '0' && c <= '9') {
      if (out.empty() || out.back() != '#') out += '#';
      continue;
    }
    out += c;
    if (c == ':' || out.size() >= 60) break;
  }
  return out;
}

int run(const Options& o) {
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  const fs::path dir = fs::temp_directory_path() / fmt::format("sa_checkpoint_fuzz.{}", ::getpid());
  fs::create_directories(dir);
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{dir};

  Checkpoint ckpt;
  std::string source;
  if (o.checkpoint.empty()) {
    ckpt = trained_checkpoint();
    source = "a small model trained 4 Adam steps";
  } else {
    ckpt = load_checkpoint(o.checkpoint);
    source = o.checkpoint;
  }
  const fs::path original_path = dir / "original.safetensors";
  save_checkpoint(original_path.string(), ckpt);
  Bytes original;
  {
    std::ifstream in(original_path, std::ios::binary);
    original.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (!same_checkpoint(load_checkpoint(original_path.string()), ckpt)) {
    fmt::print("checkpoint_fuzz: the saved checkpoint does not load back as saved\n");
    return 1;
  }
  fmt::print("checkpoint fuzz: {} ({} bytes, {} parameters), seed {}\n", source, original.size(),
             parameter_count(ckpt.params), o.seed);

  Mutator mutator(original, ckpt);
  const fs::path path = dir / "case.safetensors";
  struct Tally {
    int64_t cases = 0, refused = 0, intact = 0, failed = 0;
  };
  std::map<std::string, Tally> by_kind;
  std::map<std::string, int64_t> messages;
  std::vector<std::string> failures;
  int64_t done = 0;
  double slowest = 0;
  const int64_t first = o.only >= 0 ? o.only : 0, last = o.only >= 0 ? o.only + 1 : o.cases;
  for (int64_t i = first; i < last; ++i) {
    if (o.only < 0 && elapsed() > o.seconds) break;
    std::mt19937_64 rng(o.seed * 1000003u + uint64_t(i));
    const Mutant m = mutator.make(rng);
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(m.bytes.data()), std::streamsize(m.bytes.size()));
    }
    const auto t0 = std::chrono::steady_clock::now();
    const Verdict from_file = attempt([&] { return load_checkpoint(path.string()); });
    const Verdict from_memory = attempt([&] { return parse_checkpoint(m.bytes, path.string()); });
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    slowest = std::max(slowest, took);

    std::string problem;
    if (from_file.loaded) {
      const Checkpoint& want = m.expected ? *m.expected : ckpt;
      if (!same_checkpoint(from_file.ckpt, want)) problem = "loaded, but not what was saved";
      else if (!from_memory.loaded || !same_checkpoint(from_memory.ckpt, want)) problem = "loaded from the file only";
    } else if (!from_file.checkpoint_error) {
      problem = "refused without a CheckpointError: " + printable(from_file.message, 300);
    } else if (const std::string bad = message_problem(from_file.message); !bad.empty()) {
      problem = fmt::format("a refusal with {}: {}", bad, printable(from_file.message, 300));
    } else if (from_memory.loaded || from_memory.message != from_file.message) {
      problem = "refused from the file, but from memory: " +
                (from_memory.loaded ? std::string("loaded") : printable(from_memory.message, 300));
    }
    if (problem.empty() && took > 2.0) problem = fmt::format("took {:.1f} s", took);

    Tally& t = by_kind[m.kind];
    ++t.cases;
    ++done;
    if (!problem.empty()) {
      ++t.failed;
      failures.push_back(fmt::format("case {} ({}): {}", i, m.kind, problem));
    } else if (from_file.loaded) {
      ++t.intact;
    } else {
      ++t.refused;
      ++messages[message_kind(from_file.message)];
    }
    if (o.only >= 0)
      fmt::print("case {} ({}, {} bytes): {}\n", i, m.kind, m.bytes.size(),
                 !problem.empty() ? "FAILED: " + problem
                 : from_file.loaded ? std::string("loaded intact")
                                    : "refused: " + from_file.message);
  }

  fmt::print("  {:<28} {:>6} {:>8} {:>14} {:>7}\n", "damage", "cases", "refused", "loaded intact", "failed");
  Tally total;
  for (const auto& [kind, t] : by_kind) {
    fmt::print("  {:<28} {:>6} {:>8} {:>14} {:>7}\n", kind, t.cases, t.refused, t.intact, t.failed);
    total.cases += t.cases, total.refused += t.refused, total.intact += t.intact, total.failed += t.failed;
  }
  fmt::print("  {:<28} {:>6} {:>8} {:>14} {:>7}\n", "all", total.cases, total.refused, total.intact, total.failed);
  fmt::print("  {} kinds of refusal, the most frequent:\n", messages.size());
  std::vector<std::pair<int64_t, std::string>> common;
  for (const auto& [kind, count] : messages) common.emplace_back(count, kind);
  std::sort(common.rbegin(), common.rend());
  for (size_t k = 0; k < common.size() && k < 12; ++k) fmt::print("    {:>5}  {}\n", common[k].first, common[k].second);
  fmt::print("  slowest case {:.1f} ms; {:.1f} s in all\n", 1e3 * slowest, elapsed());
  for (size_t k = 0; k < failures.size() && k < 20; ++k) fmt::print("  FAILED {}\n", failures[k]);
  if (done < o.cases && o.only < 0) fmt::print("  (stopped after {} s: {} of {} cases)\n", o.seconds, done, o.cases);
  fmt::print("checkpoint fuzz: {} passed, {} failed\n", done - total.failed, total.failed);
  return total.failed == 0 && done > 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    fmt::print(stderr, "checkpoint_fuzz: {}\n", e.what());
    return 1;
  }
}
