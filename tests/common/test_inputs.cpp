// Chapter 7's --corpus input (chapters/07-training/corpus.hpp): book code,
// not an exercise, so it is tested here and not in the chapter's hidden
// suite (whose untouched run must fail only with "not implemented yet").
#include "07-training/corpus.hpp"
#include "08-efficient-attention/steps.hpp"

#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

using namespace sa;
namespace fs = std::filesystem;

namespace {
fs::path scratch(const std::string& name) {
  const fs::path dir = fs::path(SA_BINARY_DIR) / "tests" / "scratch";
  fs::create_directories(dir);
  return dir / name;
}
}  // namespace

TEST_CASE("corpus: a folder, a pipe, a binary file and sizes beyond the limits are refused with one line",
          "[common][inputs]") {
  auto refused = [](const std::string& path) {
    try {
      load_corpus(path);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const fs::path dir = scratch("corpus-dir");
  fs::create_directories(dir);
  CHECK(refused(dir.string()) == "corpus '" + dir.string() + "' is not a regular file (a folder, a pipe or a device)");
  const fs::path fifo = scratch("corpus.fifo");
  fs::remove(fifo);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);  // opening it would block: it must be refused unopened
  CHECK(refused(fifo.string()).find("is not a regular file") != std::string::npos);
  const fs::path binary = scratch("corpus.bin");
  std::ofstream(binary, std::ios::binary) << std::string("the cat\0sat\n", 12);
  CHECK(refused(binary.string()) == "corpus '" + binary.string() + "' is not a text file (it holds control byte 0x00)");
  const fs::path huge = scratch("corpus-huge.txt");
  std::ofstream(huge) << std::string(kMaxCorpusBytes + 1, 'a');
  CHECK(refused(huge.string()).find("bytes; at most 1048576 (1 MiB)") != std::string::npos);
  std::string long_sentence;
  for (std::size_t i = 0; i <= kMaxSentenceWords; ++i) long_sentence += "w ";
  CHECK_THROWS_WITH(parse_corpus(long_sentence, "long"), "corpus 'long': sentence 1 has 33 words; at most 32");
  std::string many;
  for (std::size_t i = 0; i <= kMaxCorpusSentences; ++i) many += "a b\n";
  CHECK_THROWS_WITH(parse_corpus(many, "many"), "corpus 'many' has more than 10000 sentences");
}

TEST_CASE("chapter 8: a run whose tiles or operations pass the bounds, or a tile larger than seq_len, is refused "
          "before any work",
          "[common][inputs]") {
  using sa::ch8::check_work;
  sa::ch8::Options o;  // the defaults: seq_len 1024, d_k 64, block 128
  CHECK_NOTHROW(check_work(o));
  o.seq_len = 65536;
  o.block = 64;  // 1024 x 1024 tiles: exactly the bound
  CHECK_NOTHROW(check_work(o));
  o.block = 63;  // 1041 x 1041 tiles
  CHECK_THROWS_WITH(check_work(o), "--block 63 cuts seq_len 65536 into 1041 x 1041 tiles; at most 1048576 are "
                                   "allowed (use --block 64 or more)");
  o.block = 128;
  o.d_k = 65;  // 65536² · 65 > 2^38
  CHECK_THROWS_WITH(check_work(o), Catch::Matchers::StartsWith("--seq-len 65536 with --d-k 65 asks for"));
  o.d_k = 64;
  CHECK_NOTHROW(check_work(o));
  o.seq_len = 100;  // one tile of 128 would be the whole sequence: the naive computation
  CHECK_THROWS_WITH(check_work(o), "--block 128 is larger than --seq-len 100: one tile would hold the whole sequence, "
                                   "which is the naive computation (use --block 100 or less)");
  o.block = 100;
  CHECK_NOTHROW(check_work(o));
}

TEST_CASE("ModelConfig refuses a negative window and a window without the causal mask", "[common][inputs]") {
  ModelConfig cfg;
  cfg.window = -1;
  CHECK_THROWS_AS(cfg.validate(), std::invalid_argument);
  cfg.window = 3;
  cfg.causal = false;
  CHECK_THROWS_AS(cfg.validate(), std::invalid_argument);
}
