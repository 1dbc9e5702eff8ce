#include "sa/cli.hpp"

#include "sa/exercise.hpp"
#include "sa/paths.hpp"
#include "sa/print.hpp"
#include "sa/text.hpp"

#include <fmt/core.h>

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <new>
#include <regex>
#include <set>
#include <string_view>

namespace sa {

namespace {

std::string describe(IntRange r) {
  if (r.max_words) return fmt::format("an integer from {} to {}", r.min, r.max_words);
  if (r.max == std::numeric_limits<int64_t>::max()) return fmt::format("an integer >= {}", r.min);
  return fmt::format("an integer in [{}, {}]", r.min, r.max);
}

std::string describe(RealRange r) {
  const bool no_min = std::isinf(r.min), no_max = std::isinf(r.max);
  if (no_min && no_max) return "a number";
  if (no_max) return fmt::format("a number {} {}", r.min_open ? ">" : ">=", r.min);
  if (no_min) return fmt::format("a number {} {}", r.max_open ? "<" : "<=", r.max);
  return fmt::format("a number in {}{}, {}{}", r.min_open ? "(" : "[", r.min, r.max, r.max_open ? ")" : "]");
}

}  // namespace

double budget_seconds() {
  // Only the tests set it (a smaller budget proves the estimates at a
  // small scale); a value that is not a positive number is a test's bug.
  if (const char* env = std::getenv("SA_BUDGET_SECONDS")) {
    char* end = nullptr;
    const double s = std::strtod(env, &end);
    if (end != env && *end == 0 && std::isfinite(s) && s > 0) return s;
    throw UsageError(fmt::format("SA_BUDGET_SECONDS must be a positive number of seconds, got '{}'", env));
  }
  return kBudgetSeconds;
}

double budget_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double kib = 0;
  while (meminfo >> key >> kib)
    if (key == "MemTotal:") return std::min(kBudgetBytes, kib * 1024 / 2);
  return kBudgetBytes;
}

std::string duration_str(double s) {
  if (s < 90) return fmt::format("{:.0f} s", s);
  if (s < 90 * 60) return fmt::format("{:.0f} min", s / 60);
  return fmt::format("{:.1f} h", s / 3600);
}

std::string timing_str(double s) {
  if (s < 0.001) return fmt::format("{:.3f} ms", s * 1e3);
  if (s < 0.01) return fmt::format("{:.2f} ms", s * 1e3);
  if (s < 0.1) return fmt::format("{:.1f} ms", s * 1e3);
  if (s < 1) return fmt::format("{:.0f} ms", s * 1e3);
  if (s < 10) return fmt::format("{:.2f} s", s);
  if (s < 100) return fmt::format("{:.1f} s", s);
  return fmt::format("{:.0f} s", s);
}

std::string memory_str(double bytes) {
  constexpr double MiB = 1024.0 * 1024.0;
  if (bytes < 1024 * MiB) return fmt::format("{:.0f} MiB", bytes / MiB);
  return fmt::format("{:.1f} GiB", bytes / (1024 * MiB));
}

Cli::Cli(std::string chapter, std::string summary, std::string program)
    // Figures go to the build tree by default: a run with other options must
    // never overwrite the committed figures in plots/, which `./book plots`
    // draws with the default options (--plots-dir plots/<chapter>).
    : plots_dir((binary_dir() / "plots" / chapter).string()),
      chapter_(std::move(chapter)),
      summary_(std::move(summary)),
      program_(program.empty() ? chapter_ : std::move(program)) {
  options_.push_back({"--help", "show this help and exit", "", false, nullptr});
  options_.push_back({"--no-plots", "do not draw figures", "", false, [this](const std::string&) { plots = false; }});
  options_.push_back({"--seed", "seed of the generator (the same as torch.manual_seed)", "42", true,
                      [this](const std::string& v) {
                        uint64_t s = 0;
                        auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), s);
                        // A number past 2^64 - 1 is an integer still: say which bound it passed.
                        if (ec == std::errc::result_out_of_range && end == v.data() + v.size())
                          throw UsageError(fmt::format(
                              "--seed must be at most {} (2^64 - 1, torch.manual_seed's largest), got '{}'",
                              std::numeric_limits<uint64_t>::max(), v));
                        // ('-0' and '+5' are no negative numbers, but signs all the same)
                        const bool signed_zero = v.size() > 1 && v[0] == '-' &&
                                                 v.find_first_not_of('0', 1) == std::string::npos;
                        if (signed_zero || (v.size() > 1 && v[0] == '+'))
                          throw UsageError(fmt::format("--seed takes digits only, without a sign, got '{}'", v));
                        if (ec != std::errc() || end != v.data() + v.size())
                          throw UsageError(fmt::format("--seed must be a non-negative integer, got '{}'", v));
                        seed = s;
                      }});
  add("--plots-dir", &plots_dir, "folder the figures are written to (created if needed)", "a folder");
  // (print_help lists it last, with the budget it overrides.)
  add_flag("--i-know-it-is-big", &big_ok, "");
}

void Cli::check_budget(const RunEstimate& e) const {
  const double max_s = budget_seconds(), max_bytes = budget_bytes();
  if (big_ok) return;
  const std::string how = "(--i-know-it-is-big runs it anyway)";
  if (e.bytes > max_bytes)
    throw UsageError(fmt::format("{} would need about {} of memory; the budget of a run is {} {}", e.options,
                                 memory_str(e.bytes), memory_str(max_bytes), how));
  if (e.seconds > max_s)
    throw UsageError(fmt::format("{} would take about {} on one core; the budget of a run is {} {}", e.options,
                                 duration_str(e.seconds), duration_str(max_s), how));
}

void Cli::without_budget() {
  std::erase_if(options_, [](const Option& o) { return o.flag == "--i-know-it-is-big"; });
}

void Cli::add(const std::string& flag, int64_t* target, const std::string& help, IntRange range) {
  options_.push_back({flag, help, std::to_string(*target), true, [=](const std::string& v) {
                        int64_t x = 0;
                        auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
                        if (ec != std::errc() || end != v.data() + v.size() || x < range.min || x > range.max)
                          throw UsageError(fmt::format("{} must be {}, got '{}'", flag, describe(range), v));
                        *target = x;
                      }});
  options_.back().limits = describe(range);
}

void Cli::add_sentence(std::string* text, const std::string& what) {
  add("--text", text,
      fmt::format("{} (words split on spaces, at most {} words of at most {} characters)", what, kMaxTextTokens,
                  kMaxWordChars));
}

void Cli::add_width(const std::string& flag, int64_t* width, const std::string& help) {
  add(flag, width, help, IntRange{1, kMaxWidth});
}

namespace {

// Decimal notation only: strtod alone would also take " 5", "0x10", "inf"
// and "nan".
double parse_real(const std::string& flag, const std::string& v, const RealRange& range) {
  static const std::regex decimal(R"([+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)");
  char* end = nullptr;
  const bool looks = std::regex_match(v, decimal);
  const double x = looks ? std::strtod(v.c_str(), &end) : NAN;
  const bool parsed = looks && end == v.c_str() + v.size() && std::isfinite(x);
  const bool above = range.min_open ? x > range.min : x >= range.min;
  const bool below = range.max_open ? x < range.max : x <= range.max;
  if (!parsed || !above || !below) throw UsageError(fmt::format("{} must be {}, got '{}'", flag, describe(range), v));
  // The programs compute in float32: a value it cannot hold would silently
  // become another one (a learning rate of 1e-300 becomes 0 and nothing
  // trains; a p of 0.99999999999 becomes 1).
  const float as_float = float(x);
  const bool float_above = range.min_open ? as_float > range.min : as_float >= range.min;
  const bool float_below = range.max_open ? as_float < range.max : as_float <= range.max;
  const bool zero_allowed = (range.min_open ? 0 > range.min : 0 >= range.min) && 0 <= range.max;
  if (x != 0 && std::abs(x) < std::numeric_limits<float>::min())
    throw UsageError(fmt::format("{} must be {}at least {:.2g} in size (float32's smallest normal number), got '{}'",
                                 flag, zero_allowed ? "0 or " : "", std::numeric_limits<float>::min(), v));
  // A value that float32 rounds onto an end point is that end point in the
  // programs (p = 1 drops everything) while it is printed as less.
  const bool onto_end = (double(as_float) == range.min || double(as_float) == range.max) && double(as_float) != x;
  if (onto_end && std::isfinite(as_float) && float_above && float_below)  // an end the range includes
    throw UsageError(fmt::format("{} '{}' is {} in float32, the precision the programs compute in, though it would be "
                                 "printed as given: give {}, or a value float32 keeps apart from it (about 7 "
                                 "significant digits)",
                                 flag, v, as_float, as_float));
  if (!std::isfinite(as_float) || !float_above || !float_below || onto_end)
    throw UsageError(fmt::format("{} must be {}, got '{}', which is {} in float32", flag, describe(range), v, as_float));
  return x == 0 ? 0.0 : x;  // -0 is 0: a program would print "p -0"
}

}  // namespace

void Cli::add(const std::string& flag, double* target, const std::string& help, RealRange range) {
  options_.push_back({flag, help, fmt::format("{}", *target), true,
                      [=](const std::string& v) { *target = parse_real(flag, v, range); }});
  options_.back().limits = describe(range);
}

void Cli::add(const std::string& flag, std::optional<double>* target, const std::string& help, RealRange range,
              const std::string& default_text) {
  options_.push_back({flag, help, default_text, true,
                      [=](const std::string& v) { *target = parse_real(flag, v, range); }});
  options_.back().limits = describe(range);
}

// An empty value is refused for every text option: it would otherwise be
// taken as "not given" by the options whose default is computed later (a
// file path), and no option means anything by an empty text.
void Cli::add(const std::string& flag, std::string* target, const std::string& help, const std::string& kind) {
  options_.push_back({flag, help, *target, true, [=](const std::string& v) {
                        if (v.empty()) throw UsageError(fmt::format("{} is empty: give {}", flag, kind));
                        *target = v;
                      }});
}

void Cli::without_figures() {
  std::erase_if(options_, [](const Option& o) { return o.flag == "--no-plots" || o.flag == "--plots-dir"; });
  plots = false;
}

void Cli::add_flag(const std::string& flag, bool* target, const std::string& help) {
  options_.push_back({flag, help, "", false, [=](const std::string&) { *target = true; }});
}

void Cli::print_help() const {
  fmt::print("usage: {} [options]\n\n", program_);
  say(summary_);
  fmt::print("\noptions:\n");
  const auto lhs = [](const Option& o) { return o.takes_value ? o.flag + " VALUE" : o.flag; };
  // One column for the options, as wide as the widest (--naive-max-seq-len
  // VALUE ran into its description in a column of 22).
  size_t width = 22;
  for (const auto& o : options_) width = std::max(width, lhs(o).size());
  const Option* big = nullptr;
  for (const auto& o : options_) {
    if (o.flag == "--i-know-it-is-big") {
      big = &o;
      continue;
    }
    const std::string shown_default = o.flag == "--plots-dir" ? "build/plots/" + chapter_ +
                                                                      "; ./book plots draws the committed plots/" +
                                                                      chapter_
                                                                : o.default_text;
    std::string dflt = o.default_text.empty() ? "" : fmt::format(" (default: {})", shown_default);
    if (!o.limits.empty()) dflt += "; " + o.limits;
    fmt::print("  {:<{}} {}{}\n", lhs(o), width, o.help, dflt);
  }
  if (big)
    fmt::print("  {:<{}} run even when the estimate of the whole run passes the budget: {} on one core, {} of "
               "memory (without it such a run is refused before it starts)\n",
               big->flag, width, duration_str(kBudgetSeconds), memory_str(budget_bytes()));
}

void Cli::parse(int argc, char** argv) {
  // --help wins wherever it stands, even after a mistake: the reader who
  // types it wants the list of options, not an error about another word.
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--help" || std::string_view(argv[i]) == "-h") {
      print_help();
      std::exit(0);
    }
  std::set<std::string> seen;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    bool has_inline_value = false;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg.resize(eq);
      has_inline_value = true;
    }
    if (arg == "--help" || arg == "-h") throw UsageError(fmt::format("{} takes no value, got '{}'", arg, value));
    const Option* option = nullptr;
    for (const auto& o : options_)
      if (o.flag == arg) option = &o;
    if (!option) throw UsageError(fmt::format("unknown option '{}' (see --help)", argv[i]));
    if (!seen.insert(arg).second) throw UsageError(fmt::format("{} is given twice: give each option once", arg));
    if (option->takes_value && !has_inline_value) {
      if (i + 1 >= argc) throw UsageError(fmt::format("{} needs a value (see --help)", arg));
      value = argv[++i];
      // `--text --no-plots` forgot the text: do not take the next option as it.
      if (value.rfind("--", 0) == 0)
        throw UsageError(fmt::format("{} needs a value, but the next word is the option '{}' ({}=VALUE passes a "
                                     "value that starts with --)",
                                     arg, value, arg));
    } else if (!option->takes_value && has_inline_value) {
      throw UsageError(fmt::format("{} takes no value, got '{}'", arg, value));
    }
    option->set(value);
  }
  given_ = std::move(seen);
  if (plots) {
    require_writable_dir("--plots-dir", plots_dir, kFiguresFreeBytes);
    require_no_folder_named_png(plots_dir);
  } else if (given("--plots-dir")) {
    throw UsageError("--plots-dir names where figures go, and --no-plots draws none: give one of the two");
  }
}

void require_no_folder_named_png(const std::string& dir) {
  namespace fs = std::filesystem;
  // Every figure is NAME.png in the folder: anything there of such a name
  // that is not a file (a folder, a pipe) would fail its figure after the
  // chapter's whole run. Said now, before any work.
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& path = it->path();
    if (path.extension() != ".png") continue;
    std::error_code type_ec;
    const fs::file_status status = fs::status(path, type_ec);  // (through a link, as gnuplot would write)
    if (type_ec || fs::is_regular_file(status) || !fs::exists(status)) continue;
    throw UsageError(fmt::format("--plots-dir: '{}' is {}, where a figure NAME.png would be written: move it away, or "
                                 "give another --plots-dir",
                                 path.string(), fs::is_directory(status) ? "a folder" : "not a file"));
  }
}

void require_writable_dir(const std::string& flag, const std::string& dir, double min_free_bytes) {
  namespace fs = std::filesystem;
  if (dir.empty()) throw UsageError(fmt::format("{} is empty: give a folder", flag));
  std::error_code ec;
  // The nearest folder that exists: `dir` itself, or the parent it would be
  // created in. Every part of the path on the way must be a folder.
  fs::path target = fs::absolute(fs::path(dir), ec).lexically_normal();
  if (!target.has_filename() && target.has_parent_path()) target = target.parent_path();  // "plots/"
  fs::path existing = target;
  for (;;) {
    // A part of the path the system cannot look at (a loop of symbolic
    // links, a name too long) is no folder to create: it was taken for a
    // missing one, and the first file written there failed, after the work.
    const bool found = fs::exists(existing, ec);
    if (ec) throw UsageError(fmt::format("{} '{}': {}", flag, dir, ec.message()));
    if (found || !existing.has_parent_path() || existing == existing.parent_path()) break;
    existing = existing.parent_path();
  }
  if (!fs::is_directory(existing, ec)) {
    if (existing == target) throw UsageError(fmt::format("{} '{}' is not a folder", flag, dir));
    throw UsageError(fmt::format("{} '{}' cannot be created: '{}' is not a folder", flag, dir, existing.string()));
  }
  // Prove that it takes a file, without leaving one: permission bits alone
  // would not tell (root ignores them; /proc and read-only file systems
  // refuse anyway). The folder itself is not created here.
  const bool exists = existing == target;
  std::string probe = (existing / ".write-test-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    // (A folder that exists but takes no file, as /proc, says "No such file
    // or directory", which would read as if the folder were missing.)
    const std::string why = errno == ENOENT ? "it takes no new files" : std::strerror(errno);
    throw UsageError(exists ? fmt::format("{} '{}' is not writable: {}", flag, dir, why)
                            : fmt::format("{} '{}' cannot be created: '{}' is not writable: {}", flag, dir,
                                          existing.string(), why));
  }
  ::close(fd);
  fs::remove(probe, ec);
  struct statvfs disk {};
  if (min_free_bytes > 0 && ::statvfs(existing.c_str(), &disk) == 0) {
    const double free_bytes = double(disk.f_bavail) * double(disk.f_frsize);
    if (free_bytes < min_free_bytes)
      throw UsageError(fmt::format("{} '{}' is on a disk with {} free; at least {} are needed (the disk is full?)",
                                   flag, dir, free_bytes < 1024 * 1024 ? fmt::format("{:.0f} KiB", free_bytes / 1024)
                                                                       : memory_str(free_bytes),
                                   memory_str(min_free_bytes)));
  }
}

int run_program(const std::string& chapter, const std::function<void()>& body) {
  // What the program printed goes out before its error: with stdout a file
  // or a pipe (fully buffered) and stderr unbuffered, the error otherwise
  // landed in the middle of a line printed earlier.
  const auto report = [&](const std::string& message) {
    std::fflush(stdout);
    fmt::print(stderr, "{}: {}\n", chapter, message);
  };
  try {
    body();
    return 0;
  } catch (const UsageError& e) {
    report(e.what());
    return 2;
  } catch (const std::invalid_argument& e) {
    report(e.what());
    return 2;
  } catch (const NotImplemented& e) {
    std::fflush(stdout);
    fmt::print(stderr,
               "\n{}: {}\n  hint: {}\n  (this program links your exercises; `./book track solutions` switches back)\n",
               chapter, e.what(), e.hint());
    return 3;
  } catch (const std::bad_alloc&) {
    std::fflush(stdout);  // no std::string here: memory has just run out
    fmt::print(stderr, "{}: error: out of memory (a run past its budget, allowed by --i-know-it-is-big?)\n", chapter);
    return 1;
  } catch (const std::exception& e) {
    report(fmt::format("error: {}", e.what()));
    return 1;
  }
}

}  // namespace sa
