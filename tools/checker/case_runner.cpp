#include "case_runner.hpp"

#include "case_record.hpp"
#include "crash_words.hpp"
#include "read_file.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace sa::check {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

std::vector<char*> pointers(std::vector<std::string>& words) {
  std::vector<char*> p;
  for (std::string& w : words) p.push_back(w.data());
  p.push_back(nullptr);
  return p;
}

// One test process under way.
struct Running {
  pid_t pid = -1;
  size_t index = 0;  // in the list of tests
  Clock::time_point started;
  int limit = 0;
  bool terminated = false;  // the time limit sent SIGTERM
  Clock::time_point terminated_at;
  fs::path output, report;
};

// Starts one test case: its output and the listener's report go to files,
// its address space is capped as `ulimit -v` would.
Running start_case(const fs::path& suite, const std::string& test, size_t index, const Limits& limits,
                   const fs::path& scratch) {
  Running r;
  r.index = index;
  r.limit = limits.one_hung ? std::min(limits.timeout_seconds, limits.hung_timeout_seconds) : limits.timeout_seconds;
  r.output = scratch / (std::to_string(index) + ".out");
  r.report = scratch / (std::to_string(index) + ".report");
  std::ofstream(r.report).close();
  // Everything the child needs is made before fork(): after it, only calls
  // that are safe in a child of a process that may have threads.
  // Catch2's report goes to a file of its own, so that the process's output
  // is what the reader's code printed (and the runtime's words on a crash).
  const fs::path catch_report = scratch / (std::to_string(index) + ".catch");
  std::vector<std::string> args = {suite.string(), catch2_spec(test), "--out", catch_report.string()};
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (!std::string_view(*e).starts_with("SA_CHECK_REPORT=")) env.emplace_back(*e);
  env.push_back("SA_CHECK_REPORT=" + r.report.string());
  std::vector<char*> argv = pointers(args), envp = pointers(env);
  const std::string output = r.output.string();
  const rlim_t bytes = rlim_t(limits.memory_kb) * 1024;
  r.started = Clock::now();
  r.pid = fork();
  if (r.pid == 0) {
    if (bytes > 0) {
      const rlimit cap{bytes, bytes};
      setrlimit(RLIMIT_AS, &cap);
    }
    // A print inside an endless loop must not fill the disk: past
    // kOutputLimitBytes a write ends the process with SIGXFSZ.
    const rlimit file_cap{rlim_t(kOutputLimitBytes), rlim_t(kOutputLimitBytes)};
    setrlimit(RLIMIT_FSIZE, &file_cap);
    const int out = open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int nothing = open("/dev/null", O_RDONLY);
    if (out >= 0) {
      dup2(out, STDOUT_FILENO);
      dup2(out, STDERR_FILENO);
    }
    if (nothing >= 0) dup2(nothing, STDIN_FILENO);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  return r;
}

CaseEnd finished(const Running& r, int wait_status) {
  CaseEnd end;
  end.exited = WIFEXITED(wait_status);
  end.exit_status = end.exited ? WEXITSTATUS(wait_status) : 0;
  end.signal = WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0;
  end.timed_out = r.terminated;
  end.seconds = std::chrono::duration<double>(Clock::now() - r.started).count();
  end.limit_seconds = r.limit;
  end.report = read_file(r.report);
  // (classify reads both: "No test cases matched" is Catch2's report's)
  std::error_code ignored;
  const fs::path catch_report = r.output.parent_path() / (r.output.stem().string() + ".catch");
  end.output = read_file(r.output) + (fs::exists(catch_report, ignored) ? read_file(catch_report) : std::string());
  return end;
}

}  // namespace

int processors() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

long memory_share_kb(int jobs) {
  constexpr long kAtMost = 16L * 1024 * 1024;  // 16 GiB in KiB
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    long kb = 0;
    if (key == "MemTotal:" && meminfo >> kb) return std::min(kb / std::max(1, jobs), kAtMost);
    meminfo.ignore(1 << 12, '\n');
  }
  return kAtMost;
}

std::string catch2_spec(const std::string& test_name) {
  std::string spec;
  for (char c : test_name) {
    if (c == '\\' || c == ',' || c == '[' || c == ']' || c == '*' || c == '"') spec += '\\';
    spec += c;
  }
  return spec;
}

namespace {

// Processes a test case started and left running (fork() in an exercise):
// this process is their subreaper (run_suite), so once their parent ended
// they are its children, and at the end of the suite every child left is
// one of them.
void end_left_processes() {
  std::vector<pid_t> left;
  std::error_code ignored;
  for (const auto& task : fs::directory_iterator("/proc/self/task", ignored)) {
    std::ifstream children(task.path() / "children");
    for (pid_t pid; children >> pid;) left.push_back(pid);
  }
  for (const pid_t pid : left) kill(pid, SIGKILL);
  for (const pid_t pid : left) waitpid(pid, nullptr, 0);
}

}  // namespace

Captured run_limited(const std::vector<std::string>& words, const std::vector<std::string>& extra_env,
                     int timeout_seconds, long memory_kb, const fs::path& output) {
  using namespace std::chrono_literals;
  Captured result;
  std::vector<std::string> args = words;
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  for (const std::string& e : extra_env) env.push_back(e);
  std::vector<char*> argv = pointers(args), envp = pointers(env);
  const std::string output_file = output.string();
  const pid_t pid = fork();
  if (pid == 0) {
    if (memory_kb > 0) {
      const rlimit cap{rlim_t(memory_kb) * 1024, rlim_t(memory_kb) * 1024};
      setrlimit(RLIMIT_AS, &cap);
    }
    // (its output, like a test case's, stops at kOutputLimitBytes)
    const rlimit file_cap{rlim_t(kOutputLimitBytes), rlim_t(kOutputLimitBytes)};
    setrlimit(RLIMIT_FSIZE, &file_cap);
    const int out = open(output_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out >= 0) {
      dup2(out, STDOUT_FILENO);
      dup2(out, STDERR_FILENO);
    }
    const int nothing = open("/dev/null", O_RDONLY);
    if (nothing >= 0) dup2(nothing, STDIN_FILENO);  // (code that reads stdin gets end of file, not the terminal)
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  if (pid < 0) return result;
  // Its exit, within the time limit. (Its end, not its output's: a process
  // it started may hold the output open.)
  const auto deadline = Clock::now() + std::chrono::seconds(timeout_seconds);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() >= deadline) {
      result.timed_out = true;
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(5ms);
  }
  result.status = status;
  return result;
}

Listing list_test_cases(const fs::path& suite, const Limits& limits, const fs::path& scratch) {
  prctl(PR_SET_CHILD_SUBREAPER, 1);  // (what it leaves running is ended below)
  const fs::path list = scratch / "tests.list", output = scratch / "list.out";
  std::error_code ignored;
  fs::remove(list, ignored);
  const Captured c = run_limited({suite.string(), "[.sa-list]"}, {"SA_CHECK_LIST=" + list.string()},
                                 limits.timeout_seconds, limits.memory_kb, output);
  end_left_processes();
  Listing listing;
  // The names, if the list is whole (a tab alone on its last line): a
  // global object's destructor that hangs or crashes after it is every test
  // case's problem, and each test case says so.
  std::vector<std::string> names;
  bool whole = false;
  {
    std::istringstream lines(read_file(list));
    for (std::string line; std::getline(lines, line);) {
      if (line == "\t") whole = true;
      else if (!line.empty()) names.push_back(line);
    }
  }
  if (whole && !names.empty()) {
    listing.names = std::move(names);
    return listing;
  }
  // (what runs outside any test is the reader's code too: a global object's
  // constructor or destructor, a static variable's initializer; what it
  // printed is shown, as for a test case)
  listing.printed = printed_of(read_file(output));
  const std::string outside = "code that runs outside any test (a global object's constructor, or a static "
                              "variable's initializer, in the exercises?)";
  if (c.timed_out) {
    listing.problem = "timed out after " + std::to_string(limits.timeout_seconds) + " s before any test started: " +
                      outside + " never returned";
    listing.status = Status::timeout;
    return listing;
  }
  std::string why;
  if (WIFSIGNALED(c.status) && WTERMSIG(c.status) == SIGXFSZ) {
    why = std::string(kCrashed) + " printed more than " + std::to_string(kOutputLimitBytes >> 20) + " MiB";
  } else if (WIFSIGNALED(c.status)) {
    std::string out = read_file(output);
    if (out.size() > 65536) out.erase(0, out.size() - 65536);  // (the end says what stopped it)
    static const std::string kTerminate = "terminate called after throwing an instance of '";
    why = signal_sentence(WTERMSIG(c.status));
    if (const auto at = out.find(kTerminate); at != std::string::npos) {
      const auto end = out.find('\'', at + kTerminate.size());
      why = uncaught_exception_sentence(out.substr(at + kTerminate.size(), end - at - kTerminate.size()));
    }
  } else {
    const int exit_status = WIFEXITED(c.status) ? WEXITSTATUS(c.status) : -1;
    why = std::string(kCrashed) + " exited with status " + std::to_string(exit_status);
    listing.problem = why + " before any test started: " + outside + " (exit() there?)";
    return listing;
  }
  listing.problem = why + " before any test started: " + outside;
  return listing;
}


std::vector<CaseResult> run_suite(const fs::path& suite, const std::vector<std::string>& tests, Limits& limits,
                                  const fs::path& scratch) {
  using namespace std::chrono_literals;
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  std::vector<CaseResult> results(tests.size());
  std::vector<Running> running;
  size_t next = 0;
  while (next < tests.size() || !running.empty()) {
    while (next < tests.size() && int(running.size()) < std::max(1, limits.jobs)) {
      running.push_back(start_case(suite, tests[next], next, limits, scratch));
      ++next;
    }
    bool changed = false;
    for (auto r = running.begin(); r != running.end();) {
      int status = 0;
      if (r->pid > 0 && waitpid(r->pid, &status, WNOHANG) == 0) {
        // Still running: past its limit it gets SIGTERM (Catch2 then writes
        // where it was), and 2 s later SIGKILL if it did not stop.
        const auto now = Clock::now();
        if (!r->terminated && now - r->started >= std::chrono::seconds(r->limit)) {
          kill(r->pid, SIGTERM);
          r->terminated = true;
          r->terminated_at = now;
        } else if (r->terminated && now - r->terminated_at >= 2s) {
          kill(r->pid, SIGKILL);
        }
        ++r;
        continue;
      }
      if (r->pid <= 0) status = 127 << 8;  // fork failed: reads as an early exit
      const CaseEnd end = finished(*r, status);
      results[r->index] = classify(tests[r->index], end);
      if (results[r->index].status != Status::pass && results[r->index].status != Status::todo)
        results[r->index].printed = printed_of(read_file(r->output));
      if (const fs::path record = record_folder(); !record.empty())
        std::ofstream(record / (scratch.filename().string() + "." + std::to_string(r->index) + ".case"))
            << case_record(tests[r->index], end);
      if (results[r->index].status == Status::timeout) limits.one_hung = true;
      r = running.erase(r);
      changed = true;
    }
    if (!changed) std::this_thread::sleep_for(5ms);
  }
  end_left_processes();
  return results;
}

}  // namespace sa::check
