#include "exercise_functions.hpp"

#include "chapters.hpp"
#include "read_file.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

namespace sa::check {
namespace {

namespace fs = std::filesystem;

bool blank(const std::string& s, bool allow_empty) {
  if (s.empty()) return allow_empty;
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t'; });
}

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Whether `word` stands in `text` as a word of its own (not inside an identifier).
bool has_word(const std::string& text, const std::string& word) {
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const size_t end = at + word.size();
    if ((at == 0 || !word_char(text[at - 1])) && (end == text.size() || !word_char(text[end]))) return true;
  }
  return false;
}

// The first identifier followed by "(" (spaces or tabs between allowed):
// the function a definition's head names, "row_entropy" in
// "std::vector<double> row_entropy(const Matrix& w)". Empty if none.
std::string first_called(const std::string& head) {
  for (size_t i = 0; i < head.size(); ++i) {
    if (!(std::isalpha(static_cast<unsigned char>(head[i])) || head[i] == '_')) continue;
    size_t end = i + 1;
    while (end < head.size() && word_char(head[end])) ++end;
    size_t paren = end;
    while (paren < head.size() && (head[paren] == ' ' || head[paren] == '\t')) ++paren;
    if (paren < head.size() && head[paren] == '(') return head.substr(i, end - i);
  }
  return "";
}

// The scanner's state across lines: where it is (a comment, a string, a
// function's body), the braces open and what each opened.
class Scanner {
 public:
  void line(const std::string& text, int number) {
    line_number_ = number;
    size_t i = 0;
    const size_t n = text.size();
    while (i < n) {
      const char c = text[i];
      const std::string c2 = text.substr(i, 2);
      if (in_block_) {
        if (c2 == "*/") {
          in_block_ = false;
          i += 2;
        } else {
          ++i;
        }
        continue;
      }
      if (in_string_) {
        std::string piece;
        if (c == '\\') {
          piece = c2;
          i += 2;
        } else {
          piece = std::string(1, c);
          ++i;
          if (c == quote_) in_string_ = false;
        }
        emit(piece);
        continue;
      }
      if (c2 == "//") break;
      if (c2 == "/*") {
        in_block_ = true;
        i += 2;
        continue;
      }
      // (a quote after a digit or letter is a digit separator: 1'000)
      if (c == '"' || (c == '\'' && !word_char(prev_))) {
        in_string_ = true;
        quote_ = c;
        emit(std::string(1, c));
        ++i;
        continue;
      }
      if (c == '{') {
        open_brace();
        ++i;
        continue;
      }
      if (c == '}') {
        close_brace();
        ++i;
        continue;
      }
      if (c == ';' && !function_depth_) {
        reset_head();
        prev_ = c;
        ++i;
        continue;
      }
      emit(std::string(1, c));
      ++i;
    }
    emit(" ");
  }

  std::vector<FunctionDefinition> functions;

 private:
  void emit(const std::string& s) {
    if (function_depth_) {
      if (!blank(s, false)) body_ += s;
    } else {
      if (!head_line_ && !blank(s, true)) head_line_ = line_number_;
      head_ += s;
    }
    if (!s.empty()) prev_ = s.back();
  }
  void reset_head() {
    head_.clear();
    head_line_ = 0;
  }
  bool all_namespaces() const {
    return std::all_of(kinds_.begin(), kinds_.end(), [](const std::string& k) { return k == "ns"; });
  }
  void open_brace() {
    if (function_depth_) {
      kinds_.push_back("in");
      body_ += '{';
    } else {
      std::string kind = "other", name;
      if (has_word(head_, "namespace")) {
        kind = "ns";
      } else if (all_namespaces() && head_.find('=') == std::string::npos && !(name = first_called(head_)).empty()) {
        current_ = {name, head_line_, 0, ""};
        kind = "fn";
        function_depth_ = int(kinds_.size()) + 1;
        body_.clear();
      }
      kinds_.push_back(kind);
    }
    reset_head();
    prev_ = '{';
  }
  void close_brace() {
    if (function_depth_ && int(kinds_.size()) == function_depth_) {
      current_.last_line = line_number_;
      current_.body = body_;
      functions.push_back(current_);
      function_depth_ = 0;
    } else if (function_depth_) {
      body_ += '}';
    }
    if (!kinds_.empty()) kinds_.pop_back();
    reset_head();
    prev_ = '}';
  }

  bool in_block_ = false, in_string_ = false;
  char quote_ = 0, prev_ = 0;
  std::string head_, body_;
  int head_line_ = 0, line_number_ = 0, function_depth_ = 0;
  std::vector<std::string> kinds_;  // what each open brace opened: ns, fn, in, other
  FunctionDefinition current_;
};

}  // namespace

std::vector<FunctionDefinition> functions_in(const std::string& source) {
  Scanner scanner;
  std::istringstream in(source);
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    // A file saved with CRLF line ends scans as the same file with LF: the
    // '\r' would start the next definition's head on the line of the last
    // one's closing brace, and make a stub's body differ from itself.
    if (!line.empty() && line.back() == '\r') line.pop_back();
    scanner.line(line, ++number);
  }
  return scanner.functions;
}

std::vector<FunctionDefinition> functions_of_file(const fs::path& path) { return functions_in(read_file(path)); }

std::vector<ExerciseFunction> chapter_exercises(const fs::path& root, const std::string& chapter) {
  // Each section of the hints file, "== name", gives its function's place.
  std::map<std::string, int> place;
  std::ifstream hints(root / "tests" / "hints" / (chapter + ".txt"));
  int sections = 0;
  for (std::string line; std::getline(hints, line);)
    if (line.starts_with("== ")) place[line.substr(3)] = ++sections;

  // The stubs in the order of their names, as the shell's glob lists them.
  std::vector<fs::path> stubs;
  std::error_code ignored;
  for (const auto& entry : fs::directory_iterator(root / "tests" / "stubs" / chapter, ignored))
    if (entry.path().extension() == ".cpp" && entry.is_regular_file()) stubs.push_back(entry.path());
  std::sort(stubs.begin(), stubs.end());

  // (a function the hints do not name goes after those they do, in the
  // stubs' order: the same key as its position plus a number past them)
  std::vector<std::pair<int, ExerciseFunction>> keyed;
  for (const fs::path& stub : stubs) {
    for (const FunctionDefinition& f : functions_of_file(stub)) {
      const auto it = place.find(f.name);
      const int key = it != place.end() ? it->second : 1000000 + int(keyed.size());
      keyed.push_back({key, {stub.filename().string(), f.name}});
    }
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<ExerciseFunction> functions;
  for (auto& [key, function] : keyed) functions.push_back(std::move(function));
  return functions;
}

std::string name_list(const std::vector<ExerciseFunction>& functions) {
  std::string list;
  for (const ExerciseFunction& f : functions) list += (list.empty() ? "" : ", ") + f.name;
  return list;
}

ExerciseFunction exercise_named(const std::vector<ExerciseFunction>& functions, const std::string& chapter,
                                const std::string& name, const std::string& command) {
  for (const ExerciseFunction& f : functions)
    if (f.name == name) return f;
  throw Refusal(command + ": chapter " + std::to_string(chapter_number(chapter)) + " has no exercise function '" +
                name + "'; its functions: " + name_list(functions));
}

FunctionState function_state(const fs::path& root, const std::string& chapter, const ExerciseFunction& function) {
  auto body_of = [&](const fs::path& file) -> std::optional<std::string> {
    for (const FunctionDefinition& f : functions_of_file(file))
      if (f.name == function.name) return f.body;
    return std::nullopt;
  };
  const std::optional<std::string> mine = body_of(root / "exercises" / chapter / function.file);
  if (!mine) return FunctionState::missing;
  const std::optional<std::string> stub = body_of(root / "tests" / "stubs" / chapter / function.file);
  return mine == stub.value_or("") ? FunctionState::stub : FunctionState::written;
}

WrittenCount functions_written(const fs::path& root, const std::vector<std::string>& chapters) {
  WrittenCount count;
  for (const std::string& chapter : chapters) {
    for (const ExerciseFunction& f : chapter_exercises(root, chapter)) {
      ++count.total;
      count.written += function_state(root, chapter, f) == FunctionState::written;
    }
  }
  return count;
}

}  // namespace sa::check
