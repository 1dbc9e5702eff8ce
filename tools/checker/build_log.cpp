#include "build_log.hpp"

#include "build_progress.hpp"
#include "case_record.hpp"
#include "read_file.hpp"

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

// The lines of chapter n's failed steps in ninja's log: from a "FAILED:"
// line naming its library or suite to the next step's line. A log of a
// build that went on past one failure holds other chapters' errors too.
std::vector<std::string> chapter_steps(const std::vector<std::string>& logs, const std::string& n) {
  std::vector<std::string> lines;
  for (const std::string& log : logs) {
    bool in_chapter = false;
    for (const std::string& line : lines_of(log)) {
      if (line.starts_with("FAILED: ") || line.starts_with("[") || line.starts_with("ninja: "))
        in_chapter = line.starts_with("FAILED: ") && (line.find("sa_" + n + "_exercises") != std::string::npos ||
                                                      line.find("test_" + n + "_exercises") != std::string::npos);
      if (in_chapter) lines.push_back(line);
    }
  }
  return lines;
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


// ---- the linker's errors, in the reader's words --------------------------
// The linker names objects, not files: "libsa_02_exercises.a(scaling.cpp.o)"
// is the reader's exercises/02-scaling/scaling.cpp, "test_02_cases.dir/..."
// the hidden suite, whose offsets (test_scaling.cpp:(.text+0x891)) are no
// line the reader can open. And its last line, "collect2: error: ld
// returned 1 exit status", says nothing of what went wrong.

// The reader's folder of chapter n, "02-scaling": from the log's compile
// lines, else from the tree; "NN-..." if neither has it.
std::string exercise_folder(const std::string& n, const std::vector<std::string>& logs, const std::string& root) {
  const std::regex compiled("exercises/(" + n + "-[a-z0-9-]+)/");
  std::smatch m;
  for (const std::string& log : logs)
    if (std::regex_search(log, m, compiled)) return m[1];
  std::error_code ignored;
  for (const auto& f : fs::directory_iterator(fs::path(root) / "exercises", ignored))
    if (f.is_directory() && f.path().filename().string().starts_with(n + "-")) return f.path().filename().string();
  return n + "-...";
}

// A symbol as the reader spells it: the book's Matrix and RowVector for
// Eigen's full types, std::vector<long> without its allocator.
std::string reader_spelling(std::string symbol) {
  replace_all(symbol, "Eigen::Matrix<float, -1, -1, 1, -1, -1>", "Matrix");
  replace_all(symbol, "Eigen::Matrix<float, 1, -1, 1, 1, -1>", "RowVector");
  static const std::regex kAllocator(", std::allocator<[^<>]*> >");
  return std::regex_replace(symbol, kAllocator, ">");
}

// sa::scaled_scores(Matrix const&, Matrix const&) -> scaled_scores
std::string bare_name(const std::string& symbol) {
  std::string name = symbol.substr(0, symbol.find('('));
  if (const auto colons = name.rfind("::"); colons != std::string::npos) name = name.substr(colons + 2);
  return name;
}

// The header of the reader's chapter that declares a function, as
// "chapters/02-scaling/scaling.hpp"; empty if none does.
std::string declaring_header(const std::string& root, const std::string& folder, const std::string& function) {
  if (function.empty()) return "";
  const std::regex declared("\\b" + function + "\\s*\\(");
  std::error_code ignored;
  for (const auto& f : fs::directory_iterator(fs::path(root) / "chapters" / folder, ignored))
    if (f.path().extension() == ".hpp" && std::regex_search(read_file(f.path()), declared))
      return "chapters/" + folder + "/" + f.path().filename().string();
  return "";
}

// An object the linker names, as the reader knows it: one of their files of
// chapter n ("exercises/02-scaling/scaling.cpp"), "the hidden suite" (its
// test cases), or "" for another (a library's, another chapter's).
std::string object_words(const std::string& object, const std::string& n, const std::string& folder) {
  static const std::regex kMember("libsa_([0-9][0-9])_exercises\\.a\\(([^()]+)\\.o\\)");
  std::smatch m;
  if (std::regex_search(object, m, kMember) && m[1] == n) return "exercises/" + folder + "/" + m[2].str();
  if (object.find("test_" + n + "_cases.dir/") != std::string::npos) return "the hidden suite";
  return "";
}

// The checker's own sentence about a linker error: longer than a quoted
// compiler line may be (220), as it names the function, the files and what
// to look for, but still one line: a long signature is cut, not the advice
// after it.
constexpr size_t kLinkerSentence = 300;
std::string with_symbol(const std::string& before, const std::string& symbol, const std::string& after) {
  const size_t words = before.size() + after.size();
  return before + at_most(symbol, words + 40 < kLinkerSentence ? kLinkerSentence - words : 40) + after;
}

// Chapter n's first "multiple definition" or "undefined reference" in the
// logs, in the reader's words; empty if there is none. A linker error is
// chapter n's when its object, or the one its "in function" line names, is
// n's exercises or suite (one log may hold several chapters' links).
std::string linker_error(const std::string& n, const std::vector<std::string>& logs, const std::string& root) {
  static const std::regex kInFunction("^(?:/usr/bin/ld: )?(.*): in function [`'](.*)':$");
  static const std::regex kTwice("multiple definition of [`'](.*?)'; (.*): first defined here");
  static const std::regex kUndefined("undefined reference to [`'](.*)'$");
  const std::string folder = exercise_folder(n, logs, root);
  for (const std::string& log : logs) {
    std::string object, caller;  // of the last "in function" line
    for (const std::string& line : lines_of(log)) {
      std::smatch m;
      if (std::regex_search(line, m, kInFunction)) {
        object = m[1];
        caller = m[2];
        continue;
      }
      if (std::regex_search(line, m, kTwice)) {
        const std::string symbol = reader_spelling(m[1]), first = object_words(m[2], n, folder),
                          second = object_words(object, n, folder);
        const std::string mine = first.starts_with("exercises/") ? first : second;
        if (!mine.starts_with("exercises/")) continue;  // (another chapter's)
        // (the other main() is the suite's: Catch2's, or the suite's own)
        if (symbol == "main")
          return mine + " defines main(), but the hidden suite brings its own: delete yours (the exercise files "
                        "hold only the chapter's functions and your helpers)";
        if (first.starts_with("exercises/") && second.starts_with("exercises/") && first != second)
          return with_symbol("", symbol,
                             " is defined twice, in " + first + " and in " + fs::path(second).filename().string() +
                                 ": keep one (a helper of one file only: make it static, or put it in an unnamed "
                                 "namespace)");
        // The other is an earlier chapter's reference, which the suite links
        // whole (tests/CMakeLists.txt): the reader wrote that chapter's
        // function again, a copy as a helper, say.
        static const std::regex kEarlier("libsa_([0-9][0-9])_solutions\\.a\\(");
        std::smatch earlier;
        const std::string& other = first.starts_with("exercises/") ? object : m[2].str();
        if (std::regex_search(other, earlier, kEarlier) && earlier[1] != n) {
          const std::string chapter = earlier[1], number = std::to_string(std::stoi(chapter)),
                            header = declaring_header(root, exercise_folder(chapter, {}, root), bare_name(symbol));
          return with_symbol("", symbol,
                             " is chapter " + number + "'s function" + (header.empty() ? "" : " (" + header + ")") +
                                 ", and " + mine + " defines it again: call chapter " + number +
                                 "'s, or give yours another name (or make it static)");
        }
        return with_symbol("", symbol,
                           " is defined twice, in " + mine +
                               " and in the book's code the suite links: rename yours (or make it static)");
      }
      if (std::regex_search(line, m, kUndefined)) {
        const std::string symbol = reader_spelling(m[1]), where = object_words(object, n, folder);
        if (where == "the hidden suite") {
          const std::string header = declaring_header(root, folder, bare_name(symbol));
          const bool in_sa = symbol.starts_with("sa::");
          return with_symbol("the suite calls ", symbol,
                             (header.empty() ? "" : ", declared in " + header + ",") + " but no file of exercises/" +
                                 folder + "/ defines it with these parameters" +
                                 (in_sa ? " inside namespace sa" : "") + ": renamed? other parameters?" +
                                 (in_sa ? " outside namespace sa?" : "") + " a file emptied?");
        }
        if (where.starts_with("exercises/"))
          return with_symbol(where + ": " + reader_spelling(caller.substr(0, caller.find('('))) + " calls ", symbol,
                             ", which no file defines (declared but not defined, or defined with another name or "
                             "signature?)");
      }
    }
  }
  return "";
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
  // A linker error, in the reader's words: it names no line of theirs.
  if (line.empty())
    if (std::string sentence = linker_error(n, logs, root); !sentence.empty()) return sentence;
  // Another linker error: its own line rather than collect2's, which
  // only says that the linker failed.
  if (line.empty()) {
    static const std::regex kLinker("^(/usr/bin/ld: )?.*(undefined reference|multiple definition)");
    for (const std::string& step : chapter_steps(logs, n))
      if (std::regex_search(step, kLinker)) {
        line = step;
        break;
      }
  }
  if (line.empty()) line = first_line(logs, std::regex("(error|undefined reference)"));
  if (line.empty()) line = "the build failed (see: cmake --build build --target test_" + n + "_exercises)";
  replace_all(line, root + "/", "");
  if (line.starts_with("/usr/bin/ld: ")) line = line.substr(13);
  // A compiler cache that rewrites paths relative to the build folder
  // (ccache's CCACHE_BASEDIR) makes them "../exercises/...": from the
  // book's root, where the reader is, that is "exercises/...".
  for (const char* folder : {"exercises/", "chapters/", "solutions/", "tests/", "common/"})
    if (line.starts_with(std::string("../") + folder)) line = line.substr(3);
  // An error in the book's own files, which compile as handed out: a file
  // of the book was edited, most often a header under chapters/ (a reader
  // who changed a declaration to match an exercise). Say so: the line
  // alone points away from the reader's change.
  for (const char* book : {"chapters/", "solutions/", "tests/", "common/"})
    if (line.starts_with(book))
      return at_most(line, 160) + " (the book's own code, which compiles as handed out: was a file of the book "
                                  "edited, a header under chapters/? git diff shows it)";
  return at_most(line, 220);
}

std::map<std::string, std::string> build_suites(const fs::path& build_dir, const std::vector<std::string>& chapters,
                                                const fs::path& log, const std::string& root, int jobs,
                                                std::ostream& progress, bool terminal) {
  using namespace std::chrono_literals;
  std::vector<std::string> suites;
  for (const std::string& c : chapters) suites.push_back("test_" + c.substr(0, 2) + "_exercises");
  std::vector<std::string> command = build_command(build_dir, jobs, suites);
  const BuildLock lock(build_dir, progress);  // (the builds below, the chapters' again too)
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
