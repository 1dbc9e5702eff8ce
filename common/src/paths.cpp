#include "sa/paths.hpp"

#include <climits>
#include <csignal>
#include <cstring>
#include <iterator>
#include <mutex>
#include <system_error>

#include <unistd.h>

namespace sa {

namespace {

// The files RemovedOnSignal guards, for the handler: fixed storage, read
// with no lock (a handler may take none), written under the mutex.
constexpr int kSlots = 32;
char g_paths[kSlots][PATH_MAX];
volatile std::sig_atomic_t g_used[kSlots];
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_before[std::size(kSignals)];
std::mutex g_mutex;
int g_guards = 0;  // RemovedOnSignal objects alive: the handler is installed while there is one

extern "C" void remove_and_end(int signal) {
  for (int i = 0; i < kSlots; ++i)
    if (g_used[i]) ::unlink(g_paths[i]);
  // End as the signal would have ended the program (the shell's status 130).
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

}  // namespace

RemovedOnSignal::RemovedOnSignal(const std::string& path) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (g_guards++ == 0) {
    struct sigaction handler {};
    handler.sa_handler = remove_and_end;
    sigemptyset(&handler.sa_mask);
    for (std::size_t k = 0; k < std::size(kSignals); ++k) {
      ::sigaction(kSignals[k], nullptr, &g_before[k]);
      if (g_before[k].sa_handler == SIG_DFL) ::sigaction(kSignals[k], &handler, nullptr);
    }
  }
  if (path.size() >= PATH_MAX) return;
  for (int i = 0; i < kSlots; ++i)
    if (!g_used[i]) {
      std::memcpy(g_paths[i], path.c_str(), path.size() + 1);
      g_used[i] = 1;
      slot_ = i;
      return;
    }
}

RemovedOnSignal::~RemovedOnSignal() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (slot_ >= 0) g_used[slot_] = 0;
  if (--g_guards == 0)
    for (std::size_t k = 0; k < std::size(kSignals); ++k)
      if (g_before[k].sa_handler == SIG_DFL) ::sigaction(kSignals[k], &g_before[k], nullptr);
}

std::filesystem::path running_program_dir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec || !exe.has_parent_path()) return {};
  return exe.parent_path();
}

std::string sibling_program(const std::string& name) {
  const std::filesystem::path bin = running_program_dir();
  return bin.empty() ? name : (bin / name).string();
}

std::string shell_quoted(const std::string& text) {
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string shown_path(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path given(path);
  // A relative path the reader gave is theirs, relative to where they are.
  if (given.is_relative()) return given.lexically_normal().string();
  // One of the book's own (build/plots/..., chapters/07-training/...), as the
  // reader would type it from the folder they ran the program in: from the
  // repository's root, build/plots/...; from build/, plots/...; from a
  // folder it does not lie under, the whole path.
  std::error_code ec;
  const fs::path here = fs::current_path(ec);
  if (ec) return path;
  const fs::path rel = fs::relative(given, here, ec);  // (through symbolic links too)
  if (ec || rel.empty() || *rel.begin() == "..") return path;
  return rel.string();
}

}  // namespace sa
