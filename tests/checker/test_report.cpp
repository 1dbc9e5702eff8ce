// The table, the groups of broken test cases, the summary and the advice,
// and the same as JSON, from results recorded in a real check of a tree
// with injected mistakes (tests/fixtures/checker/report/: the results of
// each chapter and the text that check printed).
#include "checker_fixtures.hpp"

#include "case_record.hpp"
#include "case_runner.hpp"
#include "classify.hpp"
#include "report.hpp"

#include "support/catch2_compat.hpp"
#include <nlohmann/json.hpp>

#include <sstream>

using sa::check::ChapterReport;
using sa::check::CheckReport;

namespace {

// The recorded check (`./book check --timeout 2` on a tree with the mistakes of
// tests/tooling/check_survives_mistakes.sh): report/chapters.txt lists each
// chapter as "NN-name TAB ran", "NN-name TAB untouched TAB <tests>" or
// "NN-name TAB does not compile TAB <error>"; a chapter that ran has its
// results in report/NN-name.results.
CheckReport recorded_report() {
  CheckReport report;
  report.book_chapters = 8;
  report.timeout_seconds = 2;
  report.one_hung = true;
  report.functions_written = 14;
  report.functions_total = 41;
  std::istringstream list(checker_fixture("report/chapters.txt"));
  for (std::string line; std::getline(list, line);) {
    std::istringstream fields(line);
    std::string state, extra;
    ChapterReport c;
    std::getline(fields, c.chapter, '\t');
    std::getline(fields, state, '\t');
    std::getline(fields, extra);
    if (state == "does not compile") {
      c.state = ChapterReport::State::does_not_compile;
      c.compile_error = extra;
    } else if (state == "untouched") {
      c.state = ChapterReport::State::untouched;
      c.untouched_tests = std::stoi(extra);
    } else {
      c.results = sa::check::read_results_record(checker_fixture("report/" + c.chapter + ".results"));
    }
    report.chapters.push_back(c);
  }
  return report;
}

}  // namespace

TEST_CASE("the report of a check with hangs, crashes, wrong values and a compile error", "[checker]") {
  const CheckReport report = recorded_report();
  CHECK(sa::check::report_text(report) == checker_fixture("report/expected.txt"));
  CHECK(sa::check::exit_status(report) == 1);
}

TEST_CASE("test cases that broke the same way share one message, four named at most", "[checker]") {
  const CheckReport report = recorded_report();
  const std::string chapter4 = sa::check::chapter_text(report.chapters[3], false);
  CHECK(chapter4.find("      ✗ ... and ") != std::string::npos);
  // One message for every test case that hung in combine_heads.
  size_t messages = 0;
  for (size_t at = 0; (at = chapter4.find("in combine_heads\n", at)) != std::string::npos; ++at) ++messages;
  CHECK(messages == 1);
  // Five the same way: three named, two counted.
  ChapterReport five;
  five.chapter = "04-multi-head";
  for (const std::string name : {"a", "b", "c", "d", "e"})
    five.results.push_back({sa::check::Status::timeout, name, "combine_heads",
                            "timed out after 3 s (an endless loop?), in combine_heads", ""});
  five.results[0].message = "timed out after 10 s (an endless loop?), in combine_heads";
  CHECK(sa::check::chapter_text(five, false) ==
        "  04-multi-head          …  in progress   0/5 tests, 5 timed out\n"
        "      ✗ a\n      ✗ b\n      ✗ c\n      ✗ ... and 2 more test cases the same way\n"
        "          timed out after 10 s, the others after 3 s (an endless loop?), in combine_heads\n");
  // Two ran side by side with the whole limit: the count of the others.
  five.results[1].message = five.results[0].message;
  CHECK(sa::check::chapter_text(five, false).find(
            "          timed out after 10 s, 3 others after 3 s (an endless loop?), in combine_heads\n") !=
        std::string::npos);
  // All with the same limit: one limit said.
  for (auto& r : five.results) r.message = five.results[0].message;
  CHECK(sa::check::chapter_text(five, false).find(
            "          timed out after 10 s (an endless loop?), in combine_heads\n") != std::string::npos);
  // On different inputs, still one group: its message names no one input.
  ChapterReport two;
  two.chapter = "08-efficient-attention";
  two.results = {{sa::check::Status::timeout, "a", "tiled_attention",
                  "timed out after 3 s (an endless loop?) [block 0], in tiled_attention", ""},
                 {sa::check::Status::timeout, "b", "tiled_attention",
                  "timed out after 3 s (an endless loop?) [block -3], in tiled_attention", ""}};
  CHECK(sa::check::chapter_text(two, false) ==
        "  08-efficient-attention …  in progress   0/2 tests, 2 timed out\n"
        "      ✗ a\n      ✗ b\n          timed out after 3 s (an endless loop?), in tiled_attention\n");
  // One test case: its input stays.
  two.results.pop_back();
  CHECK(sa::check::chapter_text(two, false).find("[block 0], in tiled_attention") != std::string::npos);
}

TEST_CASE("the advice is Fix: before Next:, and Next: gives the hint", "[checker]") {
  CheckReport report;
  report.book_chapters = 8;
  ChapterReport c;
  c.chapter = "03-softmax";
  c.results = {{sa::check::Status::pass, "a", "softmax_rows", "", ""},
               {sa::check::Status::todo, "b", "focus", "not implemented yet: focus (softmax.cpp)", "the row's largest weight"}};
  report.chapters = {c};
  CHECK(sa::check::summary_text(report) ==
        "\nFunctions written: 0 of 0 (./book hint N for a hint, ./book reset N FUNCTION to start one again)\n\n"
        "Next: focus (softmax.cpp)\n  hint: the row's largest weight\n"
        "Run ./book check again after each change (or ./book check --watch).\n");
  report.chapters[0].results.push_back({sa::check::Status::fail, "c", "attention", "expected x to be 1, got 2", ""});
  CHECK(sa::check::summary_text(report).find("Fix: c\n  expected x to be 1, got 2\n") != std::string::npos);
  // A crash listed above the wrong answer (chapter_text lists crashes and
  // hangs first) is the one Fix: names, though it comes later in the suite.
  report.chapters[0].results.push_back({sa::check::Status::crash, "d", "focus", "crashed: abort, in focus", ""});
  const std::string listed = sa::check::chapter_text(report.chapters[0], false);
  CHECK(listed.find("✗ d") < listed.find("✗ c"));
  CHECK(sa::check::summary_text(report).find("Fix: d\n  crashed: abort, in focus\n") != std::string::npos);
  report.chapters[0].results = {{sa::check::Status::pass, "a", "softmax_rows", "", ""}};
  CHECK(sa::check::summary_text(report).ends_with("Every test passes.\n"));
  CHECK(sa::check::exit_status(report) == 0);
}

TEST_CASE("what the reader's code printed in a test case that did not pass is shown under its message",
          "[checker]") {
  // A reader debugging with printf: the first lines, escaped, the runtime's
  // own lines about a crash left out (the message says them in words).
  using Printed = sa::check::CaseResult::Printed;
  const auto lines = [](const Printed& p) { return p.lines; };
  CHECK(sa::check::printed_of("").empty());
  CHECK(lines(sa::check::printed_of("my debug: seq_len 6\n")) == std::vector<std::string>{"my debug: seq_len 6"});
  const Printed some = sa::check::printed_of(
      "a\n\nb\tc\x1b[31m\xff\nterminate called after throwing an instance of 'int'\nd \xc3\xa9\ne\nf\n");
  CHECK(some.lines == std::vector<std::string>{"a", "b\\x09c\\x1b[31m\\xff", "d \xc3\xa9"});
  CHECK(some.more == 2);
  CHECK(sa::check::printed_text(some) == "\"a\" \"b\\x09c\\x1b[31m\\xff\" \"d \xc3\xa9\" (and 2 more lines)");
  CHECK(sa::check::printed_of("test_03_exercises: softmax.cpp:12: f: Assertion `n > 0' failed.\n").empty());
  CHECK(sa::check::printed_of("/usr/include/c++/12/bits/stl_vector.h:1123: constexpr std::vector<_Tp, _Alloc>::reference "
                              "std::vector<_Tp, _Alloc>::operator[](size_type) [with _Tp = int]: Assertion '__n < "
                              "this->size()' failed.\n")
            .empty());
  CHECK(lines(sa::check::printed_of(std::string(200, 'x'))) == std::vector<std::string>{std::string(160, 'x') + "..."});

  ChapterReport c;
  c.chapter = "05-causal-mask";
  sa::check::CaseResult wrong{sa::check::Status::fail, "causal_mask: true on and below the diagonal", "causal_mask",
                              "causal_mask(6): entry [0, 0] is forbidden, expected allowed", ""};
  wrong.printed = {{"my debug: seq_len 6"}, 0};
  sa::check::CaseResult hung{sa::check::Status::timeout, "t", "mask_and", "timed out after 10 s", ""};
  hung.printed = {{"looping"}, 99};
  c.results = {wrong, hung};
  const std::string text = sa::check::chapter_text(c, false);
  CHECK(text.find("          causal_mask(6): entry [0, 0] is forbidden, expected allowed\n"
                  "          it printed: \"my debug: seq_len 6\"\n") != std::string::npos);
  CHECK(text.find("          timed out after 10 s\n          it printed: \"looping\" (and 99 more lines)\n") !=
        std::string::npos);
  // The record check keeps for replay reads it back.
  const auto back = sa::check::read_results_record(sa::check::results_record(c.results));
  REQUIRE(back.size() == 2);
  CHECK(back[0].printed.lines == wrong.printed.lines);
  CHECK(back[1].printed.lines == hung.printed.lines);
  CHECK(back[1].printed.more == 99);
  // --json: the lines as a list, and the count of the others.
  CheckReport one;
  one.chapters = {c};
  const nlohmann::json json = nlohmann::json::parse(sa::check::report_json(one));
  CHECK(json["tests"][0]["printed"] == nlohmann::json::array({"my debug: seq_len 6"}));
  CHECK(json["tests"][1]["printed_more"] == 99);
}

TEST_CASE("with --untouched, check holds every stub to 'not implemented yet'", "[checker]") {
  CheckReport report;
  report.untouched_rule = true;
  ChapterReport c;
  c.chapter = "03-softmax";
  c.results = {{sa::check::Status::todo, "a", "focus", "not implemented yet: focus", "h"}};
  report.chapters = {c};
  CHECK(sa::check::summary_text(report).ends_with("book: every untouched exercise fails only with 'not implemented yet'\n"));
  CHECK(sa::check::exit_status(report) == 0);
  report.chapters[0].results.push_back({sa::check::Status::pass, "b", "focus", "", ""});
  CHECK(sa::check::chapter_text(report.chapters[0], true).ends_with(
      "    untouched stubs must fail only with 'not implemented yet', but:\n      pass\tb\t\n"));
  CHECK(sa::check::summary_text(report).ends_with("book: 1 suite(s) broke the untouched-stubs rule\n"));
  CHECK(sa::check::exit_status(report) == 1);
}

TEST_CASE("with --json, check prints one object per test case", "[checker]") {
  const CheckReport report = recorded_report();
  const nlohmann::json json = nlohmann::json::parse(sa::check::report_json(report));
  size_t cases = 0;
  for (const ChapterReport& c : report.chapters) cases += c.results.size();
  REQUIRE(json["tests"].size() == cases);
  const nlohmann::json& first = json["tests"][0];
  CHECK(first["chapter"] == "01-qkv-projection");
  CHECK(first.contains("function"));
  CHECK(first.contains("message"));
  CHECK(first["status"] == "todo");
  CHECK(first["function"] == "context_vector");
  CHECK(json["chapters"][1]["status"] == "does not compile");
  CHECK(json["exit_status"] == 1);
  // Every chapter has its warnings, an empty list where nothing was compiled.
  for (const nlohmann::json& chapter : json["chapters"]) {
    INFO(chapter.dump());
    CHECK(chapter["warnings"].is_array());
  }
}

TEST_CASE("a suite that stopped before its first test counts the tests that could not run", "[checker]") {
  // A global object of the reader's that prints and aborts as the suite
  // starts: one result says so, what it printed below it, and the count is
  // the suite's, not 0/1.
  ChapterReport c;
  c.chapter = "02-scaling";
  sa::check::CaseResult start{sa::check::Status::crash, "the suite's start, before any test", "",
                              "crashed: abort before any test started: code that runs outside any test", ""};
  start.printed = {{"hello from a global"}, 0};
  c.results = {start};
  c.tests_not_run = 9;
  const std::string text = sa::check::chapter_text(c, false);
  CHECK(text.starts_with("  02-scaling             …  in progress   0/9 tests, none could run\n"));
  CHECK(text.find("          it printed: \"hello from a global\"\n") != std::string::npos);
  CheckReport report;
  report.chapters = {c};
  const nlohmann::json json = nlohmann::json::parse(sa::check::report_json(report));
  CHECK(json["chapters"][0]["tests"] == 9);
  CHECK(json["chapters"][0]["passed"] == 0);
  CHECK(sa::check::exit_status(report) == 1);
}

TEST_CASE("under --watch the advice does not say to run check again", "[checker]") {
  CheckReport report;
  ChapterReport c;
  c.chapter = "03-softmax";
  c.results = {{sa::check::Status::fail, "c", "attention", "expected x to be 1, got 2", ""}};
  report.chapters = {c};
  CHECK(sa::check::summary_text(report).ends_with("Run ./book check again after each change (or ./book check --watch).\n"));
  report.watching = true;
  const std::string watched = sa::check::summary_text(report);
  CHECK(watched.find("Fix: c\n") != std::string::npos);
  CHECK(watched.find("Run ./book check again") == std::string::npos);
  CHECK(watched.find("Every test passes") == std::string::npos);
}

TEST_CASE("with --json, bytes that are not UTF-8 in a message or a compile error do not stop the report",
          "[checker]") {
  // A decode that writes bytes instead of characters, or a compiler quoting
  // a Latin-1 line, puts such bytes into what check reports.
  CheckReport report;
  report.book_chapters = 9;
  ChapterReport ran;
  ran.chapter = "09-gpt";
  sa::check::CaseResult r;
  r.status = sa::check::Status::fail;
  r.test = "decode: the fixture's ids spell the second text";
  r.function = "decode";
  r.message = "decode(tok.ids) gave \"\xc3 t\xe9\"";
  ran.results.push_back(r);
  ChapterReport broken;
  broken.chapter = "08-efficient-attention";
  broken.state = ChapterReport::State::does_not_compile;
  broken.compile_error = "tiled.cpp:3: error: stray '\xe9' in program";
  report.chapters = {broken, ran};
  nlohmann::json json;
  REQUIRE_NOTHROW(json = nlohmann::json::parse(sa::check::report_json(report)));
  CHECK(json["tests"][0]["message"] == "decode(tok.ids) gave \"\xef\xbf\xbd t\xef\xbf\xbd\"");  // U+FFFD each
  CHECK(json["chapters"][0]["message"] == "tiled.cpp:3: error: stray '\xef\xbf\xbd' in program");
}

TEST_CASE("a test name selects exactly its test case", "[checker]") {
  CHECK(sa::check::catch2_spec("attention: [a, b] \\ *\"") == "attention: \\[a\\, b\\] \\\\ \\*\\\"");
}
