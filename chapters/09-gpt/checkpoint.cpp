// Chapter 9: the GPT's checkpoint (the format: checkpoint.hpp). The file
// itself is chapter 7's business: its safetensors writer, its atomic save,
// its header checks; this file adds what is the GPT's own.
#include "09-gpt/checkpoint.hpp"

#include "09-gpt/data.hpp"

#include <boost/crc.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

namespace sa::ch9 {

namespace {

using json = nlohmann::json;
using Metadata = std::map<std::string, std::string>;
using detail::metadata_entry;
using detail::Refusal;
using detail::TensorEntry;

std::string shown(std::string_view s) { return printable(s, 80); }

// The configuration fields, in the order the metadata lists them, with the
// largest value the reader accepts.
struct GptField {
  const char* name;
  int64_t GptConfig::*value;
  int64_t max;
};
constexpr GptField kGptFields[] = {{"vocab_size", &GptConfig::vocab_size, kMaxGptVocab},
                                   {"seq_len", &GptConfig::seq_len, kMaxCheckpointDimension},
                                   {"d_model", &GptConfig::d_model, kMaxCheckpointDimension},
                                   {"n_heads", &GptConfig::n_heads, kMaxCheckpointDimension},
                                   {"n_layers", &GptConfig::n_layers, kMaxGptLayers}};

// The prefixes of AdamW's two moments in the tensor names.
constexpr const char* kMomentPrefix[2] = {"adamw.m.", "adamw.v."};

// Every tensor of a checkpoint in the file's order: the parameters, then
// (with the optimizer) the first moments, then the second.
template <class F>
void visit_checkpoint_tensors(const GptParams& params, const GptParams* m, const GptParams* v, F&& f) {
  const auto each = [&](const GptParams& p, const std::string& prefix) {
    visit_gpt_parameters(p, [&](const std::string& name, const auto& t, const GptTensor&) {
      const bool vector = std::decay_t<decltype(t)>::RowsAtCompileTime == 1;
      const Shape shape = vector ? Shape{int64_t(t.size())} : Shape{int64_t(t.rows()), int64_t(t.cols())};
      f(prefix + name, shape, std::span<const float>(t.data(), size_t(t.size())));
    });
  };
  each(params, "");
  if (m) each(*m, kMomentPrefix[0]);
  if (v) each(*v, kMomentPrefix[1]);
}

// The characters of a vocabulary string, checked: UTF-8, none twice, in
// code-point order as build_vocab makes them (encode may look a character
// up by bisection: out of order, it would say a character it holds is not
// there), and no control character but the line end (the text has none; the
// generated text goes to a terminal). "" when they are fine, else what is
// wrong.
std::string vocabulary_problem(const std::string& text, int64_t vocab_size, std::vector<char32_t>& chars) {
  try {
    chars = utf8_chars("the vocabulary", text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  if (int64_t(chars.size()) != vocab_size)
    return fmt::format("the vocabulary holds {} characters, but vocab_size = {}", chars.size(), vocab_size);
  std::set<char32_t> seen;
  for (size_t k = 0; k < chars.size(); ++k)
    if (!seen.insert(chars[k]).second) return fmt::format("character {} of the vocabulary, {}, is there twice", k,
                                                          char_name(chars[k]));
  for (size_t k = 0; k < chars.size(); ++k) {
    const char32_t c = chars[k];
    if ((c < 0x20 && c != '\n') || (c >= 0x7F && c < 0xA0))
      return fmt::format("character {} of the vocabulary, {}, is a control character (a text's vocabulary has "
                         "none but the line end)",
                         k, char_name(c));
    if (k > 0 && c < chars[k - 1])
      return fmt::format("the vocabulary is not in code-point order: character {}, {}, comes after {} (a vocabulary "
                         "built from a text is sorted)",
                         k, char_name(c), char_name(chars[k - 1]));
  }
  return "";
}

std::string decimal(int64_t x) { return std::to_string(x); }

// A whole number from 0 to max, digits only, no leading zero.
bool parse_count(const std::string& s, uint64_t max, uint64_t& value) {
  if (s.empty() || s.size() > 20 || (s.size() > 1 && s[0] == '0') ||
      s.find_first_not_of("0123456789") != std::string::npos)
    return false;
  uint64_t v = 0;
  for (char ch : s) {
    if (v > (UINT64_MAX - uint64_t(ch - '0')) / 10) return false;
    v = v * 10 + uint64_t(ch - '0');
  }
  if (v > max) return false;
  value = v;
  return true;
}

}  // namespace

int64_t gpt_parameter_count(const GptConfig& c) {
  // A block: ln1 and ln2 (2d each), qkv (d x 3d) and W_o (d x d) without
  // biases, fc1 (d x 4d + 4d) and fc2 (4d x d + d): 12 d² + 9 d. Then the
  // embedding and the position table, and the final LayerNorm.
  const int64_t d = c.d_model;
  return (c.vocab_size + c.seq_len) * d + c.n_layers * (12 * d * d + 9 * d) + 2 * d;
}

std::string vocabulary_text(const CharVocab& vocab) {
  std::string out;
  for (char32_t ch : vocab.chars) append_utf8(out, ch);
  return out;
}

std::vector<uint8_t> gpt_checkpoint_bytes(const GptCheckpoint& ckpt) {
  const auto refuse = [](const std::string& why) {
    return std::invalid_argument("gpt_checkpoint_bytes: " + why);
  };
  const GptConfig& c = ckpt.config;
  c.validate();
  for (const GptField& f : kGptFields)
    if (c.*f.value > f.max) throw refuse(fmt::format("{} = {}, above the limit of {}", f.name, c.*f.value, f.max));
  std::vector<char32_t> chars;
  if (const std::string problem = vocabulary_problem(ckpt.vocabulary, c.vocab_size, chars); !problem.empty())
    throw refuse(problem);
  if (ckpt.iteration < 0 || ckpt.iters < 1 || ckpt.iteration > ckpt.iters)
    throw refuse(fmt::format("iteration {} of {}: expected 0 <= iteration <= iters, iters >= 1", ckpt.iteration,
                             ckpt.iters));
  if (const auto& t = ckpt.training;
      ckpt.has_optimizer && t && (t->batch < 1 || t->batch > kMaxBatch || !(t->lr > 0 && t->lr <= 1) ||
                                  !(t->dropout >= 0 && t->dropout < 1)))
    throw refuse(fmt::format("the run's batch {}, lr {}, dropout {}: expected a batch in [1, {}], lr in (0, 1], "
                             "dropout in [0, 1)",
                             t->batch, t->lr, t->dropout, kMaxBatch));
  if (int64_t(parameter_count(ckpt.params)) != gpt_parameter_count(c))
    throw refuse(fmt::format("{} parameters, but the configuration implies {}", parameter_count(ckpt.params),
                             gpt_parameter_count(c)));
  // The shapes the reader will expect: the configuration's. A refusal
  // names the first tensor that differs, with both shapes.
  using NamedShapes = std::vector<std::pair<std::string, Shape>>;
  const auto shapes_of = [](const GptParams& p) {
    NamedShapes out;
    visit_checkpoint_tensors(p, nullptr, nullptr,
                             [&](const std::string& name, Shape s, auto) { out.emplace_back(name, s); });
    return out;
  };
  const NamedShapes want = shapes_of(shaped_gpt_params(c));
  const auto require_shapes = [&](const GptParams& p, const char* prefix) {
    const NamedShapes got = shapes_of(p);
    for (size_t i = 0; i < want.size() && i < got.size(); ++i)
      if (got[i].second != want[i].second)
        throw refuse(fmt::format("tensor {}{} is {}, but the configuration implies {}", prefix, got[i].first,
                                 shape_str(got[i].second), shape_str(want[i].second)));
  };
  require_shapes(ckpt.params, "");
  if (ckpt.has_optimizer) {
    require_shapes(ckpt.adam_m, kMomentPrefix[0]);
    require_shapes(ckpt.adam_v, kMomentPrefix[1]);
    if (ckpt.adamw_step != ckpt.iteration)
      throw refuse(fmt::format("AdamW's step count {} is not the iteration {}: one AdamW step an iteration",
                               ckpt.adamw_step, ckpt.iteration));
    Generator check;
    check.set_state(ckpt.generator);  // std::invalid_argument for a state that is not one
  }

  std::vector<detail::TensorView> tensors;
  visit_checkpoint_tensors(ckpt.params, ckpt.has_optimizer ? &ckpt.adam_m : nullptr,
                           ckpt.has_optimizer ? &ckpt.adam_v : nullptr,
                           [&](const std::string& name, Shape s, std::span<const float> t) {
                             tensors.push_back({name, std::move(s), t});
                           });
  return detail::safetensors_bytes(
      tensors,
      [&](uint32_t data_crc) {
        std::vector<std::pair<std::string, std::string>> m;
        m.emplace_back("format", std::string(kGptCheckpointFormat));
        m.emplace_back("version", std::to_string(kGptCheckpointVersion));
        for (const GptField& f : kGptFields) m.emplace_back(f.name, decimal(c.*f.value));
        m.emplace_back("vocabulary", ckpt.vocabulary);
        m.emplace_back("text_sha256", ckpt.text_sha256);
        m.emplace_back("iteration", decimal(ckpt.iteration));
        m.emplace_back("iters", decimal(ckpt.iters));
        m.emplace_back("seed", std::to_string(ckpt.seed));
        m.emplace_back("optimizer", ckpt.has_optimizer ? "adamw" : "none");
        m.emplace_back("adamw_step", decimal(ckpt.has_optimizer ? ckpt.adamw_step : 0));
        m.emplace_back("generator", ckpt.has_optimizer ? ckpt.generator : "");
        if (ckpt.has_optimizer && ckpt.training) {  // (what --resume reads: only beside a training state)
          // (fmt's "{}" of a double is the shortest text that reads back
          // as the same double)
          m.emplace_back("batch", decimal(ckpt.training->batch));
          m.emplace_back("lr", fmt::format("{}", ckpt.training->lr));
          m.emplace_back("dropout", fmt::format("{}", ckpt.training->dropout));
        }
        m.emplace_back("note", ckpt.note);
        m.emplace_back("crc32", detail::hex32(data_crc));
        return m;
      },
      "gpt_checkpoint_bytes");
}

void save_gpt_checkpoint(const std::string& path, const GptCheckpoint& ckpt,
                         const CheckpointCheck& check_before_rename) {
  save_file_atomically(path, gpt_checkpoint_bytes(ckpt), check_before_rename);
}

uint64_t gpt_checkpoint_size_bound(const GptConfig& cfg) {
  // Three times the parameters (the moments), and a header of 256 bytes a
  // tensor plus the vocabulary, the generator's 7 KB and the note.
  const uint64_t tensors = 3 * (2 + 10 * uint64_t(cfg.n_layers) + 2);
  return 8 + 256 * tensors + 4 * uint64_t(cfg.vocab_size) + 16384 + 3 * 4 * uint64_t(gpt_parameter_count(cfg));
}

// ---------------------------------------------------------------------------
// Reading

namespace {

// __metadata__: a map of strings, of this format and version, sealed by its
// own CRC-32.
Metadata read_metadata(const json& root, const Refusal& fail) {
  const auto meta_it = root.find("__metadata__");
  if (meta_it == root.end())
    throw fail("a safetensors file, but not a chapter 9 GPT: it has no __metadata__ (the configuration, the "
               "vocabulary and the CRC-32s the book stores there)");
  if (!meta_it->is_object()) throw fail("its __metadata__ is not a JSON object");
  Metadata meta;
  for (const auto& [key, value] : meta_it->items()) {
    if (!value.is_string())
      throw fail(fmt::format("its __metadata__ entry '{}' is not a string (the format stores strings only)",
                             shown(key)));
    meta.emplace(key, value.get<std::string>());
  }
  const auto format = meta.find("format");
  if (format == meta.end())
    throw fail(fmt::format("a safetensors file, but not a chapter 9 GPT: its __metadata__ has no format '{}'",
                           kGptCheckpointFormat));
  if (format->second == kCheckpointFormat)
    throw fail(fmt::format("is chapter 7's checkpoint ({}), not a chapter 9 GPT: chapter 9 saves "
                           "build/checkpoints/{}",
                           kCheckpointFormat, kGptCheckpointName));
  if (format->second != kGptCheckpointFormat)
    throw fail(fmt::format("a safetensors file, but not a chapter 9 GPT: its format is '{}', not '{}'",
                           shown(format->second), kGptCheckpointFormat));
  if (metadata_entry(meta, "version", fail) != std::to_string(kGptCheckpointVersion))
    throw fail(fmt::format("format version '{}', but this program reads version {}",
                           shown(metadata_entry(meta, "version", fail)), kGptCheckpointVersion));
  std::set<std::string> book = {"format", "version", "vocabulary", "text_sha256", "iteration", "iters", "seed",
                                "optimizer", "adamw_step", "generator", "batch", "lr", "dropout", "note", "crc32",
                                "metadata_crc32"};
  for (const GptField& f : kGptFields) book.insert(f.name);
  detail::check_metadata_crc(meta, metadata_entry(meta, "metadata_crc32", fail), fail,
                             [&](const std::string& key) { return book.count(key) > 0; },
                             " (chapter 7's README says how)");
  return meta;
}

// A number of the metadata that must lie in [lo, hi] (hi_open: below hi).
double read_real(const Metadata& meta, const char* key, double lo, double hi, bool lo_open, bool hi_open,
                 const Refusal& fail) {
  const std::string& text = metadata_entry(meta, key, fail);
  double x = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(x) || (lo_open ? x <= lo : x < lo) ||
      (hi_open ? x >= hi : x > hi))
    throw fail(fmt::format("its {} '{}' is not a number in {}{}, {}{}", key, shown(text), lo_open ? "(" : "[", lo, hi,
                           hi_open ? ")" : "]"));
  return x;
}

// The training run's batch, lr and dropout: all three or none (a file of
// an older book), and only beside a training state.
std::optional<GptCheckpoint::Training> read_training(const Metadata& meta, bool has_optimizer, const Refusal& fail) {
  const int present = int(meta.count("batch") + meta.count("lr") + meta.count("dropout"));
  if (present == 0) return std::nullopt;
  if (present != 3) throw fail("it records some of the run's batch, lr and dropout but not all three");
  if (!has_optimizer) throw fail("it records the run's batch, lr and dropout but no optimizer state ('none')");
  GptCheckpoint::Training t;
  uint64_t batch = 0;
  if (!parse_count(metadata_entry(meta, "batch", fail), uint64_t(kMaxBatch), batch) || batch < 1)
    throw fail(fmt::format("its batch '{}' is not a whole number from 1 to {}",
                           shown(metadata_entry(meta, "batch", fail)), kMaxBatch));
  t.batch = int64_t(batch);
  t.lr = read_real(meta, "lr", 0, 1, /*lo_open=*/true, /*hi_open=*/false, fail);
  t.dropout = read_real(meta, "dropout", 0, 1, /*lo_open=*/false, /*hi_open=*/true, fail);
  return t;
}

// What the header says, checked against itself and the data's length.
struct GptLayout {
  GptCheckpoint ckpt;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // the file's tensor order
  std::vector<std::string> names;
  uint32_t crc = 0;
};

GptLayout parse_gpt_header(std::string_view header, uint64_t data_size, const std::string& name) {
  const Refusal fail{name};
  const json root = detail::parse_header_json(header, fail);
  const Metadata meta = read_metadata(root, fail);
  GptLayout layout;
  GptCheckpoint& ckpt = layout.ckpt;
  GptConfig& c = ckpt.config;

  for (const GptField& f : kGptFields) {
    const std::string& text = metadata_entry(meta, f.name, fail);
    uint64_t v = 0;
    if (!parse_count(text, uint64_t(f.max), v) || v < 1)
      throw fail(fmt::format("impossible configuration: {} = '{}' (expected a whole number from 1 to {})", f.name,
                             shown(text), f.max));
    c.*f.value = int64_t(v);
  }
  if (c.d_model % c.n_heads != 0)
    throw fail(fmt::format("impossible configuration: d_model {} is not divisible by n_heads {}", c.d_model,
                           c.n_heads));
  ckpt.vocabulary = metadata_entry(meta, "vocabulary", fail);
  std::vector<char32_t> chars;
  if (const std::string problem = vocabulary_problem(ckpt.vocabulary, c.vocab_size, chars); !problem.empty())
    throw fail(problem);
  ckpt.text_sha256 = metadata_entry(meta, "text_sha256", fail);
  if (ckpt.text_sha256.size() != 64 || ckpt.text_sha256.find_first_not_of("0123456789abcdef") != std::string::npos)
    throw fail(fmt::format("its text_sha256 '{}' is not 64 lower-case hexadecimal digits", shown(ckpt.text_sha256)));
  uint64_t iteration = 0, iters = 0, seed = 0, step = 0;
  const std::string& it_text = metadata_entry(meta, "iteration", fail);
  const std::string& iters_text = metadata_entry(meta, "iters", fail);
  if (!parse_count(iters_text, 1u << 30, iters) || iters < 1)
    throw fail(fmt::format("its iters '{}' is not a whole number from 1 to {}", shown(iters_text), 1u << 30));
  if (!parse_count(it_text, iters, iteration))
    throw fail(fmt::format("its iteration '{}' is not a whole number from 0 to iters = {}", shown(it_text), iters));
  if (!parse_count(metadata_entry(meta, "seed", fail), UINT64_MAX, seed))
    throw fail(fmt::format("its seed '{}' is not a whole number", shown(metadata_entry(meta, "seed", fail))));
  ckpt.iteration = int64_t(iteration);
  ckpt.iters = int64_t(iters);
  ckpt.seed = seed;
  const std::string& optimizer = metadata_entry(meta, "optimizer", fail);
  if (optimizer != "adamw" && optimizer != "none")
    throw fail(fmt::format("its optimizer '{}' is neither 'adamw' nor 'none'", shown(optimizer)));
  ckpt.has_optimizer = optimizer == "adamw";
  const std::string& step_text = metadata_entry(meta, "adamw_step", fail);
  if (!parse_count(step_text, iters, step) || (ckpt.has_optimizer ? step != iteration : step != 0))
    throw fail(fmt::format("its adamw_step '{}' is not {} (one AdamW step an iteration{})", shown(step_text),
                           ckpt.has_optimizer ? iteration : 0, ckpt.has_optimizer ? "" : "; no optimizer saved"));
  ckpt.adamw_step = int64_t(step);
  ckpt.generator = metadata_entry(meta, "generator", fail);
  if (ckpt.has_optimizer) {
    try {
      Generator check;
      check.set_state(ckpt.generator);
    } catch (const std::invalid_argument& e) {
      throw fail(fmt::format("its generator is not a generator state: {}", printable(e.what(), 200)));
    }
  } else if (!ckpt.generator.empty()) {
    throw fail("it holds a generator state but no optimizer state ('none'): half of a training state");
  }
  ckpt.training = read_training(meta, ckpt.has_optimizer, fail);
  if (const auto note = meta.find("note"); note != meta.end()) ckpt.note = note->second;
  {
    const std::string& crc = metadata_entry(meta, "crc32", fail);
    if (crc.size() != 8 || crc.find_first_not_of("0123456789abcdef") != std::string::npos)
      throw fail(fmt::format("its crc32 '{}' is not 8 hexadecimal digits", shown(crc)));
    layout.crc = uint32_t(std::stoul(crc, nullptr, 16));
  }

  // The tensors: the count the configuration implies, and the data at least
  // that long, before anything of that size is allocated.
  const std::vector<TensorEntry> entries = detail::read_tensor_entries(root, fail, "chapter 9");
  uint64_t declared = 0;
  for (const TensorEntry& e : entries) declared += e.values;
  const uint64_t copies = ckpt.has_optimizer ? 3 : 1;
  const uint64_t expected = copies * uint64_t(gpt_parameter_count(c));
  if (declared != expected)
    throw fail(fmt::format("its tensors hold {} values, but its configuration implies {}{}", declared, expected,
                           ckpt.has_optimizer ? " (the parameters and AdamW's two moments)" : ""));
  if (expected > data_size / 4)
    throw fail(fmt::format("truncated: its tensors need {} bytes of data, but only {} follow the header", expected * 4,
                           data_size));

  // Now the sizes are known to be in the file: the tensors of the
  // configuration, named and shaped, matched to the entries.
  ckpt.params = shaped_gpt_params(c);
  if (ckpt.has_optimizer) {
    ckpt.adam_m = shaped_gpt_params(c);
    ckpt.adam_v = shaped_gpt_params(c);
  }
  std::vector<Shape> shapes;
  visit_checkpoint_tensors(ckpt.params, ckpt.has_optimizer ? &ckpt.adam_m : nullptr,
                           ckpt.has_optimizer ? &ckpt.adam_v : nullptr,
                           [&](const std::string& tensor, Shape s, auto) {
                             layout.names.push_back(tensor);
                             shapes.push_back(std::move(s));
                           });
  layout.ranges = detail::match_tensor_entries(entries, layout.names, shapes, data_size, fail, [&](const std::string& n) {
    return !ckpt.has_optimizer && n.rfind("adamw.", 0) == 0 ? std::string(" (optimizer 'none')") : std::string();
  });
  detail::check_ranges_cover_data(layout.ranges, layout.names, data_size, fail);
  return layout;
}

GptCheckpoint read_gpt_data(GptLayout& layout, std::span<const uint8_t> data, const std::string& name) {
  const Refusal fail{name};
  boost::crc_32_type crc;
  for (const auto& [begin, end] : layout.ranges)
    if (end > begin) crc.process_bytes(data.data() + begin, end - begin);
  if (crc.checksum() != layout.crc)
    throw fail(fmt::format("corrupted: the CRC-32 of its data is {}, but the header records {}",
                           detail::hex32(crc.checksum()), detail::hex32(layout.crc)));
  GptCheckpoint& ckpt = layout.ckpt;
  size_t k = 0;
  const auto fill = [&](GptParams& p, const std::string& prefix) {
    visit_gpt_parameters(p, [&](const std::string& tensor, auto& t, const GptTensor&) {
      const uint8_t* at = data.data() + layout.ranges[k++].first;
      float* out = t.data();
      for (int64_t i = 0; i < t.size(); ++i, at += 4) {
        const uint32_t u = uint32_t(at[0]) | uint32_t(at[1]) << 8 | uint32_t(at[2]) << 16 | uint32_t(at[3]) << 24;
        out[i] = std::bit_cast<float>(u);
        if (!std::isfinite(out[i]))
          throw fail(fmt::format("tensor {}{} holds a NaN or infinite value (at index {})", prefix, tensor, i));
      }
    });
  };
  fill(ckpt.params, "");
  if (ckpt.has_optimizer) {
    fill(ckpt.adam_m, kMomentPrefix[0]);
    fill(ckpt.adam_v, kMomentPrefix[1]);
  }
  return std::move(ckpt);
}

}  // namespace

GptCheckpoint parse_gpt_checkpoint(std::span<const uint8_t> bytes, const std::string& name) {
  const uint64_t n =
      detail::checkpoint_header_length(bytes.first(std::min<size_t>(8, bytes.size())), bytes.size(), name);
  const std::string_view header(reinterpret_cast<const char*>(bytes.data()) + 8, size_t(n));
  GptLayout layout = parse_gpt_header(header, bytes.size() - 8 - n, name);
  return read_gpt_data(layout, bytes.subspan(8 + size_t(n)), name);
}

GptCheckpoint load_gpt_checkpoint(const std::string& path) {
  detail::CheckpointFile file(path, "chapter 9");
  const uint64_t n = file.header_length();
  const std::vector<uint8_t> header = file.read(size_t(n));
  GptLayout layout =
      parse_gpt_header(std::string_view(reinterpret_cast<const char*>(header.data()), header.size()),
                       file.size() - 8 - n, path);
  const std::vector<uint8_t> data = file.read(size_t(file.size() - 8 - n));
  return read_gpt_data(layout, data, path);
}

void require_same_model(const GptCheckpoint& ckpt, const GptRunPlan& plan, const std::string& name) {
  const Refusal fail{name};
  for (const GptField& f : kGptFields)
    if (ckpt.config.*f.value != plan.config.*f.value)
      throw fail(fmt::format("a model of {} {}, but this run's has {} {}{}", f.name, ckpt.config.*f.value, f.name,
                             plan.config.*f.value, [&]() -> std::string {
                               // (The vocabulary's size has no option: it is the text's.)
                               if (std::string_view(f.name) == "vocab_size") return "";
                               std::string flag = f.name;
                               std::replace(flag.begin(), flag.end(), '_', '-');
                               return fmt::format(": give --{} {} (or leave the option out) to resume it", flag,
                                                  ckpt.config.*f.value);
                             }()));
  if (ckpt.text_sha256 != plan.text_sha256)
    throw fail(fmt::format("trained on another text: SHA-256 {}, but this run's text has {}", ckpt.text_sha256,
                           plan.text_sha256));
  if (ckpt.vocabulary != plan.vocabulary) {
    // Same size (checked above): the first character that differs.
    size_t k = 0;
    std::vector<char32_t> a, b;
    vocabulary_problem(ckpt.vocabulary, ckpt.config.vocab_size, a);
    vocabulary_problem(plan.vocabulary, plan.config.vocab_size, b);
    while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
    throw fail(fmt::format("another vocabulary: its token {} is {}, but this run's is {}", k,
                           k < a.size() ? char_name(a[k]) : "missing", k < b.size() ? char_name(b[k]) : "missing"));
  }
}

void restore_training_state(const GptCheckpoint& ckpt, GptAdamW& opt, Generator& gen) {
  if (!ckpt.has_optimizer)
    throw std::invalid_argument("restore_training_state: the checkpoint holds the model only, no optimizer state");
  opt.restore(ckpt.adam_m, ckpt.adam_v, ckpt.adamw_step);
  gen.set_state(ckpt.generator);
}

}  // namespace sa::ch9
