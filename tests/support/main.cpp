// The one main() of every hidden suite: Catch2's, plus
//  - a translator that names every exception a test did not expect: an
//    unwritten exercise reads as its message and hint, a std::exception as
//    what(), anything else (`throw 42`) as a crash with its type;
//  - a listener that, when SA_CHECK_REPORT names a file, appends lines for
//    `./book check`:
//        start TAB <test case> TAB <function under test>     (when it begins)
//        <pass|fail|todo|crash> TAB <test case> TAB <first failure> TAB <hint>
//        where TAB <function>        (after a caught signal: see below)
//    A `start` line without its end line tells `check` the process died in
//    that test case (a crash, a hang killed by the time limit, an exit()).
//    The function under test is the test case's tag, but a whole-model test
//    calls many exercises; when a signal stops the test (a crash, or the
//    SIGTERM of check's time limit) or an exit() ends it, the `where` line
//    names the innermost exercise function on the stack, the one that
//    crashed, called exit() or never returned.
//
// Catch2's own main() and implementation come compiled, from Debian's
// libCatch2WithMain.a (Catch2 2.13) or libCatch2Main.a (Catch2 3): compiling
// them here took 25 s, the longest step of a first `./book test` or
// `./book check`. This file registers the translator and the listener with
// it. It is written for both Catch2 versions (support/catch2_compat.hpp):
// where their interfaces differ, the lines below the includes say each
// one's way.
// (A listener needs Catch2 2's reporter interfaces, which its header
// declares where CATCH_CONFIG_EXTERNAL_INTERFACES is defined before it;
// Catch2 3 has them in headers of their own, below.)
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include "support/catch2_compat.hpp"
#if SA_CATCH2_MAJOR >= 3
#include <catch2/catch_test_case_info.hpp>
#include <catch2/interfaces/catch_interfaces_exception.hpp>
#include <catch2/interfaces/catch_interfaces_registry_hub.hpp>
#include <catch2/interfaces/catch_interfaces_testcase.hpp>
#include <catch2/internal/catch_test_failure_exception.hpp>
#include <catch2/reporters/catch_reporter_event_listener.hpp>
#include <catch2/reporters/catch_reporter_registrars.hpp>
#endif

#include "support/catch.hpp"

#include "sa/exercise.hpp"
#include "sa/printable.hpp"

#include "crash_words.hpp"  // tools/checker: the sentences ./book check also says

#include <cxxabi.h>
#include <dlfcn.h>
#include <unwind.h>
#include <link.h>

#include <algorithm>
#include <csignal>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

namespace sa::test {

namespace {
const char* volatile running_check = nullptr;
}  // namespace

RunningThrowsCheck::RunningThrowsCheck(const char* text) noexcept : outer_(running_check) { running_check = text; }
RunningThrowsCheck::~RunningThrowsCheck() { running_check = outer_; }
const char* running_throws_check() noexcept { return running_check; }

}  // namespace sa::test

namespace {

// What differs between Catch2 2 and 3, for the code below.
#if CATCH_VERSION_MAJOR >= 3
using ListenerBase = Catch::EventListenerBase;
// Every test case of the suite, hidden ones too.
const std::vector<Catch::TestCaseInfo*>& every_test_case() {
  return Catch::getRegistryHub().getTestCaseRegistry().getAllInfos();
}
std::string tag_name(const Catch::Tag& tag) { return std::string(tag.original); }
const Catch::TestCaseInfo& case_info(const Catch::TestCaseStats& stats) { return *stats.testInfo; }
#else
using ListenerBase = Catch::TestEventListenerBase;
std::vector<const Catch::TestCaseInfo*> every_test_case() {
  std::vector<const Catch::TestCaseInfo*> cases;
  for (const Catch::TestCase& test : Catch::getRegistryHub().getTestCaseRegistry().getAllTests())
    cases.push_back(&test);
  return cases;
}
const std::string& tag_name(const std::string& tag) { return tag; }
const Catch::TestCaseInfo& case_info(const Catch::TestCaseStats& stats) { return stats.testInfo; }
#endif

std::string demangle(const char* name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> readable(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && readable ? readable.get() : name;
}

// Registered before any other translator (it is the only one), so it sees
// every exception Catch2 asks about. Catch2's own TestFailureException (how
// REQUIRE stops a test case) must pass through untouched.
class NameEveryException : public Catch::IExceptionTranslator {
 public:
  std::string translate(Catch::ExceptionTranslators::const_iterator it,
                        Catch::ExceptionTranslators::const_iterator end) const override {
    try {
      if (it == end) std::rethrow_exception(std::current_exception());
      return (*it)->translate(it + 1, end);
    } catch (const Catch::TestFailureException&) {
      throw;
#if CATCH_VERSION_MAJOR >= 3
    } catch (const Catch::TestSkipException&) {  // (how SKIP() stops a test case)
      throw;
#endif
    } catch (const sa::NotImplemented& e) {
      return std::string(e.what()) + "\n  hint: " + e.hint();
    } catch (const std::bad_alloc&) {
      return "std::bad_alloc: an allocation failed (a size computed wrong, or a matrix far too large?)";
    } catch (const std::exception& e) {
      return e.what();  // as Catch2 does: CHECK_THROWS_WITH compares exactly this
    } catch (const std::string& text) {
      return sa::check::uncaught_exception_sentence("std::string") + ": \"" + text + "\"";
    } catch (const char* text) {
      return sa::check::uncaught_exception_sentence("const char*") + ": \"" + (text ? text : "") + "\"";
    } catch (...) {
      const std::type_info* type = abi::__cxa_current_exception_type();
      return sa::check::uncaught_exception_sentence(type ? demangle(type->name()) : std::string("unknown"));
    }
  }
};

[[maybe_unused]] const bool registered = [] {
#if CATCH_VERSION_MAJOR >= 3
  Catch::getMutableRegistryHub().registerTranslator(Catch::Detail::make_unique<NameEveryException>());
  // Doubles in a message as Catch2 2 writes them, 10 decimals
  // ("Approx( 0.6931471806 )"), not Catch2 3's 17 ("0.69314718055994529"),
  // whose last digits are the binary fraction's noise: the same message on
  // Debian 12 and 13.
  Catch::StringMaker<double>::precision = 10;
#else
  Catch::getMutableRegistryHub().registerTranslator(new NameEveryException);
#endif
  // A float with 9 decimals, not 5: Catch2 writes them fixed-point, so with
  // 5 a gradient of 1e-7 that should be 0 read "expected g to be 0, got 0".
  Catch::StringMaker<float>::precision = 9;
  return true;
}();

// One field of a report line: tabs and line ends become spaces (they
// separate fields and lines), then what is left is made printable: a wrong
// decode can put bytes that are not UTF-8 into a message, and `check
// --json` can only write UTF-8.
std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n') c = ' ';
  return sa::printable(s);
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// "CHECK_THROWS_AS( f(x), std::invalid_argument )" keeps "f(x), std::invalid_argument"
// as its expression: split it into the call and the exception type.
std::pair<std::string, std::string> call_and_type(const std::string& expression) {
  const auto comma = expression.rfind(", ");
  if (comma == std::string::npos) return {expression, "an exception"};
  return {expression.substr(0, comma), expression.substr(comma + 2)};
}

// A value as Catch2 writes it, as a reader writes it: a float without its
// suffix ("0.98007f" is 0.98007, "nanf" is nan) and an Approx as its number
// ("Approx( -0.4161468365 )" is about -0.4161468365).
std::string plain_value(const std::string& value) {
  static const std::regex kFloat("(-?(?:[0-9]+\\.?[0-9]*(?:e[-+]?[0-9]+)?|nan|inf))f");
  static const std::regex kApprox("Approx\\( (.*) \\)");
  std::smatch m;
  if (std::regex_match(value, m, kFloat)) return m[1];
  if (std::regex_match(value, m, kApprox)) return "about " + m[1].str();
  return value;
}

// Whether two texts are the same number (a literal "1e-6f" and Catch2's
// "0.000001f").
bool same_number(const std::string& a, const std::string& b) {
  char* end_a = nullptr;
  char* end_b = nullptr;
  const double x = std::strtod(a.c_str(), &end_a), y = std::strtod(b.c_str(), &end_b);
  if (end_a == a.c_str() || *end_a != '\0' || end_b == b.c_str() || *end_b != '\0') return false;
  return x == y || std::abs(x - y) <= 1e-6 * std::max(std::abs(x), std::abs(y));
}

// A failed comparison CHECK(a == b), which Catch2 reports as the expression
// and its expansion ("differ == 0" and "33 == 0"), as one sentence without
// operators: "expected differ to be 0, got 33". Empty when the expression is
// not one comparison whose operator appears once in both texts. (Catch2
// writes a long expansion on three lines, "lhs\n==\nrhs": the operator
// between line ends counts too.)
std::string comparison_sentence(const std::string& expression, const std::string& expanded) {
  static const std::pair<const char*, const char*> kOperators[] = {
      {" == ", "to be"},        {" != ", "to differ from"}, {" <= ", "to be at most"},
      {" >= ", "to be at least"}, {" < ", "to be below"},     {" > ", "to be above"}};
  for (const auto& [op, words] : kOperators) {
    const std::string op_text(op);
    std::string value_op = op_text;
    if (expanded.find(value_op) == std::string::npos) value_op = "\n" + op_text.substr(1, op_text.size() - 2) + "\n";
    const auto at = expression.find(op_text), at_value = expanded.find(value_op);
    if (at == std::string::npos || at_value == std::string::npos) continue;
    if (expression.find(op_text, at + 1) != std::string::npos || expanded.find(value_op, at_value + 1) != std::string::npos)
      return "";
    const std::string left = expression.substr(0, at), right = expression.substr(at + op_text.size());
    const std::string left_value = expanded.substr(0, at_value), right_value = expanded.substr(at_value + value_op.size());
    // Values Catch2 cannot print (a matrix row) show as "{?}": then only the claim.
    if (left_value.find("{?}") != std::string::npos || right_value.find("{?}") != std::string::npos)
      return "expected " + left + " " + words + " " + right + ", and it was not";
    // "x to be 0" when the right side is a literal, "x to be y (0)" when it
    // is a name, "x to be about 0.4" for an Approx, whose code says nothing
    // a reader needs.
    const std::string right_plain = plain_value(right), value_plain = plain_value(right_value);
    std::string wanted = right + " (" + value_plain + ")";
    if (right_plain == value_plain || same_number(right_plain, value_plain))
      wanted = right_plain;
    else if (right.starts_with("Approx("))
      wanted = value_plain;
    return "expected " + left + " " + words + " " + wanted + ", got " + plain_value(left_value);
  }
  return "";
}

// A failed CHECK_THAT(text, Contains("x")), which Catch2 reports as
// "text, sa::test::ContainsText(\"x\")" and "\"abc\" contains: \"x\"", as
// "expected text to contain \"x\", got \"abc\"". Empty for other matchers.
std::string matcher_sentence(const std::string& expression, const std::string& expanded) {
  static const std::pair<const char*, const char*> kMatchers[] = {
      {" not contains: ", "not to contain"}, {" contains: ", "to contain"},     {" equals: ", "to equal"},
      {" starts with: ", "to start with"},   {" ends with: ", "to end with"}};
  // The comma between the argument and the matcher: the first one outside
  // any bracket or quote (the argument may be a call with commas of its own).
  size_t comma = std::string::npos;
  int depth = 0;
  char quote = 0;
  for (size_t i = 0; i + 1 < expression.size() && comma == std::string::npos; ++i) {
    const char c = expression[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == ')' || c == ']' || c == '}') {
      --depth;
    } else if (c == ',' && depth == 0 && expression[i + 1] == ' ') {
      comma = i;
    }
  }
  if (comma == std::string::npos) return "";
  for (const auto& [description, words] : kMatchers) {
    const auto at = expanded.rfind(description);
    if (at == std::string::npos) continue;
    const std::string wanted = expanded.substr(at + std::strlen(description)), value = expanded.substr(0, at);
    return "expected " + expression.substr(0, comma) + " " + words + " " + wanted + ", got " + value;
  }
  return "";
}

// What a reader needs from one failed assertion: what was expected, what
// came out, and (from INFO/CAPTURE) for which input; an unwritten exercise's
// hint apart.
struct Failure {
  std::string message, hint;
};

Failure describe(const Catch::AssertionStats& stats) {
  const Catch::AssertionResult& r = stats.assertionResult;
  const std::string macro(r.getTestMacroName()), r_message(r.getMessage());
  const bool throws_as = macro.find("THROWS_AS") != std::string::npos;
  const bool throws = macro.find("THROWS") != std::string::npos && macro.find("NOTHROW") == std::string::npos;
  std::string message, during;
  if (r.getResultType() == Catch::ResultWas::FatalErrorCondition) {
    // Catch2 caught a signal: name it the way `check` names crashes. (A
    // SIGTERM is `check`'s time limit; `check` reports it as a time-out.)
    message = sa::check::caught_signal_sentence(r_message);
    // Inside a CHECK_THROWS_AS: the call it was running, and what it should
    // have thrown (support/catch.hpp). A crash in a refusal test is a
    // refusal missing.
    if (const char* running = sa::test::running_throws_check()) {
      const auto [call, type] = call_and_type(running);
      during = "in " + call + ", which should throw " + type;
    }
  } else if (r.getResultType() == Catch::ResultWas::DidntThrowException) {
    if (throws_as) {
      auto [call, type] = call_and_type(r.getExpression());
      message = "expected " + type + " from " + call + ": nothing was thrown";
    } else {
      message = "expected an exception from " + r.getExpression() + ": nothing was thrown";
    }
  } else if (r.getResultType() == Catch::ResultWas::ThrewException) {
    // The translator's text: "not implemented yet: ...", "crashed: ..." or what().
    const std::string& what = r_message;
    if (starts_with(what, "not implemented yet:")) {
      message = what;
    } else if (starts_with(what, "crashed:")) {
      // `throw 42` is the same mistake whether or not a throws-check caught it.
      message = what;
      if (throws_as) message += " (where " + call_and_type(r.getExpression()).second + " was expected)";
    } else if (throws_as) {
      auto [call, type] = call_and_type(r.getExpression());
      // (the type thrown instead, as the exception in flight says: the text
      // alone does not tell an out_of_range from an invalid_argument)
      const std::type_info* thrown = abi::__cxa_current_exception_type();
      message = "expected " + type + " from " + call + ": threw " + (thrown ? demangle(thrown->name()) + ": " : "") + what;
    } else {
      // (Outside any CHECK, Catch2's expression is a placeholder, "{Unknown
      // expression after the reported line}": no use to the reader.)
      const bool known = r.hasExpression() && !starts_with(r.getExpression(), "{Unknown expression");
      // Its type too: the text alone is only as good as the reader's own
      // ("p = 1"). (Catch2 reports from inside its catch block, where the
      // exception in flight is still known.)
      const std::type_info* type = abi::__cxa_current_exception_type();
      message = "threw " + (type ? demangle(type->name()) + " " : std::string()) +
                "where a result was expected: " + what + (known ? " (in " + r.getExpression() + ")" : "");
    }
  } else if (r.hasMessage()) {
    message = r_message;  // FAIL(...) or a helper's explanation
  } else if (r.hasExpression()) {
    const std::string expression = r.getExpression(), expanded = r.getExpandedExpression();
    const bool matcher = macro.find("THAT") != std::string::npos;
    if (!throws)
      message = matcher ? matcher_sentence(expression, expanded) : comparison_sentence(expression, expanded);
    if (message.empty()) {
      message = "expected " + expression;
      if (throws) message += " to throw";
      if (!expanded.empty() && expanded != expression) message += ", got " + expanded;
    }
  }
  if (message.empty()) message = "failed";
  // INFO and CAPTURE say which input; the assertion's own message is copied
  // into this list by Catch2 too, so skip it.
  std::string context = during;
  for (const Catch::MessageInfo& info : stats.infoMessages) {
    // (nor an INFO the message already quotes: a test names its input
    // with INFO so that a crash or an exception says it too)
    if (info.message.empty() || (r.hasMessage() && info.message == r_message) ||
        message.find(info.message) != std::string::npos)
      continue;
    context += (context.empty() ? "" : "; ") + info.message;
  }
  Failure f{message, ""};
  const std::string hint_marker = "\n  hint: ";
  if (const auto at = f.message.find(hint_marker); at != std::string::npos) {
    f.hint = f.message.substr(at + hint_marker.size());
    f.message.resize(at);
  }
  if (!context.empty() && !starts_with(f.message, "not implemented yet:")) f.message += " [" + context + "]";
  return f;
}

// The function a test case is about: its tag after [chNN], e.g. [softmax_rows].
std::string function_under_test(const Catch::TestCaseInfo& info) {
  for (const auto& t : info.tags)
    if (const std::string tag = tag_name(t); !(tag.size() == 4 && starts_with(tag, "ch"))) return tag;
  return "";
}

// Every function some test case is about: the tags of all test cases.
std::set<std::string> functions_under_test() {
  std::set<std::string> names;
  for (const Catch::TestCaseInfo* test : every_test_case())
    for (const auto& t : test->tags)
      if (const std::string tag = tag_name(t); !(tag.size() == 4 && starts_with(tag, "ch"))) names.insert(tag);
  return names;
}

// "sa::focus(Matrix const&)", a lambda inside it ("sa::focus(...)::{lambda()#1}::operator()() const")
// or a copy GCC made of it ("sa::focus(Matrix const&) [clone .cold]") all read "focus".
std::string short_name(const char* mangled) {
  std::string name = demangle(mangled);
  name = name.substr(0, name.find('('));                      // drop the parameters and what follows
  if (const auto colon = name.rfind(':'); colon != std::string::npos) name = name.substr(colon + 1);  // and namespaces
  return name;
}

// GCC splits and copies functions: a function's rarely run part (its throw,
// its failed assert) goes to "f [clone .cold]", and a copy for one constant
// argument is "f [clone .constprop.0]" (also .isra.N, .part.N). These copies
// are local symbols, absent from the dynamic table dladdr reads, so a crash
// inside one would be blamed on its caller. The executable's full symbol
// table (.symtab) lists them; it is read once per process, before any
// signal, from the file itself. (An executable without .symtab, stripped,
// falls back to dladdr alone.)
struct LocalFunction {
  uintptr_t start, end;
  std::string name;  // short_name of the symbol
};
std::vector<LocalFunction> local_functions;  // sorted by start

void load_local_functions() {
  uintptr_t base = 0;  // where the executable is loaded (a PIE's addresses are relative to it)
  dl_iterate_phdr([](dl_phdr_info* info, size_t, void* out) {
    *static_cast<uintptr_t*>(out) = info->dlpi_addr;
    return 1;  // the first object is the executable itself
  }, &base);
  std::ifstream exe("/proc/self/exe", std::ios::binary);
  auto read = [&](uint64_t offset, void* to, size_t bytes) {
    exe.seekg(std::streamoff(offset));
    return bool(exe.read(static_cast<char*>(to), std::streamsize(bytes)));
  };
  ElfW(Ehdr) header{};
  if (!read(0, &header, sizeof header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_shentsize != sizeof(ElfW(Shdr)))
    return;
  std::vector<ElfW(Shdr)> sections(header.e_shnum);
  if (!read(header.e_shoff, sections.data(), sections.size() * sizeof(ElfW(Shdr)))) return;
  for (const ElfW(Shdr)& table : sections) {
    if (table.sh_type != SHT_SYMTAB || table.sh_link >= sections.size() || table.sh_entsize != sizeof(ElfW(Sym)))
      continue;
    std::vector<ElfW(Sym)> symbols(table.sh_size / sizeof(ElfW(Sym)));
    std::string names(sections[table.sh_link].sh_size, '\0');
    if (!read(table.sh_offset, symbols.data(), symbols.size() * sizeof(ElfW(Sym))) ||
        !read(sections[table.sh_link].sh_offset, names.data(), names.size()))
      return;
    for (const ElfW(Sym)& symbol : symbols) {
      if (ELF64_ST_TYPE(symbol.st_info) != STT_FUNC || ELF64_ST_BIND(symbol.st_info) != STB_LOCAL ||
          symbol.st_size == 0 || symbol.st_name >= names.size())
        continue;
      const uintptr_t start = base + symbol.st_value;
      local_functions.push_back({start, start + symbol.st_size, short_name(names.c_str() + symbol.st_name)});
    }
  }
  std::sort(local_functions.begin(), local_functions.end(),
            [](const LocalFunction& a, const LocalFunction& b) { return a.start < b.start; });
}

// The function whose code holds `at`, as "focus" (no namespace, no
// parameters), or "" if no symbol's extent holds it.
std::string function_at(const char* at) {
  Dl_info info{};
  void* entry = nullptr;  // dladdr1 writes a const ElfW(Sym)* here
  if (dladdr1(at, &info, &entry, RTLD_DL_SYMENT) && info.dli_sname && entry && info.dli_saddr) {
    const auto* symbol = static_cast<const ElfW(Sym)*>(entry);
    const auto start = static_cast<const char*>(info.dli_saddr);
    if (at >= start && at < start + symbol->st_size) return short_name(info.dli_sname);
  }
  // Not an exported function: a local one, such as a clone.
  const auto address = reinterpret_cast<uintptr_t>(at);
  auto after = std::upper_bound(local_functions.begin(), local_functions.end(), address,
                                [](uintptr_t a, const LocalFunction& f) { return a < f.start; });
  if (after == local_functions.begin()) return "";
  const LocalFunction& f = *std::prev(after);
  return address < f.end ? f.name : "";
}

// The innermost of `count` frames that is one of `functions`.
// The instructions of the current stack, innermost first: for a caller,
// its return address less one, the call itself (a call to exit() can be a
// function's last instruction, and then its return address is the next
// function's first byte); for the frame a signal interrupted, the exact
// instruction, which may be a function's first (an endless loop at its top,
// a store through a null pointer). The unwinder tells the two apart.
int stack_instructions(const void** out, int max) {
  struct Walk {
    const void** out;
    int max, n;
  } walk{out, max, 0};
  _Unwind_Backtrace(
      [](_Unwind_Context* context, void* arg) -> _Unwind_Reason_Code {
        Walk& w = *static_cast<Walk*>(arg);
        int exact = 0;
        const uintptr_t ip = _Unwind_GetIPInfo(context, &exact);
        if (w.n >= w.max || ip == 0) return _URC_END_OF_STACK;
        w.out[w.n++] = reinterpret_cast<const void*>(exact ? ip : ip - 1);
        return _URC_NO_REASON;
      },
      &walk);
  return walk.n;
}

// The innermost of `count` instructions (stack_instructions) that lies in
// one of `functions`.
std::string innermost_in(const void* const* instructions, int count, const std::set<std::string>& functions) {
  for (int i = 0; i < count; ++i)
    if (const std::string name = function_at(static_cast<const char*>(instructions[i])); functions.count(name))
      return name;
  return "";
}

// Where the last exception was thrown from. Catch2 reports an exception
// after the stack has unwound, so the stack is kept when it is thrown:
// __cxa_throw, which every throw calls, is wrapped here (the suites link
// libstdc++ dynamically; dlsym finds the real one). Not under
// AddressSanitizer, whose runtime wraps __cxa_throw itself.
#if defined(__SANITIZE_ADDRESS__)
#define SA_KEEP_THROW_SITE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SA_KEEP_THROW_SITE 0
#endif
#endif
#ifndef SA_KEEP_THROW_SITE
#define SA_KEEP_THROW_SITE 1
#endif
thread_local const void* thrown_frames[64];
thread_local int thrown_count = 0;

}  // namespace

#if SA_KEEP_THROW_SITE
// (libstdc++'s own headers declare it with the type as void*)
extern "C" [[noreturn]] void __cxa_throw(void* object, void* type, void (*destroy)(void*)) {
  thrown_count = stack_instructions(thrown_frames, 64);
  using Throw = void (*)(void*, void*, void (*)(void*));
  static const Throw real = reinterpret_cast<Throw>(dlsym(RTLD_NEXT, "__cxa_throw"));
  if (!real) std::abort();  // (no libstdc++ to throw with: nothing else can be done)
  real(object, type, destroy);
  __builtin_unreachable();
}
#endif

namespace {

// The innermost frame of the current stack that is one of `functions`.
// Called from Catch2's signal handler, where the stack below it is the one
// the signal interrupted, and from the exit() handler below. Symbols come
// from the executable's dynamic table (the suites link with ENABLE_EXPORTS);
// an address is only named by a symbol whose extent contains it, so a static
// helper is skipped, never misnamed. Not async-signal-safe (dladdr, the
// demangler): acceptable in a process that is about to die, and `check`
// falls back to the test case's tag if nothing is written.
std::string innermost_of(const std::set<std::string>& functions) {
  const void* instructions[128];
  return innermost_in(instructions, stack_instructions(instructions, 128), functions);
}

// exit() called inside an exercise runs the atexit handlers with the
// exercise's frames still on the stack: the handler names the innermost one,
// as the signal handler does (at the normal end of the suite none is on the
// stack and nothing is written). The set is filled before the handler is
// registered, so it outlives it.
std::set<std::string> exit_watch;
void report_exit_site() {
  const char* path = std::getenv("SA_CHECK_REPORT");
  if (!path || !*path) return;
  const std::string where = innermost_of(exit_watch);
  if (where.empty()) return;
  std::ofstream out(path, std::ios::app);
  out << "where\t" << where << std::endl;
}

// A test case stopped at check's output limit (SIGXFSZ, which Catch2 does
// not catch): the exercise function that was writing is named, as for a
// crash. (Not async-signal-safe, as above: the process is about to die.)
void on_output_limit(int signal) {
  if (const char* path = std::getenv("SA_CHECK_REPORT"); path && *path)
    if (const std::string where = innermost_of(exit_watch); !where.empty())
      std::ofstream(path, std::ios::app) << "where\t" << where << std::endl;
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

class CheckReport : public ListenerBase {
 public:
  using ListenerBase::ListenerBase;

  // SECTIONs name the input a failure is about: keep the open ones.
  void sectionStarting(const Catch::SectionInfo& info) override {
    ListenerBase::sectionStarting(info);
    sections_.push_back(info.name);
  }
  void sectionEnded(const Catch::SectionStats& stats) override {
    ListenerBase::sectionEnded(stats);
    if (!sections_.empty()) sections_.pop_back();
  }

  void testCaseStarting(const Catch::TestCaseInfo& info) override {
    ListenerBase::testCaseStarting(info);
    sections_.clear();
    first_failure_.clear();
    hint_.clear();
    // Ready before any signal: the set, and a first walk of the stack,
    // which loads the unwinder.
    if (functions_.empty()) {
      functions_ = functions_under_test();
      exit_watch = functions_;
      std::atexit(report_exit_site);
      std::signal(SIGXFSZ, on_output_limit);
      const void* warm_up[1];
      stack_instructions(warm_up, 1);
      load_local_functions();
    }
    if (const char* path = report_path()) {
      std::ofstream out(path, std::ios::app);
      out << "start\t" << one_line(info.name) << '\t' << function_under_test(info) << std::endl;
    }
  }

#if CATCH_VERSION_MAJOR >= 3
  void assertionEnded(const Catch::AssertionStats& stats) override {
    note_failure(stats);
    ListenerBase::assertionEnded(stats);
  }
#else
  bool assertionEnded(const Catch::AssertionStats& stats) override {
    note_failure(stats);
    return ListenerBase::assertionEnded(stats);
  }
#endif

  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    ListenerBase::testCaseEnded(stats);
    const char* path = report_path();
    if (!path) return;
    std::ofstream out(path, std::ios::app);
    const bool passed = stats.totals.assertions.allPassed() && first_failure_.empty();
    const char* kind = passed                                           ? "pass"
                       : starts_with(first_failure_, "not implemented yet:") ? "todo"
                       : starts_with(first_failure_, "crashed:")             ? "crash"
                                                                             : "fail";
    out << kind << '\t' << one_line(case_info(stats).name) << '\t' << one_line(first_failure_) << '\t'
        << one_line(hint_) << std::endl;
  }

 private:
  // A crash's site, and the first failure of the test case with its hint.
  void note_failure(const Catch::AssertionStats& stats) {
    if (stats.assertionResult.getResultType() == Catch::ResultWas::FatalErrorCondition) {
      if (const char* path = report_path()) {
        const std::string where = innermost_of(functions_);
        std::ofstream out(path, std::ios::app);
        if (!where.empty()) out << "where\t" << where << std::endl;
      }
    }
    if (!stats.assertionResult.succeeded() && first_failure_.empty()) {
      // An exception nobody expected: name the exercise function that threw
      // it, which may not be the one the test case is about (a test of
      // mask_and builds its masks with causal_mask first).
      if (stats.assertionResult.getResultType() == Catch::ResultWas::ThrewException && thrown_count > 0)
        if (const char* path = report_path())
          if (const std::string thrower = innermost_in(thrown_frames, thrown_count, functions_); !thrower.empty())
            std::ofstream(path, std::ios::app) << "where\t" << thrower << std::endl;
      auto [message, hint] = describe(stats);
      hint_ = hint;
      // The outermost section is the test case itself; inner ones say which case.
      if (sections_.size() > 1 && !starts_with(message, "not implemented yet:") && !starts_with(message, "crashed:"))
        message += " (section: " + sections_.back() + ")";
      first_failure_ = message;
    }
  }

  static const char* report_path() {
    const char* path = std::getenv("SA_CHECK_REPORT");
    return path && *path ? path : nullptr;
  }
  std::string first_failure_, hint_;
  std::vector<std::string> sections_;
  std::set<std::string> functions_;
};

}  // namespace

CATCH_REGISTER_LISTENER(CheckReport)

// check's list of a suite's test cases (tools/checker/case_runner.cpp): run
// alone, by its hidden tag, once every global object of the suite is made,
// it writes their names to the file SA_CHECK_LIST names, one a line, then a
// line holding a tab alone (the list is whole). Not --list-test-names-only:
// a global object's constructor in an exercise may print on stdout too, and
// its lines would be taken for names.
TEST_CASE("the suite's test cases, for check", "[.sa-list]") {
  const char* path = std::getenv("SA_CHECK_LIST");
  if (!path || !*path) return;
  std::ofstream out(path);
  for (const Catch::TestCaseInfo* test : every_test_case())
    if (!test->isHidden()) out << one_line(test->name) << '\n';
  out << "\t\n";
}
