// --watch: a save under the folder wakes the watcher; the fingerprint the
// polling fallback compares changes with a file's content.
#include "watch.hpp"

#include "support/catch2_compat.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace fs = std::filesystem;

namespace {

fs::path scratch_folder(const std::string& name) {
  const fs::path folder = fs::temp_directory_path() / ("book-check-" + name + "-" + std::to_string(::getpid()));
  fs::create_directories(folder / "03-softmax");
  std::ofstream(folder / "03-softmax" / "softmax.cpp") << "int f() { return 1; }\n";
  return folder;
}

}  // namespace

TEST_CASE("a save in a subfolder wakes --watch", "[checker]") {
  using namespace std::chrono_literals;
  const fs::path folder = scratch_folder("watch");
  std::atomic<bool> stop{false};
  std::thread editor([&] {
    std::this_thread::sleep_for(200ms);
    std::ofstream(folder / "03-softmax" / "softmax.cpp") << "int f() { return 2; }\n";
  });
  // A watchdog: if no change is seen, stop after 5 s and fail.
  std::thread watchdog([&] {
    for (int i = 0; i < 50 && !stop; ++i) std::this_thread::sleep_for(100ms);
    stop = true;
  });
  const auto began = std::chrono::steady_clock::now();
  sa::check::wait_for_change(folder, stop);
  const auto waited = std::chrono::steady_clock::now() - began;
  const bool woke_on_save = !stop;
  stop = true;
  editor.join();
  watchdog.join();
  fs::remove_all(folder);
  CHECK(woke_on_save);
  CHECK(waited >= 150ms);  // not before the save
  CHECK(waited < 4s);
}

TEST_CASE("the polling fingerprint changes when a file does", "[checker]") {
  const fs::path folder = scratch_folder("stamp");
  const std::string before = sa::check::folder_stamp(folder);
  CHECK(sa::check::folder_stamp(folder) == before);
  std::ofstream(folder / "03-softmax" / "softmax.cpp") << "int f() { return 22; }\n";
  const std::string after = sa::check::folder_stamp(folder);
  std::ofstream(folder / "03-softmax" / "new.cpp") << "\n";
  const std::string added = sa::check::folder_stamp(folder);
  // What is not code, and reset's saved/ copies, leave it as it was.
  std::ofstream(folder / "03-softmax" / "dump.txt") << "written by a test\n";
  fs::create_directories(folder / "03-softmax" / "saved");
  std::ofstream(folder / "03-softmax" / "saved" / "focus.20260101-000000.cpp") << "\n";
  const std::string other_files = sa::check::folder_stamp(folder);
  fs::remove_all(folder);
  CHECK(after != before);
  CHECK(added != after);
  CHECK(other_files == added);
}
