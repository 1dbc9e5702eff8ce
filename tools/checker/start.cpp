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

namespace sa::check {
namespace {

namespace fs = std::filesystem;

volatile std::sig_atomic_t stop_signal = 0;
extern "C" void start_stopped(int signal) { stop_signal = signal; }

// The builder: a process group of its own (so that it can be stopped whole,
// compilers included), which builds the chapters one by one and leaves a
// mark for each, CHAPTER.ok or CHAPTER.failed, beside its log CHAPTER.log.
// (Niced: a chapter that runs while the next one compiles keeps its core,
// and the times it prints are its own.)
pid_t start_builder(const fs::path& build_dir, int jobs, const std::vector<std::string>& chapters,
                    const fs::path& marks) {
  std::cout.flush();
  const pid_t builder = fork();
  if (builder != 0) {
    if (builder > 0) setpgid(builder, builder);  // (also here: whichever runs first)
    return builder;
  }
  setpgid(0, 0);
  // (The runner's handlers are not the builder's: a SIGTERM ends it.)
  for (int s : {SIGINT, SIGTERM, SIGHUP}) signal(s, SIG_DFL);
  for (const std::string& c : chapters) {
    const pid_t pid = start_logged(
        {"nice", "-n", "19", "cmake", "--build", build_dir.string(), "-j", std::to_string(jobs), "--target", c},
        marks / (c + ".log"));
    const bool ok = succeeded(pid);
    std::ofstream(marks / (c + (ok ? ".ok" : ".failed")));
    if (!ok) _exit(1);
  }
  _exit(0);
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
  std::string marks_template = (fs::temp_directory_path() / "book-start.XXXXXX").string();
  if (!mkdtemp(marks_template.data())) {
    std::cerr << "book: cannot make a scratch folder in " << fs::temp_directory_path().string() << std::endl;
    return 2;
  }
  const fs::path marks = marks_template;
  // Ctrl-C (or a failed chapter) stops the builder and its compilers too.
  struct sigaction action {};
  action.sa_handler = start_stopped;
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaction(s, &action, nullptr);
  const pid_t builder = start_builder(build_dir, jobs, chapters, marks);
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

  for (const std::string& c : chapters) {
    const fs::path ok = marks / (c + ".ok"), failed = marks / (c + ".failed");
    // A progress line while the builder is still on this chapter.
    show_build_progress(
        marks / (c + ".log"), c, [&] { return !stop_signal && !fs::exists(ok) && !fs::exists(failed); }, std::cout,
        isatty(STDOUT_FILENO));
    if (stop_signal) return finish(130);
    if (fs::exists(failed)) {
      std::cerr << build_error_excerpt(read_file(marks / (c + ".log")));
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
  std::cout << "\nbook: ran " << chapters.size() << " chapter(s) in " << seconds
            << " s. Next: ./book test, then ./book check for the exercises." << std::endl;
  return 0;
}

}  // namespace sa::check
