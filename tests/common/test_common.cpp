// Tests of the common library: shapes, tensors, printing, the command line,
// tokenizing, parameter initialisation and the not-implemented message.
#include "sa/cli.hpp"
#include "sa/exercise.hpp"
#include "sa/measure.hpp"
#include "sa/nn.hpp"
#include "sa/paths.hpp"
#include "support/scratch.hpp"
#include "sa/print.hpp"
#include "sa/printable.hpp"
#include "sa/tensor.hpp"
#include "sa/text.hpp"

#include "support/catch2_compat.hpp"
#include <fmt/core.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <new>
#include <sstream>
#include <thread>
#include <chrono>
#include <iterator>
#include <limits>
#include <vector>

using namespace sa;

TEST_CASE("shape_str prints shapes the way PyTorch prints torch.Size", "[common][tensor]") {
  CHECK(shape_str(Shape{1, 4, 6, 16}) == "(1, 4, 6, 16)");
  CHECK(shape_str(Shape{6}) == "(6,)");
  CHECK(shape_str(Shape{}) == "()");
  CHECK(shape_str(Matrix(6, 64)) == "(6, 64)");
  CHECK(numel(Shape{1, 4, 6, 16}) == 384);
}

TEST_CASE("Tensor4 views share storage: splitting heads never copies", "[common][tensor]") {
  Tensor4 t(2, 3, 4, 5);
  for (int64_t i = 0; i < t.size(); ++i) t.data()[i] = float(i);
  // Element (b, h, s, d) sits at ((b*H + h)*S + s)*D + d, row-major.
  CHECK(t(1, 2, 3, 4) == float(t.size() - 1));
  CHECK(t(0, 1, 0, 0) == 20.0f);
  auto v = t.view(1, 2);
  CHECK(v.rows() == 4);
  CHECK(v.cols() == 5);
  CHECK(v(0, 0) == t(1, 2, 0, 0));
  CHECK(v(3, 1) == t(1, 2, 3, 1));
  v(2, 2) = -7.0f;  // writes through to the tensor
  CHECK(t(1, 2, 2, 2) == -7.0f);
  CHECK(v.data() == t.data() + (1 * 3 + 2) * 4 * 5);
  CHECK_THROWS_AS(Tensor4(1, -1, 2, 2), std::invalid_argument);
}

TEST_CASE("all_finite: false for any inf or NaN wherever it is, true for huge finite values", "[common][tensor]") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  Matrix m = Matrix::Constant(5, 37, std::numeric_limits<float>::max());  // x * 0 is 0 even for the largest float
  m(0, 0) = -std::numeric_limits<float>::max();
  m(1, 1) = std::numeric_limits<float>::denorm_min();
  CHECK(all_finite(m));
  CHECK(all_finite(Matrix(0, 3)));
  // Every position: the vectorised body and the scalar tail of the sum.
  for (int64_t i = 0; i < m.size(); ++i)
    for (const float bad : {inf, -inf, nan}) {
      Matrix b = m;
      b.data()[i] = bad;
      INFO("entry " << i << " = " << bad);
      CHECK_FALSE(all_finite(b));
      CHECK(all_finite(b) == b.allFinite());
    }
  // A block sees only its own entries.
  Matrix b = Matrix::Zero(4, 4);
  b(3, 3) = nan;
  CHECK(all_finite(b.topLeftCorner(3, 3)));
  CHECK_FALSE(all_finite(b.bottomRows(1)));
}

TEST_CASE("format_matrix: fixed precision, aligned, summarised like torch", "[common][print]") {
  Matrix m(2, 2);
  m << 1.0f, -0.5f, 0.25f, 2.0f;
  CHECK(format_matrix(m, {.indent = 0}) == "[[ 1.0000, -0.5000],\n [ 0.2500,  2.0000]]\n");
  Matrix big = Matrix::Zero(20, 20);
  const std::string s = format_matrix(big, {.indent = 0});
  CHECK(s.find("...") != std::string::npos);
  // 3 + 1 + 3 printed rows.
  CHECK(std::count(s.begin(), s.end(), '\n') == 7);
  Matrix special(1, 3);
  special << -std::numeric_limits<float>::infinity(), std::nanf(""), 0.0f;
  CHECK(format_matrix(special, {.indent = 0}) == "[[  -inf,    nan, 0.0000]]\n");
  Matrix tiny(1, 2);
  tiny << 1e-6f, 2e-6f;  // would print as 0.0000 in fixed point
  CHECK(format_matrix(tiny, {.indent = 0}) == "[[1.0000e-06, 2.0000e-06]]\n");
  Matrix huge(1, 2);
  huge << 1e7f, 1.0f;
  CHECK(format_matrix(huge, {.indent = 0}).find("1.0000e+07") != std::string::npos);
  Matrix mixed(1, 2);
  mixed << 1e-5f, 2.0f;  // a wide range alone stays in fixed point
  CHECK(format_matrix(mixed, {.indent = 0}) == "[[0.0000, 2.0000]]\n");
}

TEST_CASE("format_labelled: whole up to 16 columns and 32 rows, then the first and last around '...'",
          "[common][print]") {
  Matrix m(2, 2);
  m << 1.0f, -0.5f, 0.25f, 2.0f;
  CHECK(format_labelled(m, {"the", "cat"}, {"the", "cat"}, {.precision = 2, .indent = 0}) ==
        "        the     cat\n"
        "the    1.00   -0.50\n"
        "cat    0.25    2.00\n");
  // 64 words: 12 + 1 + 12 rows under the header, 6 + 1 + 6 columns.
  std::vector<std::string> words;
  for (int i = 0; i < 64; ++i) words.push_back("w" + std::to_string(i));
  Matrix big(64, 64);
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 64; ++c) big(r, c) = float(r * 100 + c);
  const std::string s = format_labelled(big, words, words, {.precision = 0, .indent = 0});
  std::vector<std::string> lines;
  for (size_t from = 0, to; (to = s.find('\n', from)) != std::string::npos; from = to + 1)
    lines.push_back(s.substr(from, to - from));
  REQUIRE(lines.size() == 26);
  CHECK(lines[0] == "         w0      w1      w2      w3      w4      w5     ...     w58     w59     w60     w61     w62"
                    "     w63");
  CHECK(lines[1] == " w0       0       1       2       3       4       5     ...      58      59      60      61      62"
                    "      63");
  CHECK(lines[12].starts_with("w11    1100    1101"));
  CHECK(lines[13] == "...     ...     ...     ...     ...     ...     ...     ...     ...     ...     ...     ...     ..."
                     "     ...");
  CHECK(lines[14].starts_with("w52    5200    5201"));
  CHECK(lines[25].ends_with("6362    6363"));
  // 16 columns and 32 rows are shown whole.
  const std::string whole = format_labelled(Matrix::Zero(32, 16), {}, {}, {.precision = 0, .indent = 0});
  CHECK(whole.find("...") == std::string::npos);
  CHECK(std::count(whole.begin(), whole.end(), '\n') == 33);
}

namespace {
// argv from a list of strings, with the program name first.
struct Args {
  std::vector<std::string> words;
  std::vector<char*> ptrs;
  explicit Args(std::vector<std::string> w) : words(std::move(w)) {
    words.insert(words.begin(), "prog");
    for (auto& s : words) ptrs.push_back(s.data());
  }
  int argc() { return int(ptrs.size()); }
  char** argv() { return ptrs.data(); }
};

std::string usage_error(std::vector<std::string> words) {
  Cli cli("00-test", "test");
  int64_t d_model = 64;
  double temperature = 1.0;
  cli.add("--d-model", &d_model, "width");
  cli.add("--temperature", &temperature, "temperature", RealRange{.min = 0.0, .min_open = true});
  Args a(std::move(words));
  try {
    cli.parse(a.argc(), a.argv());
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("count_of: one is singular, every other count plural", "[common][print]") {
  CHECK(count_of(1, "token") == "1 token");
  CHECK(count_of(0, "token") == "0 tokens");
  CHECK(count_of(6, "token") == "6 tokens");
  CHECK(count_of(1, "query", "queries") == "1 query");
  CHECK(count_of(2, "query", "queries") == "2 queries");
}

TEST_CASE("timing_str: three significant digits, in ms below a second", "[common][print]") {
  CHECK(timing_str(0.000412) == "0.412 ms");
  CHECK(timing_str(0.00268) == "2.68 ms");
  CHECK(timing_str(0.0142) == "14.2 ms");
  CHECK(timing_str(0.816) == "816 ms");
  CHECK(timing_str(1.85) == "1.85 s");
  CHECK(timing_str(42.37) == "42.4 s");
  CHECK(timing_str(240.2) == "240 s");
}

TEST_CASE("measure::median: the middle value, the mean of the middle two for an even count, in any order",
          "[common][measure]") {
  CHECK(measure::median(std::vector<double>{3.0}) == 3.0);
  CHECK(measure::median(std::vector<double>{9.0, 1.0, 4.0}) == 4.0);
  CHECK(measure::median(std::vector<double>{10.0, 1.0, 4.0, 2.0}) == 3.0);
  // Wall and CPU times each on their own: (1, 9) and (3, 5) give wall 2, CPU 7.
  const measure::Times t = measure::median(std::vector<measure::Times>{{1.0, 9.0}, {3.0, 5.0}});
  CHECK(t.wall == 2.0);
  CHECK(t.cpu == 7.0);
}

// median_ms took the upper of the middle two of an even count, where every
// other median of the benchmarks takes their mean. Four runs of 20, 40, 60
// and 80 ms: 50 ms, not 60 (a run sleeps at least its time, and up to 7 ms
// more on a busy machine still reads as 50, not 60).
TEST_CASE("measure::median_ms: of an even count of runs, the mean of the middle two", "[common][measure]") {
  int run = 0;
  const double ms = measure::median_ms(
      [&] { std::this_thread::sleep_for(std::chrono::milliseconds(20 * ++run)); }, 0.0, 4, 4);
  CHECK(run == 4);
  CHECK(ms > 49.0);
  CHECK(ms < 57.0);
}

TEST_CASE("rounding: a difference within its bound prints as the bound, one above it with its digits",
          "[common][print]") {
  // Below the bound the digits are not printed: they depend on the CPU.
  CHECK(rounding(2.6e-8, 1e-6) == "below 1e-6");
  CHECK(rounding(0.0, 1e-6) == "below 1e-6");
  CHECK(rounding(-9.9e-7, 1e-6) == "below 1e-6");
  CHECK(rounding(1e-6, 1e-6) == "below 1e-6");
  CHECK(rounding(3e-5, 1e-4) == "below 1e-4");
  CHECK(rounding(2e-5, 2.5e-5) == "below 2.5e-05");
  // Above it the difference is no rounding, and shows.
  CHECK(rounding(3.2e-3, 1e-6) == "3.2e-03, above the rounding bound 1e-6");
  CHECK(rounding(std::nan(""), 1e-6).find("above the rounding bound") != std::string::npos);
  // The bound grows with the size of the values compared.
  CHECK(rounding_bound(0.5) == 1e-6);
  CHECK(rounding_bound(1.0) == 1e-6);
  CHECK(std::abs(rounding_bound(8.3) - 1e-5) < 1e-12);
  CHECK(std::abs(rounding_bound(64.0) - 1e-4) < 1e-12);
  CHECK(std::abs(rounding_bound(3270.0) - 1e-2) < 1e-12);
  CHECK(rounding_bound(std::nan("")) == 1e-6);
}

TEST_CASE("bound_above and bound_below round a stated bound outward", "[common][print]") {
  // "within 0.5" for a worst case of 0.53 would be false: 0.6 is the bound.
  CHECK(fmt::format("{:.1f}", bound_above(0.53, 1)) == "0.6");
  CHECK(fmt::format("{:.1f}", bound_below(0.53, 1)) == "0.5");
  CHECK(fmt::format("{:.2f}", bound_above(1.155, 2)) == "1.16");
  CHECK(fmt::format("{:.2f}", bound_below(0.909, 2)) == "0.90");
  // A number that is already a bound at those digits stays as it is.
  CHECK(fmt::format("{:.1f}", bound_above(0.5, 1)) == "0.5");
  CHECK(fmt::format("{:.3f}", bound_below(0.407, 3)) == "0.407");
  CHECK(fmt::format("{:.1f}", bound_above(-0.53, 1)) == "-0.5");
  CHECK(fmt::format("{:.1f}", bound_below(-0.53, 1)) == "-0.6");
}

TEST_CASE("Cli: values are parsed and checked", "[common][cli]") {
  Cli cli("00-test", "test");
  int64_t d_model = 64;
  double p = 0.1;
  std::string text = "x";
  cli.add("--d-model", &d_model, "width");
  cli.add("--p", &p, "dropout", RealRange{0.0, 1.0});
  cli.add("--text", &text, "text");
  Args a({"--d-model", "32", "--p=0.5", "--text", "the cat", "--seed", "7", "--no-plots"});
  cli.parse(a.argc(), a.argv());
  CHECK(d_model == 32);
  CHECK(p == 0.5);
  CHECK(text == "the cat");
  CHECK(cli.seed == 7);
  CHECK_FALSE(cli.plots);
}

TEST_CASE("Cli: an optional real stays empty unless given, and is checked like any number", "[common][cli]") {
  // Chapter 7's --dropout: each task has its own default when it is not given.
  const auto parse = [](std::vector<std::string> words) {
    Cli cli("00-test", "test");
    std::optional<double> dropout;
    cli.add("--dropout", &dropout, "dropout", RealRange{0.0, 1.0, false, true}, "0 or 0.1");
    Args a(std::move(words));
    cli.parse(a.argc(), a.argv());
    return dropout;
  };
  CHECK_FALSE(parse({}).has_value());
  CHECK(parse({"--dropout", "0"}) == 0.0);
  CHECK(parse({"--dropout", "0.25"}) == 0.25);
  for (const char* bad : {"1", "-0.1", "nan", "0x1", "1e9"}) {
    INFO("--dropout " << bad);
    try {
      parse({"--dropout", bad});
      FAIL("accepted");
    } catch (const UsageError& e) {
      CHECK(std::string(e.what()) == "--dropout must be a number in [0, 1), got '" + std::string(bad) + "'");
    }
  }
  // Below 1 as a double, but 1 in float32, the precision dropout draws in.
  try {
    parse({"--dropout", "0.99999999999"});
    FAIL("accepted");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()) == "--dropout must be a number in [0, 1), got '0.99999999999', which is 1 in float32");
  }
  CHECK(parse({"--dropout", "0.9999999"}) == 0.9999999);  // 0.99999988 in float32: still below 1

  // With the end included ([0, 1], as chapter 6's --p), 1 is allowed: the
  // message says that the value is 1 where the program computes, not that
  // it is out of range.
  const auto parse_p = [](std::vector<std::string> words) {
    Cli cli("00-test", "test");
    double p = 0.1;
    cli.add("--p", &p, "p", RealRange{0.0, 1.0});
    Args a(std::move(words));
    cli.parse(a.argc(), a.argv());
    return p;
  };
  CHECK(parse_p({"--p", "1"}) == 1.0);
  CHECK_THROWS_WITH(parse_p({"--p", "0.99999999999"}),
                    "--p '0.99999999999' is 1 in float32, the precision the programs compute in, though it would be "
                    "printed as given: give 1, or a value float32 keeps apart from it (about 7 significant digits)");
}

TEST_CASE("Cli: each bad option is refused with one line naming it", "[common][cli]") {
  CHECK(usage_error({"--d-model", "0"}) == "--d-model must be an integer >= 1, got '0'");
  CHECK(usage_error({"--d-model", "abc"}) == "--d-model must be an integer >= 1, got 'abc'");
  CHECK(usage_error({"--d-model", "-3"}) == "--d-model must be an integer >= 1, got '-3'");
  CHECK(usage_error({"--d-model", "12x"}) == "--d-model must be an integer >= 1, got '12x'");
  CHECK(usage_error({"--d-model"}) == "--d-model needs a value (see --help)");
  CHECK(usage_error({"--temperature", "0"}) == "--temperature must be a number > 0, got '0'");
  CHECK(usage_error({"--temperature", "nan"}) == "--temperature must be a number > 0, got 'nan'");
  CHECK(usage_error({"--bogus"}) == "unknown option '--bogus' (see --help)");
  CHECK(usage_error({"--seed", "-1"}) == "--seed must be a non-negative integer, got '-1'");
  CHECK(usage_error({"--seed", "-0"}) == "--seed takes digits only, without a sign, got '-0'");
  CHECK(usage_error({"--seed", "+5"}) == "--seed takes digits only, without a sign, got '+5'");
  CHECK(usage_error({"--seed", "18446744073709551616"}) ==
        "--seed must be at most 18446744073709551615 (2^64 - 1, torch.manual_seed's largest), got "
        "'18446744073709551616'");
  CHECK(usage_error({"--seed", "18446744073709551615"}).empty());
  CHECK(usage_error({"--no-plots=1"}) == "--no-plots takes no value, got '1'");
  CHECK(usage_error({"--d-model", "8"}).empty());
}

TEST_CASE("Cli: a flag twice, a missing value, hex and padded numbers, and bad figure folders are refused",
          "[common][cli]") {
  CHECK(usage_error({"--d-model", "8", "--d-model", "16"}) == "--d-model is given twice: give each option once");
  CHECK(usage_error({"--no-plots", "--no-plots"}) == "--no-plots is given twice: give each option once");
  CHECK(usage_error({"--d-model", "--no-plots"}) ==
        "--d-model needs a value, but the next word is the option '--no-plots' (--d-model=VALUE passes a value that "
        "starts with --)");
  CHECK(usage_error({"--d-model", "0x10"}) == "--d-model must be an integer >= 1, got '0x10'");
  CHECK(usage_error({"--temperature", "0x1p3"}) == "--temperature must be a number > 0, got '0x1p3'");
  CHECK(usage_error({"--temperature", " 2"}) == "--temperature must be a number > 0, got ' 2'");
  CHECK(usage_error({"--temperature", "inf"}) == "--temperature must be a number > 0, got 'inf'");
  CHECK(usage_error({"--temperature", "1e-3"}).empty());
  // float32 could not hold these: 1e-300 would become 0, 1e39 infinity.
  CHECK(usage_error({"--temperature", "1e-300"}) ==
        "--temperature must be at least 1.2e-38 in size (float32's smallest normal number), got '1e-300'");
  CHECK(usage_error({"--temperature", "1e39"}) == "--temperature must be a number > 0, got '1e39', which is inf in float32");
  CHECK(usage_error({"--temperature", ".5"}).empty());
  CHECK(usage_error({"--plots-dir", ""}) == "--plots-dir is empty: give a folder");
  // A regular file where the folder should be, and a folder under it.
  const std::string file = (binary_dir() / "tests" / "a-file-not-a-folder").string();
  std::ofstream(file) << "x";
  CHECK(usage_error({"--plots-dir", file}) == "--plots-dir '" + file + "' is not a folder");
  CHECK(usage_error({"--plots-dir", file + "/sub"}).rfind("--plots-dir '" + file + "/sub' cannot be created", 0) == 0);
  // --no-plots draws nothing: a folder for the figures too is a contradiction.
  CHECK(usage_error({"--no-plots", "--plots-dir", file}) ==
        "--plots-dir names where figures go, and --no-plots draws none: give one of the two");
  CHECK(usage_error({"--no-plots"}).empty());
  // A part the system cannot look at, taken for a missing folder to create
  // (every figure then failed, after the steps; a checkpoint after its
  // training): a loop of symbolic links, a name longer than a folder entry.
  namespace fs = std::filesystem;
  const fs::path loop = binary_dir() / "tests" / "scratch" / "loop-a";
  fs::create_directories(loop.parent_path());
  fs::remove(loop);
  fs::remove(loop.parent_path() / "loop-b");
  fs::create_symlink("loop-b", loop);
  fs::create_symlink("loop-a", loop.parent_path() / "loop-b");
  CHECK(usage_error({"--plots-dir", (loop / "figures").string()}) ==
        "--plots-dir '" + (loop / "figures").string() + "': Too many levels of symbolic links");
  const std::string too_long = (binary_dir() / "tests" / std::string(300, 'x') / "figures").string();
  CHECK(usage_error({"--plots-dir", too_long}) == "--plots-dir '" + too_long + "': File name too long");
}

TEST_CASE("Cli: a figure folder is probed but not created, so a run refused for another option leaves none behind",
          "[common][cli]") {
  namespace fs = std::filesystem;
  const fs::path parent = binary_dir() / "tests" / "scratch" / "probe-parent";
  fs::remove_all(parent);
  fs::create_directories(parent);
  const fs::path wanted = parent / "new" / "deeper";
  CHECK(usage_error({"--plots-dir", wanted.string()}).empty());
  CHECK_FALSE(fs::exists(parent / "new"));
  CHECK(fs::is_empty(parent));  // and the write probe is gone
  CHECK(usage_error({"--plots-dir", (parent / "new" / "").string()}).empty());  // a trailing slash
  CHECK_FALSE(fs::exists(parent / "new"));
  // An existing folder is probed in place.
  CHECK(usage_error({"--plots-dir", parent.string()}).empty());
  CHECK(fs::is_empty(parent));
  // A folder under a figure's name (NAME.png) would fail that figure after
  // the run: refused now. A file of that name is an old figure, and stays.
  fs::create_directories(parent / "scores.png");
  CHECK(usage_error({"--plots-dir", parent.string()}) ==
        "--plots-dir: '" + (parent / "scores.png").string() +
            "' is a folder, where a figure NAME.png would be written: move it away, or give another --plots-dir");
  fs::remove(parent / "scores.png");
  std::ofstream(parent / "scores.png") << "an old figure";
  CHECK(usage_error({"--plots-dir", parent.string()}).empty());
  fs::remove(parent / "scores.png");
  // A folder under /proc cannot be made: said before any work, as before.
  CHECK(usage_error({"--plots-dir", "/proc/sa-figures"}).rfind("--plots-dir '/proc/sa-figures' cannot be created", 0) == 0);
  // ... and not as if /proc were missing (creating a file there is ENOENT).
  CHECK(usage_error({"--plots-dir", "/proc/sa-figures"}) ==
        "--plots-dir '/proc/sa-figures' cannot be created: '/proc' is not writable: it takes no new files");
}

TEST_CASE("Cli: a run whose estimate passes the budget is refused with one line, unless --i-know-it-is-big",
          "[common][cli]") {
  const auto refusal = [](std::vector<std::string> words, const RunEstimate& e) {
    Cli cli("00-test", "test");
    Args a(std::move(words));
    cli.parse(a.argc(), a.argv());
    try {
      cli.check_budget(e);
    } catch (const UsageError& err) {
      return std::string(err.what());
    }
    return std::string();
  };
  CHECK(refusal({}, {599, 1e6, "--n 1"}).empty());
  CHECK(refusal({}, {1500, 1e6, "--n 2 --m 3"}) ==
        "--n 2 --m 3 would take about 25 min on one core; the budget of a run is 10 min (--i-know-it-is-big runs it "
        "anyway)");
  CHECK(refusal({}, {3 * 3600, 1e6, "--n 4"}).find("about 3.0 h on one core") != std::string::npos);
  // Memory is checked first: it ends a run with std::bad_alloc (or the
  // kernel's killer) where time only ends the reader's patience.
  CHECK(refusal({}, {1500, 1e12, "--n 5"}).rfind("--n 5 would need about 931.3 GiB of memory; the budget of a run is ",
                                                 0) == 0);
  CHECK(refusal({"--i-know-it-is-big"}, {1e6, 1e12, "--n 6"}).empty());
  CHECK(budget_bytes() <= kBudgetBytes);
  // The tests' smaller budget (tests/inputs/fuzz_options.sh).
  ::setenv("SA_BUDGET_SECONDS", "5", 1);
  CHECK(refusal({}, {6, 1e6, "--n 7"}) ==
        "--n 7 would take about 6 s on one core; the budget of a run is 5 s (--i-know-it-is-big runs it anyway)");
  ::setenv("SA_BUDGET_SECONDS", "five", 1);
  CHECK_THROWS_WITH(budget_seconds(), "SA_BUDGET_SECONDS must be a positive number of seconds, got 'five'");
  ::unsetenv("SA_BUDGET_SECONDS");
  CHECK(budget_seconds() == kBudgetSeconds);
}

TEST_CASE("Cli: an empty text is refused, not taken as the default, and --help takes no value", "[common][cli]") {
  const auto refused = [](std::vector<std::string> words) {
    Cli cli("00-test", "test");
    std::string text = "x", corpus;  // corpus: empty means "the default file", decided after parsing
    cli.add("--text", &text, "text");
    cli.add("--corpus", &corpus, "file", "a file");
    Args a(std::move(words));
    try {
      cli.parse(a.argc(), a.argv());
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(refused({"--text", ""}) == "--text is empty: give a value");
  CHECK(refused({"--text="}) == "--text is empty: give a value");
  CHECK(refused({"--corpus", ""}) == "--corpus is empty: give a file");
  CHECK(refused({"--text", " "}) == "accepted");  // not empty: the chapter's tokenizer says it has no words
  CHECK(refused({"--help=1"}) == "--help takes no value, got '1'");
}

TEST_CASE("Cli: a program without figures takes no --no-plots or --plots-dir", "[common][cli]") {
  Cli cli("00-test", "test");
  cli.without_figures();
  Args a({"--plots-dir", "/tmp"});
  CHECK_THROWS_WITH(cli.parse(a.argc(), a.argv()), "unknown option '--plots-dir' (see --help)");
  CHECK_FALSE(cli.plots);
}

TEST_CASE("run_program turns errors into exit statuses", "[common][cli]") {
  CHECK(run_program("00-test", [] {}) == 0);
  CHECK(run_program("00-test", [] { throw UsageError("bad"); }) == 2);
  CHECK(run_program("00-test", [] { throw std::invalid_argument("bad"); }) == 2);
  CHECK(run_program("00-test", [] { SA_TODO("f", "h"); }) == 3);
  CHECK(run_program("00-test", [] { throw std::runtime_error("x"); }) == 1);
  CHECK(run_program("00-test", [] { throw std::bad_alloc(); }) == 1);  // "out of memory", not "std::bad_alloc"
}

// With stdout a file (fully buffered) and stderr unbuffered, the error of a
// program that had printed came out before the end of its own output, in
// the middle of a line ("... so eac04-multi-head: error: ..."). Both go to
// one file here, as `prog >log 2>&1` does.
TEST_CASE("run_program's error comes after everything the program printed, also into a file", "[common][cli]") {
  namespace fs = std::filesystem;
  const fs::path log = sa::test::scratch_dir("sa_test_common") / "run_program.log";
  fs::create_directories(log.parent_path());
  for (const bool usage : {false, true}) {
    std::fflush(stdout);
    const pid_t child = ::fork();
    if (child == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::setvbuf(stdout, nullptr, _IOFBF, 1 << 16);  // as for a file from the start
      ::_exit(run_program("00-test", [&] {
        fmt::print("step 1: printed before the error\n");
        if (usage) throw std::invalid_argument("bad input found late");
        throw std::runtime_error("failed late");
      }));
    }
    REQUIRE(child > 0);
    int status = 0;
    ::waitpid(child, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == (usage ? 2 : 1));
    std::ifstream in(log);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(text == (usage ? "step 1: printed before the error\n00-test: bad input found late\n"
                         : "step 1: printed before the error\n00-test: error: failed late\n"));
  }
}

// A temporary file being written (a checkpoint's, a figure's) is removed
// when Ctrl-C, a kill or a closed terminal ends the program; a signal the
// program ignores stays ignored, and the dispositions come back when the
// last guard goes. Each case in a child process of its own.
TEST_CASE("RemovedOnSignal: a signal that ends the program removes the file first", "[common]") {
  namespace fs = std::filesystem;
  const fs::path dir = sa::test::scratch_dir("sa_test_signal");
  const fs::path file = dir / fmt::format(".x.tmp-{}", ::getpid());
  const auto run = [&](int signal, bool ignored) {
    std::ofstream(file) << "partial";
    const pid_t child = ::fork();
    if (child == 0) {
      std::signal(signal, ignored ? SIG_IGN : SIG_DFL);  // the program's, not the suite's handler
      std::signal(SIGINT, SIG_DFL);
      {
        const RemovedOnSignal a(file.string()), b((dir / "other").string());
        std::raise(signal);
      }
      struct sigaction now {}, interrupt {};
      ::sigaction(signal, nullptr, &now);
      ::sigaction(SIGINT, nullptr, &interrupt);
      const bool restored = now.sa_handler == (ignored ? SIG_IGN : SIG_DFL) && interrupt.sa_handler == SIG_DFL;
      ::_exit(restored ? 0 : 3);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    return status;
  };
  int status = run(SIGTERM, false);
  CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM));
  CHECK_FALSE(fs::exists(file));
  status = run(SIGINT, false);
  CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGINT));
  CHECK_FALSE(fs::exists(file));
  status = run(SIGHUP, true);  // under nohup: the program goes on, its file too
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  CHECK(fs::exists(file));
  fs::remove_all(dir);
}

TEST_CASE("tokenize and Vocabulary: first-appearance ids", "[common][text]") {
  const auto tokens = tokenize("The cat sat on  the\tmat");
  CHECK(tokens == std::vector<std::string>{"the", "cat", "sat", "on", "the", "mat"});
  const Vocabulary v(tokens);
  CHECK(v.size() == 5);
  CHECK(v.ids(tokens) == std::vector<int64_t>{0, 1, 2, 3, 0, 4});
  CHECK(v.word(4) == "mat");
  CHECK_THROWS_AS(v.id("dog"), UsageError);
  CHECK_THROWS_AS(tokenize("   "), UsageError);
}

TEST_CASE("tokenize_text: at most kMaxTextTokens words, refused with one line before any work", "[common][text]") {
  std::string words;
  for (std::size_t i = 0; i < kMaxTextTokens; ++i) words += "w ";
  CHECK(tokenize_text(words).size() == kMaxTextTokens);
  CHECK_THROWS_WITH(tokenize_text(words + "one-too-many"),
                    "--text has 65 words; at most 64 (every step prints a matrix per pair of words)");
  CHECK_THROWS_AS(tokenize_text("   "), UsageError);
}

TEST_CASE("tokenize_text: a --text as readers have it: line ends and a byte-order mark are fine, bytes that are not "
          "UTF-8 and other control characters are refused",
          "[common][text]") {
  // CRLF and tabs separate words; a byte-order mark in front is dropped, so
  // the first word is "the" and its second appearance shares its id.
  CHECK(tokenize_text("the cat\r\nsat\ton") == std::vector<std::string>{"the", "cat", "sat", "on"});
  CHECK(tokenize_text("\xEF\xBB\xBFthe cat the") == std::vector<std::string>{"the", "cat", "the"});
  CHECK(tokenize_text("caf\xC3\xA9 \xC3\x89t\xC3\xA9") == std::vector<std::string>{"caf\xC3\xA9", "\xC3\xA9t\xC3\xA9"});
  CHECK_THROWS_WITH(tokenize_text("the \xFF cat"), "--text: byte 4 (0xff) is not UTF-8; give the text in UTF-8");
  CHECK_THROWS_WITH(tokenize_text("\xEF\xBB\xBFthe \xFF cat"),  // (counted from the mark)
                    "--text: byte 7 (0xff) is not UTF-8; give the text in UTF-8");
  CHECK_THROWS_WITH(tokenize_text("the caf\xC3"), "--text: byte 7 (0xc3) is not UTF-8; give the text in UTF-8");
  CHECK_THROWS_WITH(tokenize_text("the \x01 cat"),
                    "--text: control character \\x01 at byte 4; words are separated by spaces, tabs or line ends");
  CHECK_THROWS_WITH(tokenize_text("the\x1b[31m cat"),
                    "--text: control character \\x1b at byte 3; words are separated by spaces, tabs or line ends");
}

// Every step prints its matrices with the words as labels, and the figures
// size their margins from them: a word of 1,000 letters printed lines of
// 3,000 characters, then failed drawing (cairo refused the canvas) after
// every step had run. Characters are counted, not bytes.
TEST_CASE("tokenize: a word of more than kMaxWordChars characters is refused with one line", "[common][text]") {
  std::string accented;
  for (std::size_t i = 0; i < kMaxWordChars; ++i) accented += "\xC3\xA9";  // 64 é: 128 bytes
  CHECK(tokenize_text("the " + accented).size() == 2);
  CHECK_THROWS_WITH(tokenize_text("the " + std::string(1000, 'w') + " cat"),
                    "the word 'wwwwwwwwwwwwwwwwwwwwwwww...' has 1000 characters; at most 64 (words label the rows and "
                    "columns of every matrix and figure)");
  CHECK_THROWS_AS(tokenize(accented + "\xC3\xA9"), UsageError);
}

TEST_CASE("make_linear draws within nn.Linear's bound, in (d_in, d_out) layout", "[common][nn]") {
  Generator gen(0);
  const Linear l = make_linear(gen, 16, 3);
  REQUIRE(l.W.rows() == 16);
  REQUIRE(l.W.cols() == 3);
  REQUIRE(l.b.has_value());
  // kaiming_uniform with a = sqrt(5) gives the bound 1/sqrt(fan_in) = 0.25.
  CHECK(l.W.cwiseAbs().maxCoeff() <= 0.25f);
  CHECK(l.W.cwiseAbs().maxCoeff() > 0.15f);
  CHECK(l.b->cwiseAbs().maxCoeff() <= 0.25f);
  CHECK(l.parameter_count() == 16 * 3 + 3);
  CHECK_FALSE(make_linear(gen, 4, 4, false).b.has_value());
}

TEST_CASE("NotImplemented names the function and the file to edit", "[common][exercise]") {
  try {
    not_implemented("linear", "/home/reader/book/exercises/01-qkv-projection/qkv.cpp", "X * W");
    FAIL("not_implemented returned");
  } catch (const NotImplemented& e) {
    CHECK(std::string(e.what()) == "not implemented yet: linear (edit exercises/01-qkv-projection/qkv.cpp)");
    CHECK(e.function() == "linear");
    CHECK(e.hint() == "X * W");
  }
}

TEST_CASE("shell_quoted: any text comes back from /bin/sh as the one word it was", "[common][paths]") {
  CHECK(shell_quoted("build/data") == "'build/data'");
  CHECK(shell_quoted("it's") == "'it'\\''s'");
  for (const std::string text : {"my book/build/data", "it's $HOME `x` \"y\" \\", ""}) {
    std::FILE* sh = ::popen(("printf %s " + shell_quoted(text)).c_str(), "r");
    REQUIRE(sh != nullptr);
    std::string back;
    for (int c; (c = std::fgetc(sh)) != EOF;) back += char(c);
    ::pclose(sh);
    CHECK(back == text);
  }
}

TEST_CASE("shown_path: a path as the reader types it from the folder the program runs in", "[common][paths]") {
  namespace fs = std::filesystem;
  const fs::path was = fs::current_path();
  const fs::path root = sa::test::scratch_dir("sa_shown_path_test");
  fs::create_directories(root / "build" / "plots");
  const std::string figure = (root / "build" / "plots" / "a.png").string();
  fs::current_path(root);  // as ./book runs from the repository's root
  CHECK(shown_path(figure) == "build/plots/a.png");
  fs::current_path(root / "build");  // a reader who ran ../book from build/
  CHECK(shown_path(figure) == "plots/a.png");
  fs::current_path(root / "build" / "plots");
  // A path outside the folder stays whole: "../x" would be a guess at where it is.
  CHECK(shown_path((root / "x.png").string()) == (root / "x.png").string());
  // A relative path is the reader's own, tidied.
  CHECK(shown_path("figs/../out/./a.png") == "out/a.png");
  fs::current_path(was);
  fs::remove_all(root);
}

TEST_CASE("openblas_kernels: the peer's kernels, and the environment's OPENBLAS_CORETYPE only as far as it is true",
          "[common][measure]") {
  CHECK(measure::openblas_kernels("-", "-").empty());
  CHECK(measure::openblas_kernels("Haswell", "-") == ", its Haswell kernels");
  // blas.py asked for SkylakeX over the environment's Haswell (an AVX-512 CPU).
  CHECK(measure::openblas_kernels("SkylakeX", "Haswell") ==
        ", its SkylakeX kernels (this environment sets OPENBLAS_CORETYPE=Haswell; the benchmark asked for the "
        "SkylakeX kernels over it, the AVX-512 ones this CPU has, which are faster)");
  // An AVX2 CPU whose environment asks for SkylakeX: OpenBLAS falls back.
  CHECK(measure::openblas_kernels("Haswell", "SkylakeX") ==
        ", its Haswell kernels (this environment sets OPENBLAS_CORETYPE=SkylakeX; OpenBLAS ran its Haswell "
        "kernels instead)");
}

TEST_CASE("share_of_peak: a share of the GEMM peak, and none above it, where the peak's timing was disturbed",
          "[common][measure]") {
  CHECK(measure::share_of_peak(41.8, 95.2, 0) == "44% of this core's float GEMM peak");
  CHECK(measure::share_of_peak(163.0, 234.2, 1) == "69.6% of this core's float GEMM peak");
  CHECK(measure::share_of_peak(95.2, 95.2, 0) == "100% of this core's float GEMM peak");
  // A step faster than the peak (chapter 7's benchmark printed "104%").
  CHECK(measure::share_of_peak(99.0, 95.2, 0) == "n/a (faster than the peak measured: that measurement was disturbed)");
}

TEST_CASE("cpu_name: the CPU /proc/cpuinfo names, and an emulator where it describes another instruction set",
          "[common][measure]") {
  using measure::Isa;
  const std::string x86 =
      "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\n"
      "flags\t\t: fpu sse avx2\n\nprocessor\t: 1\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\n";
  // 64-bit ARM's Linux prints no model name: the implementer and part.
  const std::string arm = "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\n"
                          "CPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: 0xd0c\n";
  auto name = [](const std::string& text, Isa isa) {
    std::istringstream in(text);
    return measure::cpu_name(in, isa);
  };
  CHECK(name(x86, Isa::x86) == "AMD EPYC");
  CHECK(name(arm, Isa::arm) == "an ARM CPU (implementer 0x41, part 0xd0c)");
  CHECK(name("", Isa::x86) == "an unnamed CPU");
  // qemu-user passes the host's file through: an ARM program on an x86 host.
  CHECK(name(x86, Isa::arm) == "an ARM CPU emulated on AMD EPYC (the speeds are the emulator's)");
  CHECK(name(arm, Isa::x86) ==
        "an x86 CPU emulated on an ARM CPU (implementer 0x41, part 0xd0c) (the speeds are the emulator's)");
  CHECK(name(x86, Isa::other) == "AMD EPYC");
}

TEST_CASE("utf8_length and utf8_offset count characters, not bytes", "[common][print]") {
  CHECK(utf8_length("") == 0);
  CHECK(utf8_length("cat") == 3);
  CHECK(utf8_length("café") == 4);          // é is two bytes
  CHECK(utf8_length("a…b") == 3);           // … is three
  CHECK(utf8_offset("café!", 3) == 3);      // é starts at byte 3
  CHECK(utf8_offset("café!", 4) == 5);      // ! after é's two bytes
  CHECK(utf8_offset("café!", 5) == 6);      // past the end: the size
  CHECK(utf8_offset("café!", 99) == 6);
  CHECK(utf8_offset("a…b", 2) == 4);
}
