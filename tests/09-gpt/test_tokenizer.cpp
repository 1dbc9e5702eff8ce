// Hidden suite of chapter 9, part 1: build_vocab, encode, decode. The
// vocabulary and ids of a text with characters of 1 to 4 UTF-8 bytes come
// from Python (tests/reference/ch09_gpt.py: sorted(set(text)), as nanoGPT's
// shakespeare_char/prepare.py); ids are integers, compared exactly.
#include "09-gpt/gpt.hpp"
#include "sa/exercise.hpp"
#include "sa/printable.hpp"

#include "support/fixtures.hpp"

#include "support/catch.hpp"
#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string>
#include <vector>

using namespace sa;
using namespace sa::test;

namespace {

const Fixtures& fx() {
  static const Fixtures f("09-gpt.txt");
  return f;
}

// The texts of tests/reference/ch09_gpt.py, byte for byte.
const std::string kText =
    "In the beginning God created the heaven and the earth.\n\xc3\x89t\xc3\xa9, na\xc3\xafve \xe2\x80\x94 "
    "\xe1\xbc\x88\xcf\x81\xcf\x87\xce\xae \xf0\x9f\x98\x80 end";
const std::string kSecond = "the earth \xf0\x9f\x98\x80 \xe2\x80\x94 na\xc3\xafve \xc3\x89t\xc3\xa9\n";

std::string list(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", v[i]);
  return "[" + s + "]";
}

// Where two lists or texts first differ, for a message: ", first at [2]: 11
// instead of 10" (a list) or ", first at byte 3" (a text); "" when one is
// the start of the other (their lengths then say it).
std::string first_difference(const std::vector<int64_t>& got, const std::vector<int64_t>& expected) {
  for (size_t i = 0; i < std::min(got.size(), expected.size()); ++i)
    if (got[i] != expected[i]) return fmt::format(", first at [{}]: {} instead of {}", i, got[i], expected[i]);
  return "";
}
std::string first_difference(const std::string& got, const std::string& expected) {
  for (size_t i = 0; i < std::min(got.size(), expected.size()); ++i)
    if (got[i] != expected[i]) return fmt::format(", first at byte {}", i);
  return "";
}

// The message of the std::invalid_argument `f` throws (a note when it throws
// nothing or something else; the CHECK that follows says so). A stub's
// sa::NotImplemented goes on up, so that an unwritten function is reported
// as "not implemented yet", not as a wrong refusal.
template <class F>
std::string refusal(F&& f) {
  try {
    f();
  } catch (const sa::NotImplemented&) {
    throw;
  } catch (const std::invalid_argument& e) {
    return e.what();
  } catch (...) {
    return "(threw something other than std::invalid_argument)";
  }
  return "(no exception)";
}

// encode's refusal of `text` must hold `words` (a character, quoted, or its
// position); a failure says the call, what it should have named and why,
// and the message it gave, in one sentence.
void require_refusal_names(const CharVocab& vocab, const std::string& vocab_words, const std::string& text_words,
                           const std::string& text, const std::string& words, const std::string& why) {
  const std::string message = refusal([&] { encode(vocab, text); });
  const std::string got = message == "(no exception)" ? "but it threw nothing" : "got \"" + message + "\"";
  if (message.find(words) == std::string::npos)
    FAIL_CHECK("encode(vocab of " << vocab_words << ", " << text_words << ") should be refused with a message "
                                  << "naming " << words << " (" << why << "), " << got);
}

}  // namespace

TEST_CASE("build_vocab: every character once, sorted by code point, as Python's sorted(set(text))",
          "[ch09][build_vocab]") {
  const CharVocab vocab = [&] {
    INFO("build_vocab(the ch09_gpt.py text)");  // (a crash inside names its input)
    return build_vocab(kText);
  }();
  const std::vector<int64_t>& expected = fx().i64("tok.chars");
  std::vector<int64_t> got;
  for (char32_t c : vocab.chars) got.push_back(int64_t(c));
  // (A failure is one sentence: what came out, what was expected.)
  if (got != expected)
    FAIL_CHECK("build_vocab of the text of ch09_gpt.py (ASCII, é, —, Ἀ, 😀; 1 to 4 UTF-8 bytes) gave the code points "
               << list(got) << ", expected " << list(expected)
               << " (a code point per byte instead of per character gives é's two bytes as two entries: 195 and "
                  "169, or 4294967235 and 4294967209 through a signed char; unsorted ids depend on first "
                  "appearance)");
}

TEST_CASE("build_vocab: a text of one repeated character has a vocabulary of one", "[ch09][build_vocab]") {
  const CharVocab vocab = [&] {
    INFO("build_vocab(\"aaaa\")");  // (a crash inside names its input)
    return build_vocab("aaaa");
  }();
  INFO("build_vocab(\"aaaa\") has " << vocab.size() << " characters, expected 1");
  REQUIRE(vocab.size() == 1);
  CHECK(vocab.chars[0] == U'a');
}

TEST_CASE("build_vocab: an empty text, or bytes that are not UTF-8, is refused", "[ch09][build_vocab]") {
  {
    INFO("build_vocab(\"\") gave: " << refusal([] { build_vocab(""); }));
    CHECK_THROWS_AS(build_vocab(""), std::invalid_argument);
  }
  for (const std::string& bad : {std::string("caf\xe9"), std::string("\xc3"), std::string("a\x80z")}) {
    INFO("build_vocab of bytes that are not UTF-8 (" << bad.size() << " bytes)");
    CHECK_THROWS_AS(build_vocab(bad), std::invalid_argument);
  }
}

TEST_CASE("encode: the ids of a second text are Python's stoi of each character", "[ch09][encode]") {
  const CharVocab vocab = [&] {
    INFO("build_vocab(the ch09_gpt.py text)");  // (a crash inside names its input)
    return build_vocab(kText);
  }();
  const std::vector<int64_t> got = [&] {
    INFO("encode(vocab of the ch09_gpt.py text, \"the earth 😀 — naïve Été\\n\")");
    return encode(vocab, kSecond);
  }();
  const std::vector<int64_t>& expected = fx().i64("tok.ids");
  if (got != expected)
    FAIL_CHECK("encode(vocab of the ch09_gpt.py text, \"the earth 😀 — naïve Été\\n\") gave "
               << list(got) << ", expected " << list(expected) << " (" << got.size() << " ids, expected "
               << expected.size() << first_difference(got, expected) << "; one id per character, not per byte)");
}

TEST_CASE("decode: decode(encode(text)) gives the text back, byte for byte", "[ch09][decode]") {
  const CharVocab vocab = [&] {
    INFO("build_vocab(the ch09_gpt.py text)");  // (a crash inside names its input)
    return build_vocab(kText);
  }();
  for (const std::string& text : {kText, kSecond, std::string("a"), std::string("\xf0\x9f\x98\x80")}) {
    const std::string back = [&] {
      INFO("decode(encode(\"" << printable(text) << "\")) with the vocabulary of the ch09_gpt.py text");
      return decode(vocab, encode(vocab, text));
    }();
    if (back != text)
      FAIL_CHECK("decode(encode(\"" << printable(text) << "\")) gave \"" << printable(back) << "\" (" << back.size()
                                  << " bytes, expected " << text.size() << first_difference(back, text) << ")");
  }
  const std::vector<int64_t> none;
  INFO("decode of no ids gives an empty text");
  CHECK(decode(vocab, none).empty());
}

TEST_CASE("decode: the fixture's ids spell the second text", "[ch09][decode]") {
  const CharVocab vocab = [&] {
    INFO("build_vocab(the ch09_gpt.py text)");  // (a crash inside names its input)
    return build_vocab(kText);
  }();
  const std::string got = [&] {
    INFO("decode(vocab of the ch09_gpt.py text, tok.ids: the ids of the second text)");
    return decode(vocab, fx().i64("tok.ids"));
  }();
  // (printable: a line end shows as \n, a byte that is not UTF-8 as \xNN)
  if (got != kSecond)
    FAIL_CHECK("decode(tok.ids) gave \"" << printable(got) << "\", expected \"" << printable(kSecond) << "\" ("
                                         << got.size() << " bytes, expected " << kSecond.size()
                                         << first_difference(got, kSecond) << ")");
}

TEST_CASE("encode: a character outside the vocabulary is refused in one line naming it and its position",
          "[ch09][encode]") {
  const CharVocab vocab = [&] {
    INFO("build_vocab(\"abc de\\n\")");  // (a crash inside names its input)
    return build_vocab("abc de\n");
  }();
  const std::string in = "\"abc de\\n\"";
  require_refusal_names(vocab, in, "\"bad cafe\"", "bad cafe", "'f'", "the only missing character");
  require_refusal_names(vocab, in, "\"bad cafe\"", "bad cafe", "position 6", "where 'f' is");
  const std::string message = refusal([&] { encode(vocab, "bad cafe"); });
  if (message.find('\n') != std::string::npos)
    FAIL_CHECK("encode(vocab of " << in << ", \"bad cafe\") should be refused in one line, got \"" << message << "\"");
  // A character of several bytes: its position counts characters, not bytes.
  require_refusal_names(vocab, in, "\"ébcé\"", "\xc3\xa9" "bc\xc3\xa9", "position 0", "the first é");
  require_refusal_names(vocab, in, "\"a😀\"", "a\xf0\x9f\x98\x80", "position 1",
                        "😀 is character 1, byte 1, since 'a' is one byte");
  require_refusal_names(vocab, in, "\"ééX\"", "\xc3\xa9\xc3\xa9X", "position 0", "é at position 0 comes first");
  // 'C' sorts between ' ' and 'a': a search of the sorted characters stops
  // at a neighbour, which must not be taken for it.
  require_refusal_names(vocab, in, "\"aCb\"", "aCb", "'C'",
                        "'C' is not in the vocabulary, though it sorts between its ' ' and 'a'");
  require_refusal_names(vocab, in, "\"aCb\"", "aCb", "position 1", "where 'C' is");
}

TEST_CASE("encode: positions count characters, not bytes", "[ch09][encode]") {
  const CharVocab vocab = [&] {
    INFO("build_vocab(\"é— ab\")");  // (a crash inside names its input)
    return build_vocab("\xc3\xa9\xe2\x80\x94 ab");
  }();  // é, —, space, a, b
  const std::string in = "\"é— ab\"", text = "\xc3\xa9\xe2\x80\x94 abz";
  require_refusal_names(vocab, in, "\"é— abz\"", text, "'z'", "the only missing character");
  require_refusal_names(vocab, in, "\"é— abz\"", text, "position 5", "'z' is character 5, byte 8");
}

TEST_CASE("encode: an empty text, or bytes that are not UTF-8, is refused", "[ch09][encode]") {
  const CharVocab vocab = [&] {
    INFO("build_vocab(the ch09_gpt.py text)");  // (a crash inside names its input)
    return build_vocab(kText);
  }();
  {
    INFO("encode(vocab, \"\") gave: " << refusal([&] { encode(vocab, ""); }));
    CHECK_THROWS_AS(encode(vocab, ""), std::invalid_argument);
  }
  INFO("encode of \"the \\xc3\" (a truncated é)");
  CHECK_THROWS_AS(encode(vocab, "the \xc3"), std::invalid_argument);
}

TEST_CASE("decode: an id outside the vocabulary is refused", "[ch09][decode]") {
  const CharVocab vocab = [&] {
    INFO("build_vocab(\"abc\")");  // (a crash inside names its input)
    return build_vocab("abc");
  }();
  for (int64_t bad : {int64_t(-1), int64_t(3), int64_t(1000)}) {
    INFO("decode of ids [0, " << bad << "] with a vocabulary of 3");
    CHECK_THROWS_AS(decode(vocab, {0, bad}), std::out_of_range);
  }
}

TEST_CASE("decode: the refusal of an id outside the vocabulary names the id and its position", "[ch09][decode]") {
  // gpt.hpp: "refused with std::out_of_range naming the id and its position".
  // vector::at's own out_of_range names neither (its "__n (which is
  // 18446744073709551615)" is -1 read as an unsigned index). The words
  // around them are the reader's: the message must hold the id and the
  // position as numbers of their own, chosen apart from the vocabulary's
  // size (3) and 0, which a message may also write.
  const CharVocab vocab = [&] {
    INFO("build_vocab(\"abc\")");  // (a crash inside names its input)
    return build_vocab("abc");
  }();
  struct Case {
    std::vector<int64_t> ids;
    const char* id;
    const char* position;  // 0-based, counted in ids
  };
  // (a number of its own: not inside a longer number, nor after a minus)
  const auto holds_number = [](const std::string& text, const std::string& number) {
    for (size_t at = text.find(number); at != std::string::npos; at = text.find(number, at + 1)) {
      const bool before = at > 0 && (std::isdigit(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '-');
      const size_t end = at + number.size();
      const bool after = end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]));
      if (!before && !after) return true;
    }
    return false;
  };
  for (const Case& c : {Case{{0, 1, 2, 0, 1000}, "1000", "4"}, Case{{1, 1, -1}, "-1", "2"}}) {
    std::string message = "(no exception)";
    try {
      INFO("decode(vocab of \"abc\", ids " << list(c.ids) << ")");  // (a crash inside names its input)
      decode(vocab, c.ids);
    } catch (const sa::NotImplemented&) {
      throw;
    } catch (const std::out_of_range& e) {
      message = e.what();
    } catch (...) {
      message = "(threw something other than std::out_of_range)";
    }
    const std::string call = "decode(vocab of \"abc\", ids " + list(c.ids) + ")";
    if (!holds_number(message, c.id))
      FAIL_CHECK(call << ": the refusal should name the id " << c.id << ", got \"" << message << "\"");
    if (!holds_number(message, c.position))
      FAIL_CHECK(call << ": the refusal should name the id's position, " << c.position << " (counted from 0), got \""
                      << message << "\"");
    if (message.find('\n') != std::string::npos)
      FAIL_CHECK(call << ": the refusal should be one line, got \"" << message << "\"");
  }
}
