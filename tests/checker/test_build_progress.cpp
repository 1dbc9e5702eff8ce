// ./book's builds (tools/checker/build_progress.cpp, book-build): what a
// failed build shows, and the progress line in a log and on a terminal.
#include "build_progress.hpp"
#include "checker_fixtures.hpp"
#include "../support/scratch.hpp"

#include "support/catch2_compat.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

using namespace sa::check;

namespace {

std::string numbered_lines(int first, int last) {
  std::string text;
  for (int i = first; i <= last; ++i) text += "line " + std::to_string(i) + "\n";
  return text;
}

}  // namespace

TEST_CASE("a failed build shows its first error and the 12 lines after it", "[checker]") {
  const std::string log = numbered_lines(1, 5) + "ninja: Error 1 somewhere\n" + numbered_lines(7, 30);
  CHECK(build_error_excerpt(log) == "ninja: Error 1 somewhere\n" + numbered_lines(7, 18));
  // The compiler's "error:" and the linker's "undefined reference" count;
  // "Error" without a number does not.
  CHECK(build_error_excerpt("Error in the title\nx.cpp:1:1: error: no\n").starts_with("x.cpp:1:1: error: no\n"));
  CHECK(build_error_excerpt("a\nqkv.cpp:(.text): undefined reference to `f'\nb\n") ==
        "qkv.cpp:(.text): undefined reference to `f'\nb\n");
  const std::string recorded = build_error_excerpt(checker_fixture("logs/compile_error.log"));
  CHECK(recorded.find("error: ‘retrun’ was not declared in this scope") != std::string::npos);
}

TEST_CASE("a failed build without an error line shows the log's last 30 lines", "[checker]") {
  CHECK(build_error_excerpt(numbered_lines(1, 40)) == numbered_lines(11, 40));
  CHECK(build_error_excerpt(numbered_lines(1, 3)) == numbered_lines(1, 3));
}

TEST_CASE("the progress line is rewritten in place on a terminal and cleared at the end", "[checker]") {
  const ScratchTree tree("exercise_tree");  // (a scratch folder for the log)
  tree.write("build.log", "[1/3] Building CXX object a.o\n[2/3] Building CXX object b.o\n");
  std::ostringstream out;
  int ticks = 0;
  show_build_progress(
      tree.root / "build.log", "01-demo", [&] { return ticks++ < 1; }, out, true);
  CHECK(out.str() == "\r\033[K  building 01-demo: 2 file(s) compiled, 0 s\r\033[K");
  // In a log: nothing in the first 20 s.
  std::ostringstream log_out;
  ticks = 0;
  show_build_progress(
      tree.root / "build.log", "01-demo", [&] { return ticks++ < 1; }, log_out, false);
  CHECK(log_out.str().empty());
}

// Two builds in one build folder at once (two `./book run 1` after an edit)
// compiled the same objects together, and one failed: "ranlib: error
// reading unity_2_cxx.cxx.o: file truncated". They take turns now, the
// second saying that it waits. Here `cmake` is a script on PATH that logs
// its start and its end, a second apart.
TEST_CASE("two builds in one build folder take turns, the second saying that it waits", "[checker]") {
  namespace fs = std::filesystem;
  using namespace std::chrono_literals;
  const fs::path dir = fs::temp_directory_path() / ("sa_build_lock_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "bin");
  const fs::path order = dir / "order";
  std::ofstream(dir / "bin" / "cmake") << "#!/bin/sh\necho start >>'" << order.string() << "'\nsleep 1\necho end >>'"
                                       << order.string() << "'\n";
  fs::permissions(dir / "bin" / "cmake", fs::perms::owner_all);
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
  ::setenv("PATH", ((dir / "bin").string() + ":" + path).c_str(), 1);
  std::ostringstream note;
  std::streambuf* const cerr = std::cerr.rdbuf(note.rdbuf());
  std::string first = "unset", second = "unset";
  std::thread a([&] { first = build_targets(dir, 1, "the first", {"a"}); });
  std::this_thread::sleep_for(300ms);
  std::thread b([&] { second = build_targets(dir, 1, "the second", {"b"}); });
  a.join();
  b.join();
  std::cerr.rdbuf(cerr);
  ::setenv("PATH", path.c_str(), 1);
  CHECK(first.empty());
  CHECK(second.empty());
  std::ifstream in(order);
  const std::string logged((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(logged == "start\nend\nstart\nend\n");
  CHECK(note.str() == "book: waiting for another build in " + dir.string() +
                          " to end (another ./book is building there)\n");
  fs::remove_all(dir);
}

TEST_CASE("a run's scratch folder is in the build folder, and the next run removes what a stopped run left",
          "[checker]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("sa_scratch_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / ".scratch");
  // A process that has ended: a child, waited for.
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  const fs::path stopped = dir / ".scratch" / ("check-" + std::to_string(child) + "-AbCdEf");
  const fs::path running = dir / ".scratch" / ("check-" + std::to_string(::getpid()) + "-GhIjKl");
  const fs::path other = dir / ".scratch" / "notes";  // not a run's: no process id in its name
  for (const fs::path& p : {stopped, running, other}) fs::create_directories(p / "cases");

  const fs::path made = scratch_folder(dir, "build");
  INFO("made " << made.string());
  CHECK(made.parent_path() == dir / ".scratch");
  CHECK(made.filename().string().starts_with("build-" + std::to_string(::getpid()) + "-"));
  CHECK(fs::is_directory(made));
  CHECK(fs::is_empty(made));
  CHECK_FALSE(fs::exists(stopped));  // its run ended without removing it
  CHECK(fs::exists(running));        // this process is still running
  CHECK(fs::exists(other));
  CHECK(scratch_folder(dir, "build") != made);  // one folder a run
  fs::remove_all(dir);
}

TEST_CASE("a logged build runs in English whatever the reader's locale, so that its errors are found", "[checker]") {
  namespace fs = std::filesystem;
  const fs::path log = sa::test::scratch_dir("sa_build_locale") / "build.log";
  // A German reader with gcc's translations: gcc would write "Fehler:".
  const auto kept = [](const char* name) {
    const char* value = std::getenv(name);
    return value ? std::optional<std::string>(value) : std::nullopt;
  };
  const std::optional<std::string> lc_all = kept("LC_ALL"), language = kept("LANGUAGE");
  ::setenv("LC_ALL", "de_DE.UTF-8", 1);
  ::setenv("LANGUAGE", "de", 1);
  const pid_t pid = start_logged({"sh", "-c", "echo \"LC_ALL=$LC_ALL LANGUAGE=${LANGUAGE-unset}\""}, log);
  const bool ok = succeeded(pid);
  for (const auto& [name, value] : {std::pair{"LC_ALL", lc_all}, std::pair{"LANGUAGE", language}})
    value ? ::setenv(name, value->c_str(), 1) : ::unsetenv(name);
  CHECK(ok);
  std::ifstream in(log);
  std::string line;
  std::getline(in, line);
  CHECK(line == "LC_ALL=C.UTF-8 LANGUAGE=unset");
  fs::remove(log);
}
