#include "sa/cli.hpp"

#include "sa/exercise.hpp"
#include "sa/print.hpp"

#include <fmt/core.h>

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace sa {

namespace {

std::string describe(IntRange r) {
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

Cli::Cli(std::string chapter, std::string summary, std::string program)
    // Figures go to the build tree by default: a run with other options must
    // never overwrite the committed figures in plots/, which `./book plots`
    // draws with the default options (--plots-dir plots/<chapter>).
    : plots_dir(std::string(SA_BINARY_DIR) + "/plots/" + chapter),
      chapter_(std::move(chapter)),
      summary_(std::move(summary)),
      program_(program.empty() ? chapter_ : std::move(program)) {
  options_.push_back({"--help", "show this help and exit", "", false, nullptr});
  options_.push_back({"--no-plots", "do not draw figures", "", false, [this](const std::string&) { plots = false; }});
  options_.push_back({"--seed", "seed of the generator (the same as torch.manual_seed)", "42", true,
                      [this](const std::string& v) {
                        uint64_t s = 0;
                        auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), s);
                        if (ec != std::errc() || end != v.data() + v.size())
                          throw UsageError(fmt::format("--seed must be a non-negative integer, got '{}'", v));
                        seed = s;
                      }});
  add("--plots-dir", &plots_dir, "folder the figures are written to");
}

void Cli::add(const std::string& flag, int64_t* target, const std::string& help, IntRange range) {
  options_.push_back({flag, help, std::to_string(*target), true, [=](const std::string& v) {
                        int64_t x = 0;
                        auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
                        if (ec != std::errc() || end != v.data() + v.size() || x < range.min || x > range.max)
                          throw UsageError(fmt::format("{} must be {}, got '{}'", flag, describe(range), v));
                        *target = x;
                      }});
}

void Cli::add(const std::string& flag, double* target, const std::string& help, RealRange range) {
  options_.push_back({flag, help, fmt::format("{}", *target), true, [=](const std::string& v) {
                        char* end = nullptr;
                        const double x = v.empty() ? NAN : std::strtod(v.c_str(), &end);
                        const bool parsed = !v.empty() && end == v.c_str() + v.size() && std::isfinite(x);
                        const bool above = range.min_open ? x > range.min : x >= range.min;
                        const bool below = range.max_open ? x < range.max : x <= range.max;
                        if (!parsed || !above || !below)
                          throw UsageError(fmt::format("{} must be {}, got '{}'", flag, describe(range), v));
                        *target = x;
                      }});
}

void Cli::add(const std::string& flag, std::string* target, const std::string& help) {
  options_.push_back({flag, help, *target, true, [=](const std::string& v) { *target = v; }});
}

void Cli::add_flag(const std::string& flag, bool* target, const std::string& help) {
  options_.push_back({flag, help, "", false, [=](const std::string&) { *target = true; }});
}

void Cli::print_help() const {
  fmt::print("usage: {} [options]\n\n", program_);
  say(summary_);
  fmt::print("\noptions:\n");
  for (const auto& o : options_) {
    const std::string lhs = o.takes_value ? o.flag + " VALUE" : o.flag;
    const std::string dflt =
        o.default_text.empty() ? "" : fmt::format(" (default: {})", o.flag == "--plots-dir" ? "build/plots/" + chapter_ + "; ./book plots draws the committed plots/" + chapter_ : o.default_text);
    fmt::print("  {:<22} {}{}\n", lhs, o.help, dflt);
  }
}

void Cli::parse(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    bool has_inline_value = false;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg.resize(eq);
      has_inline_value = true;
    }
    if (arg == "--help" || arg == "-h") {
      print_help();
      std::exit(0);
    }
    const Option* option = nullptr;
    for (const auto& o : options_)
      if (o.flag == arg) option = &o;
    if (!option) throw UsageError(fmt::format("unknown option '{}' (see --help)", argv[i]));
    if (option->takes_value && !has_inline_value) {
      if (i + 1 >= argc) throw UsageError(fmt::format("{} needs a value (see --help)", arg));
      value = argv[++i];
    } else if (!option->takes_value && has_inline_value) {
      throw UsageError(fmt::format("{} takes no value, got '{}'", arg, value));
    }
    option->set(value);
  }
}

int run_program(const std::string& chapter, const std::function<void()>& body) {
  try {
    body();
    return 0;
  } catch (const UsageError& e) {
    fmt::print(stderr, "{}: {}\n", chapter, e.what());
    return 2;
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "{}: {}\n", chapter, e.what());
    return 2;
  } catch (const NotImplemented& e) {
    std::fflush(stdout);
    fmt::print(stderr,
               "\n{}: {}\n  hint: {}\n  (this program links your exercises; `./book track solutions` switches back)\n",
               chapter, e.what(), e.hint());
    return 3;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: error: {}\n", chapter, e.what());
    return 1;
  }
}

}  // namespace sa
