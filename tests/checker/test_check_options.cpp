// `./book check`'s command line (tools/checker/check_options.cpp), read in
// the fixture tree fixtures/checker/exercise_tree/ (chapter 1 written,
// chapter 2 listed only).
#include "chapters.hpp"
#include "check_options.hpp"

#include "support/catch2_compat.hpp"

#include <string>
#include <vector>

using namespace sa::check;

namespace {

const std::string kTree = std::string(SA_CHECKER_FIXTURES) + "/exercise_tree";

CheckOptions parse(const std::vector<std::string>& words) { return parse_check_options(kTree, words); }

}  // namespace

TEST_CASE("check: --help or -h asks for the usage, whatever else is given", "[checker]") {
  CHECK(parse({"--help"}).help);
  CHECK(parse({"-h"}).help);
  // (a mistaken word too: the reader asked how to write them)
  CHECK(parse({"3", "--bogus", "--help"}).help);
  CHECK(!parse({}).help);
  const std::string help = check_help(2);
  CHECK(help.starts_with(check_usage() + "\n\n"));
  for (const std::string option : {"--timeout S", "--watch", "--json", "--help", "1-2"})
    CHECK(help.find(option) != std::string::npos);
}

TEST_CASE("check: --untouched, the book's CI's, works but is not in the reader's usage", "[checker]") {
  CHECK(parse({"--untouched"}).untouched_rule);
  CHECK(check_usage() == "usage: ./book check [N] [--timeout S] [--watch] [--json]");
  CHECK(check_help(2).find("untouched") == std::string::npos);
}

TEST_CASE("check: the options and the chapter are read", "[checker]") {
  const CheckOptions all = parse({});
  CHECK(all.chapters == std::vector<std::string>{"01-demo"});  // (02-later is not written)
  CHECK(!all.one_chapter);
  CHECK(all.timeout_seconds == 10);
  const CheckOptions one = parse({"01", "--timeout", "3", "--json"});
  CHECK(one.chapters == std::vector<std::string>{"01-demo"});
  CHECK(one.one_chapter);
  CHECK(one.timeout_seconds == 3);
  CHECK(one.json);
  CHECK(parse({"--timeout=7", "--watch"}).timeout_seconds == 7);
}

TEST_CASE("check: a bad command line is refused in one line that names the word", "[checker]") {
  const std::string usage = " (" + check_usage() + ")";
  REQUIRE_THROWS_WITH(parse({"--json", "--json"}), "check: --json is given twice" + usage);
  REQUIRE_THROWS_WITH(parse({"--watch", "1", "--watch"}), "check: --watch is given twice" + usage);
  // (--timeout S and --timeout=S are one option)
  REQUIRE_THROWS_WITH(parse({"--timeout", "5", "--timeout=6"}), "check: --timeout is given twice" + usage);
  REQUIRE_THROWS_WITH(parse({"--bogus"}), "check: unknown argument '--bogus'" + usage);
  REQUIRE_THROWS_WITH(parse({"1", "01"}), "check: one chapter at a time, got '01-demo' and '01'" + usage);
  REQUIRE_THROWS_WITH(parse({"--timeout"}), "check: --timeout needs a number of seconds" + usage);
  REQUIRE_THROWS_WITH(parse({"--timeout", "0"}),
                      "check: --timeout must be a whole number of seconds from 1 to 3600, got '0'");
  REQUIRE_THROWS_WITH(parse({"--json", "--watch"}),
                      "check: --json prints one report and ends; it does not go with --watch" + usage);
  REQUIRE_THROWS_WITH(parse({"2"}), "chapter 2 (02-later) is not written yet");
}
