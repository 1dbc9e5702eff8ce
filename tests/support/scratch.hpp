// A scratch folder of this test process's own, under the system's temporary
// folder: NAME-UID-PID, empty when first asked for, removed when the process
// ends. A fixed name (/tmp/sa_test_plot) is owned by whoever made it first:
// another user of the machine, or the same reader after a run under sudo,
// then cannot write there and the suite fails for no fault of the code.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>

namespace sa::test {

inline std::filesystem::path scratch_dir(const std::string& name) {
  namespace fs = std::filesystem;
  // Made once per name; the map's destructor, at the process's end, removes
  // them (a crashed test leaves its folder, as any crashed program does).
  // A forked child that exits normally runs this destructor too, over the
  // map it inherited: each process removes only the folders named with its
  // own process id, those it made.
  struct Made {
    std::map<std::string, fs::path> dirs;
    ~Made() {
      const std::string mine = "-" + std::to_string(::getpid());
      std::error_code ignored;
      for (const auto& [_, dir] : dirs)
        if (dir.filename().string().ends_with(mine)) fs::remove_all(dir, ignored);
    }
  };
  static Made made;
  auto [at, fresh] = made.dirs.try_emplace(name);
  if (fresh) {
    at->second = fs::temp_directory_path() /
                 (name + "-" + std::to_string(::getuid()) + "-" + std::to_string(::getpid()));
    fs::remove_all(at->second);  // a folder of an earlier process of the same id
  }
  fs::create_directories(at->second);  // again, if a test removed it
  return at->second;
}

}  // namespace sa::test
