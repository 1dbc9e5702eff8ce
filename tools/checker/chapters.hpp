// The book's chapters as the reader names them: the one list
// (chapters/chapters.txt), and the words that name a chapter (3, 03,
// 03-softmax), refused with ./book's own sentences otherwise. Shared by
// book-check and book-exercise.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace sa::check {

// A refusal of the reader's command line: main prints "book: " and the
// sentence on one line and ends with status 2, as ./book's own refusals.
// (An exception rather than an exit, so that the unit tests can hear it.)
struct Refusal : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The book's chapters in order, "NN-name", from chapters/chapters.txt.
std::vector<std::string> book_chapters(const std::filesystem::path& root);

// 3 or 03 or 03-softmax -> 03-softmax, as ./book's chapter_name says it;
// a Refusal for any other word or a chapter not written yet.
std::string chapter_name(const std::filesystem::path& root, const std::string& word,
                         const std::vector<std::string>& chapters);

// Whether the reader's words ask for a command's usage: --help or -h, among
// any others (a mistaken word too: the reader asked how to write them).
bool asks_for_help(const std::vector<std::string>& words);

// The reader's words joined by spaces, as the shell's "$*" quotes them back.
std::string joined_words(const std::vector<std::string>& words);

// 03-softmax -> 3: the number the reader types.
int chapter_number(const std::string& chapter);

}  // namespace sa::check
