// Reading the checker's recorded inputs (tests/fixtures/checker/, recorded
// with SA_CHECK_RECORD: tools/checker/case_record.hpp).
#pragma once

#include "case_record.hpp"

#include <unistd.h>

#include <filesystem>
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

// A copy of a fixture tree (fixtures/checker/NAME/) in a scratch folder, for
// a test that changes files; removed at the end of the test.
struct ScratchTree {
  std::filesystem::path root;
  explicit ScratchTree(const std::string& name) {
    static int made = 0;
    root = std::filesystem::temp_directory_path() /
           ("book-check-tree-" + std::to_string(::getpid()) + "-" + std::to_string(++made));
    std::filesystem::remove_all(root);
    std::filesystem::copy(std::string(SA_CHECKER_FIXTURES) + "/" + name, root,
                          std::filesystem::copy_options::recursive);
  }
  ~ScratchTree() {
    std::error_code ignored;
    std::filesystem::remove_all(root, ignored);
  }
  ScratchTree(const ScratchTree&) = delete;
  ScratchTree& operator=(const ScratchTree&) = delete;

  std::string read(const std::string& relative) const { return sa::check::read_file(root / relative); }
  void write(const std::string& relative, const std::string& text) const {
    std::ofstream(root / relative, std::ios::binary) << text;
  }
};
