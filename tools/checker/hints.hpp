// `./book hint N [FUNCTION]`: a hint for one exercise function, one level
// more each time it is asked for (the idea, the formula with its shapes,
// last something close to code).
//
// The hints are tests/hints/NN-name.txt: "== function" opens a function's
// section, a line "--" separates two levels, a line starting with "#" is a
// comment (tests/hints/README.md). The level each function has reached is
// remembered in build/hint-levels, one "NN-name function level" line each,
// so that deleting the file starts over.
#pragma once

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace sa::check {

// The number of levels of a function's hints in a hints file's text; 0 when
// it has no section.
int hint_level_count(const std::string& hints, const std::string& function);

// Level `level` (from 1) of a function's hints, its lines without the blank
// ones before the first.
std::vector<std::string> hint_lines(const std::string& hints, const std::string& function, int level);

// The level last shown for a chapter's function (0: none yet), and
// remembering a new one (0 forgets it), in the file `levels`.
int shown_hint_level(const std::filesystem::path& levels, const std::string& chapter, const std::string& function);
void remember_hint_level(const std::filesystem::path& levels, const std::string& chapter, const std::string& function,
                         int level);

// The command: `args` are the reader's words after "hint"; the hint goes to
// `out`. A bad command line is a Refusal (chapters.hpp).
void hint_command(const std::filesystem::path& root, const std::vector<std::string>& args, std::ostream& out);

}  // namespace sa::check
