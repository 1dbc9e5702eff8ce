// Chapter 7's --corpus input (chapters/07-training/corpus.hpp): book code,
// not an exercise, so it is tested here and not in the chapter's hidden
// suite (whose untouched run must fail only with "not implemented yet").
#include "07-training/analysis.hpp"
#include "07-training/corpus.hpp"
#include "08-efficient-attention/steps.hpp"

#include <sys/stat.h>

#include "support/catch2_compat.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include "sa/paths.hpp"

using namespace sa;
namespace fs = std::filesystem;

namespace {
fs::path scratch(const std::string& name) {
  const fs::path dir = binary_dir() / "tests" / "scratch";
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
  std::ofstream(binary, std::ios::binary) << std::string("a b\nthe cat\0sat\n", 16);
  CHECK(refused(binary.string()) ==
        "corpus '" + binary.string() + "' is not a text file (it holds byte 0x00 on line 2; UTF-16? save it as UTF-8)");
  const fs::path huge = scratch("corpus-huge.txt");
  std::ofstream(huge) << std::string(kMaxCorpusBytes + 1, 'a');
  CHECK(refused(huge.string()).find("bytes; at most 1048576 (1 MiB)") != std::string::npos);
  // A file that exists but cannot be read (under /proc, where even root
  // gets EIO) is the reader's mistake: one line naming it, not the status 1
  // of libstdc++'s "basic_filebuf::underflow error reading the file".
  CHECK(refused("/proc/self/mem") == "corpus '/proc/self/mem': cannot read it (a read error)");
  std::string long_sentence;
  for (std::size_t i = 0; i <= kMaxSentenceWords; ++i) long_sentence += "w ";
  CHECK_THROWS_WITH(parse_corpus("# a comment\n\n" + long_sentence, "long"),
                    "corpus 'long', line 3: sentence 1 has 33 words; at most 32");
  std::string many;
  for (std::size_t i = 0; i <= kMaxCorpusSentences; ++i) many += "a b\n";
  CHECK_THROWS_WITH(parse_corpus(many, "many"), "corpus 'many' has more than 10000 sentences");
}

// A corpus refused for its encoding names the file and the line, when the
// file is read (a Latin-1 file once trained for 10 s and then failed to save).
TEST_CASE("corpus: text that is not UTF-8, control characters and Unicode spaces are refused naming file and line",
          "[common][inputs]") {
  const auto refused = [](const std::string& text) {
    try {
      parse_corpus(text, "c.txt");
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(refused("a b\ncaf\xe9 au lait\n") ==
        "corpus 'c.txt', line 2: byte 0xe9 at column 4 is not UTF-8 (a Latin-1 or Windows-1252 file? save it as UTF-8)");
  CHECK(refused("a\x7f b\n") == "corpus 'c.txt', line 1: control character 0x7f");              // DEL
  CHECK(refused("a b\n\nnext\xc2\x85line\n") == "corpus 'c.txt', line 3: control character U+0085");  // NEL
  CHECK(refused("a\x01" "b\n") == "corpus 'c.txt', line 1: control character 0x01");
  CHECK(refused("a\rb c\n") ==
        "corpus 'c.txt', line 1: a carriage return inside the line (save it with LF or CRLF line ends)");
  CHECK(refused("a\xc2\xa0" "b\n") ==
        "corpus 'c.txt', line 1: U+00A0 is a Unicode space or byte-order mark inside the text (use a plain space)");
  CHECK(refused("a b\n\xef\xbb\xbf" "c d\n") ==  // a byte-order mark anywhere but the start
        "corpus 'c.txt', line 2: U+FEFF is a Unicode space or byte-order mark inside the text (use a plain space)");
  // Overlong forms, surrogates and cut sequences are not UTF-8 either.
  CHECK(refused("\xc0\xaf\n").find("byte 0xc0 at column 1 is not UTF-8") != std::string::npos);
  CHECK(refused("\xed\xa0\x80\n").find("byte 0xed at column 1 is not UTF-8") != std::string::npos);
  CHECK(refused("ab\xe2\x82").find("byte 0xe2 at column 3 is not UTF-8") != std::string::npos);
  CHECK(refused("caf\xc3\xa9 na\xc3\xafve \xe2\x82\xac \xf0\x9f\x98\x80\n") == "accepted");
}

// A corpus word labels the matrices and figures of chapter 7 as a --text
// word does those of chapters 1 to 5: one too long is refused as the file is
// read (it trained, saved, and then failed drawing, exit 1).
TEST_CASE("corpus: a word too long to label a matrix is refused naming file and line", "[common][inputs]") {
  CHECK_THROWS_WITH(parse_corpus("the cat sat\nthe " + std::string(100, 'w') + " sat\n", "c.txt"),
                    "corpus 'c.txt', line 2: the word 'wwwwwwwwwwwwwwwwwwwwwwww...' has 100 characters; at most 64 "
                    "(words label the rows and columns of every matrix and figure)");
}

// Chapter 7's --text and 07-training-analyze's are read as the chapters'
// --text is: the byte-order mark an editor saves in front is dropped (it
// made the first word unknown, shown with the mark invisible in it), and
// bytes that are not UTF-8 or control characters are refused by name
// (they were printed raw inside "unknown token '...'").
TEST_CASE("encode_text: a --text with a byte-order mark, bytes that are not UTF-8 or control characters",
          "[common][inputs]") {
  const std::vector<std::string> vocab = {"the", "cat", "sat"};
  CHECK(encode_text("\xEF\xBB\xBFthe cat\r\n", vocab) == std::vector<int64_t>{0, 1});
  CHECK_THROWS_WITH(encode_text("the caf\xE9", vocab), "--text: byte 7 (0xe9) is not UTF-8; give the text in UTF-8");
  CHECK_THROWS_WITH(encode_text("the\x1b[31m cat", vocab),
                    "--text: control character \\x1b at byte 3; words are separated by spaces, tabs or line ends");
}

TEST_CASE("corpus: a byte-order mark, CRLF line ends, tabs and a missing final newline read like the clean file",
          "[common][inputs]") {
  const std::string clean = "# a comment\nthe cat sat\n\nthe dog ran home\n";
  const Corpus want = parse_corpus(clean, "clean");
  REQUIRE(want.sentences.size() == 2);
  for (const std::string& variant :
       {std::string("\xef\xbb\xbf") + clean,                                           // BOM: the comment stays one
        std::string("# a comment\r\nthe cat sat\r\n\r\nthe dog ran home\r\n"),         // CRLF
        std::string("# a comment\nthe\tcat sat \n  \t\nthe dog\t\tran home"),           // tabs, no final newline
        std::string("\xef\xbb\xbf# a comment\r\n\tthe cat  sat\r\n\r\nthe dog ran home")}) {
    const Corpus got = parse_corpus(variant, "variant");
    CHECK(got.sentences == want.sentences);
    REQUIRE(got.vocab.size() == want.vocab.size());
    for (int64_t i = 0; i < want.vocab.size(); ++i) CHECK(got.vocab.word(i) == want.vocab.word(i));
  }
}

TEST_CASE("corpus: words are lower-cased as Unicode letters, so 'Été' and 'été' are one token", "[common][inputs]") {
  const Corpus c = parse_corpus("Été été ÉLISE élise\nΣΟΦΙΑ σοφια ДОМ дом\n", "unicode");
  REQUIRE(c.sentences.size() == 2);
  CHECK(c.sentences[0] == std::vector<int64_t>{0, 0, 1, 1, 2});  // été, élise, "."
  CHECK(c.vocab.word(0) == "été");
  CHECK(c.vocab.word(1) == "élise");
  CHECK(c.sentences[1] == std::vector<int64_t>{3, 3, 4, 4, 2});
  CHECK(c.vocab.word(3) == "σοφια");
  CHECK(c.vocab.word(4) == "дом");
}

TEST_CASE("corpus: 10,000 sentences of distinct words load in well under a second", "[common][inputs]") {
  // Vocabulary's constructor once compared every word with every word: this
  // corpus took minutes before the first line printed.
  std::string text;
  for (int i = 0; i < 10000; ++i) text += fmt::format("w{}a w{}b w{}c w{}d w{}e\n", i, i, i, i, i);
  const auto t0 = std::chrono::steady_clock::now();
  const Corpus c = parse_corpus(text, "big");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(c.vocab.size() == 50001);
  CHECK(c.sentences[9999] == std::vector<int64_t>{49996, 49997, 49998, 49999, 50000, 5});  // "." is id 5
  CHECK(s < 1.0);
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
