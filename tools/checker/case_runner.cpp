#include "case_runner.hpp"

#include "case_record.hpp"
#include "crash_words.hpp"
#include "read_file.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <signal.h>
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

Captured capture_output(const std::vector<std::string>& words, int timeout_seconds, long memory_kb,
                        const fs::path& errors) {
  using namespace std::chrono_literals;
  Captured result;
  std::vector<std::string> args = words;
  std::vector<char*> argv = pointers(args);
  const std::string error_file = errors.string();
  int pipe_ends[2];
  if (pipe(pipe_ends) != 0) return result;
  const pid_t pid = fork();
  if (pid == 0) {
    if (memory_kb > 0) {
      const rlimit cap{rlim_t(memory_kb) * 1024, rlim_t(memory_kb) * 1024};
      setrlimit(RLIMIT_AS, &cap);
    }
    // (its error file, like a test case's output, stops at kOutputLimitBytes)
    const rlimit file_cap{rlim_t(kOutputLimitBytes), rlim_t(kOutputLimitBytes)};
    setrlimit(RLIMIT_FSIZE, &file_cap);
    dup2(pipe_ends[1], STDOUT_FILENO);
    const int err = error_file.empty() ? open("/dev/null", O_WRONLY)
                                       : open(error_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (err >= 0) dup2(err, STDERR_FILENO);
    const int nothing = open("/dev/null", O_RDONLY);
    if (nothing >= 0) dup2(nothing, STDIN_FILENO);  // (code that reads stdin gets end of file, not the terminal)
    close(pipe_ends[0]);
    close(pipe_ends[1]);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(pipe_ends[1]);
  if (pid < 0) {
    close(pipe_ends[0]);
    return result;
  }
  // Read until the end of the output or the time limit, whichever comes
  // first, and no more than kOutputLimitBytes; then wait for the exit
  // within the same limit.
  const auto deadline = Clock::now() + std::chrono::seconds(timeout_seconds);
  const auto left_ms = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  };
  char buffer[4096];
  bool too_much = false;
  while (true) {
    if (left_ms() <= 0) {
      result.timed_out = true;
      break;
    }
    pollfd ready{pipe_ends[0], POLLIN, 0};
    const int got = poll(&ready, 1, int(std::min<long long>(left_ms(), 1000)));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) break;
    if (got == 0) continue;
    const ssize_t n = read(pipe_ends[0], buffer, sizeof buffer);
    if (n <= 0) break;  // the end of its output
    result.text.append(buffer, size_t(n));
    if ((too_much = result.text.size() > size_t(kOutputLimitBytes))) break;
  }
  close(pipe_ends[0]);
  int status = 0;
  while (!result.timed_out && !too_much && waitpid(pid, &status, WNOHANG) == 0) {
    if (left_ms() <= 0) result.timed_out = true;
    else std::this_thread::sleep_for(5ms);
  }
  if (result.timed_out || too_much) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  result.status = status;
  result.finished = !result.timed_out;
  return result;
}

Listing list_test_cases(const fs::path& suite, const Limits& limits, const fs::path& scratch) {
  const fs::path errors = scratch / "list.err";
  const Captured c = capture_output({suite.string(), "--list-test-names-only"}, limits.timeout_seconds,
                                    limits.memory_kb, errors);
  Listing listing;
  // (what runs before a suite's main() is the reader's code too: a global
  // object's constructor, a static variable's initializer)
  const std::string before_main = "code that runs before main() (a global object's constructor, or a static "
                                  "variable's initializer, in the exercises?)";
  if (c.timed_out) {
    listing.problem = "timed out after " + std::to_string(limits.timeout_seconds) + " s before any test started: " +
                      before_main + " never returned";
    listing.status = Status::timeout;
    return listing;
  }
  // (stopped with SIGKILL once past the limit)
  if (c.text.size() > size_t(kOutputLimitBytes)) {
    listing.problem = std::string(kCrashed) + " printed more than " + std::to_string(kOutputLimitBytes >> 20) +
                      " MiB before any test started: " + before_main;
    return listing;
  }
  if (WIFSIGNALED(c.status) && WTERMSIG(c.status) == SIGXFSZ) {
    listing.problem = std::string(kCrashed) + " printed more than " + std::to_string(kOutputLimitBytes >> 20) +
                      " MiB before any test started: " + before_main;
    return listing;
  }
  // (Catch2 exits with the number of tests it listed: only a signal, an
  // uncaught exception's abort among them, says something went wrong.)
  if (WIFSIGNALED(c.status)) {
    std::string err = read_file(errors);
    if (err.size() > 65536) err.erase(0, err.size() - 65536);  // (the end says what stopped it)
    static const std::string kTerminate = "terminate called after throwing an instance of '";
    std::string why = signal_sentence(WTERMSIG(c.status));
    if (const auto at = err.find(kTerminate); at != std::string::npos) {
      const auto end = err.find('\'', at + kTerminate.size());
      why = uncaught_exception_sentence(err.substr(at + kTerminate.size(), end - at - kTerminate.size()));
    }
    listing.problem = why + " before any test started: " + before_main;
    return listing;
  }
  std::istringstream lines(c.text);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) listing.names.push_back(line);
  // No test listed: exit() before main() (or a suite that would not start).
  if (listing.names.empty())
    listing.problem = std::string(kCrashed) + " exited with status " +
                      std::to_string(WIFEXITED(c.status) ? WEXITSTATUS(c.status) : -1) +
                      " before listing any test: " + before_main + " (exit() there?)";
  return listing;
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
        results[r->index].printed = printed_lines(read_file(r->output));
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
