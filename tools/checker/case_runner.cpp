#include "case_runner.hpp"

#include "case_record.hpp"

#include <fcntl.h>
#include <sched.h>
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
  std::vector<std::string> args = {suite.string(), catch2_spec(test)};
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
  end.output = read_file(r.output);
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

std::string capture_output(const std::vector<std::string>& words) {
  std::vector<std::string> args = words;
  std::vector<char*> argv = pointers(args);
  int pipe_ends[2];
  if (pipe(pipe_ends) != 0) return "";
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_ends[1], STDOUT_FILENO);
    const int nothing = open("/dev/null", O_WRONLY);
    if (nothing >= 0) dup2(nothing, STDERR_FILENO);
    close(pipe_ends[0]);
    close(pipe_ends[1]);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(pipe_ends[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = read(pipe_ends[0], buffer, sizeof buffer)) > 0;) text.append(buffer, size_t(n));
  close(pipe_ends[0]);
  if (pid > 0) waitpid(pid, nullptr, 0);
  return text;
}

std::vector<std::string> list_test_cases(const fs::path& suite) {
  std::vector<std::string> names;
  std::istringstream lines(capture_output({suite.string(), "--list-test-names-only"}));
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) names.push_back(line);
  return names;
}

std::vector<CaseResult> run_suite(const fs::path& suite, const std::vector<std::string>& tests, Limits& limits,
                                  const fs::path& scratch) {
  using namespace std::chrono_literals;
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
      if (const fs::path record = record_folder(); !record.empty())
        std::ofstream(record / (scratch.filename().string() + "." + std::to_string(r->index) + ".case"))
            << case_record(tests[r->index], end);
      if (results[r->index].status == Status::timeout) limits.one_hung = true;
      r = running.erase(r);
      changed = true;
    }
    if (!changed) std::this_thread::sleep_for(5ms);
  }
  return results;
}

}  // namespace sa::check
