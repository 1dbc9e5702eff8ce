// Chapter 9's checkpoint (chapters/09-gpt/checkpoint.hpp): a GPT, its AdamW
// state and its generator saved and read back bit for bit; every damaged or
// foreign file refused with one line that names the problem; and a run
// resumed from a checkpoint that ends where the uninterrupted run ends.
// A model of a few hundred parameters: the whole suite takes milliseconds.
#include "09-gpt/checkpoint.hpp"
#include "09-gpt/data.hpp"

#include "07-training/checkpoint.hpp"
#include "support/scratch.hpp"

#include "support/catch2_compat.hpp"
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

using namespace sa;
using namespace sa::ch9;

namespace {

using json = nlohmann::ordered_json;
using Bytes = std::vector<uint8_t>;

const GptConfig kTiny{5, 4, 8, 2, 1};  // vocab_size, seq_len, d_model, n_heads, n_layers
const std::string kVocabulary = "\n abc";
const std::string kSha = std::string(kTextSha256);

// A text of the tiny vocabulary's ids, long enough for batches.
std::vector<int64_t> tiny_text() {
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < 200; ++i) ids.push_back((i * 7 + i / 5) % kTiny.vocab_size);
  return ids;
}

AdamWConfig adamw_config() {
  AdamWConfig a;
  a.lr = 1e-2;
  return a;
}

const LrSchedule kSchedule{1e-2, 1e-3, 1, 8};

// `n` iterations of training_run's loop, from iteration `from`.
void train(Gpt& model, GptAdamW& opt, Generator& gen, int64_t from, int64_t n) {
  const std::vector<int64_t> text = tiny_text();
  Batch b;
  for (int64_t it = from; it < from + n; ++it) {
    sample_batch(text, 3, kTiny.seq_len, gen, b);
    gpt_train_step(model, opt, b, learning_rate(it, kSchedule), 1.0);
  }
}

GptCheckpoint checkpoint_of(const Gpt& model, const GptAdamW& opt, const Generator& gen, int64_t iteration) {
  GptCheckpoint c;
  c.config = model.config();
  c.vocabulary = kVocabulary;
  c.text_sha256 = kSha;
  c.iteration = iteration;
  c.iters = 8;
  c.seed = 1234;
  c.note = "a tiny test model";
  c.params = model.params;
  c.has_optimizer = true;
  c.adam_m = opt.first_moments();
  c.adam_v = opt.second_moments();
  c.adamw_step = opt.steps();
  c.generator = gen.state();
  c.training = GptCheckpoint::Training{3, 0.0015, 0.1};  // (lr and dropout with no exact binary form)
  return c;
}

// A checkpoint after 3 iterations, with a normal sample pending in its
// generator (the state must carry it).
GptCheckpoint trained_checkpoint() {
  Generator gen(1234);
  Gpt model(kTiny, gen);
  GptAdamW opt(model.params, model.grads, adamw_config());
  train(model, opt, gen, 0, 3);
  float x;
  gen.normal_(&x, 1);
  return checkpoint_of(model, opt, gen, 3);
}

const Bytes& good_bytes() {
  static const Bytes b = gpt_checkpoint_bytes(trained_checkpoint());
  return b;
}

std::vector<uint32_t> bits_of(const GptParams& p) {
  std::vector<uint32_t> out;
  visit_gpt_parameters(p, [&](const std::string&, const auto& t, const GptTensor&) {
    for (int64_t i = 0; i < t.size(); ++i) out.push_back(std::bit_cast<uint32_t>(t.data()[i]));
  });
  return out;
}

// The message parse_gpt_checkpoint gives for `bytes`, or "" if it reads them.
std::string refusal(const Bytes& bytes) {
  try {
    parse_gpt_checkpoint(bytes, "test.safetensors");
  } catch (const CheckpointError& e) {
    const std::string what = e.what();
    CHECK(what.find('\n') == std::string::npos);  // one line
    CHECK(what.rfind("checkpoint 'test.safetensors': ", 0) == 0);
    return what;
  }
  return "";
}

uint64_t header_length(const Bytes& b) {
  uint64_t n = 0;
  for (int k = 0; k < 8; ++k) n |= uint64_t(b[size_t(k)]) << (8 * k);
  return n;
}

// The file with its header edited by `edit`; with `reseal` the metadata
// CRC-32 is recorded again (as a careful forger would), so that the check
// after it is the one that must refuse.
Bytes edited(const std::function<void(json&)>& edit, bool reseal = true, const Bytes& from = good_bytes()) {
  const uint64_t n = header_length(from);
  json header = json::parse(from.begin() + 8, from.begin() + 8 + std::ptrdiff_t(n));
  edit(header);
  if (reseal && header.contains("__metadata__")) {
    std::map<std::string, std::string> meta;
    for (const auto& [k, v] : header["__metadata__"].items())
      if (v.is_string()) meta[k] = v.get<std::string>();
    header["__metadata__"]["metadata_crc32"] = detail::hex32(detail::metadata_crc(meta));
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  Bytes out;
  for (int k = 0; k < 8; ++k) out.push_back(uint8_t(uint64_t(text.size()) >> (8 * k)));
  out.insert(out.end(), text.begin(), text.end());
  out.insert(out.end(), from.begin() + 8 + std::ptrdiff_t(n), from.end());
  return out;
}

void set_meta(json& h, const std::string& key, const std::string& value) { h["__metadata__"][key] = value; }

}  // namespace

TEST_CASE("chapter 9 checkpoint: parameters, AdamW's moments and the generator come back bit for bit",
          "[ch09_checkpoint]") {
  const GptCheckpoint saved = trained_checkpoint();
  const Bytes bytes = gpt_checkpoint_bytes(saved);
  const GptCheckpoint back = parse_gpt_checkpoint(bytes, "test.safetensors");
  CHECK(back.config.vocab_size == 5);
  CHECK(back.config.seq_len == 4);
  CHECK(back.config.d_model == 8);
  CHECK(back.config.n_heads == 2);
  CHECK(back.config.n_layers == 1);
  CHECK(back.vocabulary == kVocabulary);  // '\n' and ' ' are tokens here
  CHECK(back.text_sha256 == kSha);
  CHECK(back.iteration == 3);
  CHECK(back.iters == 8);
  CHECK(back.seed == 1234);
  CHECK(back.note == saved.note);
  REQUIRE(back.has_optimizer);
  CHECK(back.adamw_step == 3);
  CHECK(back.generator == saved.generator);
  CHECK(saved.generator.find("normal none") == std::string::npos);  // a pending normal sample was saved
  REQUIRE(back.training);
  CHECK(back.training->batch == 3);
  CHECK(back.training->lr == 0.0015);  // the same double, not a rounded one
  CHECK(back.training->dropout == 0.1);
  CHECK(bits_of(back.params) == bits_of(saved.params));
  CHECK(bits_of(back.adam_m) == bits_of(saved.adam_m));
  CHECK(bits_of(back.adam_v) == bits_of(saved.adam_v));
  // The moments are not all zero: the test would not see them swapped.
  CHECK(bits_of(back.adam_m) != bits_of(back.adam_v));
  CHECK(int64_t(bits_of(back.params).size()) == gpt_parameter_count(kTiny));
  // Written again, the same bytes.
  CHECK(gpt_checkpoint_bytes(back) == bytes);
  CHECK(bytes.size() <= gpt_checkpoint_size_bound(kTiny));

  // The header a Python reader sees: the table's names, shapes [rows, cols]
  // or [n], the moments after the parameters, the vocabulary as one string.
  const json header = json::parse(bytes.begin() + 8, bytes.begin() + 8 + std::ptrdiff_t(header_length(bytes)));
  CHECK(header["tok"]["shape"] == json::array({5, 8}));
  CHECK(header["blocks.0.qkv.W"]["shape"] == json::array({8, 24}));
  CHECK(header["ln_f.gamma"]["shape"] == json::array({8}));
  CHECK(header["adamw.v.ln_f.beta"]["data_offsets"][1] == bytes.size() - 8 - header_length(bytes));
  CHECK(header["__metadata__"]["format"] == "sa09-gpt");
  CHECK(header["__metadata__"]["vocabulary"] == "\n abc");

  // A file of the model only: no moments, no generator.
  GptCheckpoint model_only = saved;
  model_only.has_optimizer = false;
  const GptCheckpoint back2 = parse_gpt_checkpoint(gpt_checkpoint_bytes(model_only), "m.safetensors");
  CHECK_FALSE(back2.has_optimizer);
  CHECK(back2.generator.empty());
  CHECK_FALSE(back2.training);  // what --resume reads goes with the training state
  CHECK(bits_of(back2.params) == bits_of(saved.params));
}

TEST_CASE("chapter 9 checkpoint: K iterations, a save, a load and K more end bit for bit where 2K end",
          "[ch09_checkpoint]") {
  constexpr int64_t K = 4;
  // The uninterrupted run.
  Generator gen_a(77);
  Gpt a(kTiny, gen_a);
  GptAdamW opt_a(a.params, a.grads, adamw_config());
  train(a, opt_a, gen_a, 0, 2 * K);

  // The same run stopped after K, saved to a file and read back...
  Generator gen_b(77);
  std::vector<uint32_t> resumed_bits;
  const std::string path = (sa::test::scratch_dir("sa-test-ch09") / "resume.safetensors").string();
  {
    Gpt b(kTiny, gen_b);
    GptAdamW opt_b(b.params, b.grads, adamw_config());
    train(b, opt_b, gen_b, 0, K);
    save_gpt_checkpoint(path, checkpoint_of(b, opt_b, gen_b, K));
  }
  // ...into a fresh model, optimizer and generator of another seed, as
  // --resume builds them.
  const GptCheckpoint ck = load_gpt_checkpoint(path);
  std::filesystem::remove(path);
  Generator gen_c(999);
  Gpt c(ck.config, gen_c);
  c.params = ck.params;
  GptAdamW opt_c(c.params, c.grads, adamw_config());
  restore_training_state(ck, opt_c, gen_c);
  CHECK(opt_c.steps() == K);
  train(c, opt_c, gen_c, ck.iteration, K);

  CHECK(bits_of(c.params) == bits_of(a.params));
  CHECK(bits_of(opt_c.first_moments()) == bits_of(opt_a.first_moments()));
  CHECK(bits_of(opt_c.second_moments()) == bits_of(opt_a.second_moments()));
  CHECK(gen_c.state() == gen_a.state());

  // Without the optimizer's state the run goes elsewhere: the test can fail.
  Generator gen_d(999);
  Gpt d(ck.config, gen_d);
  d.params = ck.params;
  GptAdamW opt_d(d.params, d.grads, adamw_config());
  gen_d.set_state(ck.generator);
  train(d, opt_d, gen_d, ck.iteration, K);
  CHECK(bits_of(d.params) != bits_of(a.params));
}

TEST_CASE("chapter 9 checkpoint: a damaged file is refused in one line naming the problem", "[ch09_checkpoint]") {
  const Bytes& good = good_bytes();
  REQUIRE(refusal(good).empty());
  const auto contains = [](const std::string& s) { return sa::test::ContainsText(s); };

  // The file's size and the header length.
  CHECK(refusal({}) == "checkpoint 'test.safetensors': the file is empty");
  CHECK_THAT(refusal(Bytes(good.begin(), good.begin() + 5)), contains("truncated: 5 bytes"));
  Bytes huge = good;
  huge[7] = 0x40;
  CHECK_THAT(refusal(huge), contains("more than the limit of 16 MiB"));
  Bytes beyond = good;
  const uint64_t too_long = good.size();
  for (int k = 0; k < 8; ++k) beyond[size_t(k)] = uint8_t(too_long >> (8 * k));
  CHECK_THAT(refusal(beyond), contains("truncated: its header length is"));
  Bytes not_json(good.begin(), good.begin() + 8 + std::ptrdiff_t(header_length(good)));
  not_json[8 + 1] = '!';
  CHECK_THAT(refusal(not_json), contains("its header is not valid JSON"));

  // Another file than this chapter's.
  CHECK_THAT(refusal(edited([](json& h) { h.erase("__metadata__"); })), contains("it has no __metadata__"));
  CHECK_THAT(refusal(edited([](json& h) { set_meta(h, "format", "sa08-other"); })),
             contains("its format is 'sa08-other', not 'sa09-gpt'"));
  CHECK_THAT(refusal(edited([](json& h) { set_meta(h, "version", "2"); })),
             contains("format version '2', but this program reads version 1"));

  // The metadata's seal: an edit without a new CRC-32.
  CHECK_THAT(refusal(edited([](json& h) { set_meta(h, "note", "edited"); }, false)),
             contains("corrupted: the CRC-32 of its metadata"));
  CHECK_THAT(refusal(edited([](json& h) { set_meta(h, "d_model", "16"); }, false)),
             contains("one of its values was changed after it was saved"));
  // A key another writer added without sealing again is named.
  CHECK_THAT(refusal(edited([](json& h) { set_meta(h, "trained_by", "me"); }, false)),
             contains("it holds 'trained_by', which the book does not write"));

  // Impossible configurations (the seal recorded again).
  CHECK_THAT(refusal(edited([](json& h) { set_meta(h, "n_heads", "3"); })),
             contains("impossible configuration: d_model 8 is not divisible by n_heads 3"));
  CHECK_THAT(refusal(edited([](json& h) { set_meta(h, "n_layers", "0"); })),
             contains("impossible configuration: n_layers = '0'"));
  CHECK_THAT(refusal(edited([](json& h) { set_meta(h, "seq_len", "99999999999"); })),
             contains("impossible configuration: seq_len = '99999999999' (expected a whole number from 1 to"));
  CHECK_THAT(refusal(edited([](json& h) { set_meta(h, "vocabulary", "\nab"); })),
             contains("the vocabulary holds 3 characters, but vocab_size = 5"));
  CHECK_THAT(refusal(edited([](json& h) { set_meta(h, "vocabulary", "\n aba"); })),
             contains("is there twice"));
  // Out of order (encode may bisect: it would not find 'a'), or a control
  // character the terminal would obey.
  CHECK_THAT(refusal(edited([](json& h) { set_meta(h, "vocabulary", "\n bac"); })),
             contains("the vocabulary is not in code-point order: character 3, 'a', comes after 'b'"));
  CHECK_THAT(refusal(edited([](json& h) { set_meta(h, "vocabulary", "\n\x1b ab"); })),
             contains("character 1 of the vocabulary, U+001B, is a control character"));
  CHECK_THAT(refusal(edited([](json& h) { set_meta(h, "iteration", "9"); })),
             contains("its iteration '9' is not a whole number from 0 to iters = 8"));
  CHECK_THAT(refusal(edited([](json& h) { set_meta(h, "adamw_step", "2"); })),
             contains("its adamw_step '2' is not 3"));
  CHECK_THAT(refusal(edited([](json& h) { set_meta(h, "generator", "seed 1 normal none mt 1 2"); })),
             contains("its generator is not a generator state"));
  // The run's batch, lr and dropout (which --resume takes): each checked,
  // and all three or none.
  CHECK_THAT(refusal(edited([](json& h) { set_meta(h, "batch", "0"); })),
             contains("its batch '0' is not a whole number from 1 to 4096"));
  CHECK_THAT(refusal(edited([](json& h) { set_meta(h, "lr", "0"); })),
             contains("its lr '0' is not a number in (0, 1]"));
  CHECK_THAT(refusal(edited([](json& h) { set_meta(h, "lr", "1e-3x"); })),
             contains("its lr '1e-3x' is not a number in (0, 1]"));
  CHECK_THAT(refusal(edited([](json& h) { set_meta(h, "dropout", "1"); })),
             contains("its dropout '1' is not a number in [0, 1)"));
  CHECK_THAT(refusal(edited([](json& h) { h["__metadata__"].erase("lr"); })),
             contains("it records some of the run's batch, lr and dropout but not all three"));
  {
    // A file of a book that did not record them yet reads, without them.
    const Bytes older = edited([](json& h) {
      for (const char* key : {"batch", "lr", "dropout"}) h["__metadata__"].erase(key);
    });
    REQUIRE(refusal(older).empty());
    CHECK_FALSE(parse_gpt_checkpoint(older, "older.safetensors").training);
  }

  // The tensors: missing, unknown, misshapen, outside the data.
  CHECK_THAT(refusal(edited([](json& h) { h.erase("ln_f.beta"); })),
             contains("its tensors hold 2776 values, but its configuration implies 2784"));
  CHECK_THAT(refusal(edited([](json& h) {
               h["ln_f.bias"] = h["ln_f.beta"];
               h.erase("ln_f.beta");
             })),
             contains("it holds a tensor 'ln_f.bias', which its configuration does not have"));
  {
    // A model-only file (optimizer 'none') holding a moment under a
    // parameter's place: the refusal says why the name is foreign here.
    GptCheckpoint model_only = trained_checkpoint();
    model_only.has_optimizer = false;
    const Bytes plain = gpt_checkpoint_bytes(model_only);
    REQUIRE(refusal(plain).empty());
    CHECK_THAT(refusal(edited(
                   [](json& h) {
                     h["adamw.m.ln_f.beta"] = h["ln_f.beta"];
                     h.erase("ln_f.beta");
                   },
                   true, plain)),
               contains("it holds a tensor 'adamw.m.ln_f.beta', which its configuration does not have (optimizer 'none')"));
  }
  CHECK_THAT(refusal(edited([](json& h) { h["tok"]["shape"] = json::array({8, 5}); })),
             contains("tensor 'tok' has shape [8, 5], but its configuration implies [5, 8]"));
  CHECK_THAT(refusal(edited([](json& h) { h["pos"]["dtype"] = "F16"; })), contains("has dtype 'F16'"));
  CHECK_THAT(refusal(edited([](json& h) { h["ln_f.beta"]["data_offsets"] = h["ln_f.gamma"]["data_offsets"]; })),
             contains("overlap in the data"));
  CHECK_THAT(refusal(edited([](json& h) { h["ln_f.beta"]["data_offsets"][1] = 1u << 30; })),
             contains("do not lie inside the"));

  // The data: a flipped bit, a cut, bytes appended, a NaN.
  Bytes flipped = good;
  flipped[flipped.size() - 100] ^= 0x10;
  CHECK_THAT(refusal(flipped), contains("corrupted: the CRC-32 of its data is"));
  CHECK_THAT(refusal(Bytes(good.begin(), good.end() - 100)), contains("truncated: its tensors need"));
  Bytes appended = good;
  appended.insert(appended.end(), {0, 0, 0, 0});
  CHECK_THAT(refusal(appended), contains("4 bytes after its last tensor"));
  {
    // A NaN in tok, with both CRC-32s recorded again: only the value check is left.
    Bytes nan_file = good;
    const size_t data_start = 8 + size_t(header_length(good));
    const uint32_t nan_bits = std::bit_cast<uint32_t>(std::numeric_limits<float>::quiet_NaN());
    for (int k = 0; k < 4; ++k) nan_file[data_start + 4 + size_t(k)] = uint8_t(nan_bits >> (8 * k));
    const uint32_t crc = crc32(std::span<const uint8_t>(nan_file).subspan(data_start));
    nan_file = edited([&](json& h) { set_meta(h, "crc32", detail::hex32(crc)); }, true, nan_file);
    CHECK_THAT(refusal(nan_file), contains("tensor tok holds a NaN or infinite value (at index 1)"));
  }
}

TEST_CASE("chapter 9 checkpoint: a chapter 7 checkpoint, a folder and a missing file are refused by name",
          "[ch09_checkpoint]") {
  ModelConfig mc;
  mc.vocab = 3;
  mc.max_seq = 4;
  mc.d_model = 4;
  mc.n_heads = 1;
  mc.n_layers = 1;
  mc.d_ff = 8;
  Generator gen(5);
  TinyTransformer model(mc, gen);
  const Checkpoint ch7{mc, {"a", "b", "c"}, "chapter 7's", model.params};
  CHECK(refusal(checkpoint_bytes(ch7)) ==
        "checkpoint 'test.safetensors': is chapter 7's checkpoint (sa07-checkpoint), not a chapter 9 GPT: chapter 9 "
        "saves build/checkpoints/09-gpt.safetensors");

  const std::filesystem::path dir = sa::test::scratch_dir("sa-test-ch09") / "folder.safetensors";
  std::filesystem::create_directories(dir);
  CHECK_THROWS_WITH(load_gpt_checkpoint(dir.string()), sa::test::ContainsText("is a folder, not a file"));
  std::filesystem::remove(dir);
  CHECK_THROWS_WITH(load_gpt_checkpoint(dir.string()), sa::test::ContainsText("no such file"));
}

TEST_CASE("chapter 9 checkpoint: require_same_model refuses another size, text or vocabulary, naming both",
          "[ch09_checkpoint]") {
  const GptCheckpoint ck = parse_gpt_checkpoint(good_bytes(), "c.safetensors");
  GptRunPlan plan{kTiny, kVocabulary, kSha};
  CHECK_NOTHROW(require_same_model(ck, plan, "c.safetensors"));
  GptRunPlan wider = plan;
  wider.config.d_model = 16;
  CHECK_THROWS_WITH(require_same_model(ck, wider, "c.safetensors"),
                    "checkpoint 'c.safetensors': a model of d_model 8, but this run's has d_model 16: give "
                    "--d-model 8 (or leave the option out) to resume it");
  GptRunPlan other_text = plan;
  other_text.text_sha256 = std::string(64, '0');
  CHECK_THROWS_WITH(require_same_model(ck, other_text, "c.safetensors"),
                    sa::test::ContainsText("trained on another text: SHA-256 " + kSha));
  GptRunPlan other_vocab = plan;
  other_vocab.vocabulary = "\n abd";
  CHECK_THROWS_WITH(require_same_model(ck, other_vocab, "c.safetensors"),
                    sa::test::ContainsText("another vocabulary: its token 4 is 'c', but this run's is 'd'"));
}

TEST_CASE("chapter 9 checkpoint: the writer refuses what the reader would refuse", "[ch09_checkpoint]") {
  GptCheckpoint c = trained_checkpoint();
  c.params.tok(0, 0) = std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH(gpt_checkpoint_bytes(c), sa::test::ContainsText("tensor tok holds a NaN or infinite value"));
  c = trained_checkpoint();
  c.vocabulary = "abc";
  CHECK_THROWS_WITH(gpt_checkpoint_bytes(c), sa::test::ContainsText("the vocabulary holds 3 characters, but vocab_size = 5"));
  c = trained_checkpoint();
  c.generator = "not a state";
  CHECK_THROWS_AS(gpt_checkpoint_bytes(c), std::invalid_argument);
  c = trained_checkpoint();
  c.adamw_step = 2;
  CHECK_THROWS_WITH(gpt_checkpoint_bytes(c), sa::test::ContainsText("AdamW's step count 2 is not the iteration 3"));
  c = trained_checkpoint();
  c.training->lr = 0;
  CHECK_THROWS_WITH(gpt_checkpoint_bytes(c), sa::test::ContainsText("the run's batch 3, lr 0, dropout 0.1: expected"));
  // The same count of values in another shape: the tensor is named.
  c = trained_checkpoint();
  const Shape tok{c.params.tok.rows(), c.params.tok.cols()};
  c.params.tok.resize(tok[1], tok[0]);
  c.params.tok.setZero();
  CHECK_THROWS_WITH(gpt_checkpoint_bytes(c),
                    sa::test::ContainsText(fmt::format("tensor tok is {}, but the configuration implies {}",
                                                       shape_str(Shape{tok[1], tok[0]}), shape_str(tok))));
  c = trained_checkpoint();
  c.adam_v.pos.resize(c.adam_v.pos.cols(), c.adam_v.pos.rows());
  c.adam_v.pos.setZero();
  CHECK_THROWS_WITH(gpt_checkpoint_bytes(c), sa::test::ContainsText("tensor adamw.v.pos is"));
}

TEST_CASE("chapter 9 checkpoint: any changed byte is refused in one line, or changes nothing", "[ch09_checkpoint]") {
  // Every 31st byte of the file (about 700 of them, in the header and the
  // data: a parse takes a millisecond, mostly the generator's 7 KB), XORed
  // with a pattern that changes one or two bits of it: the reader either refuses the file with a
  // CheckpointError or reads back exactly the checkpoint saved (a space of
  // the header's padding turned into another white space, say). Nothing
  // else gets out: no other exception, no different model.
  const Bytes& good = good_bytes();
  const GptCheckpoint saved = parse_gpt_checkpoint(good, "good");
  int refused = 0, same = 0;
  int tried = 0;
  for (size_t at = 0; at < good.size(); at += 31, ++tried) {
    Bytes bad = good;
    bad[at] ^= uint8_t(1u << (at % 8)) | uint8_t(at % 3 == 0 ? 0x80 : 0);
    try {
      const GptCheckpoint back = parse_gpt_checkpoint(bad, "bad");
      INFO("byte " << at << " changed, and the file still reads");
      CHECK(bits_of(back.params) == bits_of(saved.params));
      CHECK(bits_of(back.adam_m) == bits_of(saved.adam_m));
      CHECK(bits_of(back.adam_v) == bits_of(saved.adam_v));
      CHECK(back.generator == saved.generator);
      CHECK(back.vocabulary == saved.vocabulary);
      ++same;
    } catch (const CheckpointError& e) {
      CHECK(std::string(e.what()).find('\n') == std::string::npos);
      ++refused;
    }
  }
  CHECK(refused > tried * 9 / 10);
  INFO(refused << " refused, " << same << " unchanged");
  SUCCEED();
}
