// How an unwritten exercise says so. A stub in exercises/ ends with
//     SA_TODO("linear", "multiply X by W; add b to every row when given");
// which throws sa::NotImplemented. Tests report its one-line message, the
// `check` command reads the function, file and hint back, and a chapter
// program on the exercise track prints them instead of crashing.
#pragma once

#include <stdexcept>
#include <string>

namespace sa {

class NotImplemented : public std::logic_error {
 public:
  NotImplemented(std::string function, std::string file, std::string hint);
  const std::string& function() const { return function_; }
  const std::string& file() const { return file_; }  // relative to the repository
  const std::string& hint() const { return hint_; }

 private:
  std::string function_, file_, hint_;
};

[[noreturn]] void not_implemented(const char* function, const char* file, const char* hint);

}  // namespace sa

#define SA_TODO(function, hint) ::sa::not_implemented(function, __FILE__, hint)
