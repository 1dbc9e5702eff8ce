// The command line every chapter program shares, and the guard around its
// main(). Every chapter has --help, --seed, --no-plots and --plots-dir, plus
// its own sizes. A bad option gets one line naming the problem and exit
// status 2; never a crash or a stack trace.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace sa {

// Thrown for a bad command-line value or an input the program refuses
// (the guard prints it as one line and exits with status 2).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct IntRange {
  int64_t min = 1;
  int64_t max = std::numeric_limits<int64_t>::max();
  // When the real upper end is known only after parsing (the vocabulary
  // of a checkpoint), the words for it, which the help and the refusal
  // show instead of max; the program checks it itself.
  const char* max_words = nullptr;
};

// An interval of real numbers; *_open excludes the end point
// (temperature: (0, inf); dropout p: [0, 1]).
struct RealRange {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_open = false;
  bool max_open = false;
};

// What a whole run will cost, estimated from its options before it starts
// (Cli::check_budget). `options` names the options that drive the estimate,
// as the reader typed them: "--seq-len 65536 --gen-tokens 1024".
struct RunEstimate {
  double seconds = 0;  // on one core (the book's machine: an AMD EPYC with AVX2)
  double bytes = 0;    // the most memory in use at once
  std::string options;
};

// The budget of one run, said in every --help: a reader's typo must never
// cost an hour or the machine's memory. 10 minutes on one core, and 4 GiB or
// half the machine's memory, whichever is less. The tests shrink the time
// budget with the environment variable SA_BUDGET_SECONDS, to prove at a
// small scale that the estimates hold (tests/inputs/fuzz_options.sh).
inline constexpr double kBudgetSeconds = 600;
inline constexpr double kBudgetBytes = 4.0 * 1024 * 1024 * 1024;
double budget_seconds();  // kBudgetSeconds, or SA_BUDGET_SECONDS when set
double budget_bytes();    // min(kBudgetBytes, MemTotal / 2)
// "25 min", "40 s", "1.2 h".
std::string duration_str(double seconds);
// A measured time, with three significant digits down to microseconds:
// "0.412 ms", "14.2 ms", "1.85 s".
std::string timing_str(double seconds);
std::string memory_str(double bytes);  // "3.0 GiB", "512 MiB"

// The largest --d-model, --d-k or --n-heads of the running example.
inline constexpr int64_t kMaxWidth = 4096;

class Cli {
 public:
  // `chapter` is the folder name, e.g. "01-qkv-projection": it names the
  // default figure folder plots/<chapter> and, unless `program` is given,
  // the program in --help (chapter 7's tools: "07-training-analyze").
  Cli(std::string chapter, std::string summary, std::string program = "");

  void add(const std::string& flag, int64_t* target, const std::string& help, IntRange range = {});
  void add(const std::string& flag, double* target, const std::string& help, RealRange range = {});
  // A real number whose default depends on something else (chapter 7's
  // --dropout: 0 for one task, 0.1 for another): empty unless given, and
  // --help shows `default_text`.
  void add(const std::string& flag, std::optional<double>* target, const std::string& help, RealRange range,
           const std::string& default_text);
  // A text; an empty one is refused ("--corpus is empty: give a file"),
  // `kind` saying what to give instead.
  void add(const std::string& flag, std::string* target, const std::string& help,
           const std::string& kind = "a value");
  void add_flag(const std::string& flag, bool* target, const std::string& help);

  // The running example's options, which chapters 1 to 5 share: the
  // sentence (`what` it is for; the help adds how it is split into words and
  // how many it may have) and a width such as --d-model, --d-k or --n-heads
  // (1 to kMaxWidth).
  void add_sentence(std::string* text, const std::string& what);
  void add_width(const std::string& flag, int64_t* width, const std::string& help);

  // A program that draws nothing (a benchmark) takes no --no-plots or
  // --plots-dir: call before parse().
  void without_figures();

  // A program whose work is bounded by its options' ranges alone (it never
  // calls check_budget) takes no --i-know-it-is-big: call before parse().
  void without_budget();

  // Parses argv; prints help and exits 0 on --help; throws UsageError on a
  // bad flag or value, a flag given twice, a flag whose value is missing
  // (the next word is another --flag), or a figure folder that cannot be
  // written (checked here, before any work; it is created only when the
  // first figure is drawn, so a refused run leaves no folder behind).
  void parse(int argc, char** argv);

  // Throws UsageError, one line naming e.options and the estimate against the
  // budget, when the run would pass the budget and --i-know-it-is-big was not
  // given. Call after every other option check, before any work.
  void check_budget(const RunEstimate& e) const;

  bool big_ok = false;  // --i-know-it-is-big
  uint64_t seed = 42;
  bool plots = true;
  std::string plots_dir;  // default: <build>/plots/<chapter>; `./book plots` passes plots/<chapter>
  const std::string& chapter() const { return chapter_; }
  // Whether `flag` was on the command line (after parse()): an option whose
  // default adapts to another one is clamped only when not given.
  bool given(const std::string& flag) const { return given_.count(flag) > 0; }

 private:
  struct Option {
    std::string flag, help, default_text;
    bool takes_value = true;
    std::function<void(const std::string&)> set;
    std::string limits = {};  // what a value may be, for --help: "an integer in [1, 4096]"
  };
  void print_help() const;
  std::string chapter_, summary_, program_;
  std::vector<Option> options_;
  std::set<std::string> given_;
};

// Throws UsageError unless `dir` is a folder this program can write into, or
// one it can create (its nearest existing parent is a writable folder), on a
// disk with at least `min_free_bytes` free. `flag` names the option in the
// message. Nothing is created: output folders are checked before any work,
// so a bad one never costs a training run, and a run refused for another
// option leaves no empty folder behind.
void require_writable_dir(const std::string& flag, const std::string& dir, double min_free_bytes = 0);

// Throws UsageError when the figure folder `dir` holds something named
// *.png that is not a file (a folder, a pipe): a figure written under that
// name would fail after the run.
void require_no_folder_named_png(const std::string& dir);

// A chapter's figures take up to 1.2 MiB (chapter 7); a figure folder must
// have this much free space before any work.
inline constexpr double kFiguresFreeBytes = 4.0 * 1024 * 1024;

// Runs a chapter's body with the errors a reader can meet turned into
// one-line messages:
//   UsageError / std::invalid_argument -> "<chapter>: <message>", status 2
//   NotImplemented                     -> which function to write and its hint, status 3
//   std::bad_alloc                     -> "<chapter>: error: out of memory ...", status 1
//   any other std::exception           -> "<chapter>: error: <message>", status 1
int run_program(const std::string& chapter, const std::function<void()>& body);

}  // namespace sa
