#include "check_options.hpp"

#include "chapters.hpp"

#include <set>

namespace sa::check {
namespace {

namespace fs = std::filesystem;

// A word check reads as a chapter: 3, 03 or 03-softmax (chapter_name then
// says whether it is one).
bool looks_like_chapter(const std::string& word) {
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  if (word.empty() || !is_digit(word[0])) return false;
  if (word.size() == 1) return true;
  if (!is_digit(word[1])) return false;
  return word.size() == 2 || word[2] == '-';
}

int parse_timeout(const std::string& value) {
  const bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
  const long seconds = digits && value.size() <= 7 ? std::stol(value) : 0;
  if (seconds < 1 || seconds > 3600)
    throw Refusal("check: --timeout must be a whole number of seconds from 1 to 3600, got '" + value + "'");
  return int(seconds);
}

}  // namespace

std::string check_usage() { return "usage: ./book check [N] [--timeout S] [--watch] [--json]"; }

std::string check_help(int book_chapters) {
  return check_usage() + "\n\n" +
         "Builds your exercises (exercises/NN-name/*.cpp) against the book's hidden suites, runs every test case\n"
         "under a time limit, and prints which chapters pass and what to write or fix next.\n\n"
         "  N            only chapter N (1-" + std::to_string(book_chapters) +
         "; 3, 03 or 03-softmax); without it, every chapter written so far\n"
         "  --timeout S  the time limit of each test case, in whole seconds (1 to 3600; default 10)\n"
         "  --watch      check again on every save under exercises/, until Ctrl-C\n"
         "  --json       the results for tools on stdout, one object per test case (not with --watch)\n"
         "  --help       this text\n\n"
         "The exit status is 0 when every test case checked passes, 1 otherwise, 2 for a bad command line.\n";
}

CheckOptions parse_check_options(const fs::path& root, const std::vector<std::string>& words) {
  CheckOptions o;
  if (asks_for_help(words)) {
    o.help = true;
    return o;
  }
  const std::vector<std::string> all = book_chapters(root);
  o.book_chapters = int(all.size());
  std::string only;
  // An option given twice is a slip (an edited command line, a repeated
  // paste): refused rather than silently taken once, or the last one winning.
  std::set<std::string> given;
  auto once = [&](const std::string& option) {
    if (!given.insert(option).second) throw Refusal("check: " + option + " is given twice (" + check_usage() + ")");
  };
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word == "--untouched") {
      once(word);
      o.untouched_rule = true;
    } else if (word == "--watch") {
      once(word);
      o.watch = true;
    } else if (word == "--json") {
      once(word);
      o.json = true;
    } else if (word == "--timeout") {
      once(word);
      if (i + 1 >= words.size()) throw Refusal("check: --timeout needs a number of seconds (" + check_usage() + ")");
      o.timeout_seconds = parse_timeout(words[++i]);
    } else if (word.starts_with("--timeout=")) {
      once("--timeout");
      o.timeout_seconds = parse_timeout(word.substr(10));
    } else if (looks_like_chapter(word)) {
      if (!only.empty())
        throw Refusal("check: one chapter at a time, got '" + only + "' and '" + word + "' (" + check_usage() + ")");
      only = chapter_name(root, word, all);
    } else {
      throw Refusal("check: unknown argument '" + word + "' (" + check_usage() + ")");
    }
  }
  if (o.json && o.watch)
    throw Refusal("check: --json prints one report and ends; it does not go with --watch (" + check_usage() + ")");
  if (!only.empty()) {
    o.chapters = {only};
    o.one_chapter = true;
  } else {
    for (const std::string& c : all)
      if (fs::is_directory(root / "chapters" / c)) o.chapters.push_back(c);
  }
  return o;
}

}  // namespace sa::check
