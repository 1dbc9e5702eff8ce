// Reading the checker's recorded inputs (tests/fixtures/checker/, recorded
// with SA_CHECK_RECORD: tools/checker/case_record.hpp).
#pragma once

#include "case_record.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

inline std::string checker_fixture(const std::string& name) {
  const std::string path = std::string(SA_CHECKER_FIXTURES) + "/" + name;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("missing fixture " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A recorded case, classified as check classifies it.
inline sa::check::CaseResult replay(const std::string& name) {
  const sa::check::RecordedCase recorded = sa::check::read_case_record(checker_fixture("cases/" + name));
  return sa::check::classify(recorded.test, recorded.end);
}
