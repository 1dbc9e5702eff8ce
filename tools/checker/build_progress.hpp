// ./book's builds (book-build, build_main.cpp): a build of some targets with
// ./book's progress line, and a failed build's first error. Also the pieces
// check's own build of the suites uses (build_log.cpp): a command run with
// its output in a log, and the count of files a log says were compiled.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace sa::check {

// Runs the command with its output (stdout and stderr) appended to `log`,
// in the C.UTF-8 locale (English messages, whatever the reader's); returns
// its pid.
pid_t start_logged(const std::vector<std::string>& words, const std::filesystem::path& log);

// Waits for the process; whether it ended with status 0.
bool succeeded(pid_t pid);

// The command that builds `targets` in `build_dir`, `jobs` at once:
// cmake --build BUILD_DIR -j JOBS --target TARGET...
std::vector<std::string> build_command(const std::filesystem::path& build_dir, int jobs,
                                       const std::vector<std::string>& targets);

// Whether `build_dir` was configured for a Ninja generator (./book makes new
// build folders with Ninja when it is installed; an older one may be make's).
bool built_by_ninja(const std::filesystem::path& build_dir);

// How many files the log says were started ("Building CXX object" lines).
int files_compiled(const std::string& log);

// While `running()` holds: ./book's progress line about the build whose log
// is `log`, on `out` — rewritten in place every half second on a `terminal`,
// else a line every 20 s when the count has changed.
void show_build_progress(const std::filesystem::path& log, const std::string& what,
                         const std::function<bool()>& running, std::ostream& out, bool terminal);

// A failed build's log as the reader sees it: the first compiler or linker
// error and the 12 lines after it (grep -m1 -A12), or the log's last 30 lines.
std::string build_error_excerpt(const std::string& log);

// Held while this process builds in `build_dir`, one build there at a time:
// two at once (two `./book run 1` after an edit) compiled the same objects
// together and one failed ("file truncated"), or linked a library from
// half-written ones. The lock is the file build_dir/.book-build.lock, which
// ./book's own cmake calls take too (flock); a second build waits for the
// first, saying so on `note`. Without a lock file (a folder that takes no
// files) it builds unlocked.
class BuildLock {
 public:
  BuildLock(const std::filesystem::path& build_dir, std::ostream& note);
  ~BuildLock();
  BuildLock(const BuildLock&) = delete;
  BuildLock& operator=(const BuildLock&) = delete;

 private:
  int fd_ = -1;
};

// A new empty folder for one run's scratch files (a build's log, check's
// cases and reports): build_dir/.scratch/PREFIX-PID-XXXXXX, or in $TMPDIR
// when build_dir takes no folders. The caller removes it when done; a run
// stopped by Ctrl-C cannot, so the folders of runs that have ended
// (their process id no longer running) are removed first. Kept in the
// build folder, not in /tmp, so that what a stopped run leaves goes with
// the build folder. Empty when no folder could be made.
std::filesystem::path scratch_folder(const std::filesystem::path& build_dir, const std::string& prefix);

// Builds `targets` (cmake --build, `jobs` at once) with the progress line on
// stdout, under the BuildLock. A failed build prints its error excerpt on stderr and returns
// ./book's refusal, "building WHAT failed (...)"; empty when it succeeded.
std::string build_targets(const std::filesystem::path& build_dir, int jobs, const std::string& what,
                          const std::vector<std::string>& targets);

}  // namespace sa::check
