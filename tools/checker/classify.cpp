#include "classify.hpp"

#include "crash_words.hpp"

#include <csignal>
#include <regex>
#include <sstream>
#include <vector>

namespace sa::check {
namespace {

std::vector<std::string> split(const std::string& line, char separator) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, separator)) fields.push_back(field);
  if (!line.empty() && line.back() == separator) fields.emplace_back();
  return fields;
}

// The first line of `text` that starts with `prefix`, without it; empty if none.
std::string first_after(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(prefix)) return line.substr(prefix.size());
  return "";
}

// The first match of `pattern` in any line of `text` (group `group`), or "".
std::string first_match(const std::string& text, const std::regex& pattern, int group = 0) {
  std::istringstream in(text);
  std::smatch m;
  for (std::string line; std::getline(in, line);)
    if (std::regex_search(line, m, pattern)) return m[group];
  return "";
}

// The listener's result line: kind TAB test TAB first failure TAB hint.
bool report_result(const std::string& report, CaseResult& result) {
  std::istringstream in(report);
  for (std::string line; std::getline(in, line);) {
    const std::vector<std::string> f = split(line, '\t');
    Status status{};
    if (f.size() < 2 || !parse_status(f[0], status) || status == Status::timeout) continue;
    result.status = status;
    result.test = f[1];
    result.message = f.size() > 2 ? f[2] : "";
    result.hint = f.size() > 3 ? f[3] : "";
    return true;
  }
  return false;
}

// An abort says more in the process's own words: which assert failed
// (Eigen's index checks and the reader's assert()s are on in the exercises'
// build), or what damage glibc found on the heap. `why` is "crashed: abort ...".
}  // namespace

// (It may hold brackets of its own, "[decode of ids [0, -1]]": the '['
// that matches the last ']' is found by counting back.)
std::string input_context(const std::string& message) {
  if (!message.ends_with("]")) return "";
  int depth = 0;
  for (size_t i = message.size(); i-- > 0;) {
    if (message[i] == ']') ++depth;
    if (message[i] == '[' && --depth == 0) return i > 0 && message[i - 1] == ' ' ? message.substr(i - 1) : "";
  }
  return "";
}

std::string without_input(const std::string& message) {
  const size_t in = message.rfind(", in ");
  const std::string head = in == std::string::npos ? message : message.substr(0, in);
  const std::string tail = in == std::string::npos ? "" : message.substr(in);
  return head.substr(0, head.size() - input_context(head).size()) + tail;
}

namespace {

std::string explain_abort(const std::string& why, const std::string& output) {
  const std::string context = input_context(why);  // (stays)
  static const std::regex kAssertion("Assertion [`'](.*)' failed");
  static const std::regex kGlibc("^((free|malloc|realloc|double free|corrupted)[^:]*(\\(\\))?:? .*)");
  const std::string assertion = first_match(output, kAssertion, 1);
  const std::string glibc = first_match(output, kGlibc, 1);
  static const std::regex kIndexCheck("(index|row|col|__n) *>= *0|__n < this->size");
  if (const std::string meaning = explain_assertion(assertion, output); !meaning.empty())
    return std::string(kCrashed) + " " + meaning + context;
  if (std::regex_search(assertion, kIndexCheck))
    return std::string(kCrashed) + " an index outside a matrix or vector (the check '" + assertion + "' failed)" +
           context;
  if (!assertion.empty()) return std::string(kCrashed) + " assert failed: " + assertion + context;
  if (!glibc.empty())
    return std::string(kCrashed) + " the heap is damaged (" + glibc +
           ": a write outside a buffer, or a missing return?)" + context;
  return why;
}

}  // namespace

std::string to_string(Status status) {
  switch (status) {
    case Status::pass: return "pass";
    case Status::fail: return "fail";
    case Status::todo: return "todo";
    case Status::crash: return "crash";
    case Status::timeout: return "timeout";
  }
  return "crash";
}

bool parse_status(const std::string& word, Status& status) {
  for (Status s : {Status::pass, Status::fail, Status::todo, Status::crash, Status::timeout})
    if (word == to_string(s)) {
      status = s;
      return true;
    }
  return false;
}

std::string explain_assertion(const std::string& a, const std::string& output) {
  if (a.find("you are using an empty matrix") != std::string::npos)
    return "maxCoeff, minCoeff or mean of an empty matrix or vector (0 rows or 0 columns): nothing to take the largest of";
  if (a.starts_with("(i>=0) && (")) {
    // Block.h's one-index constructor: .row(i) (BlockRows = 1) or .col(j);
    // the assertion's "[with ...]" context in the output says which.
    if (output.find("int BlockRows = 1;") != std::string::npos)
      return ".row(i) with i outside the matrix's rows (i must be at least 0 and below rows())";
    if (output.find("int BlockCols = 1;") != std::string::npos)
      return ".col(j) with j outside the matrix's columns (j must be at least 0 and below cols())";
    return ".row(i) or .col(j) with an index outside the matrix";
  }
  if (a.starts_with("startRow >= 0 && blockRows >= 0 && startRow <= xpr.rows() - blockRows"))
    return "a block that does not fit in the matrix: .block, .middleRows, .topRows, .head, .segment or .tail "
           "starting below 0 or reaching past the last row or column";
  if (a.starts_with("row >= 0 && row < rows()"))
    return "m(i, j) with an index outside the matrix (i must be in [0, rows()), j in [0, cols()))";
  if (a.starts_with("index >= 0 && index < size()")) return "v(i) with i outside the vector (i must be in [0, size()))";
  if (a.starts_with("lhs.cols() == rhs.rows()"))
    return "a matrix product A * B whose shapes do not fit: A's columns must equal B's rows (a transpose missing, or "
           "one too many?)";
  if (a.starts_with("aLhs.rows() == aRhs.rows() && aLhs.cols() == aRhs.cols()"))
    return "two matrices of different shapes added, subtracted or combined entry by entry";
  if (a.starts_with("dst.rows() == src.rows() && dst.cols() == src.cols()") ||
      a.starts_with("dst.rows() == dstRows && dst.cols() == dstCols"))
    return "an assignment into a row, column or block of another shape (both sides must have the same rows and "
           "columns)";
  if (a.starts_with("size() == other.size()")) return "a dot product of two vectors of different lengths";
  if (a.find("Invalid sizes when resizing a matrix or array") != std::string::npos)
    return "a matrix made with a negative number of rows or columns";
  if (a.find("DenseBase::resize() does not actually allow one to resize") != std::string::npos)
    return "a result of another shape assigned to a row, column or block (a block cannot be resized: both sides "
           "must have the same rows and columns)";
  // The standard library's own checks (on in the exercises' build too).
  if (a.find("_M_is_engaged()") != std::string::npos)
    return "an empty std::optional read with * or -> (it holds no value: test it first, as in if (layer.b))";
  if (a.find("!this->empty()") != std::string::npos)
    return "front(), back() or pop_back() of an empty std::vector";
  if (a.starts_with("__n < this->size()"))
    return "v[i] with i outside the std::vector (i must be below v.size())";
  return "";
}

CaseResult classify(const std::string& test, const CaseEnd& end) {
  CaseResult result;
  result.test = test;
  // The exercise function the process was in when a signal or exit() stopped
  // it, else the one the test case is about (its tag, on the start line).
  result.function = first_after(end.report, "where\t");
  if (result.function.empty()) {
    const std::string start = first_after(end.report, "start\t");
    if (const auto tab = start.find('\t'); tab != std::string::npos) result.function = start.substr(tab + 1);
  }
  static const std::regex kTerminate("^terminate called after throwing an instance of '(.*)'");
  const std::string terminate = first_match(end.output, kTerminate, 1);
  const bool failed_exit = !end.exited || end.exit_status != 0;
  std::string why;
  const std::string after_tests = "code that runs after the tests (a global object's destructor in the "
                                  "exercises?) never returned";
  // (A hang inside the test case has a result line too, "crashed: stopped
  // by SIGTERM", written by Catch2's handler of check's SIGTERM.)
  if (CaseResult listed; end.timed_out && report_result(end.report, listed) && listed.status != Status::crash) {
    // The test case ended (its result is in the report), and then the
    // process did not: the reader's code that runs after the tests. A
    // failure it had comes first.
    if (listed.status != Status::pass) {
      listed.function = result.function;
      listed.message += " (and then the process did not end: " + after_tests + ")";
      return listed;
    }
    result.status = Status::timeout;
    result.message = "timed out after " + std::to_string(end.limit_seconds) + " s once the test case had passed: " +
                     after_tests;
    return result;
  } else if (end.timed_out) {
    result.status = Status::timeout;
    why = "timed out after " + std::to_string(end.limit_seconds) + " s (an endless loop?)";
    // (Catch2's handler of check's SIGTERM reported the input the test case
    // was on, as for a crash: keep it)
    if (CaseResult stopped; report_result(end.report, stopped)) why += input_context(stopped.message);
  } else if (!end.exited && end.signal == SIGXFSZ) {
    why = std::string(kCrashed) + " wrote more than " + std::to_string(kOutputLimitBytes >> 20) +
          " MiB to its output or a file and was stopped (a print inside a loop?)";
  } else if (!end.exited && end.signal == 9) {
    // A SIGKILL check did not send: the kernel's out-of-memory killer.
    why = std::string(kCrashed) + " killed by SIGKILL before the time limit (out of memory? a matrix far too large?)";
  } else if (failed_exit && !terminate.empty()) {
    why = uncaught_exception_sentence(terminate);
  } else if (CaseResult listed; report_result(end.report, listed)) {
    if (listed.status != Status::crash) {
      listed.function = result.function;
      return listed;
    }
    why = listed.message;
  } else if (!end.exited) {
    why = signal_sentence(end.signal);
  } else if (end.output.find("No test cases matched") != std::string::npos) {
    why = "the suite has no test of this name: a line printed as the suite started (by a global object's "
          "constructor in the exercises?) was taken for a test's name, or it is a book bug";
  } else {
    why = std::string(kCrashed) + " exited early with exit status " + std::to_string(end.exit_status) +
          " (exit() inside the exercise?)";
  }
  if (why.starts_with(std::string(kCrashed) + " abort"))
    why = explain_abort(why, end.output);
  result.message = why + (result.function.empty() ? "" : ", in " + result.function);
  return result;
}

namespace {

// (common/'s sa::printable escapes the same things, but the checker's
// programs are built from the standard library alone, first and fast: see
// tools/checker/CMakeLists.txt.)

// The length of the UTF-8 sequence at s[i], or 0 when it is not one.
size_t utf8_length(const std::string& s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  const size_t n = c < 0x80                  ? 1
                   : c >= 0xC2 && c <= 0xDF ? 2
                   : c >= 0xE0 && c <= 0xEF ? 3
                   : c >= 0xF0 && c <= 0xF4 ? 4
                                            : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  return n;
}

std::string escaped(const std::string& line) {
  static const char kHex[] = "0123456789abcdef";
  std::string shown;
  for (size_t i = 0; i < line.size();) {
    const auto c = static_cast<unsigned char>(line[i]);
    const size_t n = utf8_length(line, i);
    if (n == 0 || c < 0x20 || c == 0x7f) {
      shown += std::string("\\x") + kHex[c >> 4] + kHex[c & 15];
      ++i;
    } else {
      shown += line.substr(i, n);
      i += n;
    }
  }
  return shown;
}

}  // namespace

CaseResult::Printed printed_of(const std::string& output) {
  CaseResult::Printed printed;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    // (the runtime's own lines about a crash: assert()'s quotes with a
    // backtick, libstdc++'s checks with a straight quote)
    if (line.empty() || line.starts_with("terminate called") || line.starts_with("  what():") ||
        line.find(": Assertion `") != std::string::npos || line.find(": Assertion '") != std::string::npos)
      continue;
    if (printed.lines.size() == 3) {
      ++printed.more;
      continue;
    }
    // (a character cut in two at byte 160 shows as the escapes of its bytes)
    printed.lines.push_back(escaped(line.substr(0, 160)) + (line.size() > 160 ? "..." : ""));
  }
  return printed;
}

std::string printed_text(const CaseResult::Printed& printed) {
  std::string text;
  for (const std::string& l : printed.lines) text += (text.empty() ? "\"" : " \"") + l + "\"";
  if (printed.more)
    text += " (and " + std::to_string(printed.more) + " more line" + (printed.more == 1 ? "" : "s") + ")";
  return text;
}

}  // namespace sa::check
