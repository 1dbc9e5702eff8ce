#include "compiler_warnings.hpp"

#include "read_file.hpp"

#include <algorithm>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>

namespace sa::check {
namespace {

namespace fs = std::filesystem;

// A file's text as a number: the kept warnings name the text they were about.
std::string fingerprint(const fs::path& file) { return std::to_string(std::hash<std::string>{}(read_file(file))); }

// Where a file's warnings are kept: store/03-softmax/softmax.cpp.txt.
fs::path kept_at(const fs::path& store, const std::string& exercise_file) {
  return store / (exercise_file.substr(std::string("exercises/").size()) + ".txt");
}

}  // namespace

LogWarnings warnings_in_log(const std::string& log) {
  // (make and ninja both announce a file as "Building CXX object <its object>";
  // the object's path holds the source's path from the repository's root)
  static const std::regex kCompiled("Building CXX object .*?(exercises/[0-9][0-9]-[a-z0-9-]+/[^/ ]+\\.cpp)\\.o");
  static const std::regex kWarning("(?:^|/)(exercises/[0-9][0-9]-[a-z0-9-]+/[^/: ]+\\.cpp:[0-9]+:[0-9]+): warning: (.*)$");
  LogWarnings found;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::smatch m;
    if (std::regex_search(line, m, kCompiled)) {
      if (std::find(found.compiled.begin(), found.compiled.end(), m[1].str()) == found.compiled.end())
        found.compiled.push_back(m[1]);
    } else if (std::regex_search(line, m, kWarning)) {
      const std::string warning = m[1].str() + ": " + m[2].str();
      // (a file compiled twice, by two targets, repeats its warnings)
      if (std::find(found.warnings.begin(), found.warnings.end(), warning) == found.warnings.end())
        found.warnings.push_back(warning);
    }
  }
  return found;
}

void remember_warnings(const fs::path& store, const fs::path& root, const std::string& log) {
  const LogWarnings found = warnings_in_log(log);
  for (const std::string& file : found.compiled) {
    const fs::path kept = kept_at(store, file);
    std::vector<std::string> its;
    for (const std::string& w : found.warnings)
      if (w.starts_with(file + ":")) its.push_back(w);
    std::error_code ignored;
    if (its.empty()) {
      fs::remove(kept, ignored);
      continue;
    }
    fs::create_directories(kept.parent_path(), ignored);
    // The first line: the file's text when the build ended, which is the
    // text it compiled unless the reader saved it again during the build.
    std::ofstream out(kept);
    out << fingerprint(root / file) << "\n";
    for (const std::string& w : its) out << w << "\n";
  }
}

std::vector<std::string> chapter_warnings(const fs::path& store, const fs::path& root, const std::string& chapter) {
  std::vector<fs::path> files;
  std::error_code ignored;
  for (const auto& f : fs::directory_iterator(root / "exercises" / chapter, ignored))
    if (f.path().extension() == ".cpp") files.push_back(f.path());
  std::sort(files.begin(), files.end());
  std::vector<std::string> warnings;
  for (const fs::path& file : files) {
    const std::string name = "exercises/" + chapter + "/" + file.filename().string();
    std::ifstream in(kept_at(store, name));
    std::string about;
    if (!std::getline(in, about) || about != fingerprint(file)) continue;
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) warnings.push_back(line);
  }
  return warnings;
}

}  // namespace sa::check
