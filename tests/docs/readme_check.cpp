// readme_check README.md OUTPUT.txt [OTHER.txt...]: does a chapter's README
// show what its program prints? (ctest label `docs`, one test per chapter.)
// OTHER.txt: the output of the chapter's other programs whose output the
// README shows too (chapter 7's analysis command, run by check_readme.sh).
//
//  1. Every fenced block without a language (``` alone, or ```text) is an
//     excerpt of the output: of the chapter program's, or of one other
//     program's. Its lines must appear in that output in the same
//     order and consecutively, except that a line holding only "..." stands
//     for any number of omitted lines. Trailing spaces do not count, and
//     timings ("3.75 s", "11.3 ms"), with the spaces before them, are
//     compared as <time>, since they differ from run to run.
//  2. Numbers are compared as numbers, with a tolerance of one unit in the
//     last digit the README prints: "0.1427" matches 0.1426 to 0.1428, and
//     "2.6e-08" matches 2.5e-08 to 2.7e-08. Float sums are taken in another
//     order on a CPU with another vector width (SSE2's 4 floats, AVX2's 8,
//     AVX-512's 16), which moves the last digit of some printed values by
//     one; more than that is a real difference. Integers (shapes, counts,
//     indices) must be equal, and text must be equal, word for word.
//     An excerpt of results after training opens with ```text trained: its
//     decimal numbers may differ by 2% of their value (or one unit, if that
//     is more). Training amplifies those rounding differences over hundreds
//     of steps: one run of chapter 7's corpus task ended with a loss of
//     0.1242 on an AVX-512 CPU and 0.1255 with AVX2 code. ```text trained 5%
//     sets another share, for a block that also shows differences of two
//     trained numbers (a gap between two losses moves by more than either).
//  3. The numbered headings "## N. Title" are the chapter program's "Step N.
//     Title" lines, one for one, in order, with the same titles (another
//     program's steps are its own, not the chapter's).
//  4. The tolerance must not hide a wrong README: for every number of every
//     excerpt the checker makes two mutants (the README's number moved by
//     two units of its last digit up and down, an integer by one) and the
//     excerpt must then fail to match, at least one way (the other may still
//     match where this CPU printed the number one unit away from the
//     README). A number that can move both ways unseen (its line is also
//     printed elsewhere, say) is reported as a problem of the excerpt.
//  5. Every reference to a section in the README's prose ("step 7",
//     "Section 7", "§7", "steps 2 to 8", "chapter 3's step 7") names a
//     "## N." heading that exists, in this chapter or the one it names. A
//     single reference must also show that it means that section: either a
//     quoted title right after it (`step 9 ("Three ways to say where a token
//     is")`), which must be the heading's title, or a word of four letters
//     or more that its sentence shares with the title. So "Section 6 says
//     why: every entry of J is 0" fails when section 6 is "Temperature" and
//     the gradient is section 7. The clause around the reference must not
//     hold two or more words of another section's title and none of its
//     own ("the positional encoding of step 3", when step 5 adds it), and
//     no title the sentence does not name may share two words more with it
//     than the referenced one. In prose, "step N" therefore always means a
//     section: an optimizer's first step is "the first step".
//
// Every problem is printed with the README's line number; the exit status
// is the number of problems (at most 100).
// `readme_check --self-test` runs the checker's own tests (ctest
// docs/readme_check_self_test).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
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

// ---- A line as text and numbers ------------------------------------------

struct Token {
  enum Kind { kText, kInteger, kFixed, kScientific } kind;
  std::string text;   // as printed
  double value = 0;   // numbers
  double unit = 0;    // one unit in the last printed digit (kFixed, kScientific)
  int decimals = 0;   // digits after the point (kFixed)
};
using Line = std::vector<Token>;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_word(char c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

// A number starts at a digit (or a '-' before one) that does not continue a
// word: "x86-64", "W_q", "d_k2" and "ch7" are text; "-0.25", "(1, 6, 64)",
// "2.6e-08" and "5.6x" hold numbers.
Line tokenize(const std::string& s) {
  Line line;
  std::string text;
  auto flush_text = [&] {
    if (!text.empty()) line.push_back({Token::kText, text});
    text.clear();
  };
  size_t i = 0;
  while (i < s.size()) {
    const bool after_word = i > 0 && (is_word(s[i - 1]) || s[i - 1] == '.');
    const bool sign = s[i] == '-' && i + 1 < s.size() && is_digit(s[i + 1]) && !after_word;
    if ((is_digit(s[i]) || sign) && !after_word) {
      size_t j = i + (sign ? 1 : 0);
      while (j < s.size() && is_digit(s[j])) ++j;
      Token t{Token::kInteger, ""};
      if (j + 1 < s.size() && s[j] == '.' && is_digit(s[j + 1])) {
        const size_t point = j++;
        while (j < s.size() && is_digit(s[j])) ++j;
        t.kind = Token::kFixed;
        t.decimals = int(j - point - 1);
      }
      // An exponent: e-08, e+00, e5 (the mantissa may have no point: 1e-6).
      if (j + 1 < s.size() && (s[j] == 'e' || s[j] == 'E')) {
        size_t k = j + 1;
        if (k < s.size() && (s[k] == '-' || s[k] == '+')) ++k;
        if (k < s.size() && is_digit(s[k])) {
          while (k < s.size() && is_digit(s[k])) ++k;
          if (k == s.size() || !is_word(s[k])) {
            const int exponent = std::atoi(s.c_str() + j + 1);  // s[j] is the e
            t.unit = std::pow(10.0, exponent - t.decimals);
            t.kind = Token::kScientific;
            j = k;
          }
        }
      }
      flush_text();
      t.text = s.substr(i, j - i);
      t.value = std::strtod(t.text.c_str(), nullptr);
      if (t.kind == Token::kFixed) t.unit = std::pow(10.0, -t.decimals);
      line.push_back(t);
      i = j;
    } else {
      text += s[i++];
    }
  }
  flush_text();
  return line;
}

// The tolerance of an excerpt of training results (```text trained), as a
// share of the README's value.
constexpr double kTrained = 0.02;

// Does the program's token `out` show the README's token `doc`? `relative`:
// the excerpt's tolerance as a share of the value (0, or kTrained).
double tolerance(const Token& doc, double relative) { return std::max(doc.unit, relative * std::abs(doc.value)); }

bool same(const Token& doc, const Token& out, double relative) {
  if (doc.kind != out.kind) return false;
  switch (doc.kind) {
    case Token::kText:
    case Token::kInteger:
      return doc.text == out.text;
    case Token::kFixed:
      if (doc.decimals != out.decimals) return false;
      break;
    case Token::kScientific:
      break;
  }
  // One unit of the README's last digit (not the output's: "0.0e+00" has a
  // unit of 0.1), with a little room for the decimal values' binary
  // rounding (0.1427 - 0.1426 is not exactly 1e-4 in a double).
  return std::abs(doc.value - out.value) <= tolerance(doc, relative) * (1 + 1e-9);
}

bool same(const Line& doc, const Line& out, double relative) {
  if (doc.size() != out.size()) return false;
  for (size_t k = 0; k < doc.size(); ++k)
    if (!same(doc[k], out[k], relative)) return false;
  return true;
}

std::string text_of(const Line& line) {
  std::string s;
  for (const Token& t : line) s += t.text;
  return s;
}

// ---- Excerpts --------------------------------------------------------------

struct Block {
  size_t first_line;  // 1-based, in the README, of the block's first content line
  std::vector<Line> lines;
  std::vector<bool> omission;
  double relative = 0;  // kTrained for ```text trained
};

// Fenced blocks with no language or "text": the output excerpts.
std::vector<Block> output_blocks(const std::vector<std::string>& readme) {
  std::vector<Block> blocks;
  for (size_t i = 0; i < readme.size(); ++i) {
    if (readme[i].rfind("```", 0) != 0) continue;
    const std::string language = normalise(readme[i].substr(3));
    size_t end = i + 1;
    while (end < readme.size() && readme[end].rfind("```", 0) != 0) ++end;
    // ("text trained 5%": a block whose numbers training moves further,
    // differences of two trained numbers, say)
    static const std::regex kTrainedPercent("text trained ([0-9]+)%");
    std::smatch percent;
    const bool trained_percent = std::regex_match(language, percent, kTrainedPercent);
    if (language.empty() || language == "text" || language == "text trained" || trained_percent) {
      Block b{i + 2, {}, {}, trained_percent ? std::stod(percent[1]) / 100 : language == "text trained" ? kTrained : 0.0};
      for (size_t j = i + 1; j < end; ++j) {
        const std::string l = normalise(readme[j]);
        b.omission.push_back(is_omission(l));
        b.lines.push_back(tokenize(l));
      }
      blocks.push_back(b);
    }
    i = end;
  }
  return blocks;
}

using Output = std::vector<Line>;

// Where lines [first, last) of the excerpt first appear as consecutive lines
// of `output` at or after `from`; output.size() if nowhere.
size_t find_segment(const Output& output, const std::vector<Line>& lines, size_t first, size_t last, size_t from,
                    double relative) {
  const size_t n = last - first;
  for (size_t start = from; start + n <= output.size(); ++start) {
    size_t k = 0;
    while (k < n && same(lines[first + k], output[start + k], relative)) ++k;
    if (k == n) return start;
  }
  return output.size();
}

// The longest prefix of the segment found anywhere at or after `from`: to say
// which line of a failing excerpt is the first that the program does not print.
size_t longest_prefix(const Output& output, const std::vector<Line>& lines, size_t first, size_t last, size_t from,
                      double relative) {
  size_t best = 0;
  for (size_t start = from; start < output.size(); ++start) {
    size_t k = 0;
    while (first + k < last && start + k < output.size() && same(lines[first + k], output[start + k], relative)) ++k;
    best = std::max(best, k);
  }
  return best;
}

struct Mismatch {
  size_t line;  // README line
  std::string what;
};

// Matches one excerpt against the output; the mismatches, in README lines.
std::vector<Mismatch> match_block(const Block& block, const Output& output) {
  std::vector<Mismatch> problems;
  size_t from = 0;
  bool anchored = false;  // an excerpt's first segment may start anywhere
  size_t k = 0;
  while (k < block.lines.size()) {
    if (block.omission[k]) {
      ++k;
      continue;
    }
    size_t end = k;
    while (end < block.lines.size() && !block.omission[end]) ++end;
    const size_t start = anchored ? from : 0;
    const size_t at = find_segment(output, block.lines, k, end, start, block.relative);
    if (at == output.size()) {
      const size_t ok = longest_prefix(output, block.lines, k, end, start, block.relative);
      const size_t bad = std::min(k + ok, end - 1);
      problems.push_back({block.first_line + bad,
                          "not in the program's output" +
                              std::string(anchored ? " (after the excerpt's previous lines)" : "") + ": \"" +
                              text_of(block.lines[bad]) + "\""});
    } else {
      from = at + (end - k);
    }
    anchored = true;
    k = end;
  }
  return problems;
}

// The README's number moved by two units of its last digit (an integer by
// one) up or down (direction +1 or -1), printed as the README prints it; in
// an excerpt of training results, by twice its tolerance.
Token mutant_of(const Token& t, int direction, double relative = 0) {
  Token m = t;
  char buffer[64];
  switch (t.kind) {
    case Token::kInteger:
      m.text = std::to_string(std::stoll(t.text) + direction);
      break;
    case Token::kFixed:
      m.value = t.value + 2 * direction * tolerance(t, relative);
      std::snprintf(buffer, sizeof buffer, "%.*f", t.decimals, m.value);
      m.text = buffer;
      break;
    case Token::kScientific: {
      // The mantissa moves by two units of its last digit; the exponent stays.
      const size_t e = t.text.find_first_of("eE");
      const size_t point = t.text.find('.');
      const int decimals = point == std::string::npos ? 0 : int(e - point - 1);
      const double mantissa = std::strtod(t.text.substr(0, e).c_str(), nullptr) + 2 * direction * std::pow(10.0, -decimals);
      std::snprintf(buffer, sizeof buffer, "%.*f", decimals, mantissa);
      m.text = buffer + t.text.substr(e);
      break;
    }
    case Token::kText:
      break;
  }
  m.value = std::strtod(m.text.c_str(), nullptr);
  return m;
}

// The README against the outputs, the chapter program's first: every
// problem, with its README line.
std::vector<Mismatch> check(const std::vector<std::string>& readme,
                            const std::vector<std::vector<std::string>>& output_texts, bool mutants) {
  std::vector<Output> outputs;
  for (const std::vector<std::string>& text : output_texts) {
    Output& output = outputs.emplace_back();
    for (const std::string& l : text) output.push_back(tokenize(normalise(l)));
  }
  // An excerpt shows one program's output, so it must lie within one: the
  // first it matches, or else the problems against the one it comes closest
  // to (whose first line not found lies furthest into the excerpt).
  const auto match_any = [&](const Block& block) {
    std::vector<Mismatch> closest;
    for (size_t k = 0; k < outputs.size(); ++k) {
      std::vector<Mismatch> found = match_block(block, outputs[k]);
      if (found.empty()) return found;
      if (k == 0 || found.front().line > closest.front().line) closest = std::move(found);
    }
    return closest;
  };
  std::vector<Mismatch> problems;

  // 1-2. Excerpts, numbers with their tolerance.
  for (const Block& block : output_blocks(readme)) {
    const std::vector<Mismatch> found = match_any(block);
    problems.insert(problems.end(), found.begin(), found.end());
    if (!found.empty() || !mutants) continue;
    // 4. Every number of a matching excerpt, moved two units up or down,
    // must stop it matching. (One direction may still match where this
    // CPU printed the number one unit away from the README's: moved towards
    // it, the mutant is one unit from the output. Both directions matching
    // means the number is not checked at all.)
    Block mutant = block;
    for (size_t l = 0; l < block.lines.size(); ++l) {
      for (size_t k = 0; k < block.lines[l].size(); ++k) {
        const Token& original = block.lines[l][k];
        if (original.kind == Token::kText) continue;
        std::string survivors;
        for (int direction : {+1, -1}) {
          mutant.lines[l][k] = mutant_of(original, direction, block.relative);
          if (!match_any(mutant).empty()) break;
          survivors += (survivors.empty() ? "" : " and ") + mutant.lines[l][k].text;
          if (direction == -1)
            problems.push_back({block.first_line + l, "the excerpt would still match with " + original.text +
                                                          " changed to " + survivors + " (is this line printed twice?)"});
        }
        mutant.lines[l][k] = original;
      }
    }
  }

  // 3. Step headings.
  static const std::regex heading(R"(^## ([0-9]+)\. (.*)$)");
  static const std::regex step(R"(^Step ([0-9]+)\. (.*)$)");
  std::vector<std::pair<size_t, std::string>> headings;  // README line, "N. Title"
  std::vector<std::string> steps;
  std::smatch m;
  for (size_t i = 0; i < readme.size(); ++i)
    if (std::regex_match(readme[i], m, heading)) headings.emplace_back(i + 1, m[1].str() + ". " + m[2].str());
  for (const std::string& raw : output_texts.front()) {
    const std::string l = normalise(raw);
    if (std::regex_match(l, m, step)) steps.push_back(m[1].str() + ". " + m[2].str());
  }
  for (size_t k = 0; k < std::max(headings.size(), steps.size()); ++k) {
    if (k >= headings.size()) {
      problems.push_back({readme.size(), "the program's \"Step " + steps[k] + "\" has no \"## " + steps[k] + "\" heading"});
    } else if (k >= steps.size()) {
      problems.push_back({headings[k].first, "\"## " + headings[k].second + "\" is no step of the program (it prints " +
                                                 std::to_string(steps.size()) + ")"});
    } else if (headings[k].second != steps[k]) {
      problems.push_back({headings[k].first, "heading \"## " + headings[k].second +
                                                 "\" but the program's step is \"Step " + steps[k] + "\""});
    }
  }
  return problems;
}

std::vector<Mismatch> check(const std::vector<std::string>& readme, const std::vector<std::string>& output_text,
                            bool mutants) {
  return check(readme, std::vector<std::vector<std::string>>{output_text}, mutants);
}

// ---- 5. References to sections ----------------------------------------------

using Headings = std::map<int, std::string>;  // "## N. Title": N -> Title
using Chapters = std::map<int, Headings>;     // every chapter's, by number

Headings headings_of(const std::vector<std::string>& readme) {
  static const std::regex heading(R"(^## ([0-9]+)\. (.*)$)");
  Headings h;
  std::smatch m;
  for (const std::string& l : readme)
    if (std::regex_match(l, m, heading)) h[std::stoi(m[1].str())] = normalise(m[2].str());
  return h;
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The words of four letters or more that say something, by their first five
// letters, less a plural's or a possessive's s ("gradient" and "gradients",
// "head" and "head's" are one word).
std::set<std::string> content_words(const std::string& text) {
  static const std::set<std::string> stop = {"the", "and", "with", "from", "that", "this", "what", "into", "over",
                                             "each", "every", "more", "than", "their", "them", "they", "then",
                                             "your", "only", "once", "after", "before", "when", "where", "which",
                                             "while", "about", "does", "have", "first", "last", "same", "step",
                                             "steps", "section"};
  static const std::regex word(R"([A-Za-z][A-Za-z_']{3,})");
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), word); it != std::sregex_iterator(); ++it) {
    std::string w = lower(it->str());
    if (stop.count(w)) continue;
    if (w.size() > 2 && w.compare(w.size() - 2, 2, "'s") == 0) w.resize(w.size() - 2);
    if (w.size() > 4 && w.back() == 's') w.pop_back();
    out.insert(w.substr(0, 5));
  }
  return out;
}

// Every "step N" / "section N" / "§N" in the prose of `readme` (chapter
// `chapter`) against the headings of `chapters` (which holds this one's).
std::vector<Mismatch> check_references(const std::vector<std::string>& readme, int chapter, const Chapters& chapters) {
  std::vector<Mismatch> problems;
  // Paragraphs of prose (no fenced block, no heading), each char's line.
  std::vector<std::pair<std::string, std::vector<size_t>>> paragraphs(1);
  bool fenced = false;
  for (size_t i = 0; i < readme.size(); ++i) {
    const std::string& l = readme[i];
    if (l.rfind("```", 0) == 0) fenced = !fenced;
    const bool prose = !fenced && l.rfind("```", 0) != 0 && l.rfind("#", 0) != 0 && !normalise(l).empty();
    if (!prose) {
      if (!paragraphs.back().first.empty()) paragraphs.emplace_back();
      continue;
    }
    auto& [text, lines] = paragraphs.back();
    // A line's indent (a list item's continuation) is not prose: joined
    // with one space, a title quoted across two lines reads as written.
    std::string body = normalise(l);
    body.erase(0, body.find_first_not_of(' '));
    const std::string piece = (text.empty() ? "" : " ") + body;
    text += piece;
    lines.insert(lines.end(), piece.size(), i + 1);
  }
  static const std::regex reference(
      R"((?:\b([Cc]hapter) ([0-9]+)(?:'s|,) )?(?:\b([Ss]ections?|[Ss]teps?) |§ ?)([0-9]+)((?: (?:and|to|or) [0-9]+)?))");
  static const std::regex quoted_title(R"(^(?: \(|,|:)? ?["“]([^"”]+)["”])");
  for (const auto& paragraph : paragraphs) {
    // Named members, not a structured binding: clang before 16 refuses to
    // capture a structured binding in the lambda below.
    const std::string& text = paragraph.first;
    const auto& lines = paragraph.second;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), reference); it != std::sregex_iterator(); ++it) {
      const std::smatch& m = *it;
      const size_t line = lines[size_t(m.position(0))];
      const int in = m[2].matched ? std::stoi(m[2].str()) : chapter;
      const auto found = chapters.find(in);
      if (found == chapters.end()) continue;  // a chapter this checker was not given
      const Headings& h = found->second;
      const std::string where = in == chapter ? "this README" : "chapter " + std::to_string(in) + "'s README";
      std::vector<int> numbers = {std::stoi(m[4].str())};
      if (m[5].length() > 0) numbers.push_back(std::stoi(m[5].str().substr(m[5].str().rfind(' ') + 1)));
      bool exists = true;
      for (int n : numbers) {
        if (h.count(n)) continue;
        problems.push_back({line, "\"" + m.str() + "\": " + where + " has no section " + std::to_string(n) +
                                      " (its sections are numbered 1 to " + std::to_string(h.size()) + ")"});
        exists = false;
      }
      if (!exists || numbers.size() > 1) continue;
      const std::string& title = h.at(numbers[0]);
      std::smatch q;
      const std::string after = m.suffix().str();
      if (std::regex_search(after, q, quoted_title)) {
        const std::string named = lower(q[1].str()), real = lower(title);
        if (real.rfind(named, 0) != 0 && named.rfind(real, 0) != 0)
          problems.push_back({line, "\"" + m.str() + "\" quotes the title \"" + q[1].str() + "\", but section " +
                                        std::to_string(numbers[0]) + " of " + where + " is \"" + title + "\""});
        continue;
      }
      // The sentence around the reference: from the last . ? ! before it
      // (followed by a space), or table bar " | ", to the next.
      const size_t at = size_t(m.position(0));
      const auto ends_sentence = [&](size_t k) {
        const bool space_after = k + 1 == text.size() || text[k + 1] == ' ';
        if (text[k] == '|') return space_after && k > 0 && text[k - 1] == ' ';
        return (text[k] == '.' || text[k] == '?' || text[k] == '!') && space_after;
      };
      size_t begin = 0, end = text.size();
      for (size_t k = at; k-- > 0;)
        if (ends_sentence(k)) {
          begin = k + 1;
          break;
        }
      for (size_t k = at + size_t(m.length(0)); k < text.size(); ++k)
        if (ends_sentence(k)) {
          end = k;
          break;
        }
      const std::string sentence = text.substr(begin, end - begin);
      const std::set<std::string> in_sentence = content_words(sentence);
      if (content_words(title).empty()) continue;
      // How many words of a title `words` holds (content_words' sense).
      const auto shared = [](const std::set<std::string>& words, const std::string& t) {
        const std::set<std::string> of_title = content_words(t);
        return std::count_if(of_title.begin(), of_title.end(), [&](const std::string& w) { return words.count(w) > 0; });
      };
      const auto wrong_number = [&](const std::string& why) {
        problems.push_back({line, "\"" + m.str() + "\" is \"" + title + "\" in " + where + ", but " + why +
                                      ": is the number right? (if it is, quote the title after it: " + m.str() +
                                      " (\"" + title + "\"))"});
      };
      const auto own = shared(in_sentence, title);
      if (own == 0) {
        wrong_number("its sentence shares no word with that title");
        continue;
      }
      // The sentence as a whole: another title that shares two words more
      // with it than this one does is the section it is about. (Sections
      // the same sentence names too are not "another": "the checkpoints
      // (step 8) and the corpus (step 10)".)
      std::set<int> named_here;
      for (auto r = std::sregex_iterator(sentence.begin(), sentence.end(), reference); r != std::sregex_iterator(); ++r)
        if (!(*r)[2].matched || std::stoi((*r)[2].str()) == in) named_here.insert(std::stoi((*r)[4].str()));
      const auto about = std::find_if(h.begin(), h.end(), [&](const auto& other) {
        return !named_here.count(other.first) && shared(in_sentence, other.second) >= own + 2;
      });
      if (about != h.end()) {
        wrong_number("its sentence is about section " + std::to_string(about->first) + ", \"" + about->second + "\"");
        continue;
      }
      // A sentence may name two sections' subjects ("step 5's learning
      // rate, with clipping and AdamW"): then the clause around the
      // reference decides. Two words there or more from another section's
      // title, and none from this one's, mean the number is wrong. (One
      // word is not enough: "the weights of step 2" is right even when
      // another title says "weights".)
      const auto is_delimiter = [](char c) { return c == ',' || c == ';' || c == ':' || c == '(' || c == ')'; };
      size_t c_begin = at, c_end = at + size_t(m.length(0));
      while (c_begin > begin && !is_delimiter(text[c_begin - 1])) --c_begin;
      while (c_end < end && !is_delimiter(text[c_end])) ++c_end;
      const std::string clause = text.substr(c_begin, c_end - c_begin);
      const std::set<std::string> in_clause = content_words(clause);
      if (shared(in_clause, title) > 0) continue;
      const auto beside = std::find_if(h.begin(), h.end(), [&](const auto& other) {
        return other.first != numbers[0] && shared(in_clause, other.second) >= 2;
      });
      if (beside != h.end())
        wrong_number("the words beside it (\"" + clause + "\") are those of section " + std::to_string(beside->first) +
                     ", \"" + beside->second + "\"");
    }
  }
  return problems;
}

// Every chapter's headings, read from the READMEs beside this one
// (chapters/NN-name/README.md), and this README's chapter number.
std::pair<int, Chapters> chapters_beside(const std::string& readme_path, const std::vector<std::string>& readme) {
  namespace fs = std::filesystem;
  const auto number = [](const fs::path& dir) {
    const std::string name = dir.filename().string();
    return name.size() > 3 && std::isdigit(static_cast<unsigned char>(name[0])) &&
                   std::isdigit(static_cast<unsigned char>(name[1])) && name[2] == '-'
               ? std::stoi(name.substr(0, 2))
               : 0;
  };
  const fs::path dir = fs::absolute(readme_path).parent_path();
  const int chapter = number(dir);
  Chapters chapters;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir.parent_path(), ec)) {
    const int n = number(entry.path());
    if (n > 0 && n != chapter && fs::exists(entry.path() / "README.md"))
      chapters[n] = headings_of(read_lines((entry.path() / "README.md").string().c_str()));
  }
  chapters[chapter] = headings_of(readme);
  return {chapter, chapters};
}

// ---- The checker's own tests -------------------------------------------------

int self_test() {
  int failures = 0;
  auto expect = [&](const char* name, const std::vector<std::string>& readme, const std::vector<std::string>& output,
                    size_t problems) {
    const size_t got = check(readme, output, false).size();
    if (got != problems) {
      std::cout << "FAILED: " << name << ": " << got << " problem(s), expected " << problems << "\n";
      ++failures;
    }
  };
  const std::vector<std::string> out = {
      "Step 1. Scores",
      "  scores (1, 4, 6, 6) = Q Kᵀ / √16, d_k = 16 on x86-64",
      "  largest |row sum - 1| = 2.6e-08, gap 0.1427 after 3.75 s",
      "  loss -3.225135, accuracy 99.2%",
      "  [0.1422, -0.3113, 0.1691]",
  };
  auto readme_with = [&](const std::string& line) {
    return std::vector<std::string>{"## 1. Scores", "```", line, "```"};
  };
  expect("the output itself", readme_with(out[2]), out, 0);
  expect("one unit of the last digit", readme_with("  largest |row sum - 1| = 2.5e-08, gap 0.1426 after 9.1 ms"), out,
         0);
  expect("two units of the last digit (fixed)", readme_with("  largest |row sum - 1| = 2.6e-08, gap 0.1429 after 3 s"),
         out, 1);
  expect("two units of the last digit (scientific)", readme_with("  largest |row sum - 1| = 2.8e-08, gap 0.1427"), out,
         1);
  expect("another number of digits", readme_with("  largest |row sum - 1| = 2.6e-08, gap 0.143 after 3.75 s"), out, 1);
  expect("an integer off by one", readme_with("  scores (1, 4, 6, 7) = Q Kᵀ / √16, d_k = 16 on x86-64"), out, 1);
  expect("a zero printed with a larger exponent", readme_with("  largest |row sum - 1| = 0.0e+00, gap 0.1427"), out, 1);
  expect("a word changed", readme_with("  scores (1, 4, 6, 6) = Q Kᵀ / √16, d_v = 16 on x86-64"), out, 1);
  expect("a word with digits is text", readme_with("  scores (1, 4, 6, 6) = Q Kᵀ / √16, d_k = 16 on x86-63"), out, 1);
  expect("a sign", readme_with("  [0.1422, 0.3113, 0.1691]"), out, 1);
  expect("negative numbers within a unit", readme_with("  loss -3.225136, accuracy 99.1%"), out, 0);
  expect("a heading that is no step", {"## 1. Scores", "## 2. Weights"}, out, 1);
  expect("an omission", {"## 1. Scores", "```", "Step 1. Scores", "...", "  [0.1422, -0.3113, 0.1691]", "```"}, out, 0);
  expect("order after an omission",
         {"## 1. Scores", "```", "  [0.1422, -0.3113, 0.1691]", "...", "Step 1. Scores", "```"}, out, 1);
  // The mutants: every number of a matching excerpt, moved by two units,
  // stops it matching; a line printed twice is reported.
  const std::vector<std::string> readme = {"## 1. Scores", "```", out[1], out[2], out[3], out[4], "```"};
  if (!check(readme, out, true).empty()) {
    std::cout << "FAILED: a mutant of the output's own lines survived\n";
    ++failures;
  }
  std::vector<std::string> twice = out;
  twice.push_back("  loss -3.225133, accuracy 99.2%");  // the mutant one way
  if (!check({"## 1. Scores", "```", "...", out[3], "```"}, twice, true).empty()) {
    std::cout << "FAILED: a mutant that matches in one direction only was reported\n";
    ++failures;
  }
  twice.push_back("  loss -3.225137, accuracy 99.2%");  // and the other
  if (check({"## 1. Scores", "```", "...", out[3], "```"}, twice, true).size() != 1) {
    std::cout << "FAILED: a mutant that matches a line printed twice was not reported\n";
    ++failures;
  }
  expect("a trained excerpt within 2%", {"## 1. Scores", "```text trained", "  loss -3.2900, accuracy 98.0%", "```"},
         {"Step 1. Scores", "  loss -3.2251, accuracy 99.2%"}, 0);
  expect("a trained excerpt beyond 2%", {"## 1. Scores", "```text trained", "  loss -3.3000, accuracy 98.0%", "```"},
         {"Step 1. Scores", "  loss -3.2251, accuracy 99.2%"}, 1);
  expect("a trained excerpt within its own 5%", {"## 1. Scores", "```text trained 5%", "  gap 0.1423", "```"},
         {"Step 1. Scores", "  gap 0.1463"}, 0);
  expect("a trained excerpt beyond its own 5%", {"## 1. Scores", "```text trained 5%", "  gap 0.1423", "```"},
         {"Step 1. Scores", "  gap 0.1503"}, 1);
  // Another program's output (chapter 7's analysis command): its excerpts
  // are checked, its steps are not the chapter's, and an excerpt must lie
  // within one output.
  const std::vector<std::string> other = {"Step 1. The weights", "  layer 0, head 1  shape (1, 6, 6)"};
  auto expect_with_other = [&](const char* name, const std::vector<std::string>& readme, size_t problems) {
    const size_t got = check(readme, std::vector<std::vector<std::string>>{out, other}, true).size();
    if (got != problems) {
      std::cout << "FAILED: " << name << ": " << got << " problem(s), expected " << problems << "\n";
      ++failures;
    }
  };
  expect_with_other("an excerpt of the other program", {"## 1. Scores", "```", other[1], "```"}, 0);
  expect_with_other("a wrong excerpt of the other program",
                    {"## 1. Scores", "```", "  layer 0, head 1  shape (1, 6, 7)", "```"}, 1);
  expect_with_other("an excerpt across two outputs", {"## 1. Scores", "```", out[4], other[0], "```"}, 1);
  expect_with_other("the other program's steps are no headings", {"## 1. Scores"}, 0);
  const Token fixed = mutant_of(tokenize("0.1427")[0], +1), sci = mutant_of(tokenize("2.6e-08")[0], -1),
              minus = mutant_of(tokenize("-3.225135")[0], +1), integer = mutant_of(tokenize("16")[0], -1);
  for (auto [got, want] : {std::pair{fixed.text, "0.1429"}, std::pair{sci.text, "2.4e-08"},
                           std::pair{minus.text, "-3.225133"}, std::pair{integer.text, "15"}}) {
    if (got != want) {
      std::cout << "FAILED: mutant " << got << ", expected " << want << "\n";
      ++failures;
    }
  }
  // 5. References to sections.
  const std::vector<std::string> refs = {"## 6. Temperature: softmax(x / T)", "## 7. The gradient of softmax",
                                         "## 8. The vanishing gradient, measured"};
  const Chapters others = {{3, headings_of(refs)}, {2, {{1, "Dot products"}, {2, "Scaling by sqrt(d_k)"}}}};
  auto expect_refs = [&](const char* name, const std::string& prose, size_t want) {
    std::vector<std::string> readme = refs;
    readme.insert(readme.end(), {"", prose, "", "```", "Step 6 of the output is not prose", "```"});
    const size_t got = check_references(readme, 3, others).size();
    if (got != want) {
      std::cout << "FAILED: " << name << ": " << got << " reference problem(s), expected " << want << "\n";
      ++failures;
    }
  };
  expect_refs("the right section", "Section 7 says why: if p is one-hot, no gradient reaches the scores.", 0);
  expect_refs("the wrong section (its sentence is about another title)",
              "Section 6 says why: if p is one-hot, no gradient reaches the scores.", 1);
  expect_refs("a section that does not exist", "Step 9 measures it, and step 7 derives the gradient.", 1);
  expect_refs("the right quoted title", "As step 6 (\"Temperature\") showed, it flattens.", 0);
  expect_refs("a wrong quoted title", "As step 7 (\"Temperature\") showed, the gradient flattens.", 1);
  expect_refs("a range whose end does not exist", "Steps 6 to 9 run it.", 1);
  expect_refs("a range that exists", "Steps 6 to 8 run it.", 0);
  expect_refs("another chapter's section", "Chapter 2's step 2 divides the scores by sqrt(d_k).", 0);
  expect_refs("another chapter's missing section", "Chapter 2's step 5 divides the scores.", 1);
  expect_refs("another chapter's section, about something else", "Chapter 2's step 1 is about the gradient.", 1);
  expect_refs("a sentence ends at a period", "Step 8 measures the vanishing gradient. Temperature is step 6.", 0);
  expect_refs("the words beside it are another section's",
              "The vanishing gradient measured in step 6, at every temperature, is small.", 1);
  expect_refs("the words beside it are its own, the sentence names another",
              "Step 8's vanishing gradient, not the gradient of softmax, is measured.", 0);
  expect_refs("one word beside it from another title is not enough",
              "The gradient of step 6 flattens with the temperature.", 0);
  expect_refs("nothing beside it names a section", "As step 7 shows, the gradient is exact.", 0);
  expect_refs("the sentence is about another section",
              "Step 6 measures the vanishing gradient of softmax.", 1);
  expect_refs("the sentence names the other section too",
              "Step 6 sets the temperature; step 8 measures the vanishing gradient of softmax.", 0);
  std::cout << (failures == 0 ? "readme_check: every self-test passed\n" : "readme_check: self-test failed\n");
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--self-test") return self_test();
  if (argc < 3) {
    std::cerr << "usage: readme_check README.md OUTPUT.txt [OTHER.txt...] | readme_check --self-test\n";
    return 2;
  }
  const std::vector<std::string> readme = read_lines(argv[1]);
  std::vector<std::vector<std::string>> outputs;
  for (int k = 2; k < argc; ++k) outputs.push_back(read_lines(argv[k]));
  std::vector<Mismatch> problems = check(readme, outputs, true);
  const auto [chapter, chapters] = chapters_beside(argv[1], readme);
  const std::vector<Mismatch> references = check_references(readme, chapter, chapters);
  problems.insert(problems.end(), references.begin(), references.end());
  std::sort(problems.begin(), problems.end(), [](const Mismatch& a, const Mismatch& b) { return a.line < b.line; });
  for (const Mismatch& p : problems) std::cout << argv[1] << ":" << p.line << ": " << p.what << "\n";
  if (problems.empty())
    std::cout << argv[1] << ": every excerpt and step heading matches the output (numbers to one unit of their "
                            "last digit), every number moved by two units would not, and every section reference "
                            "names its section\n";
  return int(std::min<size_t>(problems.size(), 100));
}
