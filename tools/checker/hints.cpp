#include "hints.hpp"

#include "chapters.hpp"
#include "exercise_functions.hpp"
#include "read_file.hpp"

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>

namespace sa::check {
namespace {

namespace fs = std::filesystem;

const std::string kHintUsage = "usage: ./book hint N [FUNCTION]";
const std::string kHintHelp =
    kHintUsage + "\n\n" +
    "A hint for exercise function FUNCTION of chapter N (3, 03 or 03-softmax), or, without FUNCTION, for the\n"
    "chapter's next function still to write. Asked again, the next level: the idea, then the formula with its\n"
    "shapes, last something close to code.\n";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// "--" alone on its line (trailing blanks allowed) separates two levels.
bool separator(const std::string& line) {
  return line.starts_with("--") && line.find_first_not_of(" \t", 2) == std::string::npos;
}

// A section's header, "== name": the name, if the line is one.
std::optional<std::string> section(const std::string& line) {
  if (!line.starts_with("== ")) return std::nullopt;
  return line.substr(3);
}

// The whitespace-separated words of a line of build/hint-levels.
std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

bool is_key(const std::vector<std::string>& w, const std::string& chapter, const std::string& function) {
  return w.size() >= 2 && w[0] == chapter && w[1] == function;
}

}  // namespace

int hint_level_count(const std::string& hints, const std::string& function) {
  int count = 0;
  bool on = false;
  for (const std::string& line : lines_of(hints)) {
    if (const auto name = section(line)) {
      on = *name == function;
      if (on) count = 1;  // (a second section of the same name starts over)
    } else if (on && separator(line)) {
      ++count;
    }
  }
  return count;
}

std::vector<std::string> hint_lines(const std::string& hints, const std::string& function, int level) {
  std::vector<std::string> out;
  bool on = false;
  int at = 1;
  for (const std::string& line : lines_of(hints)) {
    if (const auto name = section(line)) {
      on = *name == function;
      at = 1;
    } else if (!on || line.starts_with("#")) {
      continue;
    } else if (separator(line)) {
      ++at;
    } else if (at == level && !(out.empty() && line.empty())) {
      out.push_back(line);
    }
  }
  return out;
}

int shown_hint_level(const fs::path& levels, const std::string& chapter, const std::string& function) {
  int shown = 0;  // (the last line for the function counts)
  for (const std::string& line : lines_of(read_file(levels))) {
    const std::vector<std::string> w = words(line);
    if (!is_key(w, chapter, function)) continue;
    const bool number = w.size() >= 3 && w[2].size() <= 6 && w[2].find_first_not_of("0123456789") == std::string::npos;
    shown = number ? std::stoi(w[2]) : 0;
  }
  return shown;
}

void remember_hint_level(const fs::path& levels, const std::string& chapter, const std::string& function, int level) {
  std::ostringstream kept;
  for (const std::string& line : lines_of(read_file(levels)))
    if (!is_key(words(line), chapter, function)) kept << line << '\n';
  if (level > 0) kept << chapter << ' ' << function << ' ' << level << '\n';  // (0: forgotten)
  // (written beside it, then renamed: an interrupted hint leaves the old file whole)
  fs::create_directories(levels.parent_path());
  const fs::path fresh = levels.string() + ".new";
  std::ofstream(fresh, std::ios::binary) << kept.str();
  fs::rename(fresh, levels);
}

void hint_command(const fs::path& root, const std::vector<std::string>& args, std::ostream& out) {
  if (asks_for_help(args)) {
    out << kHintHelp;
    return;
  }
  if (args.empty()) throw Refusal("hint: which chapter? (" + kHintUsage + ")");
  if (args.size() > 2)
    throw Refusal("hint: a chapter and at most one function, got '" + joined_words(args) + "' (" + kHintUsage + ")");
  const std::string chapter = chapter_name(root, args[0], book_chapters(root));
  const std::string n = std::to_string(chapter_number(chapter));
  const std::vector<ExerciseFunction> functions = chapter_exercises(root, chapter);

  std::optional<ExerciseFunction> function;
  if (args.size() == 2) {
    function = exercise_named(functions, chapter, args[1], "hint");
  } else {
    // The first function still a stub (or deleted), in the order to write them.
    for (const ExerciseFunction& f : functions) {
      if (function_state(root, chapter, f) != FunctionState::written) {
        function = f;
        break;
      }
    }
    if (!function) {
      out << "Every function of chapter " << n << " is written; ./book check " << n << " says whether each is right.\n"
          << "A hint for one of them: ./book hint " << n << " FUNCTION (" << name_list(functions) << ")\n";
      return;
    }
  }

  const fs::path hints_file = root / "tests" / "hints" / (chapter + ".txt");
  const std::string hints = read_file(hints_file);
  const int count = hint_level_count(hints, function->name);
  if (count == 0)
    throw Refusal("hint: no hints written for " + function->name + " yet (tests/hints/" + chapter +
                  ".txt); the stub's TODO says what to compute");
  // One level more than last time, and the last one again once it was shown.
  const fs::path levels = root / "build" / "hint-levels";
  const int level = std::min(shown_hint_level(levels, chapter, function->name) + 1, count);
  remember_hint_level(levels, chapter, function->name, level);

  const std::string what = level == 1 ? "the idea" : level < count ? "the formula, with shapes" : "close to code";
  out << function->name << " (exercises/" << chapter << "/" << function->file << "), hint " << level << " of " << count
      << ": " << what << "\n";
  for (const std::string& line : hint_lines(hints, function->name, level)) out << "  " << line << "\n";
  if (level < count)
    out << "More: ./book hint " << n << " " << function->name << "\n";
  else
    out << "That was the last hint for " << function->name << ". The reference answer is solutions/" << chapter << "/"
        << function->file << ".\n";
}

}  // namespace sa::check
