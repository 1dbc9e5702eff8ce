#include "build_log.hpp"

#include "build_progress.hpp"
#include "case_record.hpp"

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <thread>

namespace sa::check {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The first line of the logs matching `pattern` (log by log, as grep -h -m1 | head -n1).
std::string first_line(const std::vector<std::string>& logs, const std::regex& pattern) {
  for (const std::string& log : logs)
    for (const std::string& line : lines_of(log))
      if (std::regex_search(line, pattern)) return line;
  return "";
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size()) text.replace(at, from.size(), to);
}

// At most `limit` characters (UTF-8 code points, as the compiler's quotes
// are), cut to limit - 3 and "..." beyond.
std::string at_most(const std::string& line, size_t limit) {
  std::vector<size_t> starts;  // byte offset of each character
  for (size_t i = 0; i < line.size(); ++i)
    if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80) starts.push_back(i);
  if (starts.size() <= limit) return line;
  return line.substr(0, starts[limit - 3]) + "...";
}

}  // namespace

std::string last_compiled(const std::string& log) {
  static const std::string kBuilding = "Building CXX object ";
  std::string last;
  for (const std::string& line : lines_of(log))
    if (const auto at = line.find(kBuilding); at != std::string::npos) last = line.substr(at + kBuilding.size());
  if (last.ends_with(".o")) last.resize(last.size() - 2);
  if (const auto dir = last.rfind(".dir/"); dir != std::string::npos && last.find("CMakeFiles/") != std::string::npos) {
    // A batch of a program's files (SA_UNITY in CMakeLists.txt) is named
    // by its target: "files of sa_common_narrative", not Unity/unity_0_cxx.cxx.
    if (last.compare(dir + 5, 6, "Unity/") == 0) {
      const auto target = last.rfind('/', dir) + 1;
      return "files of " + last.substr(target, dir - target);
    }
    last = last.substr(dir + 5);
  }
  if (last == "cmake_pch.hxx.gch") return "the precompiled Eigen and fmt";
  return last;
}


std::string first_error(const std::string& n, const std::vector<std::string>& logs, const std::string& root) {
  std::string line =
      first_line(logs, std::regex("/(exercises|chapters|tests)/" + n + "-[a-z0-9-]+/[^:]+:[0-9]+(:[0-9]+)?: (fatal )?error: "));
  if (line.empty()) {
    // An error inside a library's template: the reader's line is the one the
    // compiler says it was "required from".
    std::string from = first_line(logs, std::regex("/exercises/" + n + "-[a-z0-9-]+/[^:]+:[0-9]+:[0-9]+: +required from here"));
    std::string error = first_line(logs, std::regex(": (fatal )?error: "));
    static const std::regex kRequired(": +required from here.*");
    static const std::regex kUpToError(".*: (fatal )?error: ");
    if (!from.empty()) line = std::regex_replace(from, kRequired, "") + ": error inside a library it calls: " +
                              std::regex_replace(error, kUpToError, "");
  }
  if (line.empty()) {
    // A linker error: the undefined reference under "in function" of this
    // chapter's objects (within three lines, as the linker prints them).
    const std::regex in_function("_" + n + "_exercises\\.dir/.*: in function");
    for (const std::string& log : logs) {
      const std::vector<std::string> lines = lines_of(log);
      for (size_t i = 0; i < lines.size() && line.empty(); ++i)
        if (std::regex_search(lines[i], in_function))
          for (size_t j = i; j <= i + 3 && j < lines.size() && line.empty(); ++j)
            if (lines[j].find("undefined reference") != std::string::npos) line = lines[j];
      if (!line.empty()) break;
    }
  }
  if (line.empty()) line = first_line(logs, std::regex("(error|undefined reference)"));
  if (line.empty()) line = "the build failed (see: cmake --build build --target test_" + n + "_exercises)";
  replace_all(line, root + "/", "");
  if (line.starts_with("/usr/bin/ld: ")) line = line.substr(13);
  return at_most(line, 220);
}

std::map<std::string, std::string> build_suites(const fs::path& build_dir, const std::vector<std::string>& chapters,
                                                const fs::path& log, const std::string& root, int jobs,
                                                std::ostream& progress, bool terminal) {
  using namespace std::chrono_literals;
  std::vector<std::string> suites;
  for (const std::string& c : chapters) suites.push_back("test_" + c.substr(0, 2) + "_exercises");
  std::vector<std::string> command = build_command(build_dir, jobs, suites);
  // Keep going past a chapter that does not compile: the others still build.
  command.insert(command.end(), {"--", built_by_ninja(build_dir) ? "-k0" : "-k"});
  std::ofstream(log).close();
  const pid_t pid = start_logged(command, log);
  int shown = -1;
  for (int tick = 0;; ++tick) {
    int status = 0;
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid || done < 0) {
      if (terminal) progress << "\r\033[K" << std::flush;
      if (done == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
      break;
    }
    const std::string text = read_file(log);
    const int compiled = files_compiled(text);
    const std::string now = last_compiled(text);
    if (terminal) {
      progress << "\r\033[K  building: " << compiled << " file(s) compiled" << (now.empty() ? "" : ", now " + now)
                << std::flush;
    } else if (compiled > 0 && compiled != shown && tick % 20 == 0) {
      // (A count, not a promise: 0 while make decides what changed said
      // nothing true, so the first line waits for the first file.)
      progress << "  building: " << compiled << " file(s) started, now " << now << std::endl;
      shown = compiled;
    }
    std::this_thread::sleep_for(500ms);
  }
  // Which chapters failed: the log names their targets, or a build of that
  // chapter's suite alone fails again.
  const std::string text = read_file(log);
  const fs::path again = log.string() + ".again";
  std::map<std::string, std::string> broken;
  for (const std::string& c : chapters) {
    const std::string n = c.substr(0, 2);
    const std::regex failed("\\*\\*\\* .*(sa|test)_" + n + "_exercises\\.dir|FAILED: .*(sa|test)_" + n + "_exercises");
    if (std::regex_search(text, failed) ||
        !succeeded(start_logged({"cmake", "--build", build_dir.string(), "--target", "test_" + n + "_exercises"}, again)))
      broken[c] = first_error(n, {text, read_file(again)}, root);
  if (const fs::path record = record_folder(); !record.empty() && !broken.empty()) {
    std::ofstream(record / "build.log") << text;
    std::ofstream(record / "build.log.again") << read_file(again);
  }
  }
  return broken;
}

}  // namespace sa::check
