#include "chapters.hpp"

#include <fstream>

namespace sa::check {

namespace fs = std::filesystem;

std::vector<std::string> book_chapters(const fs::path& root) {
  std::vector<std::string> names;
  std::ifstream list(root / "chapters" / "chapters.txt");
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  for (std::string line; std::getline(list, line);) {
    // "NN-name": lower-case letters, digits and dashes, maybe trailing blanks
    const std::string name = line.substr(0, line.find_last_not_of(" \t\r") + 1);
    if (name.size() >= 3 && is_digit(name[0]) && is_digit(name[1]) && name[2] == '-' &&
        name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos)
      names.push_back(name);
  }
  return names;
}

std::string chapter_name(const fs::path& root, const std::string& word, const std::vector<std::string>& chapters) {
  const std::string help = " (./book help lists the commands)";
  const std::string digits = word.substr(0, word.find('-'));
  int n = 0;
  if (!digits.empty() && digits.size() <= 2 && digits.find_first_not_of("0123456789") == std::string::npos)
    n = std::stoi(digits);
  if (n < 1 || n > int(chapters.size()))
    throw Refusal("no chapter '" + word + "': chapters are numbered 1 to " + std::to_string(chapters.size()) + help);
  const std::string& name = chapters[size_t(n - 1)];
  if (word.find('-') != std::string::npos && word != name)
    throw Refusal("no chapter '" + word + "': chapter " + std::to_string(n) + " is " + name + " (or just " +
                  std::to_string(n) + ")" + help);
  if (!fs::is_directory(root / "chapters" / name))
    throw Refusal("chapter " + std::to_string(n) + " (" + name + ") is not written yet");
  return name;
}

bool asks_for_help(const std::vector<std::string>& words) {
  for (const std::string& word : words)
    if (word == "--help" || word == "-h") return true;
  return false;
}

std::string joined_words(const std::vector<std::string>& words) {
  std::string all;
  for (const std::string& w : words) all += (all.empty() ? "" : " ") + w;
  return all;
}

int chapter_number(const std::string& chapter) { return std::stoi(chapter.substr(0, 2)); }

}  // namespace sa::check
