#include "reset.hpp"

#include "chapters.hpp"
#include "exercise_functions.hpp"
#include "hints.hpp"
#include "read_file.hpp"

#include <algorithm>
#include <ctime>
#include <fstream>

namespace sa::check {
namespace {

namespace fs = std::filesystem;

const std::string kResetUsage = "usage: ./book reset N FUNCTION";
const std::string kResetHelp =
    kResetUsage + "\n\n" +
    "Puts exercise function FUNCTION of chapter N (3, 03 or 03-softmax) back to its stub, as handed out.\n"
    "Yours is kept in exercises/NN-name/saved/FUNCTION.DATE.cpp; a deleted function or file comes back.\n"
    "Its hints (./book hint) start again at level 1.\n";

// A file's lines, each with its newline (the last one may have none), so
// that the pieces put together are the files' bytes.
std::vector<std::string> lines_with_newlines(const fs::path& path) {
  const std::string text = read_file(path);
  std::vector<std::string> lines;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size() - 1) + 1;
    lines.push_back(text.substr(at, end - at));
    at = end;
  }
  return lines;
}

// Lines first to last (from 1, both included), as one text.
std::string line_range(const std::vector<std::string>& lines, int first, int last) {
  std::string text;
  for (int i = std::max(first, 1); i <= std::min(last, int(lines.size())); ++i) text += lines[size_t(i - 1)];
  return text;
}

const FunctionDefinition* definition(const std::vector<FunctionDefinition>& functions, const std::string& name) {
  for (const FunctionDefinition& f : functions)
    if (f.name == name) return &f;
  return nullptr;
}

// The line after which a deleted function goes back: the end of the function
// before it in the stub that is still there (the nearest such), else the
// line that opens namespace sa; 0 when there is neither.
int place_for_deleted(const std::vector<FunctionDefinition>& stub, const std::vector<FunctionDefinition>& mine,
                      const std::vector<std::string>& mine_lines, const std::string& name) {
  int at = 0;
  for (const FunctionDefinition& before : stub) {
    if (before.name == name) break;
    for (const FunctionDefinition& m : mine)
      if (m.name == before.name) at = m.last_line;
  }
  for (size_t i = 0; at == 0 && i < mine_lines.size(); ++i)
    if (mine_lines[i].starts_with("namespace sa {")) at = int(i) + 1;
  return at;
}

// The stub's SA_TODO needs its header, which a reader may have removed: it
// goes back after the last #include.
std::string with_exercise_header(const std::string& text) {
  const std::string header = "#include \"sa/exercise.hpp\"";
  if (text.find(header) != std::string::npos) return text;
  size_t after = std::string::npos;  // where the line after the last #include starts
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    end = end == std::string::npos ? text.size() : end + 1;
    if (text.compare(at, 8, "#include") == 0) after = end;
    at = end;
  }
  if (after == std::string::npos) return text;
  const std::string newline = after > 0 && text[after - 1] != '\n' ? "\n" : "";
  return text.substr(0, after) + newline + header + "\n" + text.substr(after);
}

// The stub's text with the line ends of the reader's file: a file saved
// with CRLF (an editor on Windows) gets CRLF back, not a mix.
std::string with_line_ends_of(const std::vector<std::string>& mine_lines, const std::string& text) {
  if (mine_lines.empty() || !mine_lines.front().ends_with("\r\n")) return text;
  std::string crlf;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n' && (i == 0 || text[i - 1] != '\r')) crlf += '\r';
    crlf += text[i];
  }
  return crlf;
}

// Writes `text` to `path` and says whether every byte reached the file.
bool write_whole(const fs::path& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary);
  file << text;
  file.close();
  return !file.fail();
}

// Where the reader's version is kept: saved/NAME.STAMP.cpp, or with -2, -3,
// ... when a reset in the same second kept one there already.
std::string saved_name(const fs::path& root, const std::string& chapter, const std::string& name,
                       const std::string& stamp) {
  const std::string base = "exercises/" + chapter + "/saved/" + name + "." + stamp;
  std::string candidate = base + ".cpp";
  std::error_code ec;
  for (int k = 2; fs::exists(root / candidate, ec); ++k) candidate = base + "-" + std::to_string(k) + ".cpp";
  return candidate;
}

}  // namespace

std::string reset_stamp() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%d-%H%M%S", &local);
  return text;
}

void reset_command(const fs::path& root, const std::vector<std::string>& args, std::ostream& out,
                   const std::string& stamp) {
  if (asks_for_help(args)) {
    out << kResetHelp;
    return;
  }
  if (args.empty()) throw Refusal("reset: which chapter and function? (" + kResetUsage + ")");
  const std::string chapter = chapter_name(root, args[0], book_chapters(root));
  const std::vector<ExerciseFunction> functions = chapter_exercises(root, chapter);
  if (args.size() < 2)
    throw Refusal("reset: which function? chapter " + std::to_string(chapter_number(chapter)) +
                  "'s functions: " + name_list(functions) + " (" + kResetUsage + ")");
  if (args.size() > 2)
    throw Refusal("reset: one chapter and one function, got '" + joined_words(args) + "' (" + kResetUsage + ")");
  const ExerciseFunction function = exercise_named(functions, chapter, args[1], "reset");
  const std::string name = function.name, relative_mine = "exercises/" + chapter + "/" + function.file;
  const fs::path mine = root / relative_mine;
  const fs::path stub = root / "tests" / "stubs" / chapter / function.file;
  // A function started again starts its hints again too: the next
  // `./book hint` is level 1. (Called once the function is its stub.)
  const auto restart_hints = [&] {
    const fs::path levels = root / "build" / "hint-levels";
    if (shown_hint_level(levels, chapter, name) == 0) return;
    remember_hint_level(levels, chapter, name, 0);
    out << "Its hints start again at level 1 (./book hint " << chapter_number(chapter) << " " << name << ").\n";
  };

  std::error_code ec;
  if (!fs::is_regular_file(mine)) {
    fs::create_directories(mine.parent_path(), ec);
    if (!ec) fs::copy_file(stub, mine, fs::copy_options::overwrite_existing, ec);
    if (ec) throw Refusal("reset: cannot restore " + relative_mine + " from its stub: " + ec.message());
    out << relative_mine << " was missing: restored it whole from its stub\n";
    restart_hints();
    return;
  }
  const FunctionState state = function_state(root, chapter, function);
  if (state == FunctionState::stub) {
    out << name << " is already its stub: nothing to reset\n";
    restart_hints();
    return;
  }

  const std::vector<std::string> mine_lines = lines_with_newlines(mine), stub_lines = lines_with_newlines(stub);
  const std::vector<FunctionDefinition> mine_functions = functions_of_file(mine),
                                        stub_functions = functions_of_file(stub);
  const FunctionDefinition& from_stub = *definition(stub_functions, name);  // (exercise_named found it there)
  const std::string stub_text =
      with_line_ends_of(mine_lines, line_range(stub_lines, from_stub.first_line, from_stub.last_line));
  std::string fresh, saved;
  if (state == FunctionState::written) {
    const FunctionDefinition& written = *definition(mine_functions, name);
    // The reader's version is kept first; if it cannot be, nothing changes.
    fs::create_directories(root / "exercises" / chapter / "saved", ec);
    saved = saved_name(root, chapter, name, stamp);
    if (ec || !write_whole(root / saved, line_range(mine_lines, written.first_line, written.last_line))) {
      fs::remove(root / saved, ec);
      throw Refusal("reset: cannot keep your version of " + name + " in " + saved +
                    " (is exercises/" + chapter + "/saved/ a writable folder?); nothing was reset");
    }
    fresh = line_range(mine_lines, 1, written.first_line - 1) + stub_text +
            line_range(mine_lines, written.last_line + 1, int(mine_lines.size()));
  } else {
    const int at = place_for_deleted(stub_functions, mine_functions, mine_lines, name);
    if (at == 0)
      throw Refusal("reset: cannot find where " + name + " goes in " + relative_mine + "; copy it from tests/stubs/" +
                    chapter + "/" + function.file);
    fresh = line_range(mine_lines, 1, at) + "\n" + stub_text + line_range(mine_lines, at + 1, int(mine_lines.size()));
  }
  // (written beside it, then renamed: an interrupted reset leaves the file whole)
  const fs::path next = mine.string() + ".new";
  const bool written_next = write_whole(next, with_line_ends_of(mine_lines, with_exercise_header(fresh)));
  if (written_next) fs::rename(next, mine, ec);
  if (!written_next || ec) {
    fs::remove(next, ec);
    throw Refusal("reset: cannot write " + relative_mine + " (is it writable?); it is unchanged" +
                  (saved.empty() ? std::string() : ", and your version is also kept in " + saved));
  }
  out << name << " in " << relative_mine << " is its stub again.\n";
  if (!saved.empty()) out << "Your version is kept in " << saved << ".\n";
  restart_hints();
}

}  // namespace sa::check
