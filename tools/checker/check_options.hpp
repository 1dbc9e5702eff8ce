// `./book check`'s command line: the reader's words read into options, the
// usage line its refusals end with, and the text of --help. Apart from
// main.cpp so that the unit tests can give it words.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace sa::check {

struct CheckOptions {
  std::vector<std::string> chapters;  // in the book's order
  int timeout_seconds = 10;
  bool watch = false, json = false, one_chapter = false, help = false;
  // --untouched: the book's CI proves that every untouched stub fails only
  // with "not implemented yet". Not in the reader's usage.
  bool untouched_rule = false;
  int book_chapters = 0;
};

// "usage: ./book check [N] [--timeout S] [--watch] [--json]", as a refusal
// ends (--untouched, the book's CI's, is left out).
std::string check_usage();

// What `./book check --help` prints: what check does, its argument and options.
std::string check_help(int book_chapters);

// The reader's words after "check", in the tree at `root`. A bad command line
// (an unknown word, a bad --timeout, two chapters, an option given twice,
// --json with --watch) is a Refusal (chapters.hpp). With --help or -h, only
// `help` is set: nothing else is read.
CheckOptions parse_check_options(const std::filesystem::path& root, const std::vector<std::string>& words);

}  // namespace sa::check
