#include "build_progress.hpp"

#include "read_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <iostream>
#include <sstream>
#include <thread>

namespace sa::check {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> log_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The first error's line, as grep -E 'error:|Error [0-9]+|undefined reference'
// finds it (make says "Error 1", the compiler "error:", the linker the rest).
bool error_line(const std::string& line) {
  if (line.find("error:") != std::string::npos || line.find("undefined reference") != std::string::npos) return true;
  for (size_t at = line.find("Error "); at != std::string::npos; at = line.find("Error ", at + 1))
    if (at + 6 < line.size() && line[at + 6] >= '0' && line[at + 6] <= '9') return true;
  return false;
}

}  // namespace

pid_t start_logged(const std::vector<std::string>& words, const fs::path& log) {
  // The log is read for "error:", "warning:", "undefined reference" and
  // make's "Error 1": the words of an English compiler. A reader whose
  // locale is German and who has gcc's translations (gcc-12-locales) gets
  // "Fehler:" instead, and check would show the compiler's command line
  // for the error. C.UTF-8 keeps the messages English and the quotes
  // UTF-8; LANGUAGE, which gettext reads before the locale, goes too.
  // (Through env(1): the child of a fork may not call setenv safely.)
  std::vector<std::string> args = {"env", "-u", "LANGUAGE", "LC_ALL=C.UTF-8"};
  args.insert(args.end(), words.begin(), words.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string log_path = log.string();
  std::cout.flush();
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (out >= 0) {
      dup2(out, STDOUT_FILENO);
      dup2(out, STDERR_FILENO);
    }
    execvp(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

bool succeeded(pid_t pid) {
  int status = 0;
  if (pid <= 0 || waitpid(pid, &status, 0) != pid) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int files_compiled(const std::string& log) {
  int n = 0;
  for (const std::string& line : log_lines(log)) n += line.find("Building CXX object") != std::string::npos;
  return n;
}

void show_build_progress(const fs::path& log, const std::string& what, const std::function<bool()>& running,
                         std::ostream& out, bool terminal) {
  using namespace std::chrono;
  const auto began = steady_clock::now();
  int shown = -1;
  for (int tick = 0; running(); ++tick) {
    const int compiled = files_compiled(read_file(log));
    const long seconds = duration_cast<std::chrono::seconds>(steady_clock::now() - began).count();
    if (terminal) {
      out << "\r\033[K  building " << what << ": " << compiled << " file(s) compiled, " << seconds << " s"
          << std::flush;
    } else if (tick > 0 && tick % 40 == 0 && compiled != shown) {
      out << "  building " << what << ": " << compiled << " file(s) compiled so far (" << seconds << " s)" << std::endl;
      shown = compiled;
    }
    std::this_thread::sleep_for(milliseconds(500));
  }
  if (terminal) out << "\r\033[K" << std::flush;
}

std::string build_error_excerpt(const std::string& log) {
  const std::vector<std::string> lines = log_lines(log);
  size_t first = 0, count = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (error_line(lines[i])) {
      first = i;
      count = 13;
      break;
    }
  }
  if (count == 0) {  // no error line: the log's end
    first = lines.size() > 30 ? lines.size() - 30 : 0;
    count = 30;
  }
  std::string excerpt;
  for (size_t i = first; i < lines.size() && i < first + count; ++i) excerpt += lines[i] + "\n";
  return excerpt;
}

namespace {

// The process id in a scratch folder's name, PREFIX-PID-XXXXXX; 0 if none.
pid_t scratch_owner(const std::string& name) {
  const size_t last = name.rfind('-');
  if (last == std::string::npos || last == 0) return 0;
  const size_t before = name.rfind('-', last - 1);
  if (before == std::string::npos) return 0;
  try {
    return pid_t(std::stol(name.substr(before + 1, last - before - 1)));
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

fs::path scratch_folder(const fs::path& build_dir, const std::string& prefix) {
  std::error_code ec;
  const fs::path home = build_dir / ".scratch";
  fs::create_directories(home, ec);
  // (a build folder that cannot hold one: the system's temporary folder, if
  // there is one)
  std::error_code no_tmp;
  const fs::path parent = ec ? fs::temp_directory_path(no_tmp) : home;
  if (no_tmp) return {};
  if (!ec)
    for (const auto& entry : fs::directory_iterator(home, ec)) {
      const pid_t owner = scratch_owner(entry.path().filename().string());
      // kill(pid, 0) asks whether the process exists; ESRCH: it has ended.
      if (owner > 0 && kill(owner, 0) != 0 && errno == ESRCH) fs::remove_all(entry.path(), ec);
    }
  std::string name = (parent / (prefix + "-" + std::to_string(getpid()) + "-XXXXXX")).string();
  if (!mkdtemp(name.data())) return {};
  return name;
}

BuildLock::BuildLock(const fs::path& build_dir, std::ostream& note) {
  fd_ = open((build_dir / ".book-build.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) return;
  if (flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
  note << "book: waiting for another build in " << build_dir.string() << " to end (another ./book is building there)"
       << std::endl;
  while (flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
  }
}

BuildLock::~BuildLock() {
  if (fd_ >= 0) close(fd_);
}

std::vector<std::string> build_command(const fs::path& build_dir, int jobs, const std::vector<std::string>& targets) {
  std::vector<std::string> command = {"cmake", "--build", build_dir.string(), "-j", std::to_string(jobs), "--target"};
  command.insert(command.end(), targets.begin(), targets.end());
  return command;
}

bool built_by_ninja(const fs::path& build_dir) {
  return read_file(build_dir / "CMakeCache.txt").find("CMAKE_GENERATOR:INTERNAL=Ninja") != std::string::npos;
}

std::string build_targets(const fs::path& build_dir, int jobs, const std::string& what,
                          const std::vector<std::string>& targets) {
  const fs::path scratch = scratch_folder(build_dir, "build");
  const fs::path log = scratch.empty() ? fs::path("/dev/null") : scratch / "build.log";
  std::string listed;
  for (const std::string& t : targets) listed += (listed.empty() ? "" : " ") + t;
  const BuildLock lock(build_dir, std::cerr);
  const pid_t pid = start_logged(build_command(build_dir, jobs, targets), log);
  int status = -1;
  show_build_progress(
      log, what, [&] { return waitpid(pid, &status, WNOHANG) == 0; }, std::cout, isatty(STDOUT_FILENO));
  std::string refusal;
  if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    std::cerr << build_error_excerpt(read_file(log)) << std::flush;
    refusal = "building " + what + " failed (again, with every line: cmake --build build --target " + listed + ")";
  }
  std::error_code ignored;
  if (!scratch.empty()) fs::remove_all(scratch, ignored);
  return refusal;
}

}  // namespace sa::check
