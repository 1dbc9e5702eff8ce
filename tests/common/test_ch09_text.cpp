// Chapter 9's own code that is not an exercise (chapters/09-gpt/data.hpp,
// compiled in sa_09_shared): SHA-256 against the standard's examples and
// Python's hashlib, the reference stripped from a verse, the UTF-8 reader's
// refusals, the 90/10 split: what the text preparation stands on. Here and
// not in tests/09-gpt/, whose every case an untouched stub must fail.
#include "09-gpt/data.hpp"

#include "support/catch2_compat.hpp"

#include <stdexcept>
#include <string>
#include <vector>

using namespace sa::ch9;

TEST_CASE("chapter 9: sha256_hex: the FIPS 180-4 examples and lengths around a block's padding", "[ch09_text]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
      {std::string(1000000, 'a'), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
      // 55 bytes pad into one block, 56 into two; 64, 119 and 120 likewise.
      {std::string(55, 'x'), "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072"},
      {std::string(56, 'x'), "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e"},
      {std::string(63, 'x'), "75220b47218278e656f2013bb8f0c455a25eaf01e86c64924e9d48d89776d6f2"},
      {std::string(64, 'x'), "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c"},
      {std::string(119, 'x'), "000b48d4edf0fa7bee3c6236ecd2785baa5db4eeb8bb54341b029e0d9fa5fb0c"},
      {std::string(120, 'x'), "13f05a0b594787f5ecd315edc96141bd3243203d1b7d4f0836f37308b276ba98"},
  };
  for (const auto& [bytes, expected] : cases) {
    const std::string got = sha256_hex(bytes);
    INFO("sha256_hex of " << bytes.size() << " bytes (" << bytes.substr(0, 8) << "...): got " << got << ", expected "
                          << expected);
    CHECK(got == expected);
  }
}

TEST_CASE("chapter 9: strip_reference: the prose after 'Book chapter:verse '", "[ch09_text]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"Ge1:1 In the beginning God created the heaven and the earth.",
       "In the beginning God created the heaven and the earth."},
      {"1Sm3:10 And the LORD came, and stood,", "And the LORD came, and stood,"},
      {"SSol2:1 I am the rose of Sharon,", "I am the rose of Sharon,"},
      {"Rev22:21 The grace of our Lord Jesus Christ be with you all. Amen.",
       "The grace of our Lord Jesus Christ be with you all. Amen."},
      {"Psa119:176 I have gone astray 3:4 like a lost sheep;", "I have gone astray 3:4 like a lost sheep;"},
  };
  for (const auto& [line, prose] : cases) {
    const std::string got(strip_reference(line, 1));
    INFO("strip_reference(\"" << line << "\") gave \"" << got << "\", expected \"" << prose << "\"");
    CHECK(got == prose);
  }
  for (const std::string bad : {"In the beginning", "Ge1 In", "Ge:1 In", "1:1 In", "Ge1:1", "Ge1:x In", ""}) {
    INFO("strip_reference(\"" << bad << "\"), a line without a reference");
    CHECK_THROWS_AS(strip_reference(bad, 7), std::invalid_argument);
  }
}

TEST_CASE("chapter 9: utf8_chars: code points of 1 to 4 bytes, and overlong forms, surrogates, stray bytes refused",
          "[ch09_text]") {
  const std::vector<char32_t> got = utf8_chars("test", "a\xc3\xa9\xe2\x80\x94\xf0\x9f\x98\x80");
  const std::vector<char32_t> expected = {U'a', U'\u00e9', U'\u2014', U'\U0001F600'};
  CHECK(got == expected);
  std::string back;
  for (char32_t c : got) append_utf8(back, c);
  CHECK(back == "a\xc3\xa9\xe2\x80\x94\xf0\x9f\x98\x80");
  for (const std::string& bad : {std::string("\xc0\xaf"), std::string("\xed\xa0\x80"), std::string("\xf4\x90\x80\x80"),
                                std::string("\x80"), std::string("\xe2\x80"), std::string("\xff")}) {
    INFO("utf8_chars of " << bad.size() << " bytes that are not UTF-8, the first 0x" << std::hex
                          << int(static_cast<unsigned char>(bad[0])));
    CHECK_THROWS_AS(utf8_chars("test", bad), std::invalid_argument);
  }
}

TEST_CASE("chapter 9: generated_lines: one '  | ' line per line, an ending space made visible", "[ch09_text]") {
  CHECK(generated_lines("And God said") == "  | And God said\n");
  CHECK(generated_lines("And God said unto\nthem") == "  | And God said unto\n  | them\n");
  // A character drawn as a space (or two) at the end would print as nothing.
  CHECK(generated_lines("And God said ") == "  | And God said␣\n");
  CHECK(generated_lines("said  ") == "  | said␣␣\n");
  CHECK(generated_lines("a b") == "  | a b\n");  // only the end's spaces
  CHECK(generated_lines("said\n") == "  | said\n  | \n");  // a drawn line end shows as an empty line
}

TEST_CASE("chapter 9: split_point: int(0.9 n), nanoGPT's split", "[ch09_text]") {
  CHECK(split_point(10) == 9);
  CHECK(split_point(4137850) == 3724065);  // the prepared text (ch09_gpt.py's Python gives the same)
  CHECK(split_point(1) == 0);
}

TEST_CASE("chapter 9: a long prompt is quoted by its start and printed by its end", "[ch09_text]") {
  CHECK(quoted_prompt("And God said", 12) == "\"And God said\"");
  const std::string verse = "And God said, Let there be light: and there was light. ";
  std::string long_prompt;
  for (int i = 0; i < 10; ++i) long_prompt += verse;
  CHECK(quoted_prompt(long_prompt, long_prompt.size()) ==
        "\"" + long_prompt.substr(0, kQuotedPrompt) + "...\" (550 characters)");
  // Escapes count: 30 line ends show as 60 characters and fit, 31 do not.
  std::string escapes;
  for (int i = 0; i < 30; ++i) escapes += "\\n";
  CHECK(quoted_prompt(std::string(30, '\n'), 30) == "\"" + escapes + "\"");
  CHECK(quoted_prompt(std::string(31, '\n'), 31) == "\"" + escapes + "...\" (31 characters)");

  // The text: the prompt's last kKeptPrompt characters after "...", then what was drawn.
  CHECK(text_after_prompt("And God said unto", 12) == "And God said unto");
  const std::string drawn = " unto them";
  CHECK(text_after_prompt(long_prompt + drawn, long_prompt.size()) ==
        "..." + long_prompt.substr(long_prompt.size() - kKeptPrompt) + drawn);
  CHECK(text_after_prompt(long_prompt.substr(0, kKeptPrompt) + drawn, kKeptPrompt) ==
        long_prompt.substr(0, kKeptPrompt) + drawn);
  // Characters, not bytes: é is two bytes, one character.
  std::string accents;
  for (size_t i = 0; i < kKeptPrompt + 3; ++i) accents += "é";
  CHECK(text_after_prompt(accents + "!", kKeptPrompt + 3) == "..." + accents.substr(6) + "!");
}
