#include "case_record.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace sa::check {
namespace {

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> f;
  size_t from = 0;
  for (size_t tab; (tab = line.find('\t', from)) != std::string::npos; from = tab + 1) f.push_back(line.substr(from, tab - from));
  f.push_back(line.substr(from));
  return f;
}

}  // namespace

std::string case_record(const std::string& test, const CaseEnd& end) {
  std::ostringstream out;
  out << "test: " << test << "\nexited: " << end.exited << "\nexit_status: " << end.exit_status
      << "\nsignal: " << end.signal << "\ntimed_out: " << end.timed_out << "\nseconds: " << end.seconds
      << "\nlimit_seconds: " << end.limit_seconds << "\n== report\n"
      << end.report << (end.report.empty() || end.report.ends_with('\n') ? "" : "\n") << "== output\n"
      << end.output << (end.output.empty() || end.output.ends_with('\n') ? "" : "\n") << "== end\n";
  return out.str();
}

RecordedCase read_case_record(const std::string& text) {
  RecordedCase r;
  std::istringstream in(text);
  std::string* section = nullptr;
  for (std::string line; std::getline(in, line);) {
    if (line == "== report") {
      section = &r.end.report;
    } else if (line == "== output") {
      section = &r.end.output;
    } else if (line == "== end") {
      break;
    } else if (section) {
      *section += line + "\n";
    } else if (const auto colon = line.find(": "); colon != std::string::npos) {
      const std::string key = line.substr(0, colon), value = line.substr(colon + 2);
      if (key == "test") r.test = value;
      else if (key == "exited") r.end.exited = value == "1";
      else if (key == "exit_status") r.end.exit_status = std::stoi(value);
      else if (key == "signal") r.end.signal = std::stoi(value);
      else if (key == "timed_out") r.end.timed_out = value == "1";
      else if (key == "seconds") r.end.seconds = std::stod(value);
      else if (key == "limit_seconds") r.end.limit_seconds = std::stoi(value);
    }
  }
  return r;
}

std::string results_record(const std::vector<CaseResult>& results) {
  std::string text;
  for (const CaseResult& r : results) {
    // (the printed lines are escaped: no tab, no unit separator 0x1f in them)
    std::string printed;
    if (!r.printed.empty()) {
      printed = "\t" + std::to_string(r.printed.more);
      for (const std::string& line : r.printed.lines) printed += "\x1f" + line;
    }
    text += to_string(r.status) + "\t" + r.test + "\t" + r.function + "\t" + r.message + "\t" + r.hint + printed + "\n";
  }
  return text;
}

std::vector<CaseResult> read_results_record(const std::string& text) {
  std::vector<CaseResult> results;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const std::vector<std::string> f = fields(line);
    CaseResult r;
    if ((f.size() != 5 && f.size() != 6) || !parse_status(f[0], r.status)) continue;
    r.test = f[1];
    r.function = f[2];
    r.message = f[3];
    r.hint = f[4];
    if (f.size() == 6) {
      std::istringstream parts(f[5]);
      std::string part;
      std::getline(parts, part, '\x1f');
      r.printed.more = std::atoi(part.c_str());
      while (std::getline(parts, part, '\x1f')) r.printed.lines.push_back(part);
    }
    results.push_back(r);
  }
  return results;
}

std::filesystem::path record_folder() {
  const char* folder = std::getenv("SA_CHECK_RECORD");
  return folder && *folder ? std::filesystem::path(folder) : std::filesystem::path();
}

}  // namespace sa::check
