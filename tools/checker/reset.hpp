// `./book reset N FUNCTION`: one exercise function back to its stub, as
// handed out (tests/stubs/NN-name/, which CI keeps equal to a fresh
// exercises/). The reader's version is kept in
// exercises/NN-name/saved/FUNCTION.DATE.cpp, out of the build's way (CMake
// compiles exercises/NN-name/*.cpp only). A deleted function comes back
// where it stood, a deleted file whole.
#pragma once

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace sa::check {

// The command: `args` are the reader's words after "reset"; what was done
// goes to `out`, a bad command line is a Refusal (chapters.hpp). `stamp`
// names the saved copy (the local date and time, 20260126-142501).
void reset_command(const std::filesystem::path& root, const std::vector<std::string>& args, std::ostream& out,
                   const std::string& stamp);

// The local date and time as the saved copies are named.
std::string reset_stamp();

}  // namespace sa::check
