// The compiler's warnings about the reader's code: read from a build log
// (tests/fixtures/checker/logs/compiler_warning.log, recorded from a real
// build, with two lines added: a second exercise file compiled without a
// warning, and a warning about a book header), kept between checks, and
// shown under a chapter whose tests did not all pass.
#include "checker_fixtures.hpp"
#include "../support/scratch.hpp"

#include "compiler_warnings.hpp"
#include "report.hpp"

#include "support/catch2_compat.hpp"
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

TEST_CASE("a build log's warnings about the reader's files, and the files it compiled", "[checker]") {
  const sa::check::LogWarnings found = sa::check::warnings_in_log(checker_fixture("logs/compiler_warning.log"));
  CHECK(found.compiled ==
        std::vector<std::string>{"exercises/02-scaling/scaling.cpp", "exercises/02-scaling/stats.cpp"});
  // (the book's header is not the reader's: left out)
  CHECK(found.warnings == std::vector<std::string>{
                              "exercises/02-scaling/scaling.cpp:28:9: unused variable ‘scale’ [-Wunused-variable]"});
}

TEST_CASE("warnings are kept for the checks that do not compile the file again, and only for its text",
          "[checker]") {
  const fs::path root = sa::test::scratch_dir("sa_warnings_test");
  fs::create_directories(root / "exercises" / "02-scaling");
  const auto write = [&](const std::string& text) { std::ofstream(root / "exercises/02-scaling/scaling.cpp") << text; };
  write("float scale = 1;\n");
  std::ofstream(root / "exercises/02-scaling/stats.cpp") << "\n";
  const fs::path store = root / "store";
  const std::string log = checker_fixture("logs/compiler_warning.log");
  sa::check::remember_warnings(store, root, log);
  const std::vector<std::string> expected{
      "exercises/02-scaling/scaling.cpp:28:9: unused variable ‘scale’ [-Wunused-variable]"};
  CHECK(sa::check::chapter_warnings(store, root, "02-scaling") == expected);
  // A check that compiles nothing keeps them.
  sa::check::remember_warnings(store, root, "[0/1] Re-checking globbed directories...\n");
  CHECK(sa::check::chapter_warnings(store, root, "02-scaling") == expected);
  // The file changed since (and was not compiled again by check): its old
  // warnings are not about this text.
  write("float scale = 2;\n");
  CHECK(sa::check::chapter_warnings(store, root, "02-scaling").empty());
  // Compiled again without a warning: gone.
  sa::check::remember_warnings(store, root, log);
  CHECK_FALSE(sa::check::chapter_warnings(store, root, "02-scaling").empty());
  sa::check::remember_warnings(store, root,
                               "[1/3] Building CXX object CMakeFiles/sa_02_exercises.dir/exercises/02-scaling/"
                               "scaling.cpp.o\n");
  CHECK(sa::check::chapter_warnings(store, root, "02-scaling").empty());
  CHECK(sa::check::chapter_warnings(store, root, "03-softmax").empty());  // (no folder at all)
  fs::remove_all(root);
}

TEST_CASE("a chapter's warnings are shown when a test did not pass, three at most", "[checker]") {
  sa::check::ChapterReport c;
  c.chapter = "02-scaling";
  c.results = {{sa::check::Status::pass, "a", "scaled_scores", "", ""}};
  c.warnings = {"exercises/02-scaling/scaling.cpp:28:9: unused variable ‘scale’ [-Wunused-variable]", "w2", "w3",
                "w4"};
  // Every test passes: no word about them.
  CHECK(sa::check::chapter_text(c, false).find("warned") == std::string::npos);
  c.results.push_back({sa::check::Status::fail, "b", "scaled_scores", "expected 1, got 2", ""});
  const std::string text = sa::check::chapter_text(c, false);
  CHECK(text.find("      the compiler warned about your code (often the cause):\n"
                  "        exercises/02-scaling/scaling.cpp:28:9: unused variable ‘scale’ [-Wunused-variable]\n"
                  "        w2\n        w3\n        ... and 1 more warning (./book check 2 --json lists every one)\n") != std::string::npos);
  CHECK(text.find("w4") == std::string::npos);
  // --json: every one, in the chapter's object.
  sa::check::CheckReport report;
  report.chapters = {c};
  const nlohmann::json json = nlohmann::json::parse(sa::check::report_json(report));
  REQUIRE(json["chapters"][0]["warnings"].size() == 4);
  // Each as its parts, for a tool that jumps to the line; a line of another
  // form keeps its text alone.
  const nlohmann::json& first = json["chapters"][0]["warnings"][0];
  CHECK(first["file"] == "exercises/02-scaling/scaling.cpp");
  CHECK(first["line"] == 28);
  CHECK(first["column"] == 9);
  CHECK(first["message"] == "unused variable ‘scale’ [-Wunused-variable]");
  CHECK(first["text"] == c.warnings[0]);
  CHECK(json["chapters"][0]["warnings"][1] == nlohmann::json({{"text", "w2"}}));
}
