// --watch: waits until a file under a folder changes, with inotify where the
// kernel offers it, else by polling the folder's fingerprint every second.
#pragma once

#include <atomic>
#include <filesystem>
#include <string>

namespace sa::check {

// A fingerprint of every code file (.cpp, .hpp, .h, ...) under `folder`,
// saved/ left out: names, sizes and times. Taken before and after a check,
// it tells a save made while the check ran; after an event, whether the
// code changed at all.
std::string folder_stamp(const std::filesystem::path& folder);

// Returns once something under `folder` was written, created, deleted or
// moved (or `stop` became true, checked at least every second).
void wait_for_change(const std::filesystem::path& folder, const std::atomic<bool>& stop);

}  // namespace sa::check
