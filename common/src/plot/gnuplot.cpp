// The gnuplot process: errors, the text of a script (quoting user strings,
// numbers, datablocks), finding a gnuplot with pngcairo, and running one
// script into one complete PNG (render), with gnuplot's errors turned into
// exceptions. Also the public sa::plot::available().

#include "detail.hpp"

#include "sa/paths.hpp"

#include <fmt/format.h>
#include <gnuplot-iostream.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <stdexcept>

namespace sa::plot {
namespace detail {

namespace fs = std::filesystem;

// ---- Errors -----------------------------------------------------------------

[[noreturn]] void bad_input(std::string_view fn, const std::string& what) {
  throw std::invalid_argument(fmt::format("sa::plot::{}: {}", fn, what));
}

void check_size(std::string_view fn, int width, int height) {
  if (width <= 0 || height <= 0) {
    bad_input(fn, fmt::format("image size {} x {} must be positive", width, height));
  }
}

// ---- Text for gnuplot --------------------------------------------------------

// A gnuplot string literal holding `s` verbatim. Single quotes, because in
// double quotes gnuplot would run `backquoted` text through the shell and
// interpret backslashes. Only a quote needs escaping ('' inside '...'). A
// newline cannot be written inside single quotes, so it is spliced in with
// gnuplot's string concatenation: 'line 1'."\n".'line 2'. Tic labels are
// kept on one line (multiline = false).
std::string gq(std::string_view s, bool multiline) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "''";
    } else if (c == '\n') {
      out += multiline ? "'.\"\\n\".'" : " ";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';  // tabs, carriage returns, other control characters
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

// A number in a datablock. fmt's "{}" is the shortest exact form and ignores
// the locale; gnuplot reads NaN as an undefined point.
std::string num(double v) { return std::isfinite(v) ? fmt::format("{}", v) : std::string("NaN"); }

void datablock(std::string& script, const std::string& name, const std::string& rows) {
  script += name + " << EOD\n" + rows + "EOD\n";
}

// ---- Running gnuplot ---------------------------------------------------------

namespace {

[[noreturn]] void failed(std::string_view fn, const std::string& what) {
  throw std::runtime_error(fmt::format("sa::plot::{}: {}", fn, what));
}

constexpr const char* kFailMarker = "SA_PLOT_GNUPLOT_FAILED";
constexpr const char* kFont = "Sans";
// Below this much free space after a failed figure, the disk is full: a
// figure is 30 to 100 KiB.
constexpr double kDiskFullBytes = 512 * 1024;

enum class Gnuplot_status { ok, not_found, no_pngcairo };

Gnuplot_status probe() {
  static const Gnuplot_status status = [] {
    bool found = false;
    if (const char* path = std::getenv("PATH")) {
      std::stringstream dirs(path);
      std::string dir;
      while (!found && std::getline(dirs, dir, ':')) {
        const fs::path exe = fs::path(dir.empty() ? "." : dir) / "gnuplot";
        found = ::access(exe.c_str(), X_OK) == 0 && !fs::is_directory(exe);
      }
    }
    if (!found) return Gnuplot_status::not_found;
    // gnuplot-x11 and gnuplot-nox both have pngcairo; a minimal build may not.
    const int rc = std::system("gnuplot -d -e 'set terminal pngcairo' >/dev/null 2>&1");
    return rc == 0 ? Gnuplot_status::ok : Gnuplot_status::no_pngcairo;
  }();
  return status;
}

// The first error gnuplot reported, e.g. "line 12: undefined variable: x".
std::string first_error(const std::string& log) {
  std::istringstream in(log);
  std::string line, fallback;
  while (std::getline(in, line)) {
    const auto start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line.find(kFailMarker) != std::string::npos) continue;
    // Trim and collapse runs of spaces ("line 0:          cannot open file").
    std::string squeezed;
    for (char c : line.substr(start)) {
      if (!(c == ' ' && !squeezed.empty() && squeezed.back() == ' ')) squeezed += c == '\t' ? ' ' : c;
    }
    line = squeezed;
    if (line.rfind("gnuplot>", 0) == 0 || line == "^") continue;  // the echoed command
    const bool warning = line.find("arning") != std::string::npos;
    if (line.rfind("line ", 0) == 0 && !warning) return line;
    if (fallback.empty() && !warning) fallback = line;
  }
  return fallback.empty() ? "gnuplot exited with an error" : fallback;
}

// A PNG is complete when it starts with the signature and ends with IEND.
bool is_complete_png(const fs::path& p) {
  std::error_code ec;
  const auto size = fs::file_size(p, ec);
  if (ec || size < 20) return false;
  std::ifstream f(p, std::ios::binary);
  std::array<char, 8> head{};
  std::array<char, 12> tail{};
  f.read(head.data(), head.size());
  f.seekg(-12, std::ios::end);
  f.read(tail.data(), tail.size());
  return f.good() && std::string_view(head.data(), 8) == "\x89PNG\r\n\x1a\n" &&
         std::string_view(tail.data() + 4, 4) == "IEND";
}

// Free bytes on the disk holding `dir`, or -1 when it cannot be told.
double free_bytes(const fs::path& dir) {
  struct statvfs disk {};
  if (::statvfs(dir.c_str(), &disk) != 0) return -1;
  return double(disk.f_bavail) * double(disk.f_frsize);
}

// A figure is drawn into a temporary file beside its real name and renamed
// only once complete, so a full disk, a crash or Ctrl-C never leaves a
// truncated PNG under the real name (and a failed redraw keeps the old one).
// The name starts with '.' and holds the process id: stray ones are visibly
// temporary and never collide between two runs.
fs::path temporary_beside(const fs::path& out) {
  static std::atomic<unsigned> counter{0};
  return out.parent_path() / fmt::format(".{}.tmp-{}-{}", out.filename().string(), ::getpid(), counter++);
}

}  // namespace

// Returns "" after saying once, on stderr, why figures are skipped.
std::string skipped() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::cerr << (probe() == Gnuplot_status::no_pngcairo
                      ? "figures skipped: gnuplot has no pngcairo terminal (apt-get install gnuplot-nox)"
                      : "figures skipped: gnuplot not found (apt-get install gnuplot-nox)")
              << std::endl;
  });
  return "";
}

// Draws `body` (everything after the terminal and output are set) into
// png_path and returns once the file is complete.
std::string render(std::string_view fn, const std::string& png_path, int width, int height,
                   const std::string& body) {
  const fs::path out(png_path);
  std::error_code ec;
  if (out.has_parent_path()) {
    fs::create_directories(out.parent_path(), ec);
    if (ec) failed(fn, fmt::format("cannot create directory {}: {}", out.parent_path().string(), ec.message()));
  }
  if (fs::is_directory(out, ec)) failed(fn, fmt::format("{} is a directory, not a PNG file name", png_path));
  const fs::path temporary = temporary_beside(out);

  // gnuplot's messages go to a log beside the unfinished figure, in the
  // folder the figure needs to write to anyway: the system's temporary
  // folder may be missing or not writable (a TMPDIR that names no folder
  // ended the program after its work, with "temp_directory_path: No such
  // file or directory").
  const fs::path log = temporary.string() + ".log";
  // Ctrl-C while gnuplot draws removes the unfinished figure, which nothing
  // else would (./book plots left it among the committed ones), and the log.
  const RemovedOnSignal interrupted(temporary.string()), interrupted_log(log.string());
  // Both files are created here and gnuplot writes them through /dev/fd: it
  // never creates a file by name. Ctrl-C reaches gnuplot as well, but
  // gnuplot only notes it and reads on; given a name, it could create the
  // figure after the handler above had removed it, and leave it for good.
  // (Without /dev/fd, as in a chroot with no /proc, gnuplot gets the names.)
  struct OpenFile {
    int fd;
    ~OpenFile() {
      if (fd >= 0) ::close(fd);
    }
  };
  // No O_CLOEXEC: gnuplot's shell inherits them.
  const OpenFile figure{::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644)};
  const OpenFile log_file{figure.fd < 0 ? -1 : ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644)};
  if (figure.fd < 0 || log_file.fd < 0) {
    const int error = errno;
    fs::remove(temporary, ec);
    failed(fn, fmt::format("cannot write {}: {}", png_path, std::strerror(error)));
  }
  const bool by_descriptor = fs::is_directory("/dev/fd", ec);
  const auto reached_as = [&](const fs::path& file, int fd) {
    return by_descriptor ? fmt::format("/dev/fd/{}", fd) : file.string();
  };

  const auto script = [&](const std::string& output) {
    std::string text = "set encoding utf8\n";
    // noenhanced: text is literal, so "d_k" stays d_k instead of a subscript.
    text += fmt::format("set terminal pngcairo size {},{} noenhanced font '{},11' background rgb 'white'\n", width,
                        height, kFont);
    text += "set output " + gq(output, false) + "\n";
    text += body;
    return text + "unset multiplot\nunset output\n";  // closes the PNG
  };
  if (std::getenv("SA_PLOT_KEEP_SCRIPT")) std::ofstream(png_path + ".gp") << script(png_path);

  {
    // A gnuplot that stops at an error closes the pipe while the script is
    // still being written: the write's SIGPIPE ended the program, status
    // 141 and no message, the unfinished figure left behind. Ignored for
    // the write, which fails instead; the log then says what went wrong.
    struct IgnoreSigpipe {
      struct sigaction before {};
      IgnoreSigpipe() {
        struct sigaction ignore {};
        ignore.sa_handler = SIG_IGN;
        sigemptyset(&ignore.sa_mask);
        ::sigaction(SIGPIPE, &ignore, &before);
      }
      ~IgnoreSigpipe() { ::sigaction(SIGPIPE, &before, nullptr); }
    } ignore_sigpipe;
    // The shell joins gnuplot's stdout and stderr in the log and appends a
    // marker when gnuplot exits non-zero (which it does after any error).
    const std::string log_name = shell_quoted(reached_as(log, log_file.fd));
    Gnuplot gp(fmt::format("gnuplot -d >{0} 2>&1 || echo {1} >>{0}", log_name, kFailMarker));
    gp << script(reached_as(temporary, figure.fd)) << std::flush;
  }  // ~Gnuplot: flush, pclose -> waits until gnuplot has exited.

  std::string log_text;
  {
    std::ifstream in(log);
    log_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  fs::remove(log, ec);
  const bool complete = is_complete_png(temporary);
  if (log_text.find(kFailMarker) != std::string::npos || !complete) {
    // gnuplot (cairo) says nothing when a write fails: a disk that is full
    // is told by its free space, measured before the partial file goes.
    const double left = free_bytes(out.parent_path().empty() ? fs::path(".") : out.parent_path());
    fs::remove(temporary, ec);
    if (left >= 0 && left < kDiskFullBytes)
      failed(fn, fmt::format("cannot write {}: the disk is full ({:.0f} KiB free)", png_path, left / 1024));
    if (!complete && log_text.find(kFailMarker) == std::string::npos)
      failed(fn, fmt::format("gnuplot wrote no complete PNG at {}", png_path));
    failed(fn, fmt::format("gnuplot failed drawing {}: {}", png_path, first_error(log_text)));
  }
  fs::rename(temporary, out, ec);
  if (ec) {
    fs::remove(temporary, ec);
    failed(fn, fmt::format("cannot rename the finished figure to {}: {}", png_path, ec.message()));
  }
  return png_path;
}

}  // namespace detail

// True when a gnuplot with pngcairo is on PATH (looked for once).
bool available() { return detail::probe() == detail::Gnuplot_status::ok; }

}  // namespace sa::plot
