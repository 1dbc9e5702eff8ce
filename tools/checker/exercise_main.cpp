// book-exercise: `./book hint N [FUNCTION]` and `./book reset N FUNCTION`.
// ./book builds this program and execs it as
//   book-exercise ROOT hint|reset WORDS...
// with the tree's root (so that tests/tooling/hint_reset.sh can run it on a
// copy) and the reader's words after the command, which it checks itself.
// The commands are hints.cpp and reset.cpp; the exercise functions they
// find, exercise_functions.cpp, which also counts check's "Functions
// written: K of M".
#include "chapters.hpp"
#include "hints.hpp"
#include "reset.hpp"

#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  using namespace sa::check;
  const std::string command = argc >= 3 ? argv[2] : "";
  if (command != "hint" && command != "reset") {
    std::cerr << "usage: book-exercise ROOT hint|reset WORDS... (./book hint and ./book reset run it)" << std::endl;
    return 2;
  }
  const std::filesystem::path root = argv[1];
  const std::vector<std::string> words(argv + 3, argv + argc);
  try {
    if (command == "hint")
      hint_command(root, words, std::cout);
    else
      reset_command(root, words, std::cout, reset_stamp());
  } catch (const Refusal& refusal) {
    std::cout.flush();
    std::cerr << "book: " << refusal.what() << std::endl;
    return 2;
  } catch (const std::exception& e) {
    // (a file the command reads or writes that is a folder, or unreadable:
    // one line, not an abort)
    std::cout.flush();
    std::cerr << "book: " << command << ": " << e.what() << std::endl;
    return 2;
  }
  return 0;
}
