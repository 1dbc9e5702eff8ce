// Builds the exercise suites and reads the build's log: the file being
// compiled (for the progress line) and, for a chapter that does not compile,
// its first compiler or linker error at the reader's file and line.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

namespace sa::check {

// The file a build log compiles last, as a reader knows it: a source path
// ("03-softmax/test_softmax.cpp"), or "the precompiled Eigen and fmt" for
// the precompiled headers. Empty before the first file.
std::string last_compiled(const std::string& log);

// The first compiler or linker error about chapter `number` ("03") in the
// logs, on one line (at most 220 characters), paths relative to `root`. An
// error inside a library's template (Eigen's static assertions) is placed at
// the reader's line the compiler says it was "required from". A linker error
// (a function defined twice, or main(); one the suite calls and no exercise
// file defines) is a sentence in the reader's words (at most 300), naming
// their files and the header under `root`/chapters/ that declares the
// function, never the offset in an object the linker names.
std::string first_error(const std::string& number, const std::vector<std::string>& logs, const std::string& root);

// Builds the suites test_NN_exercises of `chapters` in one `make -k` (or
// `ninja -k0`), with a progress line on `progress` (rewritten in place on a
// `terminal`, else a line every 10 s), the log in `log`. Returns the
// first error of each chapter that does not compile; the others are built.
std::map<std::string, std::string> build_suites(const std::filesystem::path& build_dir,
                                                const std::vector<std::string>& chapters,
                                                const std::filesystem::path& log, const std::string& root,
                                                int jobs, std::ostream& progress, bool terminal);

}  // namespace sa::check
