// readme_check README.md OUTPUT.txt: does a chapter's README show what its
// program prints? (ctest label `docs`, one test per chapter.)
//
//  1. Every fenced block without a language (``` alone, or ```text) is an
//     excerpt of the output. Its lines must appear in the output in the same
//     order and consecutively, except that a line holding only "..." stands
//     for any number of omitted lines. Trailing spaces do not count, and
//     timings ("3.75 s", "11.3 ms"), with the spaces before them, are
//     compared as <time>, since they differ from run to run.
//  2. The numbered headings "## N. Title" are the program's "Step N. Title"
//     lines, one for one, in order, with the same titles.
//
// Every mismatch is printed with the README's line number; the exit status
// is the number of mismatches (at most 100).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <regex>
#include <string>
#include <vector>

namespace {

std::vector<std::string> read_lines(const char* path) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << "readme_check: cannot read " << path << "\n";
    std::exit(2);
  }
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string normalise(std::string line) {
  // The spaces before a timing go with it: a column of times is padded to
  // its width, which changes when a time crosses 10 s.
  static const std::regex timing(R"( *\b[0-9]+(\.[0-9]+)?( ?)(ms|us|µs|s|min)\b)");
  line = std::regex_replace(line, timing, " <time>");
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
  return line;
}

bool is_omission(const std::string& line) {
  const auto first = line.find_first_not_of(' ');
  return first != std::string::npos && line.compare(first, std::string::npos, "...") == 0;
}

struct Block {
  size_t first_line;  // 1-based, in the README, of the block's first content line
  std::vector<std::string> lines;
};

// Fenced blocks with no language or "text": the output excerpts.
std::vector<Block> output_blocks(const std::vector<std::string>& readme) {
  std::vector<Block> blocks;
  for (size_t i = 0; i < readme.size(); ++i) {
    if (readme[i].rfind("```", 0) != 0) continue;
    const std::string language = normalise(readme[i].substr(3));
    size_t end = i + 1;
    while (end < readme.size() && readme[end].rfind("```", 0) != 0) ++end;
    if (language.empty() || language == "text") {
      Block b{i + 2, {}};
      for (size_t j = i + 1; j < end; ++j) b.lines.push_back(normalise(readme[j]));
      blocks.push_back(b);
    }
    i = end;
  }
  return blocks;
}

// Where `segment` first appears as consecutive lines of `output` at or after
// `from`; output.size() if nowhere.
size_t find_segment(const std::vector<std::string>& output, const std::vector<std::string>& segment, size_t from) {
  for (size_t start = from; start + segment.size() <= output.size(); ++start)
    if (std::equal(segment.begin(), segment.end(), output.begin() + long(start))) return start;
  return output.size();
}

// The longest prefix of `segment` found anywhere at or after `from`: to say
// which line of a failing excerpt is the first that the program does not print.
size_t longest_prefix(const std::vector<std::string>& output, const std::vector<std::string>& segment, size_t from) {
  size_t best = 0;
  for (size_t start = from; start < output.size(); ++start) {
    size_t k = 0;
    while (k < segment.size() && start + k < output.size() && output[start + k] == segment[k]) ++k;
    best = std::max(best, k);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: readme_check README.md OUTPUT.txt\n";
    return 2;
  }
  const std::vector<std::string> readme = read_lines(argv[1]);
  std::vector<std::string> output = read_lines(argv[2]);
  for (std::string& line : output) line = normalise(line);
  int problems = 0;
  auto problem = [&](size_t line, const std::string& what) {
    std::cout << argv[1] << ":" << line << ": " << what << "\n";
    ++problems;
  };

  // 1. Excerpts.
  for (const Block& block : output_blocks(readme)) {
    size_t from = 0, line = block.first_line;
    std::vector<std::string> segment;
    size_t segment_line = line;
    bool anchored = false;  // an excerpt's first segment may start anywhere
    auto flush = [&] {
      if (segment.empty()) return;
      const size_t at = find_segment(output, segment, anchored ? from : 0);
      if (at == output.size()) {
        const size_t ok = longest_prefix(output, segment, anchored ? from : 0);
        problem(segment_line + ok, "not in the program's output" +
                                       std::string(anchored ? " (after the excerpt's previous lines)" : "") + ": \"" +
                                       segment[std::min(ok, segment.size() - 1)] + "\"");
      } else {
        from = at + segment.size();
      }
      anchored = true;
      segment.clear();
    };
    for (const std::string& l : block.lines) {
      if (is_omission(l)) {
        flush();
      } else {
        if (segment.empty()) segment_line = line;
        segment.push_back(l);
      }
      ++line;
    }
    flush();
  }

  // 2. Step headings.
  static const std::regex heading(R"(^## ([0-9]+)\. (.*)$)");
  static const std::regex step(R"(^Step ([0-9]+)\. (.*)$)");
  std::vector<std::pair<size_t, std::string>> headings;  // README line, "N. Title"
  std::vector<std::string> steps;
  std::smatch m;
  for (size_t i = 0; i < readme.size(); ++i)
    if (std::regex_match(readme[i], m, heading)) headings.emplace_back(i + 1, m[1].str() + ". " + m[2].str());
  for (const std::string& l : output)
    if (std::regex_match(l, m, step)) steps.push_back(m[1].str() + ". " + m[2].str());
  for (size_t k = 0; k < std::max(headings.size(), steps.size()); ++k) {
    if (k >= headings.size()) {
      problem(readme.size(), "the program's \"Step " + steps[k] + "\" has no \"## " + steps[k] + "\" heading");
    } else if (k >= steps.size()) {
      problem(headings[k].first, "\"## " + headings[k].second + "\" is no step of the program (it prints " +
                                     std::to_string(steps.size()) + ")");
    } else if (headings[k].second != steps[k]) {
      problem(headings[k].first, "heading \"## " + headings[k].second + "\" but the program's step is \"Step " +
                                     steps[k] + "\"");
    }
  }
  if (problems == 0) std::cout << argv[1] << ": every excerpt and step heading matches the output\n";
  return std::min(problems, 100);
}
