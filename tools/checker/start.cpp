#include "start.hpp"

#include "build_progress.hpp"
#include "read_file.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>

namespace sa::check {
namespace {

namespace fs = std::filesystem;

volatile std::sig_atomic_t stop_signal = 0;
extern "C" void start_stopped(int signal) { stop_signal = signal; }

// The builder's builds: niced (see start_builder).
std::vector<std::string> niced_build(const fs::path& build_dir, int jobs, const std::vector<std::string>& targets) {
  std::vector<std::string> words = {"nice", "-n", "19"};
  for (std::string& w : build_command(build_dir, jobs, targets)) words.push_back(std::move(w));
  return words;
}

// The builder: a process group of its own (so that it can be stopped whole,
// compilers included), which leaves marks for the runner beside its logs.
// (Niced: a chapter that runs while the next one compiles keeps its core,
// and the times it prints are its own.)
//  - Ninja: one build of every chapter, logged in build.log, then build.ok
//    or build.failed. Ninja starts the ready file that comes first in
//    build.ninja, and CMake writes the chapters there in reading order, so
//    chapter 1 is still linked first, while the second core compiles the
//    next chapters instead of waiting for the last file of this one. (The
//    common library comes after the chapters in build.ninja: it is built
//    first, on its own.) The runner reads in build.log which programs are
//    linked.
//  - make: the chapters one by one, CHAPTER.ok or CHAPTER.failed beside
//    each CHAPTER.log.
pid_t start_builder(const fs::path& build_dir, int jobs, const std::vector<std::string>& chapters,
                    const fs::path& marks, bool ninja) {
  std::cout.flush();
  const pid_t builder = fork();
  if (builder != 0) {
    if (builder > 0) setpgid(builder, builder);  // (also here: whichever runs first)
    return builder;
  }
  setpgid(0, 0);
  // (The runner's handlers are not the builder's: a SIGTERM ends it.)
  for (int s : {SIGINT, SIGTERM, SIGHUP}) signal(s, SIG_DFL);
  const BuildLock lock(build_dir, std::cerr);  // every build of the chapters, until the builder ends
  if (ninja) {
    const fs::path log = marks / "build.log";
    const bool ok = succeeded(start_logged(niced_build(build_dir, jobs, {"sa_foundation"}), log)) &&
                    succeeded(start_logged(niced_build(build_dir, jobs, chapters), log));
    std::ofstream(marks / (ok ? "build.ok" : "build.failed"));
    _exit(ok ? 0 : 1);
  }
  for (const std::string& c : chapters) {
    const bool ok = succeeded(start_logged(niced_build(build_dir, jobs, {c}), marks / (c + ".log")));
    std::ofstream(marks / (c + (ok ? ".ok" : ".failed")));
    if (!ok) _exit(1);
  }
  _exit(0);
}

// Whether Ninja's log says that it linked `chapter`'s program. Ninja prints
// a step's line when the step has ended, and right after it "FAILED: " when
// the step failed; so the line counts once another line follows it, or once
// the build is over.
bool linked(const std::string& log, const std::string& chapter, bool build_over) {
  const std::string line = "Linking CXX executable bin/" + chapter + "\n";
  const size_t at = log.find(line);
  if (at == std::string::npos) return false;
  const size_t next = at + line.size();
  if (next == log.size() && !build_over) return false;
  return log.compare(next, 8, "FAILED: ") != 0;
}

// Whether a chapter's program is already up to date (a second `./book
// start`): Ninja's dry run has nothing to do.
bool up_to_date(const fs::path& build_dir, const std::string& chapter, const fs::path& marks) {
  const fs::path log = marks / (chapter + ".dry-run");
  if (!succeeded(start_logged({"cmake", "--build", build_dir.string(), "--target", chapter, "--", "-n"}, log)))
    return false;
  return read_file(log).find("ninja: no work to do.") != std::string::npos;
}

// The options of a chapter's short run (chapters/NN-name/quick_options.txt,
// words on one line), or none.
std::vector<std::string> quick_options(const fs::path& source_dir, const std::string& chapter) {
  std::vector<std::string> words;
  std::ifstream in(source_dir / "chapters" / chapter / "quick_options.txt");
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

// Runs a chapter's program in the foreground; its wait status.
int run_program(const fs::path& program, const std::vector<std::string>& options) {
  std::cout.flush();
  std::vector<std::string> words = {program.string()};
  words.insert(words.end(), options.begin(), options.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    execv(program.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

int start_chapters(const fs::path& source_dir, const fs::path& build_dir, int jobs,
                   const std::vector<std::string>& chapters) {
  const auto began = std::chrono::steady_clock::now();
  // (in build/.scratch, as check's: TMPDIR may name no folder)
  const fs::path marks = scratch_folder(build_dir, "start");
  if (marks.empty()) {
    std::cerr << "book: cannot make a scratch folder in " << (build_dir / ".scratch").string() << std::endl;
    return 2;
  }
  const bool ninja = built_by_ninja(build_dir);
  std::set<std::string> already_built;
  if (ninja)
    for (const std::string& c : chapters)
      if (up_to_date(build_dir, c, marks)) already_built.insert(c);
  // Ctrl-C (or a failed chapter) stops the builder and its compilers too.
  struct sigaction action {};
  action.sa_handler = start_stopped;
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaction(s, &action, nullptr);
  const pid_t builder = start_builder(build_dir, jobs, chapters, marks, ninja);
  auto finish = [&](int status) {
    if (builder > 0) {
      kill(-builder, SIGTERM);
      waitpid(builder, nullptr, 0);
    }
    std::error_code ignored;
    fs::remove_all(marks, ignored);
    if (stop_signal) {  // end as the signal ends a program, as the shell did
      signal(stop_signal, SIG_DFL);
      raise(stop_signal);
    }
    return status;
  };

  bool one_by_one = false;  // after Ninja's build of every chapter failed
  for (const std::string& c : chapters) {
    // What the builder says of this chapter: built, failed, or not yet.
    const fs::path log = ninja ? marks / "build.log" : marks / (c + ".log");
    const auto built = [&] {
      if (!ninja) return fs::exists(marks / (c + ".ok"));
      const bool over = fs::exists(marks / "build.ok") || fs::exists(marks / "build.failed");
      return already_built.count(c) > 0 || fs::exists(marks / "build.ok") || linked(read_file(log), c, over);
    };
    const auto failed = [&] { return fs::exists(marks / (ninja ? "build.failed" : c + ".failed")); };
    // A progress line while the builder is still on this chapter.
    if (!one_by_one)
      show_build_progress(
          log, c, [&] { return !stop_signal && !built() && !failed(); }, std::cout, isatty(STDOUT_FILENO));
    if (stop_signal) return finish(130);
    if (ninja && (one_by_one || !built())) {
      // The build of every chapter stopped at its first error, which may be
      // a later chapter's: this chapter's own build says whether it builds
      // (and, failing, prints its first error).
      one_by_one = true;
      const std::string refusal = build_targets(build_dir, jobs, c, {c});
      if (stop_signal) return finish(130);
      if (!refusal.empty()) {
        std::cerr << "book: " << refusal << std::endl;
        return finish(2);
      }
    } else if (!built()) {
      std::cerr << build_error_excerpt(read_file(log));
      std::cerr << "book: building " << c << " failed (again, with every line: cmake --build build --target " << c
                << ")" << std::endl;
      return finish(2);
    }
    const std::vector<std::string> options = quick_options(source_dir, c);
    if (!options.empty()) {
      std::string shown;
      for (const std::string& w : options) shown += " " + w;
      std::cout << "\n(book: chapter " << std::stoi(c.substr(0, 2)) << " runs its short run here:" << shown
                << "; ./book run " << std::stoi(c.substr(0, 2)) << " runs it in full)" << std::endl;
    }
    const int status = run_program(build_dir / "bin" / c, options);
    if (stop_signal) return finish(130);
    if (WIFSIGNALED(status)) return finish(128 + WTERMSIG(status));
    if (WEXITSTATUS(status) != 0) return finish(WEXITSTATUS(status));
  }
  finish(0);
  const long seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - began).count();
  std::cout << "\nbook: ran " << chapters.size() << (chapters.size() == 1 ? " chapter in " : " chapters in ") << seconds
            << " s. Next: ./book test, then ./book check for the exercises." << std::endl;
  return 0;
}

}  // namespace sa::check
