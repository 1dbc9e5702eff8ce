#include "watch.hpp"

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <thread>
#include <vector>

namespace sa::check {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// inotify watches one folder, not a tree: a watch on each folder under
// `folder`. False when inotify is unavailable (then the caller polls).
bool wait_with_inotify(const fs::path& folder, const std::atomic<bool>& stop) {
  const int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (fd < 0) return false;
  constexpr uint32_t kEvents = IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO;
  bool watching = inotify_add_watch(fd, folder.c_str(), kEvents) >= 0;
  std::error_code ignored;
  for (auto it = fs::recursive_directory_iterator(folder, ignored); it != fs::recursive_directory_iterator();
       it.increment(ignored))
    if (it->is_directory(ignored)) inotify_add_watch(fd, it->path().c_str(), kEvents);
  if (!watching) {
    close(fd);
    return false;
  }
  pollfd ready{fd, POLLIN, 0};
  while (!stop && poll(&ready, 1, 1000) == 0) {
  }
  close(fd);
  // An editor's save is often several events: let them land.
  if (!stop) std::this_thread::sleep_for(300ms);
  return true;
}

}  // namespace

std::string folder_stamp(const fs::path& folder) {
  // Only the code: a test that writes a file under exercises/ (a log, a
  // matrix dump) or reset's saved/ copies must not start another check,
  // which would write it again, for ever.
  static const std::vector<std::string> kCode = {".cpp", ".cc", ".cxx", ".hpp", ".h", ".hh"};
  std::vector<std::string> lines;
  std::error_code ignored;
  for (auto it = fs::recursive_directory_iterator(folder, ignored); it != fs::recursive_directory_iterator();
       it.increment(ignored)) {
    if (it->is_directory(ignored) && it->path().filename() == "saved") it.disable_recursion_pending();
    const std::string extension = it->path().extension().string();
    if (!it->is_regular_file(ignored) || std::find(kCode.begin(), kCode.end(), extension) == kCode.end()) continue;
    std::ostringstream line;
    line << it->path().string() << ' ' << it->last_write_time(ignored).time_since_epoch().count() << ' '
         << it->file_size(ignored);
    lines.push_back(line.str());
  }
  std::sort(lines.begin(), lines.end());
  std::string stamp;
  for (const std::string& line : lines) stamp += line + '\n';
  return stamp;
}

void wait_for_change(const fs::path& folder, const std::atomic<bool>& stop) {
  if (wait_with_inotify(folder, stop)) return;
  const std::string before = folder_stamp(folder);
  while (!stop && folder_stamp(folder) == before) std::this_thread::sleep_for(1s);
}

}  // namespace sa::check
