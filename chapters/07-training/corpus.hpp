// Chapter 7, task 2: next-token prediction on a small sentence corpus
//, chapters/07-training/corpus.txt.
//
// Every sentence becomes the ids of its words plus the end token ".", and
// the model learns to predict each token from the ones before it:
//
//   position   0    1    2    3    4    5
//   input      the  cat  sat  on   the  mat
//   target     cat  sat  on   the  mat  .
//
// Sentences have different lengths (5 to 8 tokens here). Instead of padding
// (which would need a padding mask, chapter 5, in every layer), a batch
// holds sentences of one length only: the model keeps one workspace per
// shape anyway.
//
// Header-only, shared by both tracks.
#pragma once

#include "07-training/model.hpp"
#include "07-training/reversal.hpp"  // Score

#include "sa/cli.hpp"
#include "sa/rng.hpp"
#include "sa/text.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace sa {

// The corpus models train with attention dropout 0.1 (chapter 7's task 2
// and chapter 8's KV-cache model); the reversal task trains without.
inline constexpr double kCorpusDropout = 0.1;

inline constexpr std::string_view kEndToken = ".";

// The limits of a corpus (said in chapter 7's --help): at most 1 MiB of
// text, 10,000 sentences, 32 words a sentence.
inline constexpr std::uintmax_t kMaxCorpusBytes = 1 << 20;
inline constexpr std::size_t kMaxCorpusSentences = 10000;
inline constexpr std::size_t kMaxSentenceWords = 32;

struct Corpus {
  Vocabulary vocab;                              // words by first appearance, "." included
  std::vector<std::vector<int64_t>> sentences;   // ids, each ending with the end token
  int64_t max_len() const {
    size_t n = 0;
    for (const auto& s : sentences) n = std::max(n, s.size());
    return int64_t(n);
  }
};

// What a corpus line may hold, checked as the file is read so that a bad
// byte is named with its file and line before any training (a Latin-1 "café"
// once trained for 10 s and then failed to save). Returns "" for a clean
// line, else what is wrong with it. UTF-8 only; no control characters but
// the tab (C0, DEL and the C1 range U+0080..U+009F, such as U+0085, which
// Latin-1 files and Windows code pages leave behind); no Unicode spaces
// other than the plain space, which would otherwise hide inside a word.
inline std::string corpus_line_problem(std::string_view line) {
  for (std::size_t i = 0; i < line.size();) {
    const auto b = static_cast<unsigned char>(line[i]);
    if (b < 0x80) {
      if (b == '\r') return "a carriage return inside the line (save it with LF or CRLF line ends)";
      if ((b < 0x20 && b != '\t') || b == 0x7f) return fmt::format("control character 0x{:02x}", b);
      ++i;
      continue;
    }
    // A UTF-8 sequence: 2 to 4 bytes, no overlong form, no surrogate.
    const std::size_t len = (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xe ? 3 : (b >> 3) == 0x1e ? 4 : 0;
    uint32_t cp = len == 2 ? (b & 0x1fu) : len == 3 ? (b & 0x0fu) : (b & 0x07u);
    bool valid = len > 0 && i + len <= line.size();
    for (std::size_t k = 1; valid && k < len; ++k) {
      const auto c = static_cast<unsigned char>(line[i + k]);
      valid = (c & 0xc0) == 0x80;
      cp = (cp << 6) | (c & 0x3fu);
    }
    const uint32_t smallest = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
    if (!valid || cp < smallest || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
      return fmt::format("byte 0x{:02x} at column {} is not UTF-8 (a Latin-1 or Windows-1252 file? save it as "
                         "UTF-8)",
                         b, i + 1);
    if (cp <= 0x9f) return fmt::format("control character U+{:04X}", cp);
    const bool space = cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200b) || cp == 0x2028 ||
                       cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000 || cp == 0xfeff;
    if (space)
      return fmt::format("U+{:04X} is a Unicode space or byte-order mark inside the text (use a plain space)", cp);
    i += len;
  }
  return "";
}

// The corpus from its text: one sentence a line, '#' lines and blank lines
// skipped, words lower-cased (sa::tokenize: Unicode letters too, "Été" is
// "été"). A file as editors save it reads like the clean one: a UTF-8
// byte-order mark at the start, CRLF line ends, tabs between words and a
// last line without its newline. `name` is only for messages.
inline Corpus parse_corpus(std::string_view text, const std::string& name) {
  constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
  if (text.substr(0, kByteOrderMark.size()) == kByteOrderMark) text.remove_prefix(kByteOrderMark.size());
  std::vector<std::vector<std::string>> words;
  std::size_t line_number = 0;
  for (std::size_t begin = 0; begin < text.size();) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(begin, end - begin);
    begin = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // CRLF
    if (const std::string problem = corpus_line_problem(line); !problem.empty())
      throw UsageError(fmt::format("corpus '{}', line {}: {}", name, line_number, problem));
    const auto start = line.find_first_not_of(" \t");
    if (start == std::string_view::npos || line[start] == '#') continue;
    std::vector<std::string> w;
    try {
      w = tokenize(line);
    } catch (const UsageError& e) {  // a word too long to label a matrix: said with its file and line
      throw UsageError(fmt::format("corpus '{}', line {}: {}", name, line_number, e.what()));
    }
    if (w.size() > kMaxSentenceWords)
      throw UsageError(fmt::format("corpus '{}', line {}: sentence {} has {} words; at most {}", name, line_number,
                                   words.size() + 1, w.size(), kMaxSentenceWords));
    if (words.size() == kMaxCorpusSentences)
      throw UsageError(fmt::format("corpus '{}' has more than {} sentences", name, kMaxCorpusSentences));
    w.emplace_back(kEndToken);
    words.push_back(std::move(w));
  }
  if (words.empty()) throw UsageError(fmt::format("corpus '{}' has no sentences", name));
  std::vector<std::string> all;
  for (const auto& w : words) all.insert(all.end(), w.begin(), w.end());
  Corpus c;
  c.vocab = Vocabulary(all);
  for (const auto& w : words) c.sentences.push_back(c.vocab.ids(w));
  return c;
}

// What --corpus accepts: a regular text file (checked before anything is
// read whole, so a folder, a FIFO, a binary or a huge file gets one line,
// not a hang or gigabytes of memory); the encoding and the sentence limits
// are parse_corpus's.
inline Corpus load_corpus(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
    throw UsageError(fmt::format("corpus '{}': {}", path, ec.message()));  // a loop of symbolic links, a name too long
  if (!fs::exists(st)) throw UsageError(fmt::format("corpus '{}': no such file", path));
  if (!fs::is_regular_file(st))
    throw UsageError(fmt::format("corpus '{}' is not a regular file (a folder, a pipe or a device)", path));
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) throw UsageError(fmt::format("corpus '{}': {}", path, ec.message()));
  if (size > kMaxCorpusBytes)
    throw UsageError(fmt::format("corpus '{}' has {} bytes; at most {} (1 MiB)", path, size, kMaxCorpusBytes));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(fmt::format("corpus '{}': cannot open it", path));
  // Read as far as one byte past the limit, whatever its size said: a file
  // that grows while it is read stops there. A read error is the reader's
  // file, not the program's (/proc/self/mem ended the run with status 1 and
  // libstdc++'s "basic_filebuf::underflow error reading the file").
  std::string text(kMaxCorpusBytes + 1, '\0');
  in.read(text.data(), std::streamsize(text.size()));
  if (in.bad()) throw UsageError(fmt::format("corpus '{}': cannot read it (a read error)", path));
  text.resize(std::size_t(in.gcount()));
  if (text.size() > kMaxCorpusBytes)
    throw UsageError(fmt::format("corpus '{}' has more than {} bytes (1 MiB), the most it may have", path,
                                 kMaxCorpusBytes));
  // A NUL says "binary" more plainly than a line number would (UTF-16 files
  // are full of them).
  if (const auto nul = text.find('\0'); nul != std::string::npos)
    throw UsageError(fmt::format("corpus '{}' is not a text file (it holds byte 0x00 on line {}; UTF-16? save it as "
                                 "UTF-8)",
                                 path, 1 + std::count(text.begin(), text.begin() + std::ptrdiff_t(nul), '\n')));
  return parse_corpus(text, path);
}

// Sentence indices for training and for the held-out set: every
// `every`-th sentence (indices every-1, 2 every-1, ...) is held out.
struct CorpusSplit {
  std::vector<int64_t> train, held_out;
};

inline CorpusSplit split_corpus(const Corpus& c, int64_t every) {
  if (every < 2) throw std::invalid_argument("split_corpus: hold out every k-th sentence with k >= 2");
  CorpusSplit s;
  for (int64_t i = 0; i < int64_t(c.sentences.size()); ++i)
    (i % every == every - 1 ? s.held_out : s.train).push_back(i);
  return s;
}

// One epoch's batches: the sentences `indices` in a random order, grouped
// by length, cut into batches of at most `batch` sentences of one length,
// and the batches in a random order. Two draws from the generator.
inline std::vector<std::vector<int64_t>> corpus_batches(Generator& gen, const Corpus& c,
                                                        const std::vector<int64_t>& indices, int64_t batch) {
  const std::vector<int64_t> perm = gen.randperm(int64_t(indices.size()));
  std::vector<int64_t> order;
  for (int64_t p : perm) order.push_back(indices[size_t(p)]);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return c.sentences[size_t(a)].size() < c.sentences[size_t(b)].size();
  });
  std::vector<std::vector<int64_t>> batches;
  for (size_t i = 0; i < order.size();) {
    const size_t len = c.sentences[size_t(order[i])].size();
    std::vector<int64_t> b;
    while (i < order.size() && c.sentences[size_t(order[i])].size() == len && int64_t(b.size()) < batch)
      b.push_back(order[i++]);
    batches.push_back(std::move(b));
  }
  const std::vector<int64_t> shuffle = gen.randperm(int64_t(batches.size()));
  std::vector<std::vector<int64_t>> shuffled;
  for (int64_t k : shuffle) shuffled.push_back(batches[size_t(k)]);
  return shuffled;
}

// Inputs (every token but the last) and targets (every token but the first)
// of sentences of one length.
inline void make_next_token_batch(const Corpus& c, std::span<const int64_t> batch, std::vector<int64_t>& ids,
                                  std::vector<int64_t>& targets) {
  ids.clear();
  targets.clear();
  const size_t len = c.sentences.at(size_t(batch[0])).size();
  for (int64_t i : batch) {
    const auto& s = c.sentences.at(size_t(i));
    if (s.size() != len)
      throw std::invalid_argument(
          fmt::format("make_next_token_batch: sentences of {} and {} tokens in one batch", len, s.size()));
    ids.insert(ids.end(), s.begin(), s.end() - 1);
    targets.insert(targets.end(), s.begin() + 1, s.end());
  }
}

// Next-token loss and accuracy over the sentences `indices`, every
// position predicted with the whole sentence as input (teacher forcing: the
// way the model is trained). For a bidirectional model that input includes
// the very token to predict.
inline Score evaluate_next_token(TinyTransformer& model, const Corpus& c, const std::vector<int64_t>& indices) {
  std::map<size_t, std::vector<int64_t>> by_length;
  for (int64_t i : indices) by_length[c.sentences.at(size_t(i)).size()].push_back(i);
  Score score;
  double loss_sum = 0;
  std::vector<int64_t> ids, targets;
  for (const auto& [len, group] : by_length) {
    make_next_token_batch(c, group, ids, targets);
    const float loss = model.forward_loss(ids, int64_t(group.size()), targets);
    loss_sum += double(loss) * double(targets.size());
    score.correct += count_correct(model.logits(), model.loss_targets());
    score.counted += int64_t(targets.size());
  }
  score.loss = float(loss_sum / double(std::max<int64_t>(1, score.counted)));
  return score;
}

// The same predictions made the way generation makes them: the token at
// position t + 1 from the prefix 0..t alone, nothing after it in the input.
// A causal model gets exactly the numbers of evaluate_next_token (its
// position t never sees later tokens anyway); a bidirectional model loses
// whatever it read from the future.
inline Score evaluate_prefixes(TinyTransformer& model, const Corpus& c, const std::vector<int64_t>& indices) {
  Score score;
  double loss_sum = 0;
  std::vector<int64_t> ids, targets;
  for (int64_t len = 1; len < c.max_len(); ++len) {
    ids.clear();
    targets.clear();
    for (int64_t i : indices) {
      const auto& s = c.sentences.at(size_t(i));
      if (int64_t(s.size()) <= len) continue;
      ids.insert(ids.end(), s.begin(), s.begin() + len);
      targets.push_back(s[size_t(len)]);
    }
    if (targets.empty()) continue;
    const int64_t batch = int64_t(targets.size());
    const Matrix& logits = model.forward(ids, batch);
    for (int64_t b = 0; b < batch; ++b) {
      const auto z = logits.row(b * len + len - 1).array();
      const float z_max = z.maxCoeff();
      const double log_sum = double(z_max) + std::log(double((z - z_max).exp().sum()));
      const int64_t t = targets[size_t(b)];
      loss_sum += log_sum - double(z(t));
      Eigen::Index best = 0;
      logits.row(b * len + len - 1).maxCoeff(&best);
      score.correct += best == t;
      ++score.counted;
    }
  }
  score.loss = float(loss_sum / double(std::max<int64_t>(1, score.counted)));
  return score;
}

// For scale: the next-token accuracy of a lookup table instead of a model.
// Each token of the sentences `eval` (from position 1 on) is predicted as
// the token that most often followed the same last `context` tokens in the
// sentences `train` (ties: the smaller id); when the prefix is shorter, or
// that context never occurred, the table backs off to fewer tokens, down to
// the most frequent token overall. context 1 is a bigram table; a context
// as long as the longest sentence is the whole prefix.
inline double ngram_accuracy(const Corpus& c, const std::vector<int64_t>& train, const std::vector<int64_t>& eval,
                             int64_t context) {
  if (context < 0) throw std::invalid_argument("ngram_accuracy: context must be >= 0");
  // counts[k][last k tokens][next token]
  std::vector<std::map<std::vector<int64_t>, std::map<int64_t, int64_t>>> counts(size_t(context + 1));
  for (int64_t i : train) {
    const auto& s = c.sentences.at(size_t(i));
    for (size_t t = 1; t < s.size(); ++t)
      for (int64_t k = 0; k <= context && k <= int64_t(t); ++k)
        ++counts[size_t(k)][std::vector<int64_t>(s.begin() + int64_t(t) - k, s.begin() + int64_t(t))][s[t]];
  }
  int64_t correct = 0, counted = 0;
  for (int64_t i : eval) {
    const auto& s = c.sentences.at(size_t(i));
    for (size_t t = 1; t < s.size(); ++t) {
      int64_t guess = -1;
      for (int64_t k = std::min<int64_t>(context, int64_t(t)); k >= 0 && guess < 0; --k) {
        const auto it = counts[size_t(k)].find(std::vector<int64_t>(s.begin() + int64_t(t) - k, s.begin() + int64_t(t)));
        if (it == counts[size_t(k)].end()) continue;
        int64_t best = 0;
        for (const auto& [token, n] : it->second)  // ascending ids: the first maximum wins ties
          if (n > best) best = n, guess = token;
      }
      correct += guess == s[t];
      ++counted;
    }
  }
  return counted ? 100.0 * double(correct) / double(counted) : 0.0;
}

}  // namespace sa
