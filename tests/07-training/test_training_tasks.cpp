// Hidden suite of chapter 7, part 3: checkpoints (checkpoint.hpp) and task
// 2's corpus (corpus.hpp).
//
// Checkpoints are tested on a model that has *trained* a few Adam steps,
// which is why these tests need the chapter's backward passes: training
// moves every tensor off its initial value, LayerNorm's gamma = 1 and
// beta = 0 included, so a reader that skipped or swapped a tensor could not
// pass the round trip by luck. Every failure case writes a good checkpoint
// to a temporary file, damages it the way a disk, a copy or a mix-up would,
// and expects one CheckpointError (a UsageError: the programs print it as
// one line and exit with status 2) that names the problem.
#include "07-training/analysis.hpp"
#include "07-training/checkpoint.hpp"
#include "07-training/corpus.hpp"
#include "07-training/model.hpp"
#include "07-training/reversal.hpp"

#include "sa/cli.hpp"
#include "sa/rng.hpp"

#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

using namespace sa;
namespace fs = std::filesystem;

namespace {

// A small reversal model after 3 Adam steps with a large learning rate.
struct Trained {
  Checkpoint ckpt;
  std::vector<int64_t> ids;  // a batch of its inputs
  int64_t batch = 0;
};

Trained trained_model() {
  ReversalTask task;
  task.digits = 3;
  task.vocab = 9;
  ModelConfig cfg;
  cfg.vocab = task.vocab;
  cfg.max_seq = task.sample_len();
  cfg.d_model = 8;
  cfg.n_heads = 2;
  cfg.n_layers = 2;
  cfg.d_ff = 16;
  Generator gen(709);
  TinyTransformer model(cfg, gen);
  const ReversalData data = make_reversal_data(gen, 12, task);
  AdamConfig adam_cfg;
  adam_cfg.lr = 1e-2;
  Adam adam(model.params, model.grads, adam_cfg);
  Trained t;
  std::vector<int64_t> targets;
  for (int64_t step = 0; step < 3; ++step) {
    const std::vector<int64_t> idx{step * 4, step * 4 + 1, step * 4 + 2, step * 4 + 3};
    make_batch(data, idx, task, t.ids, targets);
    train_step(model, adam, t.ids, targets, 4);
  }
  t.batch = 4;
  t.ckpt.config = cfg;
  t.ckpt.tokens = {"PAD", "SEP", "2", "3", "4", "5", "6", "7", "8"};
  t.ckpt.note = "3 Adam steps on reversal, for the tests";
  t.ckpt.params = model.params;
  return t;
}

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / "sa_test_ch07";
  fs::create_directories(dir);
  return dir / name;
}

std::vector<uint8_t> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_bytes(const fs::path& p, const std::vector<uint8_t>& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

void put_u32(std::vector<uint8_t>& b, size_t at, uint32_t x) {
  for (size_t k = 0; k < 4; ++k) b.at(at + k) = uint8_t(x >> (8 * k));
}
void put_u64(std::vector<uint8_t>& b, size_t at, uint64_t x) {
  for (size_t k = 0; k < 8; ++k) b.at(at + k) = uint8_t(x >> (8 * k));
}
uint32_t get_u32(const std::vector<uint8_t>& b, size_t at) {
  uint32_t x = 0;
  for (size_t k = 0; k < 4; ++k) x |= uint32_t(b.at(at + k)) << (8 * k);
  return x;
}

// Recomputes the CRC-32, as a deliberate (or unlucky) edit would: the file
// then passes the checksum, and only the consistency checks can catch it.
void reseal(std::vector<uint8_t>& b) { put_u32(b, b.size() - 4, crc32(std::span(b).first(b.size() - 4))); }

// Where the fixed header's fields are (checkpoint.hpp's table).
constexpr size_t kVersionAt = 8, kSizeAt = 12, kVocabAt = 20, kDModelAt = 28, kHeadsAt = 32, kCausalAt = 44,
                 kNoteAt = 48;

size_t param_count_offset(const Checkpoint& c) {
  size_t at = kNoteAt + 4 + c.note.size();
  for (const std::string& t : c.tokens) at += 4 + t.size();
  return at;
}

// Writes `bytes` to a file and expects loading it to fail with a message
// containing `expected`.
void require_refused(const std::string& file, const std::vector<uint8_t>& bytes, const std::string& expected) {
  const fs::path p = scratch(file);
  write_bytes(p, bytes);
  INFO("damaged file " << file << ", expecting: " << expected);
  REQUIRE_THROWS_AS(load_checkpoint(p.string()), CheckpointError);
  REQUIRE_THROWS_WITH(load_checkpoint(p.string()), Catch::Contains(expected));
}

std::vector<uint8_t> good_bytes(const Trained& t) { return checkpoint_bytes(t.ckpt); }

}  // namespace

// ===========================================================================
// checkpoint.hpp
// ===========================================================================
TEST_CASE("checkpoint: save, load: the same configuration, tokens and parameters bit for bit, the same logits",
          "[ch07][checkpoint]") {
  const Trained t = trained_model();
  // Training moved LayerNorm's parameters off 1 and 0.
  CHECK(t.ckpt.params.blocks[0].ln1.gamma != RowVector::Ones(t.ckpt.config.d_model));
  const fs::path path = scratch("roundtrip.ckpt");
  save_checkpoint(path.string(), t.ckpt);
  CHECK_FALSE(fs::exists(path.string() + ".tmp"));  // written aside, then renamed

  const Checkpoint back = load_checkpoint(path.string());
  const ModelConfig &a = t.ckpt.config, &b = back.config;
  CHECK(b.vocab == a.vocab);
  CHECK(b.max_seq == a.max_seq);
  CHECK(b.d_model == a.d_model);
  CHECK(b.n_heads == a.n_heads);
  CHECK(b.n_layers == a.n_layers);
  CHECK(b.d_ff == a.d_ff);
  CHECK(b.causal == a.causal);
  CHECK(back.tokens == t.ckpt.tokens);
  CHECK(back.note == t.ckpt.note);
  std::vector<std::vector<float>> saved, loaded;
  for_each_tensor(t.ckpt.params, [&](const std::string&, std::span<const float> x) { saved.emplace_back(x.begin(), x.end()); });
  for_each_tensor(back.params, [&](const std::string&, std::span<const float> x) { loaded.emplace_back(x.begin(), x.end()); });
  REQUIRE(loaded.size() == saved.size());
  for (size_t k = 0; k < saved.size(); ++k) {
    REQUIRE(loaded[k].size() == saved[k].size());
    CHECK(std::memcmp(loaded[k].data(), saved[k].data(), saved[k].size() * sizeof(float)) == 0);
  }
  // The model read back computes exactly what the saved one did.
  auto original = model_from(t.ckpt);
  auto reloaded = model_from(back);
  const Matrix before = original->forward(t.ids, t.batch);
  const Matrix after = reloaded->forward(t.ids, t.batch);
  CHECK((before.array() == after.array()).all());

  // The layout on disk: little-endian whatever the machine, one float32
  // per parameter, and the size the header records.
  const std::vector<uint8_t> bytes = read_bytes(path);
  CHECK(std::string(bytes.begin(), bytes.begin() + 8) == "SA07CKPT");
  CHECK(get_u32(bytes, kVersionAt) == 1u);
  CHECK(get_u32(bytes, kDModelAt) == 8u);
  const size_t params_at = param_count_offset(t.ckpt) + 8;
  const uint64_t count = uint64_t(parameter_count(t.ckpt.params));
  CHECK(count == expected_parameter_count(a));
  CHECK(bytes.size() == params_at + 4 * count + 4);
  CHECK(get_u32(bytes, params_at) == std::bit_cast<uint32_t>(t.ckpt.params.tok(0, 0)));
  CHECK(bytes == checkpoint_bytes(t.ckpt));

  // The reader's side: a text in the checkpoint's tokens, case ignored; an
  // unknown token is refused by name.
  CHECK(encode_text("2 sep 8", back.tokens) == std::vector<int64_t>{2, 1, 8});
  CHECK_THROWS_AS(encode_text("2 9", back.tokens), UsageError);
  CHECK_THROWS_WITH(encode_text("2 9", back.tokens), Catch::Contains("unknown token '9'"));
}

TEST_CASE("checkpoint: a missing, empty, truncated or extended file is refused", "[ch07][checkpoint]") {
  const Trained t = trained_model();
  const std::vector<uint8_t> good = good_bytes(t);
  // CheckpointError is a UsageError: run_program turns it into one line
  // and exit status 2.
  STATIC_REQUIRE(std::is_base_of_v<UsageError, CheckpointError>);
  CHECK_THROWS_WITH(load_checkpoint(scratch("does-not-exist.ckpt").string()), Catch::Contains("no such file"));
  require_refused("empty.ckpt", {}, "empty");
  // Cut inside the magic, inside the header, inside the tokens, inside the
  // parameters, and just before the end.
  for (size_t keep : {size_t(3), size_t(20), param_count_offset(t.ckpt) - 2, good.size() / 2, good.size() - 1}) {
    require_refused(fmt::format("cut-{}.ckpt", keep), std::vector<uint8_t>(good.begin(), good.begin() + int64_t(keep)),
                    "truncated");
  }
  std::vector<uint8_t> longer = good;
  longer.insert(longer.end(), {0, 0, 0, 0});
  require_refused("longer.ckpt", longer, "appended");
}

TEST_CASE("checkpoint: a flipped bit anywhere is caught by the CRC-32", "[ch07][checkpoint]") {
  const Trained t = trained_model();
  const std::vector<uint8_t> good = good_bytes(t);
  CHECK(crc32(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>("123456789"), 9)) == 0xCBF43926u);
  // In the configuration, the note, a token, the parameters (first, middle,
  // last byte) and the stored checksum itself.
  const size_t count_at = param_count_offset(t.ckpt);
  for (size_t at : {kHeadsAt, kNoteAt + 6, count_at - 1, count_at + 8, good.size() / 2, good.size() - 5,
                    good.size() - 1}) {
    std::vector<uint8_t> bad = good;
    bad[at] ^= 0x10;
    require_refused(fmt::format("flip-{}.ckpt", at), bad, "corrupted");
  }
}

TEST_CASE("checkpoint: another file type or format version is refused", "[ch07][checkpoint]") {
  const Trained t = trained_model();
  std::vector<uint8_t> png = good_bytes(t);
  const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  std::copy(std::begin(signature), std::end(signature), png.begin());
  require_refused("png.ckpt", png, "not a chapter 7 checkpoint");
  std::vector<uint8_t> v2 = good_bytes(t);
  put_u32(v2, kVersionAt, 2);
  reseal(v2);
  require_refused("version2.ckpt", v2, "format version 2");
}

TEST_CASE("checkpoint: fields that disagree with each other or with the file length are refused",
          "[ch07][checkpoint]") {
  const Trained t = trained_model();
  const std::vector<uint8_t> good = good_bytes(t);
  const size_t count_at = param_count_offset(t.ckpt);
  SECTION("a configuration that implies another number of parameters") {
    std::vector<uint8_t> b = good;
    put_u32(b, kDModelAt, 16);  // still divisible by the 2 heads
    reseal(b);
    require_refused("d-model.ckpt", b, "its configuration implies");
  }
  SECTION("... and a parameter count that follows it: the bytes are not there") {
    std::vector<uint8_t> b = good;
    put_u32(b, kDModelAt, 16);
    ModelConfig wider = t.ckpt.config;
    wider.d_model = 16;
    put_u64(b, count_at, expected_parameter_count(wider));
    reseal(b);
    require_refused("count.ckpt", b, "do not match the file length");
  }
  SECTION("a vocabulary larger than the file") {
    std::vector<uint8_t> b = good;
    put_u32(b, kVocabAt, 1u << 20);
    reseal(b);
    require_refused("vocab.ckpt", b, "do not match the file length");
  }
  SECTION("a note longer than the file") {
    std::vector<uint8_t> b = good;
    put_u32(b, kNoteAt, 0xFFFFFFF0u);
    reseal(b);
    require_refused("note.ckpt", b, "do not match the file length");
  }
  SECTION("a header that records another size than the file has") {
    std::vector<uint8_t> b = good;
    put_u64(b, kSizeAt, good.size() + 4);
    reseal(b);
    require_refused("size.ckpt", b, "truncated");
  }
  SECTION("impossible configurations") {
    std::vector<uint8_t> b = good;
    put_u32(b, kHeadsAt, 3);
    reseal(b);
    require_refused("heads.ckpt", b, "not divisible by 3 heads");
    b = good;
    put_u32(b, kDModelAt, 0);
    reseal(b);
    require_refused("zero.ckpt", b, "d_model = 0");
    b = good;
    put_u32(b, kCausalAt, 2);
    reseal(b);
    require_refused("causal.ckpt", b, "causal = 2");
  }
  SECTION("a parameter that is not a number") {
    std::vector<uint8_t> b = good;
    put_u32(b, count_at + 8 + 4 * 5, std::bit_cast<uint32_t>(std::numeric_limits<float>::quiet_NaN()));
    reseal(b);
    require_refused("nan.ckpt", b, "tensor tok holds a NaN");
  }
}

// ===========================================================================
// corpus.hpp
// ===========================================================================
namespace {

const std::string kBookCorpus = std::string(SA_SOURCE_DIR) + "/chapters/07-training/corpus.txt";

ModelConfig corpus_model(const Corpus& c, bool causal) {
  ModelConfig cfg;
  cfg.vocab = c.vocab.size();
  cfg.max_seq = c.max_len();
  cfg.d_model = 32;
  cfg.n_heads = 2;
  cfg.n_layers = 1;
  cfg.d_ff = 64;
  cfg.causal = causal;
  return cfg;
}

// `epochs` passes over the sentences `train`; the mean loss of each epoch.
std::vector<double> train_on_corpus(TinyTransformer& model, Generator& gen, const Corpus& c,
                                    const std::vector<int64_t>& train, int64_t epochs) {
  AdamConfig cfg;
  cfg.lr = 3e-3;
  Adam adam(model.params, model.grads, cfg);
  std::vector<double> losses;
  std::vector<int64_t> ids, targets;
  for (int64_t e = 0; e < epochs; ++e) {
    double sum = 0;
    const auto batches = corpus_batches(gen, c, train, 8);
    for (const auto& b : batches) {
      make_next_token_batch(c, b, ids, targets);
      sum += train_step(model, adam, ids, targets, int64_t(b.size())).loss;
    }
    losses.push_back(sum / double(batches.size()));
  }
  return losses;
}

}  // namespace

TEST_CASE("corpus: sentences, vocabulary, batches and next-token targets, and a causal model learns from them",
          "[ch07][corpus]") {
  // A corpus small enough to check by hand: comments and blank lines are
  // skipped, words lower-cased, "." ends every sentence, ids go by first
  // appearance (so "the" is 0 wherever it occurs).
  const Corpus small = parse_corpus("# a comment\n\nThe cat sat\n  a dog sat on the mat\n", "small");
  REQUIRE(small.sentences.size() == 2);
  CHECK(small.sentences[0] == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(small.sentences[1] == std::vector<int64_t>{4, 5, 2, 6, 0, 7, 3});
  CHECK(small.vocab.size() == 8);
  CHECK(small.vocab.word(3) == ".");
  CHECK(small.max_len() == 7);
  CHECK_THROWS_AS(parse_corpus("# nothing but a comment\n\n", "empty"), UsageError);
  CHECK_THROWS_AS(load_corpus("/nonexistent/corpus.txt"), UsageError);

  // The book's corpus.
  const Corpus c = load_corpus(kBookCorpus);
  REQUIRE(c.sentences.size() == 108);
  CHECK(c.sentences[0] == std::vector<int64_t>{0, 1, 2, 3, 0, 4, 5});  // the cat sat on the mat .
  CHECK(c.vocab.word(5) == ".");
  CHECK(c.max_len() == 8);
  for (const auto& s : c.sentences) CHECK(s.back() == 5);

  const CorpusSplit split = split_corpus(c, 8);
  CHECK(split.train.size() == 95);
  CHECK(split.held_out.size() == 13);
  CHECK(split.held_out.front() == 7);
  std::set<int64_t> all(split.train.begin(), split.train.end());
  all.insert(split.held_out.begin(), split.held_out.end());
  CHECK(all.size() == 108);

  // One epoch's batches: every training sentence once, one length a batch,
  // at most 8 sentences.
  Generator gen(710);
  const auto batches = corpus_batches(gen, c, split.train, 8);
  std::multiset<int64_t> seen;
  for (const auto& b : batches) {
    CHECK(b.size() <= 8);
    for (int64_t i : b) {
      seen.insert(i);
      CHECK(c.sentences[size_t(i)].size() == c.sentences[size_t(b[0])].size());
    }
  }
  CHECK(seen == std::multiset<int64_t>(split.train.begin(), split.train.end()));
  std::vector<int64_t> ids, targets;
  make_next_token_batch(c, std::vector<int64_t>{0}, ids, targets);
  CHECK(ids == std::vector<int64_t>{0, 1, 2, 3, 0, 4});
  CHECK(targets == std::vector<int64_t>{1, 2, 3, 0, 4, 5});
  const auto shorter = std::find_if(c.sentences.begin(), c.sentences.end(),
                                    [&](const auto& s) { return s.size() != c.sentences[0].size(); });
  REQUIRE(shorter != c.sentences.end());
  const std::vector<int64_t> mixed{0, int64_t(shorter - c.sentences.begin())};
  CHECK_THROWS_AS(make_next_token_batch(c, mixed, ids, targets), std::invalid_argument);

  // The lookup-table baseline, by hand: trained on "a b c", "a b c",
  // "a b d", asked about "a b d". Bigram: after a -> b (right), after b -> c
  // (2 to 1; wrong), after d -> . (right): 2 of 3. Unigram: b and . follow
  // 3 times each, b has the smaller id: b, b, b: 1 of 3.
  const Corpus abc = parse_corpus("a b c\na b c\na b d\n", "abc");
  const std::vector<int64_t> train3{0, 1, 2}, eval3{2};
  CHECK(ngram_accuracy(abc, train3, eval3, 1) == Approx(200.0 / 3.0));
  CHECK(ngram_accuracy(abc, train3, eval3, 0) == Approx(100.0 / 3.0));

  // And a causal model learns from these batches.
  Generator model_gen(711);
  TinyTransformer model(corpus_model(c, true), model_gen);
  const std::vector<double> losses = train_on_corpus(model, model_gen, c, split.train, 4);
  INFO(fmt::format("epoch losses {:.4f} ... {:.4f}", losses.front(), losses.back()));
  CHECK(losses.back() < 0.75 * losses.front());
}

TEST_CASE("corpus: a causal model predicts the same from a prefix as from the whole sentence, a bidirectional "
          "one reads ahead",
          "[ch07][corpus]") {
  const Corpus c = load_corpus(kBookCorpus);
  const CorpusSplit split = split_corpus(c, 8);
  for (const bool causal : {true, false}) {
    INFO((causal ? "causal" : "bidirectional"));
    Generator gen(712);
    TinyTransformer model(corpus_model(c, causal), gen);
    train_on_corpus(model, gen, c, split.train, 12);
    const Score whole = evaluate_next_token(model, c, split.held_out);
    const Score prefix = evaluate_prefixes(model, c, split.held_out);
    CHECK(whole.counted == prefix.counted);
    if (causal) {
      // Position t never sees later tokens: the same predictions. (The
      // losses agree to float32 rounding: other batch shapes, other sums.)
      CHECK(whole.correct == prefix.correct);
      CHECK(whole.loss == Approx(prefix.loss).epsilon(1e-5));
    } else {
      // With the next word in view, the loss is clearly lower than without
      // it (0.62 against 2.06 after these 12 epochs).
      INFO(fmt::format("held-out loss: whole sentence {:.4f}, prefix only {:.4f}", whole.loss, prefix.loss));
      CHECK(whole.loss < 0.8f * prefix.loss);
      CHECK(whole.correct > prefix.correct);
      // ... because its queries look at the next token.
      model.forward(c.sentences[0], 1);
      const Matrix P = head_weights(model, 0, 0, 0);
      CHECK(next_token_weight(P) > 2.0 / double(c.sentences[0].size()));
    }
  }
}
