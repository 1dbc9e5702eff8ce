#include "report.hpp"

#include "crash_words.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>

namespace sa::check {
namespace {

// printf's "%-Ns": padded to `width` bytes (as the bash version padded
// "…  in progress", whose ellipsis is three bytes: the columns stay where
// readers and the tooling test have seen them).
std::string pad(const std::string& s, size_t width) { return s.size() >= width ? s : s + std::string(width - s.size(), ' '); }

struct Counts {
  int pass = 0, todo = 0, fail = 0, crash = 0, timeout = 0;
  int total() const { return pass + todo + fail + crash + timeout; }
};

Counts count(const std::vector<CaseResult>& results) {
  Counts c;
  for (const CaseResult& r : results) switch (r.status) {
      case Status::pass: ++c.pass; break;
      case Status::todo: ++c.todo; break;
      case Status::fail: ++c.fail; break;
      case Status::crash: ++c.crash; break;
      case Status::timeout: ++c.timeout; break;
    }
  return c;
}

bool broken(const CaseResult& r) { return r.status == Status::crash || r.status == Status::timeout; }

// Where a message's first "after <digits> s" is: [at, end), or npos.
std::pair<size_t, size_t> time_limit_span(const std::string& message) {
  for (size_t at = message.find("after "); at != std::string::npos; at = message.find("after ", at + 1)) {
    size_t end = at + 6;
    while (end < message.size() && std::isdigit(static_cast<unsigned char>(message[end]))) ++end;
    if (end > at + 6 && message.compare(end, 2, " s") == 0) return {at, end + 2};
  }
  return {std::string::npos, std::string::npos};
}

// Test cases that broke the same way share one message: the same words but
// for the time limit, which drops after the first hang.
std::string group_key(const std::string& message) {
  const auto [at, end] = time_limit_span(message);
  return at == std::string::npos ? message : message.substr(0, at) + message.substr(end);
}

// A group's message, its time limit said for all of them: "after 10 s" when
// the first hang had 10 s and the others 3 s becomes "after 10 s, the
// others after 3 s".
std::string group_message(std::string message, const std::vector<const CaseResult*>& same) {
  const auto [at, end] = time_limit_span(message);
  if (at == std::string::npos) return message;
  const std::string first = message.substr(at, end - at);
  std::string other_limit;
  size_t others = 0;  // (test cases run side by side: more than one may have had the first limit)
  for (const CaseResult* r : same) {
    const auto [r_at, r_end] = time_limit_span(r->message);
    if (r_at == std::string::npos || r->message.compare(r_at, r_end - r_at, first) == 0) continue;
    other_limit = r->message.substr(r_at, r_end - r_at);
    ++others;
  }
  if (others > 0 && others == same.size() - 1)
    message.insert(end, ", the others " + other_limit);
  else if (others > 0)
    message.insert(end, ", " + std::to_string(others) + (others == 1 ? " other " : " others ") + other_limit);
  return message;
}

// Whether the untouched-stubs rule broke in this chapter: every test case of
// a stub must be "todo".
bool breaks_untouched_rule(const Counts& c) { return c.pass != 0 || c.todo != c.total() || c.total() == 0; }

std::string status_word(const Counts& c) {
  if (c.total() == 0) return "?  the suite ran no test";
  if (c.pass == c.total()) return "✓  passed";
  if (c.todo == c.total()) return "·  not started";
  return "…  in progress";
}

bool chapter_passes(const ChapterReport& chapter) {
  if (chapter.state != ChapterReport::State::ran) return false;
  const Counts c = count(chapter.results);
  return c.total() > 0 && c.pass == c.total();
}

// What to do next: mend what is written wrong (a compile error, a failure, a
// crash, a hang), in any chapter, before writing the next function.
struct Advice {
  enum class Kind { none, compile, fix, next } kind = Kind::none;
  std::string chapter, test, message, hint;
};

Advice advice(const CheckReport& report) {
  Advice next;
  for (const ChapterReport& chapter : report.chapters) {
    if (chapter.state == ChapterReport::State::does_not_compile)
      return {Advice::Kind::compile, chapter.chapter, "", chapter.compile_error, ""};
    // The first test case chapter_text lists: a crash or a hang before a
    // wrong answer, each in the suite's order.
    for (const bool crash_or_hang : {true, false})
      for (const CaseResult& r : chapter.results)
        if (crash_or_hang ? broken(r) : r.status == Status::fail)
          return {Advice::Kind::fix, chapter.chapter, r.test, r.message, ""};
    for (const CaseResult& r : chapter.results)
      if (r.status != Status::pass && next.kind == Advice::Kind::none)
        next = {Advice::Kind::next, chapter.chapter, r.test, r.message, r.hint};
  }
  return next;
}

int rule_problems(const CheckReport& report) {
  int problems = 0;
  for (const ChapterReport& chapter : report.chapters) {
    if (chapter.state == ChapterReport::State::does_not_compile) ++problems;
    if (chapter.state != ChapterReport::State::ran) continue;
    const Counts c = count(chapter.results);
    if (c.total() == 0 || (report.untouched_rule && breaks_untouched_rule(c))) ++problems;
  }
  return problems;
}

}  // namespace

std::string chapter_text(const ChapterReport& chapter, bool untouched_rule) {
  std::ostringstream out;
  if (chapter.state == ChapterReport::State::does_not_compile) {
    out << "  " << pad(chapter.chapter, 22) << " ✗  does not compile\n";
    out << "      " << chapter.compile_error << "\n";
    return out.str();
  }
  if (chapter.state == ChapterReport::State::untouched) {
    out << "  " << pad(chapter.chapter, 22) << " " << pad("·  not started", 18) << " 0/" << chapter.untouched_tests
        << " tests\n";
    return out.str();
  }
  const Counts c = count(chapter.results);
  if (chapter.tests_not_run > 0) {
    out << "  " << pad(chapter.chapter, 22) << " " << pad("…  in progress", 18) << " 0/" << chapter.tests_not_run
        << " tests, none could run\n";
  } else {
    out << "  " << pad(chapter.chapter, 22) << " " << pad(status_word(c), 18) << " " << c.pass << "/" << c.total()
        << " tests";
    if (c.fail) out << ", " << c.fail << " failed";
    if (c.crash) out << ", " << c.crash << " crashed";
    if (c.timeout) out << ", " << c.timeout << " timed out";
    out << "\n";
  }
  // A crash or a hang is named at once: it is the case a reader cannot
  // guess. Test cases that broke the same way (one endless loop reached by
  // twenty tests) share one message: four are named, or three and a count.
  std::vector<std::string> keys;
  std::map<std::string, std::vector<const CaseResult*>> groups;
  for (const CaseResult& r : chapter.results) {
    if (!broken(r)) continue;
    const std::string key = group_key(without_input(r.message));
    if (!groups.count(key)) keys.push_back(key);
    groups[key].push_back(&r);
  }
  for (const std::string& key : keys) {
    const std::vector<const CaseResult*>& same = groups[key];
    const size_t named = same.size() <= 4 ? same.size() : 3;
    for (size_t i = 0; i < named; ++i) out << "      ✗ " << same[i]->test << "\n";
    if (named < same.size()) out << "      ✗ ... and " << same.size() - 3 << " more test cases the same way\n";
    // (each test's input when they share it, or one alone; none for a
    // group on different inputs, which one input would misname)
    const auto input_of = [](const std::string& message) {
      return input_context(message.substr(0, message.rfind(", in ")));
    };
    const bool one_input = std::all_of(same.begin(), same.end(), [&](const CaseResult* r) {
      return input_of(r->message) == input_of(same.front()->message);
    });
    out << "          " << group_message(one_input ? same.front()->message : without_input(same.front()->message), same)
        << "\n";
    if (!same.front()->printed.empty()) out << "          it printed: " << printed_text(same.front()->printed) << "\n";
  }
  // So is a wrong answer, in a function the reader believes written: the
  // first three, with what was expected and what came out.
  int failed = 0;
  for (const CaseResult& r : chapter.results) {
    if (r.status != Status::fail) continue;
    if (failed++ >= 3) continue;
    out << "      ✗ " << r.test << "\n          " << r.message << "\n";
    if (!r.printed.empty()) out << "          it printed: " << printed_text(r.printed) << "\n";
  }
  // (the others are a command away: --json lists every test case)
  if (failed > 3)
    out << "      ... and " << failed - 3 << " more failed (./book check " << std::stoi(chapter.chapter.substr(0, 2))
        << " --json lists every one)\n";
  // A test that did not pass, and the compiler warned about the reader's
  // code: the warning is often the cause (a sum never set to 0, a scaled
  // matrix computed and never used). Not shown when every test passes.
  if ((c.fail || c.crash || c.timeout) && !chapter.warnings.empty()) {
    out << "      the compiler warned about your code (often the cause):\n";
    for (size_t i = 0; i < chapter.warnings.size() && i < 3; ++i) out << "        " << chapter.warnings[i] << "\n";
    if (const size_t more = chapter.warnings.size() - std::min<size_t>(chapter.warnings.size(), 3); more > 0)
      out << "        ... and " << more << (more == 1 ? " more warning" : " more warnings")
          << " (./book check " << std::stoi(chapter.chapter.substr(0, 2)) << " --json lists every one)\n";
  }
  if (untouched_rule && breaks_untouched_rule(c)) {
    out << "    untouched stubs must fail only with 'not implemented yet', but:\n";
    for (const CaseResult& r : chapter.results)
      if (r.status != Status::todo) out << "      " << to_string(r.status) << "\t" << r.test << "\t" << r.message << "\n";
  }
  return out.str();
}

std::string summary_text(const CheckReport& report) {
  std::ostringstream out;
  out << "\n";
  if (report.one_hung && report.timeout_seconds > report.hung_timeout_seconds)
    out << "(After the first test that hung, the others had " << report.hung_timeout_seconds << " s each instead of "
        << report.timeout_seconds << " s.)\n\n";
  if (int(report.chapters.size()) == report.book_chapters) {
    int done = 0;
    for (const ChapterReport& chapter : report.chapters) done += chapter_passes(chapter);
    out << "Progress: " << done << "/" << report.book_chapters << " chapters\n";
  }
  // (written: its body differs from the stub's; right or wrong, the table says)
  out << "Functions written: " << report.functions_written << " of " << report.functions_total
      << " (./book hint N for a hint, ./book reset N FUNCTION to start one again)\n\n";
  const Advice a = advice(report);
  switch (a.kind) {
    case Advice::Kind::next: {
      std::string what = a.message;
      const std::string prefix = std::string(kNotImplemented) + " ";
      if (what.starts_with(prefix)) what = what.substr(prefix.size());
      out << "Next: " << what << "\n";
      if (!a.hint.empty()) out << "  hint: " << a.hint << "\n";
      break;
    }
    case Advice::Kind::compile: out << "Fix: " << a.chapter << " does not compile\n  " << a.message << "\n"; break;
    case Advice::Kind::fix: out << "Fix: " << a.test << "\n  " << a.message << "\n"; break;
    case Advice::Kind::none: break;
  }
  if (a.kind != Advice::Kind::none) {
    if (!report.watching) out << "Run ./book check again after each change (or ./book check --watch).\n";
  } else if (exit_status(report) == 0 && !report.untouched_rule) {
    out << "Every test passes.\n";
  }
  if (report.untouched_rule) {
    if (const int problems = rule_problems(report))
      out << "book: " << problems << " suite(s) broke the untouched-stubs rule\n";
    else
      out << "book: every untouched exercise fails only with 'not implemented yet'\n";
  }
  return out.str();
}

std::string report_text(const CheckReport& report) {
  std::string text;
  for (const ChapterReport& chapter : report.chapters) text += chapter_text(chapter, report.untouched_rule);
  return text + summary_text(report);
}

int exit_status(const CheckReport& report) {
  if (report.untouched_rule) return rule_problems(report) == 0 ? 0 : 1;
  for (const ChapterReport& chapter : report.chapters)
    if (!chapter_passes(chapter)) return 1;
  return 0;
}

namespace {

// One warning as a tool reads it: "exercises/02-scaling/scaling.cpp:28:9:
// unused variable 'scale' [-Wunused-variable]" as its file, line, column
// and message, and the whole line as text (a line in another form keeps
// only its text).
nlohmann::json warning_json(const std::string& line) {
  nlohmann::json w = {{"text", line}};
  const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1),
               c = b == std::string::npos ? b : line.find(':', b + 1);
  const auto number = [&](size_t from, size_t to) -> long {
    if (from >= to || to - from > 9) return -1;
    for (size_t i = from; i < to; ++i)
      if (!std::isdigit(static_cast<unsigned char>(line[i]))) return -1;
    return std::stol(line.substr(from, to - from));
  };
  if (c == std::string::npos) return w;
  const long row = number(a + 1, b), column = number(b + 1, c);
  if (row < 0 || column < 0) return w;
  w["file"] = line.substr(0, a);
  w["line"] = row;
  w["column"] = column;
  const size_t message = line.find_first_not_of(' ', c + 1);
  w["message"] = message == std::string::npos ? "" : line.substr(message);
  return w;
}

}  // namespace

std::string report_json(const CheckReport& report) {
  using nlohmann::json;
  json tests = json::array(), chapters = json::array();
  for (const ChapterReport& chapter : report.chapters) {
    json summary = {{"chapter", chapter.chapter}};
    switch (chapter.state) {
      case ChapterReport::State::does_not_compile:
        summary["status"] = "does not compile";
        summary["message"] = chapter.compile_error;
        break;
      case ChapterReport::State::untouched:
        summary["status"] = "not started";
        summary["passed"] = 0;
        summary["tests"] = chapter.untouched_tests;
        break;
      case ChapterReport::State::ran: {
        const Counts c = count(chapter.results);
        std::string word = status_word(c);
        summary["status"] = word.substr(word.find("  ") + 2);
        summary["passed"] = c.pass;
        summary["tests"] = chapter.tests_not_run > 0 ? chapter.tests_not_run : c.total();
        break;
      }
    }
    // (every chapter has the key, empty where nothing was compiled; every
    // warning, passed or not: a tool decides)
    summary["warnings"] = json::array();
    for (const std::string& w : chapter.warnings) summary["warnings"].push_back(warning_json(w));
    chapters.push_back(summary);
    for (const CaseResult& r : chapter.results)
      tests.push_back({{"chapter", chapter.chapter},
                       {"test", r.test},
                       {"function", r.function},
                       {"status", to_string(r.status)},
                       {"message", r.message},
                       {"hint", r.hint},
                       {"printed", r.printed.lines},
                       {"printed_more", r.printed.more}});
  }
  json out = {{"chapters", chapters},
              {"tests", tests},
              {"functions_written", report.functions_written},
              {"functions_total", report.functions_total},
              {"timeout_seconds", report.timeout_seconds},
              {"one_hung", report.one_hung},
              {"exit_status", exit_status(report)}};
  // A compiler's message or an exercise's what() can hold bytes that are not
  // UTF-8 (the suites' own lines are escaped already): JSON must be UTF-8,
  // so such bytes become U+FFFD instead of stopping the report.
  return out.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace sa::check
