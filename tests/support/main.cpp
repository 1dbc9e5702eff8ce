// The one main() of every hidden suite: Catch2's, plus
//  - a translator so an unwritten exercise reads as its message and hint;
//  - a listener that, when SA_CHECK_REPORT names a file, appends one line
//    per test case for `./book check`:
//        <pass|fail|todo> TAB <test case> TAB <first failure> TAB <hint>
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include "sa/exercise.hpp"

#include <cstdlib>
#include <fstream>
#include <string>

CATCH_TRANSLATE_EXCEPTION(const sa::NotImplemented& e) {
  return std::string(e.what()) + "\n  hint: " + e.hint();
}

namespace {

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n') c = ' ';
  return s;
}

class CheckReport : public Catch::TestEventListenerBase {
 public:
  using TestEventListenerBase::TestEventListenerBase;

  void testCaseStarting(const Catch::TestCaseInfo& info) override {
    TestEventListenerBase::testCaseStarting(info);
    first_failure_.clear();
    hint_.clear();
    todo_ = false;
  }

  bool assertionEnded(const Catch::AssertionStats& stats) override {
    const Catch::AssertionResult& r = stats.assertionResult;
    if (!r.succeeded() && first_failure_.empty()) {
      std::string message = r.hasMessage() ? r.getMessage() : r.getExpandedExpression();
      if (message.empty()) message = r.getExpression();
      const std::string hint_marker = "\n  hint: ";
      if (auto at = message.find(hint_marker); at != std::string::npos) {
        hint_ = message.substr(at + hint_marker.size());
        message.resize(at);
      }
      todo_ = message.rfind("not implemented yet:", 0) == 0;
      first_failure_ = message.empty() ? "failed" : message;
    }
    return TestEventListenerBase::assertionEnded(stats);
  }

  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    TestEventListenerBase::testCaseEnded(stats);
    const char* path = std::getenv("SA_CHECK_REPORT");
    if (!path || !*path) return;
    std::ofstream out(path, std::ios::app);
    const bool passed = stats.totals.assertions.allPassed() && first_failure_.empty();
    out << (passed ? "pass" : todo_ ? "todo" : "fail") << '\t' << one_line(stats.testInfo.name) << '\t'
        << one_line(first_failure_) << '\t' << one_line(hint_) << '\n';
  }

 private:
  std::string first_failure_, hint_;
  bool todo_ = false;
};

}  // namespace

CATCH_REGISTER_LISTENER(CheckReport)
