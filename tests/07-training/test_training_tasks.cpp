// Hidden suite of chapter 7, part 3: checkpoints (checkpoint.hpp) and task
// 2's corpus (corpus.hpp).
//
// Checkpoints are tested on a model that has *trained* a few Adam steps,
// which is why these tests need the chapter's backward passes: training
// moves every tensor off its initial value, LayerNorm's gamma = 1 and
// beta = 0 included, so a reader that skipped or swapped a tensor could not
// pass the round trip by luck. Every failure case writes a good checkpoint
// (a safetensors file) to a temporary file, damages it the way a disk, a
// copy, a mix-up or a careless edit would, and expects one CheckpointError
// (a UsageError: the programs print it as one line and exit with status 2)
// that names the problem. The edits that a CRC-32 would catch first are
// resealed with a fresh CRC-32 so that the later checks are reached.
// (tests/tooling/checkpoint_fuzz.cpp tries thousands of random damages.)
#include "07-training/analysis.hpp"
#include "07-training/checkpoint.hpp"
#include "07-training/corpus.hpp"
#include "07-training/model.hpp"
#include "07-training/reversal.hpp"
#include "support/scratch.hpp"

#include "sa/cli.hpp"
#include "sa/paths.hpp"
#include "sa/rng.hpp"

#include "support/catch.hpp"
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

using namespace sa;
namespace fs = std::filesystem;
using json = nlohmann::json;

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
  // (A crash in the reader's forward or backward passes says which run.)
  INFO("3 Adam steps of a TinyTransformer (d_model 8, 2 heads, 2 layers) on reversal batches of 4, the model the "
       "checkpoint tests save");
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
  return sa::test::scratch_dir("sa_test_ch07") / name;
}

std::vector<uint8_t> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_bytes(const fs::path& p, const std::vector<uint8_t>& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

uint64_t get_u64(const std::vector<uint8_t>& b, size_t at) {
  uint64_t x = 0;
  for (size_t k = 0; k < 8; ++k) x |= uint64_t(b.at(at + k)) << (8 * k);
  return x;
}
void put_u64(std::vector<uint8_t>& b, size_t at, uint64_t x) {
  for (size_t k = 0; k < 8; ++k) b.at(at + k) = uint8_t(x >> (8 * k));
}

// A checkpoint file taken apart: its header (the JSON text) and its data.
struct Parts {
  std::string header;
  std::vector<uint8_t> data;
};

Parts split(const std::vector<uint8_t>& file) {
  const uint64_t n = get_u64(file, 0);
  Parts p;
  p.header.assign(file.begin() + 8, file.begin() + 8 + int64_t(n));
  p.data.assign(file.begin() + 8 + int64_t(n), file.end());
  return p;
}

// ... and put together again, with the header length of the header given.
std::vector<uint8_t> join(const std::string& header, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> file(8);
  put_u64(file, 0, header.size());
  file.insert(file.end(), header.begin(), header.end());
  file.insert(file.end(), data.begin(), data.end());
  return file;
}

// The file with its header edited as JSON by `edit`, then its metadata
// CRC-32 recomputed (and the data's, from `data`, when `data_crc` is set),
// as a deliberate edit would: only the consistency checks can catch it.
template <class Edit>
std::vector<uint8_t> edited(const std::vector<uint8_t>& file, Edit edit, bool reseal = true) {
  Parts p = split(file);
  json header = json::parse(p.header);
  edit(header, p.data);
  if (reseal) {
    json& meta = header["__metadata__"];
    meta["crc32"] = fmt::format("{:08x}", crc32(p.data));
    std::map<std::string, std::string> m;
    for (auto it = meta.begin(); it != meta.end(); ++it)
      if (it->is_string()) m[it.key()] = it->get<std::string>();
    meta["metadata_crc32"] = fmt::format("{:08x}", detail::metadata_crc(m));
  }
  return join(header.dump(), p.data);
}

// Writes `bytes` to a file and expects loading it to fail with a one-line
// message containing `expected`; the bytes in memory get the same verdict.
void require_refused(const std::string& file, const std::vector<uint8_t>& bytes, const std::string& expected) {
  const fs::path p = scratch(file);
  write_bytes(p, bytes);
  INFO("damaged file " << file << ", expecting: " << expected);
  REQUIRE_THROWS_AS(load_checkpoint(p.string()), CheckpointError);
  REQUIRE_THROWS_WITH(load_checkpoint(p.string()), sa::test::ContainsText(expected));
  REQUIRE_THROWS_WITH(parse_checkpoint(bytes, p.string()), sa::test::ContainsText(expected));
  try {
    load_checkpoint(p.string());
  } catch (const CheckpointError& e) {
    const std::string what = e.what();
    CHECK(what.find('\n') == std::string::npos);
    CHECK(what.find('\x1b') == std::string::npos);
  }
}

std::vector<uint8_t> good_bytes(const Trained& t) { return checkpoint_bytes(t.ckpt); }

// Where `text` first occurs in the file (a string of the header).
size_t offset_of(const std::vector<uint8_t>& file, const std::string& text) {
  const auto it = std::search(file.begin(), file.end(), text.begin(), text.end());
  REQUIRE(it != file.end());
  return size_t(it - file.begin());
}

std::vector<std::string> leftovers(const fs::path& dir, const std::string& name) {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename().string().rfind("." + name, 0) == 0) found.push_back(entry.path().string());
  return found;
}

}  // namespace

// ===========================================================================
// checkpoint.hpp
// ===========================================================================
TEST_CASE("checkpoint: save, load: the same configuration, tokens and parameters bit for bit, the same logits",
          "[ch07][checkpoint]") {
  const Trained t = trained_model();
  // Training moved LayerNorm's parameters off 1 and 0.
  CHECK(t.ckpt.params.blocks[0].ln1.gamma != RowVector::Ones(t.ckpt.config.d_model));
  const fs::path path = scratch("roundtrip.safetensors");
  save_checkpoint(path.string(), t.ckpt);
  CHECK(leftovers(path.parent_path(), "roundtrip.safetensors").empty());  // written aside, then renamed

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

  // The layout on disk, a safetensors file: an 8-byte little-endian header
  // length (a multiple of 8), a JSON header, the float32 data.
  const std::vector<uint8_t> bytes = read_bytes(path);
  CHECK(bytes == checkpoint_bytes(t.ckpt));
  const uint64_t n = get_u64(bytes, 0);
  CHECK(n % 8 == 0);
  REQUIRE(n < bytes.size());
  CHECK(bytes[8] == '{');
  const Parts parts = split(bytes);
  const json header = json::parse(parts.header);
  const json& meta = header.at("__metadata__");
  CHECK(meta.at("format") == "sa07-checkpoint");
  CHECK(meta.at("version") == "1");
  CHECK(meta.at("vocab") == "9");
  CHECK(meta.at("d_model") == "8");
  CHECK(meta.at("n_heads") == "2");
  CHECK(meta.at("causal") == "true");
  CHECK(meta.at("tokens") == "PAD SEP 2 3 4 5 6 7 8");
  CHECK(meta.at("note") == t.ckpt.note);
  CHECK(meta.at("crc32") == fmt::format("{:08x}", crc32(parts.data)));
  for (const auto& [key, value] : meta.items()) CHECK(value.is_string());
  // One entry per tensor, under for_each_tensor's names, in its order,
  // contiguous: the data is the tensors one after the other.
  const uint64_t count = uint64_t(parameter_count(t.ckpt.params));
  CHECK(count == expected_parameter_count(a));
  CHECK(parts.data.size() == 4 * count);
  uint64_t at = 0;
  size_t tensors = 0;
  for_each_tensor(t.ckpt.params, [&](const std::string& name, std::span<const float> x) {
    INFO("tensor " << name);
    REQUIRE(header.contains(name));
    const json& e = header.at(name);
    CHECK(e.at("dtype") == "F32");
    CHECK(e.at("data_offsets") == json::array({at, at + 4 * x.size()}));
    uint32_t first = 0;
    for (size_t k = 0; k < 4; ++k) first |= uint32_t(parts.data.at(at + k)) << (8 * k);
    CHECK(first == std::bit_cast<uint32_t>(x[0]));  // little-endian float32
    at += 4 * x.size();
    ++tensors;
  });
  CHECK(header.size() == tensors + 1);
  CHECK(header.at("tok").at("shape") == json::array({9, 8}));
  CHECK(header.at("blocks.0.qkv.W").at("shape") == json::array({8, 24}));
  CHECK(header.at("blocks.1.fc1.b").at("shape") == json::array({16}));
  CHECK(header.at("head.W").at("shape") == json::array({8, 9}));
  // Boost.CRC computes zlib's CRC-32.
  CHECK(crc32(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>("123456789"), 9)) == 0xCBF43926u);

  // The reader's side: a text in the checkpoint's tokens, case ignored; an
  // unknown token is refused by name.
  CHECK(encode_text("2 sep 8", back.tokens) == std::vector<int64_t>{2, 1, 8});
  CHECK_THROWS_AS(encode_text("2 9", back.tokens), UsageError);
  CHECK_THROWS_WITH(encode_text("2 9", back.tokens), sa::test::ContainsText("unknown token '9'"));
  // As --text: the option is named, and a default the reader never typed is said to be one.
  CHECK_THROWS_WITH(encode_text_option("2 9", back.tokens, true),
                    sa::test::ContainsText("--text: unknown token '9'"));
  CHECK_THROWS_WITH(encode_text_option("the cat", back.tokens, false),
                    sa::test::ContainsText("--text, left at its default 'the cat': unknown token 'the'"));
}

TEST_CASE("checkpoint: saves never share a temporary file, and a failed save leaves none behind",
          "[ch07][checkpoint]") {
  const Trained t = trained_model();
  const fs::path dir = scratch("saves");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path path = dir / "same.safetensors";
  // Eight threads saving to the same file at once: every save succeeds, and
  // what is left is one whole checkpoint.
  std::vector<std::thread> threads;
  std::atomic<int> failures = 0;
  for (int k = 0; k < 8; ++k)
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i) try {
          save_checkpoint(path.string(), t.ckpt);
        } catch (const std::exception&) {
          ++failures;
        }
    });
  for (std::thread& th : threads) th.join();
  CHECK(failures == 0);
  CHECK(read_bytes(path) == good_bytes(t));
  CHECK(leftovers(dir, "same.safetensors").empty());
  // A checkpoint saved over a folder: the rename fails, the temporary file
  // written next to it is removed.
  const fs::path folder = dir / "a-folder.safetensors";
  fs::create_directories(folder / "inside");
  CHECK_THROWS_WITH(save_checkpoint(folder.string(), t.ckpt), sa::test::ContainsText("cannot rename"));
  CHECK(leftovers(dir, "a-folder.safetensors").empty());
  // A folder that cannot be created (a file is in the way).
  write_bytes(dir / "a-file", {1, 2, 3});
  CHECK_THROWS_WITH(save_checkpoint((dir / "a-file" / "x.safetensors").string(), t.ckpt),
                    sa::test::ContainsText("cannot create the folder"));
  // What could not be read back is not written: a NaN, a token with a space.
  Checkpoint bad = t.ckpt;
  bad.params.head.b->coeffRef(0) = std::numeric_limits<float>::infinity();
  CHECK_THROWS_AS(save_checkpoint((dir / "nan.safetensors").string(), bad), std::invalid_argument);
  bad = t.ckpt;
  bad.tokens[3] = "two words";
  CHECK_THROWS_WITH(checkpoint_bytes(bad), sa::test::ContainsText("white space"));
  CHECK_FALSE(fs::exists(dir / "nan.safetensors"));
  CHECK(leftovers(dir, "nan.safetensors").empty());
}

TEST_CASE("checkpoint: each save checks its own file before the rename, and removes what killed saves left",
          "[ch07][checkpoint]") {
  const Trained t = trained_model();
  Checkpoint other = t.ckpt;
  other.params.head.b->coeffRef(0) += 1.0f;
  other.note = "another run";
  const fs::path dir = scratch("own-file");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path path = dir / "race.safetensors";
  // Two runs with different models save to one name at once, each reading
  // back what it wrote: no check ever sees the other run's file.
  std::atomic<int> wrong = 0, failures = 0;
  std::vector<std::thread> threads;
  for (int k = 0; k < 6; ++k)
    threads.emplace_back([&, k] {
      const Checkpoint& mine = k % 2 ? other : t.ckpt;
      const std::vector<uint8_t> expected = checkpoint_bytes(mine);
      for (int i = 0; i < 5; ++i) try {
          save_checkpoint(path.string(), mine, [&](const std::string& written) {
            if (read_bytes(written) != expected) ++wrong;
          });
        } catch (const std::exception&) {
          ++failures;
        }
    });
  for (std::thread& th : threads) th.join();
  CHECK(wrong == 0);
  CHECK(failures == 0);
  const std::vector<uint8_t> last = read_bytes(path);
  CHECK((last == checkpoint_bytes(t.ckpt) || last == checkpoint_bytes(other)));
  CHECK(leftovers(dir, "race.safetensors").empty());

  // A check that fails stops the save: the earlier file stays, nothing is left aside.
  CHECK_THROWS_WITH(save_checkpoint(path.string(), t.ckpt,
                                    [](const std::string&) { throw std::runtime_error("read back differs"); }),
                    sa::test::ContainsText("read back differs"));
  CHECK(read_bytes(path) == last);
  CHECK(leftovers(dir, "race.safetensors").empty());

  // Ctrl-C in the middle of a save (here while its check reads the file
  // back) ends the run as Ctrl-C does, and removes its temporary file: the
  // earlier file stays, nothing is left aside (it stayed, hidden and as big
  // as the checkpoint, until a later save of the same name).
  const pid_t interrupted = ::fork();
  if (interrupted == 0) {
    std::signal(SIGINT, SIG_DFL);  // a program's own disposition, not the suite's handler
    save_checkpoint(path.string(), t.ckpt, [](const std::string&) { std::raise(SIGINT); });
    ::_exit(0);
  }
  REQUIRE(interrupted > 0);
  int status = 0;
  ::waitpid(interrupted, &status, 0);
  CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGINT));
  CHECK(read_bytes(path) == last);
  CHECK(leftovers(dir, "race.safetensors").empty());

  // Temporary files of a killed save (its process is gone) are removed by
  // the next save of the same name; a running process's, and other names', stay.
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  REQUIRE(child > 0);
  ::waitpid(child, nullptr, 0);  // now no process has this id
  const fs::path stale = dir / fmt::format(".race.safetensors.tmp-{}-a1B2c3", child);
  const fs::path live = dir / fmt::format(".race.safetensors.tmp-{}-d4E5f6", ::getpid());
  const fs::path unrelated = dir / fmt::format(".other.safetensors.tmp-{}-a1B2c3", child);
  // (and a number that is no process id, more digits than a long holds:
  // no save's file, it stays, and the save goes on)
  const fs::path no_pid = dir / ".race.safetensors.tmp-99999999999999999999-a1B2c3";
  for (const fs::path& f : {stale, live, unrelated, no_pid}) write_bytes(f, {1, 2, 3});
  save_checkpoint(path.string(), t.ckpt);
  CHECK_FALSE(fs::exists(stale));
  CHECK(fs::exists(live));
  CHECK(fs::exists(unrelated));
  CHECK(fs::exists(no_pid));
  CHECK(read_bytes(path) == checkpoint_bytes(t.ckpt));
}

TEST_CASE("checkpoint: a folder or a pipe under a checkpoint's name, or too little room, is refused before training",
          "[ch07][checkpoint]") {
  const Trained t = trained_model();
  const fs::path dir = scratch("targets");
  fs::remove_all(dir);
  fs::create_directories(dir / "taken.safetensors");
  const uint64_t bound = checkpoint_size_bound(t.ckpt.config, 200);
  INFO("checkpoint_size_bound " << bound << " against the real size " << good_bytes(t).size());
  CHECK(bound >= good_bytes(t).size());
  CHECK(bound <= 2 * good_bytes(t).size() + 16384);
  CHECK_THROWS_WITH(require_checkpoint_targets("--checkpoint-dir", {{(dir / "taken.safetensors").string(), bound}}),
                    sa::test::ContainsText("taken.safetensors' is a folder"));
  REQUIRE(::mkfifo((dir / "pipe.safetensors").c_str(), 0600) == 0);
  CHECK_THROWS_WITH(require_checkpoint_targets("--checkpoint-dir", {{(dir / "pipe.safetensors").string(), bound}}),
                    sa::test::ContainsText("is not a regular file"));
  CHECK_NOTHROW(require_checkpoint_targets("--checkpoint-dir", {{(dir / "free.safetensors").string(), bound}}));
  // Names the save could not write, each found only then, after the
  // training: one whose temporary file (".NAME.tmp-PID-XXXXXX") would be
  // longer than a folder entry takes, one longer itself, one under a loop of
  // symbolic links.
  const std::string long_name = std::string(240, 'n') + ".safetensors";
  CHECK_THROWS_WITH(require_checkpoint_targets("--checkpoint", {{(dir / long_name).string(), bound}}),
                    sa::test::ContainsText("has 252 bytes; at most") && sa::test::ContainsText("for the temporary file the save writes first"));
  CHECK_THROWS_WITH(require_checkpoint_targets("--checkpoint", {{(dir / std::string(300, 'n')).string(), bound}}),
                    sa::test::ContainsText("File name too long"));
  fs::create_symlink("loop-b", dir / "loop-a");
  fs::create_symlink("loop-a", dir / "loop-b");
  CHECK_THROWS_WITH(require_checkpoint_targets("--checkpoint", {{(dir / "loop-a" / "m.safetensors").string(), bound}}),
                    sa::test::ContainsText("Too many levels of symbolic links"));
  // The room rule: the targets together and 1 MiB to spare.
  CHECK(checkpoint_room_problem("d", 200 * 1024, 700 * 1024).find("has 200.0 KiB free, but the checkpoints this run "
                                                                 "saves need about 700.0 KiB") != std::string::npos);
  CHECK(checkpoint_room_problem("d", (1 << 20) + 700 * 1024, 700 * 1024).empty());
  CHECK_FALSE(checkpoint_room_problem("d", (1 << 20) + 700 * 1024 - 1, 700 * 1024).empty());
}

TEST_CASE("checkpoint: a missing, empty, truncated or extended file is refused", "[ch07][checkpoint]") {
  const Trained t = trained_model();
  const std::vector<uint8_t> good = good_bytes(t);
  const size_t n = size_t(get_u64(good, 0));
  // CheckpointError is a UsageError: run_program turns it into one line
  // and exit status 2.
  STATIC_REQUIRE(std::is_base_of_v<UsageError, CheckpointError>);
  CHECK_THROWS_WITH(load_checkpoint(scratch("does-not-exist.safetensors").string()), sa::test::ContainsText("no such file"));
  CHECK_THROWS_WITH(load_checkpoint(scratch("").string()), sa::test::ContainsText("is a folder"));
  require_refused("empty.safetensors", {}, "empty");
  // Cut inside the header length, inside the header, inside the data, and
  // just before the end.
  for (size_t keep : {size_t(3), size_t(8), 8 + n / 2, 8 + n + 10, good.size() / 2 + n / 2, good.size() - 1}) {
    require_refused(fmt::format("cut-{}.safetensors", keep),
                    std::vector<uint8_t>(good.begin(), good.begin() + int64_t(keep)), "truncated");
  }
  std::vector<uint8_t> longer = good;
  longer.insert(longer.end(), {0, 0, 0, 0});
  require_refused("longer.safetensors", longer, "appended");
  // Not a regular file: a pipe would make the reader wait forever.
  const fs::path fifo = scratch("pipe.safetensors");
  fs::remove(fifo);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH(load_checkpoint(fifo.string()), sa::test::ContainsText("not a regular file"));
  fs::remove(fifo);
}

TEST_CASE("checkpoint: a flipped bit in the configuration, a token, the note or the data is caught by a CRC-32",
          "[ch07][checkpoint]") {
  const Trained t = trained_model();
  const std::vector<uint8_t> good = good_bytes(t);
  const size_t data_at = 8 + size_t(get_u64(good, 0));
  // n_heads 2 -> 3 ('2' ^ 0x01), a letter of a token and of the note, the
  // stored CRC-32s themselves; then the data: first, middle and last byte.
  for (size_t at : {offset_of(good, "\"n_heads\":\"2\"") + 11, offset_of(good, "PAD SEP") + 5,
                    offset_of(good, "Adam steps") + 1, offset_of(good, "\"metadata_crc32\":\"") + 20,
                    offset_of(good, "\"crc32\":\"") + 10, data_at, data_at + (good.size() - data_at) / 2,
                    good.size() - 1}) {
    std::vector<uint8_t> bad = good;
    bad[at] ^= 0x01;
    require_refused(fmt::format("flip-{}.safetensors", at), bad, "corrupted");
  }
  // The metadata's message names what it can: a key the book does not write
  // (another writer added it without sealing again), or else a changed value.
  require_refused("added-key.safetensors",
                  edited(good, [](json& h, auto&) { h["__metadata__"]["author"] = "someone"; }, false),
                  "it holds 'author', which the book does not write; a writer that adds metadata must record the "
                  "CRC-32 of all of it again");
  require_refused("changed-note.safetensors",
                  edited(good, [](json& h, auto&) { h["__metadata__"]["note"] = "edited"; }, false),
                  "one of its values was changed after it was saved");
}

TEST_CASE("checkpoint: another file type, another safetensors file or another format version is refused",
          "[ch07][checkpoint]") {
  const Trained t = trained_model();
  const std::vector<uint8_t> good = good_bytes(t);
  std::vector<uint8_t> png = good;
  const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  std::copy(std::begin(signature), std::end(signature), png.begin());
  require_refused("png.safetensors", png, "not a safetensors checkpoint");
  require_refused("png.safetensors", png, "\\x89PNG\\r\\n\\x1a\\n");  // the bytes shown, escaped
  // The book's former format.
  std::vector<uint8_t> old = good;
  std::memcpy(old.data(), "SA07CKPT", 8);
  require_refused("old.ckpt", old, "former format");
  // A safetensors file of someone else: no __metadata__, or another format.
  require_refused("foreign.safetensors", edited(good, [](json& h, auto&) { h.erase("__metadata__"); }, false),
                  "not a chapter 7 checkpoint");
  require_refused("pt.safetensors", edited(good, [](json& h, auto&) { h["__metadata__"]["format"] = "pt"; }),
                  "its format is 'pt'");
  require_refused("version2.safetensors", edited(good, [](json& h, auto&) { h["__metadata__"]["version"] = "2"; }),
                  "format version '2'");
}

TEST_CASE("checkpoint: a header length, JSON or tensor entries that disagree with the file are refused",
          "[ch07][checkpoint]") {
  const Trained t = trained_model();
  const std::vector<uint8_t> good = good_bytes(t);
  const Parts parts = split(good);
  SECTION("header lengths: absurd, past the end, too short") {
    std::vector<uint8_t> b = good;
    put_u64(b, 0, uint64_t(1) << 40);  // refused before 1 TB is allocated or read
    require_refused("huge-header.safetensors", b, "more than the limit of 16 MiB");
    put_u64(b, 0, good.size());
    require_refused("long-header.safetensors", b, "truncated");
    put_u64(b, 0, get_u64(good, 0) - 9);
    require_refused("short-header.safetensors", b, "not valid JSON");
    put_u64(b, 0, 0);
    require_refused("zero-header.safetensors", b, "header length is 0");
  }
  SECTION("JSON that is not a safetensors header") {
    require_refused("text.safetensors", join("hello, world    ", parts.data), "does not begin with '{'");
    require_refused("json.safetensors", join("{\"a\": [1, 2,]}  ", parts.data), "not valid JSON");
    require_refused("deep.safetensors", join("{\"a\": [[[[1]]]]}", parts.data), "nests deeper");
    std::string twice = parts.header;
    twice.insert(1, "\"tok\":{},");
    require_refused("twice-json.safetensors", join(twice, parts.data), "'tok' twice");
    std::string raw = parts.header;  // a raw escape code in a token: JSON refuses it
    raw.replace(raw.find("PAD"), 1, "\x1b");
    require_refused("raw-escape.safetensors", join(raw, parts.data), "not valid JSON");
    raw = parts.header;  // a byte that is not UTF-8
    raw.replace(raw.find("PAD"), 1, "\xff");
    require_refused("latin1.safetensors", join(raw, parts.data), "not valid JSON");
  }
  SECTION("tensor entries") {
    const auto refused = [&](const std::string& file, auto edit, const std::string& expected) {
      require_refused(file, edited(good, edit), expected);
    };
    refused("f16.safetensors", [](json& h, auto&) { h["tok"]["dtype"] = "F16"; }, "tensor 'tok' has dtype 'F16'");
    // (json::array, not a bare braced list: assigning a braced list over a
    // parsed value leaks that value when clang 14 compiles it, and the
    // sanitizers' build of CI reports the leak.)
    refused("shape.safetensors", [](json& h, auto&) { h["tok"]["shape"] = json::array({8, 9}); },
            "has shape [8, 9], but");
    refused("shape3.safetensors", [](json& h, auto&) { h["tok"]["shape"] = json::array({9, 8, 1}); },
            "has shape [9, 8, 1], but");
    refused("negative.safetensors", [](json& h, auto&) { h["tok"]["shape"] = json::array({-9, 8}); },
            "other than a size");
    refused("field.safetensors", [](json& h, auto&) { h["tok"]["bias"] = 0; }, "unknown field 'bias'");
    refused("no-offsets.safetensors", [](json& h, auto&) { h["tok"].erase("data_offsets"); }, "has no data_offsets");
    refused("offsets.safetensors", [](json& h, auto&) { h["tok"]["data_offsets"] = json::array({0}); },
            "not two byte offsets");
    refused("missing.safetensors", [](json& h, auto&) { h.erase("head.b"); }, "but its configuration implies");
    refused("renamed.safetensors", [](json& h, auto&) {
      h["head.bias"] = h["head.b"];
      h.erase("head.b");
    }, "tensor 'head.bias', which its configuration does not have");
    refused("outside.safetensors", [](json& h, auto& data) {
      h["head.b"]["data_offsets"] = json::array({data.size(), data.size() + 36});
    }, "do not lie inside");
    refused("past-2^64.safetensors", [](json& h, auto&) {
      h["head.b"]["data_offsets"] = json::array({std::numeric_limits<uint64_t>::max() - 3, 32});
    }, "do not lie inside");
    refused("size.safetensors", [](json& h, auto&) { h["tok"]["data_offsets"] = json::array({0, 284}); },
            "hold 284 bytes");
    refused("overlap.safetensors", [](json& h, auto&) { h["pos"]["data_offsets"] = json::array({0, 224}); },
            "tensors 'pos' and 'tok' overlap");
    // The last tensor moved 4 bytes on, into 4 bytes appended to the data:
    // a hole before it.
    refused("hole.safetensors", [](json& h, auto& data) {
      const uint64_t end = data.size();
      data.insert(data.end(), {0, 0, 0, 0});
      h["head.b"]["data_offsets"] = json::array({end - 36 + 4, end + 4});
    }, "4 bytes of data before tensor 'head.b' belong to no tensor");
    // Two tensors of one shape swapping places: the CRC-32 of the tensors in
    // their order catches it.
    require_refused("swapped.safetensors", edited(good, [](json& h, auto&) {
      std::swap(h["blocks.0.ln1.gamma"]["data_offsets"], h["blocks.0.ln2.gamma"]["data_offsets"]);
    }), "corrupted");
  }
}

TEST_CASE("checkpoint: a configuration, a vocabulary or values that cannot be a model are refused",
          "[ch07][checkpoint]") {
  const Trained t = trained_model();
  const std::vector<uint8_t> good = good_bytes(t);
  const auto meta = [&](const std::string& key, const std::string& value) {
    return edited(good, [&](json& h, auto&) { h["__metadata__"][key] = value; });
  };
  require_refused("d-model.safetensors", meta("d_model", "16"), "its configuration implies");
  require_refused("heads.safetensors", meta("n_heads", "3"), "not divisible by 3 heads");
  require_refused("zero.safetensors", meta("d_model", "0"), "d_model = '0'");
  require_refused("plus.safetensors", meta("vocab", "+9"), "vocab = '+9'");
  require_refused("huge.safetensors", meta("vocab", "99999999999"), "vocab = '99999999999'");
  require_refused("causal.safetensors", meta("causal", "2"), "causal = '2'");
  require_refused("vocab.safetensors", meta("vocab", "1048576"), "its vocabulary holds 9 tokens, but vocab = 1048576");
  require_refused("tokens.safetensors", meta("tokens", "PAD SEP 2 3 4 5 6 7"), "holds 8 tokens");
  require_refused("twice-token.safetensors", meta("tokens", "PAD SEP 2 3 4 5 6 7 2"), "tokens 2 and 8 are both '2'");
  require_refused("space.safetensors", meta("tokens", "PAD SEP 2 3 4 5 6 7 "), "token 8 ('') is empty");
  require_refused("number.safetensors", edited(good, [](json& h, auto&) { h["__metadata__"]["vocab"] = 9; }),
                  "'vocab' is not a string");
  // A control character in a stored string never reaches the terminal:
  // the message shows it escaped.
  require_refused("escape.safetensors", meta("tokens", "PAD SEP 2 3 \x1b[31m 5 6 7 8"),
                  "token 4 ('\\x1b[31m') holds white space or a control character");
  require_refused("c1.safetensors", meta("tokens", "PAD SEP 2 3 \xc2\x9b""31m 5 6 7 8"), "'\\u009b31m'");
  // Values: a NaN, with both CRC-32s valid.
  require_refused("nan.safetensors", edited(good, [](json&, auto& data) {
    const uint32_t nan = std::bit_cast<uint32_t>(std::numeric_limits<float>::quiet_NaN());
    for (size_t k = 0; k < 4; ++k) data[20 + k] = uint8_t(nan >> (8 * k));
  }), "tensor tok holds a NaN or infinite value (at index 5)");
  require_refused("inf.safetensors", edited(good, [](json&, auto& data) {
    const size_t at = data.size() - 4;  // the last value of head.b
    data[at] = 0, data[at + 1] = 0, data[at + 2] = 0x80, data[at + 3] = 0xff;
  }), "tensor head.b holds a NaN or infinite value (at index 8)");
  // Edits that change nothing the model needs load: other metadata, the
  // keys in another order, spaces.
  {
    const std::vector<uint8_t> b = edited(good, [](json& h, auto&) { h["__metadata__"]["extra"] = "kept"; });
    const fs::path p = scratch("extra.safetensors");
    write_bytes(p, b);
    const Checkpoint back = load_checkpoint(p.string());
    CHECK(back.tokens == t.ckpt.tokens);
    CHECK(checkpoint_bytes(back) == good);
  }

  // printable(): what a message shows of a stored string.
  CHECK(printable("a\x1b[2Jb\n\t\r\x7f") == "a\\x1b[2Jb\\n\\t\\r\\x7f");
  CHECK(printable("caf\xc3\xa9 \\ \xe2\x82\xac") == "caf\xc3\xa9 \\ \xe2\x82\xac");  // UTF-8 and backslashes kept
  CHECK(printable("\xc2\x9b\xff\xc3") == "\\u009b\\xff\\xc3");  // C1, a stray byte, a sequence cut short
  CHECK(printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");         // a surrogate is not UTF-8
  CHECK(printable("\xef\xbb\xbfthe") == "\\ufeffthe");              // a byte-order mark, invisible
  CHECK(printable(std::string(1000, 'x'), 10) == "xxxxxxxxxx...");
}

// ===========================================================================
// corpus.hpp
// ===========================================================================
namespace {

const std::string kBookCorpus = (source_dir() / "chapters/07-training/corpus.txt").string();

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
    INFO(fmt::format("training a TinyTransformer ({}) on the corpus, epoch {} of {}, batches of 8 sentences",
                     model.config().causal ? "causal" : "bidirectional", e + 1, epochs));
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
    INFO((causal ? "a causal model of the corpus" : "a bidirectional model of the corpus"));
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
